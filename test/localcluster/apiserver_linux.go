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

package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// StopAPIServer stops kube-apiserver at once (SIGKILL, as a crash or a lost machine would), and
// returns once it is gone: etcd and every other process of the cluster keep running, and clients
// see their connections refused until StartAPIServer. Not SIGTERM: kube-apiserver stops listening
// at once but then drains for longer than envtest waits, which would make the outage's length a
// matter of its shutdown.
func (c *Cluster) StopAPIServer() error {
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kube-apiserver (pid %d): %w", pid, err)
	}
	// envtest waits for its process: once it is reaped, its Stop only forgets it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver (pid %d) is still there 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// envtest notes the exit just after it reaped the process: until then its Stop would signal
	// the pid again, and fail.
	var err2 error
	for range 50 {
		if err2 = c.env.Environment().ControlPlane.APIServer.Stop(); err2 == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("stopping kube-apiserver: %w", err2)
}

// FreezeAPIServer stops kube-apiserver in place (SIGSTOP): its port still accepts connections and
// takes requests in, and nothing is answered until ThawAPIServer (SIGCONT), as a client sees a
// server that hangs. Requests sent meanwhile are served on thaw, if their client still waits.
func (c *Cluster) FreezeAPIServer() error { return c.signalAPIServer(syscall.SIGSTOP) }

// ThawAPIServer lets a frozen kube-apiserver run on (SIGCONT).
func (c *Cluster) ThawAPIServer() error { return c.signalAPIServer(syscall.SIGCONT) }

func (c *Cluster) signalAPIServer(sig syscall.Signal) error {
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("kube-apiserver (pid %d): %w", pid, err)
	}
	return nil
}

// apiServerPID finds this cluster's kube-apiserver among the machine's processes: envtest starts
// it and keeps its process to itself; the cluster's own certificate folder, in its arguments, tells
// it from another cluster's.
func (c *Cluster) apiServerPID() (int, error) {
	if c.env == nil {
		return 0, errors.New("the cluster is stopped")
	}
	want := []byte("--cert-dir=" + c.env.Environment().ControlPlane.APIServer.CertDir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		if len(args) > 1 && filepath.Base(string(args[0])) == "kube-apiserver" &&
			slices.ContainsFunc(args[1:], func(a []byte) bool { return bytes.Equal(a, want) }) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process with %s", want)
}
