//go:build unix

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
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// StopGrace is how long a process gets between SIGTERM and SIGKILL.
const StopGrace = 10 * time.Second

// DeathSignalSupported reports whether the children StartProcess starts die with this process even
// when it is killed with SIGKILL.
const DeathSignalSupported = deathSignalSupported

// Process is a child process that a test (or a tool such as the local cluster or the scale
// benchmark) started with StartProcess: the one launcher of them all, so that every child has its
// own process group, dies with its parent and logs to a file of its own.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	done chan struct{} // closed once cmd.Wait has returned
	err  error         // cmd.Wait's result; read only after done is closed

	stopOnce sync.Once
	stopping chan struct{} // closed when Stop begins, so an exit after it is not reported as a failure
}

// StartProcess starts cmd in its own process group with a parent-death signal, its output appended to
// logDir/<name>.log (and to whatever cmd.Stdout/Stderr already point at).
func StartProcess(name, logDir string, cmd *exec.Cmd) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	cmd.Stdout = teeTo(logFile, cmd.Stdout)
	cmd.Stderr = teeTo(logFile, cmd.Stderr)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{
		name: name, cmd: cmd, logPath: logPath, logFile: logFile,
		done: make(chan struct{}), stopping: make(chan struct{}),
	}
	go func() {
		p.err = cmd.Wait()
		_ = p.logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func teeTo(log *os.File, w io.Writer) io.Writer {
	if w == nil {
		return log
	}
	return io.MultiWriter(log, w)
}

// Name is the name the process was started under; its log is <LogDir>/<Name>.log.
func (p *Process) Name() string { return p.name }

// PID is the operating system's id of the process (and of its process group).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the file that receives the process's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed when the process has exited, for whatever reason.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is nil while the process runs and after Stop; otherwise it says how the process ended on its
// own (including a zero exit, which is unexpected for a server).
func (p *Process) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	select {
	case <-p.stopping:
		return nil
	default:
	}
	if p.err == nil {
		return fmt.Errorf("%s exited unexpectedly with status 0; see %s", p.name, p.logPath)
	}
	return fmt.Errorf("%s exited unexpectedly: %w; see %s", p.name, p.err, p.logPath)
}

// Stop sends SIGTERM to the process group, escalates to SIGKILL after a grace period, and returns
// once the process has been reaped. It is safe to call more than once and after the process exited.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { close(p.stopping) })
	select {
	case <-p.done:
		return nil
	default:
	}
	// A negative pid signals the whole group: whatever the process forked goes too.
	pgid := -p.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(StopGrace):
		if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("killing %s: %w", p.name, err)
		}
		<-p.done
	}
	// The leader is reaped; kill stragglers it may have left in its group.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	return nil
}

// Kill sends SIGKILL to the process group, the way a node failure or an OOM kill ends a process,
// and returns once the process has been reaped.
func (p *Process) Kill() error {
	p.stopOnce.Do(func() { close(p.stopping) })
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago, for a process to listen on.
// Another process may take it first; the one that then fails to bind says so in its log.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	// The port is only free for the caller once the listener is closed.
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}
