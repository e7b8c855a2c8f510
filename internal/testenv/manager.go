/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testenv

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/watchtrim"
)

// Manager is a controller-runtime manager running in the test's process.
type Manager struct {
	// Client is the manager's client, whose reads come from its cache (and so support its field
	// indexes).
	Client client.Client
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// StartManager starts a manager against the Env, as cmd/main.go does minus what a test does not
// want: opts.Scheme defaults to the Env's, and metrics serving and probes are off unless opts
// turn them on. setup registers the reconcilers. The manager runs until Stop or ctx ends.
func (e *Env) StartManager(ctx context.Context, opts ctrl.Options, setup func(ctrl.Manager) error) (*Manager, error) {
	if opts.Scheme == nil {
		opts.Scheme = e.Scheme
	}
	if opts.Metrics.BindAddress == "" {
		opts.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(watchtrim.Transport(mrtrv1alpha1.GroupVersion.Group)) // as cmd/main.go
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, fmt.Errorf("set up the manager: %w", err)
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &Manager{Client: mgr.GetClient(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = mgr.Start(mctx)
	}()
	return m, nil
}

// Stop stops the manager and waits until it has stopped (at most Timeout), so that nothing it does
// can be mistaken for what the next one does. It returns the error the manager stopped with.
func (m *Manager) Stop() error {
	m.cancel()
	select {
	case <-m.done:
		return m.err
	case <-time.After(Timeout):
		return fmt.Errorf("the manager did not stop within %s", Timeout)
	}
}
