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

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// managerStartTimeout bounds the wait for the manager's controller to start its workers (its
// caches synced), on a loaded 2-core machine.
const managerStartTimeout = 2 * time.Minute

// workersStarted is what controller-runtime logs once a controller's caches have synced and its
// workers run: from then on the manager reacts to what the harness creates, so the clock starts
// only after it (the manager's own start-up is not what is measured).
var workersStarted = []byte("Starting workers")

// manager is the operator's manager binary running as a child process.
type manager struct {
	*testenv.Process
	metricsURL string
	pprofURL   string // the manager's /debug/pprof, when profiles are asked for
}

// startManager starts bin with the kubeconfig, the harness's flags (plus extra, and its profiling
// endpoints if pprof) and env, its output in dir/manager.log, and waits until its controller runs.
func startManager(ctx context.Context, bin, kubeconfig, dir string, extra, env []string, pprof bool) (*manager, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false",
		"--health-probe-bind-address=0", "--leader-elect=false",
	}, extra...)
	m := &manager{metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
	if pprof {
		pport, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pport))
		m.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pport)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "KUBECONFIG="+kubeconfig)
	// Its own process group (testenv.StartProcess), so that a Ctrl-C in the terminal reaches only
	// benchscale (which then kills it), and the kernel kills it if benchscale dies without
	// cleaning up.
	if m.Process, err = testenv.StartProcess(managerProcess, dir, cmd); err != nil {
		return nil, err
	}
	progress("manager pid %d, metrics %s, log %s", m.PID(), m.metricsURL, m.LogPath())
	if err := m.waitStarted(ctx); err != nil {
		m.kill()
		return nil, err
	}
	return m, nil
}

// waitStarted polls the log until the controller's workers have started and /metrics answers.
func (m *manager) waitStarted(ctx context.Context) error {
	deadline := time.Now().Add(managerStartTimeout)
	for {
		if err := m.exited(); err != nil {
			return err
		}
		if b, _ := os.ReadFile(m.LogPath()); bytes.Contains(b, workersStarted) {
			if _, err := scrape(ctx, m.metricsURL); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager did not start its workers within %v; see %s", managerStartTimeout, m.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exited is nil while the manager runs, else how it ended: a benchmark whose manager is gone has
// nothing left to measure.
func (m *manager) exited() error { return m.Err() }

// kill ends the manager at once (nothing of its shutdown is measured) and waits until it is gone.
func (m *manager) kill() {
	if err := m.Kill(); err != nil {
		progress("warning: %v", err)
	}
}
