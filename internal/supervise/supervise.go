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

// Package supervise keeps a controller-runtime manager running through the API server's outages
// and the loss of the leader lease, in the process, instead of exiting and leaving the restart to
// the kubelet. A manager cannot be started twice, and one that lost its lease stops (controller-
// runtime's rule: a replica that lost the lease must not go on acting on what it read while it
// led). Exiting then costs a restart each time, and a manager that starts while the API server is
// away fails at once (its first requests find no REST mapping); under the kubelet's
// CrashLoopBackOff the process then waits up to 5 minutes after the API server is back. Run
// instead waits for the API server with a short back-off, starts a fresh manager, and after it
// stops on its own, does the same again.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Backoff is how Run waits for the API server, and between managers that stop soon after they
// start: short steps, since every step the API server is back but unnoticed delays the rotations,
// and a request to /readyz costs the API server next to nothing.
var Backoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 5, Cap: 4 * time.Second}

// shortRun is how long a manager must have run for its stop not to count as a failure to start:
// one that stops sooner is followed by a back-off before the next.
const shortRun = 30 * time.Second

// Options configures Run.
type Options struct {
	// Config reaches the API server, for the readiness probe.
	Config *rest.Config
	// Build makes the manager of each run, with its controllers. An error of the first call is
	// returned (a configuration error); later ones are retried after a back-off.
	Build func() (manager.Manager, error)
	// Log receives a line for each wait and each stop.
	Log logr.Logger
}

// Run starts the managers Build makes, one at a time, until ctx ends, and returns nil then. Before
// each it waits until the API server answers /readyz (an API server whose etcd is away answers
// 500). A manager that stops on its own (a lost lease, a failed start) is followed by the next.
func Run(ctx context.Context, o Options) error {
	probe, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	delay := Backoff
	for first := true; ; first = false {
		if err := waitForAPIServer(ctx, probe.Discovery().RESTClient(), o.Log); err != nil {
			return nil // ctx ended
		}
		mgr, err := o.Build()
		switch {
		case err != nil && first:
			return err
		case err != nil:
			o.Log.Error(err, "Failed to build the manager; trying again")
			if sleep(ctx, delay.Step()) != nil {
				return nil
			}
			continue
		}
		started := time.Now()
		err = mgr.Start(ctx)
		if ctx.Err() != nil {
			return err // asked to stop: what the manager's shutdown said, nil when clean
		}
		o.Log.Info("The manager stopped; waiting for the API server, then competing for the lease again",
			"reason", errString(err), "ran", time.Since(started).Round(time.Millisecond))
		if time.Since(started) >= shortRun {
			delay = Backoff
			continue
		}
		if sleep(ctx, delay.Step()) != nil {
			return nil
		}
	}
}

// waitForAPIServer returns once the API server answers /readyz with 200, or an error once ctx ends.
func waitForAPIServer(ctx context.Context, c rest.Interface, log logr.Logger) error {
	delay := Backoff
	for attempt := 0; ; attempt++ {
		err := c.Get().AbsPath("/readyz").Do(ctx).Error()
		if err == nil {
			if attempt > 0 {
				log.Info("The API server is ready", "attempts", attempt+1)
			}
			return nil
		}
		if attempt == 0 || delay.Steps == 0 { // the first failure, then one line per wait at the cap
			log.Info("Waiting for the API server", "error", err.Error())
		}
		if err := sleep(ctx, delay.Step()); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func errString(err error) string {
	if err == nil {
		return "stopped without an error"
	}
	return err.Error()
}

// ServeProbes serves /healthz and /readyz on addr for as long as ctx lasts, across managers: a
// probe that failed while Run waits for the API server would have the kubelet restart a process
// that is doing exactly what it should. "0" or "" serves nothing. The server's failure, after it
// started, goes to log.
func ServeProbes(ctx context.Context, addr string, log logr.Logger) error {
	if addr == "" || addr == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health probes: %w", err)
	}
	checks := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	mux := http.NewServeMux()
	for _, path := range []string{"/healthz", "/readyz"} {
		mux.Handle(path, http.StripPrefix(path, checks))
		mux.Handle(path+"/", http.StripPrefix(path, checks))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "The health probe server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown) // the process is stopping; nothing to do with a failure
	}()
	return nil
}
