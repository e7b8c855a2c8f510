//go:build linux

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

// Package container runs an image of an OCI image layout (the manager's, from `make image`) under
// runc, for end-to-end tests that want the image itself rather than the binary: it reads the
// layout with go-containerregistry, unpacks the layers into a bundle (whiteouts applied, every
// write through an os.Root), writes the runtime config (see runtimeConfig) and runs `runc run` as a
// child process whose output goes to a log file.
//
//	c, err := container.Run(ctx, container.Spec{
//		Layout: "bin/image/oci", Ref: "controller:latest", WorkDir: t.TempDir(), ReadOnlyRoot: true,
//		Args:   []string{"--leader-elect=false"},
//		Env:    []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443"},
//		Mounts: []container.Mount{{Source: saDir, Destination: container.ServiceAccountDir, ReadOnly: true}},
//	})
//	defer c.Stop()
//
// runc needs root here. Available says, once, whether runc can run the image on this machine, and
// why not.
//
// No container outlives the test process: runc runs in its own process group with a parent-death
// signal, as test/localcluster's processes do, but SIGTERM rather than SIGKILL, because runc
// forwards the signals it receives to the container while a SIGKILL would end runc alone and leave
// the container running, reparented to PID 1. The signal comes when the OS thread that called Run
// ends, which Go does only for a goroutine that exits locked to its thread: do not call Run from one.
package container

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServiceAccountDir is where a kubelet mounts a pod's ServiceAccount token, ca.crt and namespace,
// and where client-go's in-cluster config reads them.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// stopGrace is how long a container gets between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// ErrUnavailable wraps every error that says runc cannot run containers on this machine (as opposed
// to an error in the Spec or the image).
var ErrUnavailable = errors.New("runc cannot run containers here")

// Spec is what to run and how.
type Spec struct {
	// Layout is an OCI image layout directory; Ref the org.opencontainers.image.ref.name of the
	// image in its index.json (make image: bin/image/oci and controller:latest).
	Layout, Ref string
	// Args follow the image's Entrypoint in place of its Cmd, as a pod's args do; nil keeps the Cmd.
	Args []string
	// Env adds to the image's environment; a variable it names replaces the image's.
	Env []string
	// User is "uid:gid"; empty runs the image's User (the manager's: 65532:65532).
	User string
	// Mounts are bind mounts of host paths; what they hold must be readable by User.
	Mounts []Mount
	// ReadOnlyRoot mounts the root filesystem read-only, as readOnlyRootFilesystem does.
	ReadOnlyRoot bool
	// WorkDir receives the bundle (the unpacked rootfs and config.json), runc's state and its log;
	// it is required (t.TempDir() will do) and must not hold an earlier container's.
	WorkDir string
	// LogPath receives the container's stdout and stderr; default WorkDir/<Name>.log.
	LogPath string
	// Name is the container's hostname and the start of its runc id; default "container".
	Name string
}

// Mount is a bind mount of the host's Source at the container's Destination.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
}

// Container is a container started by Run, until Stop.
type Container struct {
	id, runc, stateDir string
	logPath, runcLog   string
	pid                int
	cmd                *exec.Cmd

	done chan struct{} // closed once runc run has returned
	err  error         // its result; read only after done is closed

	stopOnce sync.Once
}

// Run unpacks the image and starts it under runc, returning once the container's process runs (or
// has already exited: Wait says how). ctx bounds the start only; Stop ends the container.
func Run(ctx context.Context, s Spec) (*Container, error) {
	runc, err := runcBinary()
	if err != nil {
		return nil, err
	}
	if s.Layout == "" || s.Ref == "" || s.WorkDir == "" {
		return nil, errors.New("container.Spec needs Layout, Ref and WorkDir")
	}
	if s.Name == "" {
		s.Name = "container"
	}
	if s.LogPath == "" {
		s.LogPath = filepath.Join(s.WorkDir, s.Name+".log")
	}
	img, err := openImage(s.Layout, s.Ref)
	if err != nil {
		return nil, err
	}
	cfg, err := runtimeConfig(s, img.config, s.Name)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", s.Name, err)
	}
	bundle := filepath.Join(s.WorkDir, "bundle")
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(rootfs)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("container %s: %s is not empty: one container per WorkDir", s.Name, rootfs)
	}
	if err := img.unpack(rootfs); err != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), raw, 0o644); err != nil {
		return nil, err
	}

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	c := &Container{
		id:       s.Name + "-" + hex.EncodeToString(suffix),
		runc:     runc,
		stateDir: filepath.Join(s.WorkDir, "runc-state"),
		logPath:  s.LogPath,
		runcLog:  filepath.Join(s.WorkDir, "runc.log"),
		done:     make(chan struct{}),
	}
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of container %s: %w", s.Name, err)
	}
	defer logFile.Close() //nolint:errcheck // runc holds its own copy of the descriptor
	pidFile := filepath.Join(s.WorkDir, "container.pid")
	// runc's own messages go to runc.log as JSON (Available reads its errors back); the container's
	// stdout and stderr are runc's, which it hands to the container as they are (no terminal).
	c.cmd = exec.Command(runc, "--root", c.stateDir, "--log", c.runcLog, "--log-format", "json",
		"run", "--bundle", bundle, "--pid-file", pidFile, c.id)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// Its own process group, so that a Ctrl-C in the terminal reaches the test alone; SIGTERM when
	// the thread that started it dies, which runc forwards to the container (see the package doc).
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting %s: %v", ErrUnavailable, runc, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()

	// runc writes the pid file (atomically) once the container's process runs.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			if c.pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				_ = c.Stop()
				return nil, fmt.Errorf("container %s: pid file %s: %w", c.id, pidFile, err)
			}
			return c, nil
		}
		select {
		case <-c.done:
			// It failed to start, or ran and exited already; Wait tells which.
			return c, nil
		case <-ctx.Done():
			_ = c.Stop()
			return nil, fmt.Errorf("container %s did not start: %w", c.id, ctx.Err())
		case <-tick.C:
		}
	}
}

