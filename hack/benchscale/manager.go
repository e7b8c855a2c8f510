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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	pprofURL   string        // the manager's /debug/pprof, when profiles are asked for
	done       chan struct{} // closed once the process has exited
	err        error         // cmd.Wait's result; read after done is closed
}

// startManager starts bin with the kubeconfig, the harness's flags (plus extra, and its profiling
// endpoints if pprof) and env, its output in
// dir/manager.log, and waits until its controller runs.
func startManager(ctx context.Context, bin, kubeconfig, dir string, extra, env []string, pprof bool) (*manager, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false",
		"--health-probe-bind-address=0", "--leader-elect=false",
	}, extra...)
	m := &manager{logPath: filepath.Join(dir, "manager.log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), done: make(chan struct{})}
	if pprof {
		pport, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pport))
		m.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pport)
	}
	log, err := os.Create(m.logPath)
	if err != nil {
		return nil, err
	}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Env = append(append(os.Environ(), env...), "KUBECONFIG="+kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	// Its own process group, so that a Ctrl-C in the terminal reaches only benchscale (which then
	// kills it), and the kernel kills it if benchscale dies without cleaning up.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start the manager: %w", err)
	}
	go func() {
		m.err = m.cmd.Wait()
		_ = log.Close()
		close(m.done)
	}()
	progress("manager pid %d, metrics %s, log %s", m.pid(), m.metricsURL, m.logPath)
	if err := m.waitStarted(ctx); err != nil {
		m.kill()
		return nil, err
	}
	return m, nil
}

func (m *manager) pid() int { return m.cmd.Process.Pid }

// waitStarted polls the log until the controller's workers have started and /metrics answers.
func (m *manager) waitStarted(ctx context.Context) error {
	deadline := time.Now().Add(managerStartTimeout)
	for {
		if err := m.exited(); err != nil {
			return err
		}
		if b, _ := os.ReadFile(m.logPath); bytes.Contains(b, workersStarted) {
			if _, err := scrape(ctx, m.metricsURL); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager did not start its workers within %v; see %s", managerStartTimeout, m.logPath)
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
func (m *manager) exited() error {
	select {
	case <-m.done:
		return fmt.Errorf("the manager exited: %v; see %s", m.err, m.logPath)
	default:
		return nil
	}
}

// kill ends the manager at once (nothing of its shutdown is measured) and waits until it is gone.
func (m *manager) kill() {
	if err := syscall.Kill(-m.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		progress("warning: killing the manager: %v", err)
	}
	<-m.done
}