// runcBinary finds runc and checks that it can be used as it is here: as root (rootless runc needs
// a setup this package does not make).
func runcBinary() (string, error) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return "", fmt.Errorf("%w: runc is not installed (Debian: apt-get install runc): %v", ErrUnavailable, err)
	}
	if uid := os.Geteuid(); uid != 0 {
		return "", fmt.Errorf("%w: this process runs as uid %d, and runc needs root "+
			"(rootless runc needs a setup this package does not make)", ErrUnavailable, uid)
	}
	return runc, nil
}

// ID is the container's runc id (`runc --root <WorkDir>/runc-state state <ID>`).
func (c *Container) ID() string { return c.id }

// PID is the host's id of the container's first process, 0 if it never ran.
func (c *Container) PID() int { return c.pid }

// LogPath is the file that receives the container's stdout and stderr.
func (c *Container) LogPath() string { return c.logPath }

// Done is closed when the container has exited, for whatever reason.
func (c *Container) Done() <-chan struct{} { return c.done }

// Wait waits for the container to exit and returns nil for a zero exit status; otherwise an error
// with the status (runc's own: 128+n for a signal n) and runc's error messages, if any.
func (c *Container) Wait() error {
	<-c.done
	if c.err == nil {
		return nil
	}
	if msgs := runcErrors(c.runcLog); len(msgs) > 0 {
		return fmt.Errorf("container %s: runc: %s (%w); see %s", c.id, strings.Join(msgs, "; "), c.err, c.logPath)
	}
	return fmt.Errorf("container %s exited: %w; see %s", c.id, c.err, c.logPath)
}

// Kill sends sig to the container's first process (runc kill): the whole container ends with it.
func (c *Container) Kill(sig syscall.Signal) error {
	return c.runcCommand("kill", c.id, strconv.Itoa(int(sig)))
}

// Stop sends SIGTERM, escalates to SIGKILL after a grace period, waits for runc to return and
// removes the container's runc state. It is safe to call more than once and after the container
// exited.
func (c *Container) Stop() error {
	var err error
	c.stopOnce.Do(func() { err = c.stop() })
	return err
}

func (c *Container) stop() error {
	select {
	case <-c.done:
	default:
		// runc forwards it to the container, even to one it is still creating.
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(stopGrace):
			// A SIGKILL is not forwarded (it would end runc alone): runc kill delivers it.
			if err := c.Kill(syscall.SIGKILL); err != nil {
				_ = c.cmd.Process.Kill()
			}
			<-c.done
		}
	}
	// runc run deletes the container when it returns; a runc that was killed leaves it (running,
	// even), and --force kills and deletes it. A container that is gone is no error.
	return c.runcCommand("delete", "--force", c.id)
}

func (c *Container) runcCommand(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.runc, append([]string{"--root", c.stateDir}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runcErrors reads the messages of runc's JSON log at level error.
func runcErrors(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close() //nolint:errcheck // read-only
	var msgs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct{ Level, Msg string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Level == "error" || line.Level == "fatal") {
			msgs = append(msgs, line.Msg)
		}
	}
	return msgs
}

var (
	probeMu sync.Mutex
	probed  = map[[2]string]error{}
)

// Available runs the image of layout and ref under runc once per process (its Entrypoint with
// --help, which must exit 0, as the manager does, on a read-only root as its own User) and returns
// nil if that worked. An error that wraps ErrUnavailable says why runc cannot run containers here
// (not installed, not root, or runc's own error: namespaces, cgroups, pivot_root, mounts, ...), so
// that a caller can fall back to running the binary and say why; any other error is about the
// image (not built, not in the layout, or its --help failing).
func Available(ctx context.Context, layout, ref string) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	key := [2]string{layout, ref}
	if err, ok := probed[key]; ok {
		return err
	}
	err := probe(ctx, layout, ref)
	if ctx.Err() == nil {
		probed[key] = err
	}
	return err
}

func probe(ctx context.Context, layout, ref string) error {
	dir, err := os.MkdirTemp("", "container-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // a temporary directory
	c, err := Run(ctx, Spec{Layout: layout, Ref: ref, Args: []string{"--help"}, ReadOnlyRoot: true, WorkDir: dir, Name: "probe"})
	if err != nil {
		return err
	}
	defer c.Stop() //nolint:errcheck // already exited, or the error below says why
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.err == nil {
		return nil
	}
	if msgs := runcErrors(c.runcLog); len(msgs) > 0 {
		return fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(msgs, "; "))
	}
	out, _ := os.ReadFile(c.logPath)
	return fmt.Errorf("image %s of %s: --help failed under runc (%v): %s", ref, layout, c.err, lastLines(string(out), 10))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
