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

package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/container"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// Operator runs the manager as one pod of the chart's Deployment would: the Deployment's flags,
// the chart's ServiceAccount mounted with the cluster's CA, and, when runc works here, the image
// itself under runc (uid 65532, read-only root, the mount at the standard path, the in-cluster
// environment); otherwise the binary as a process, speaking as the same ServiceAccount through a
// kubeconfig (Fallback says why). It can kill the manager without warning, to prove that a restart
// resumes where it was. Several Operators run at once elect one leader.
type Operator struct {
	// Binary is the static manager binary, Image the OCI layout and reference of the image made of
	// it; Image empty runs the binary.
	Binary string
	Image  Image
	Start  StartFunc
	// WorkDir receives the containers' bundles, LogDir their logs (processes log where Start puts them).
	WorkDir, LogDir string
	// Args are the chart's manager flags (managerArgs); each run gets listeners of its own.
	Args []string
	// ServiceAccountDir holds the chart's ServiceAccount token, ca.crt and namespace; Server is the
	// API server's URL.
	ServiceAccountDir, Server string
	// Name prefixes its runs' names (and log files): "operator" when empty.
	Name string
	// Fallback, when set, says why the binary runs instead of the image.
	Fallback string

	run  instance
	runs []instance // every run, for their logs
	// MetricsAddr is the running manager's metrics listener (HTTPS, authenticated by the API server).
	MetricsAddr string
}

// Image is an image in an OCI layout (Tar is not read here).
type Image = localcluster.Image

// instance is one run of the manager: a container or a process.
type instance interface {
	kill() error // SIGKILL, then wait until it is gone
	signal(sig syscall.Signal) error
	stop() error // SIGTERM, then wait
	exited() error
	LogPath() string
}

// Replica is another Operator like o (same image, flags and identity), named name: the second
// replica of the Deployment.
func (o *Operator) Replica(name string) *Operator {
	return &Operator{Binary: o.Binary, Image: o.Image, Start: o.Start, WorkDir: o.WorkDir, LogDir: o.LogDir, Args: o.Args,
		ServiceAccountDir: o.ServiceAccountDir, Server: o.Server, Name: name, Fallback: o.Fallback}
}

// Launch starts a new run; the previous one must have been stopped or killed.
func (o *Operator) Launch() error {
	if o.run != nil {
		return fmt.Errorf("operator %s already running", o.name())
	}
	metrics, err := testenv.FreePort()
	if err != nil {
		return err
	}
	probes, err := testenv.FreePort()
	if err != nil {
		return err
	}
	o.MetricsAddr = "127.0.0.1:" + strconv.Itoa(metrics)
	// The chart's flags, but listeners of its own: the runs share the host's network.
	args := withFlag(o.Args, "--metrics-bind-address", o.MetricsAddr)
	args = withFlag(args, "--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probes))
	name := fmt.Sprintf("%s-%d", o.name(), len(o.runs)+1)
	var run instance
	if o.Image.Layout != "" {
		run, err = o.runContainer(name, args)
	} else {
		run, err = o.runProcess(name, args)
	}
	if err != nil {
		return err
	}
	o.run = run
	o.runs = append(o.runs, run)
	return nil
}

func (o *Operator) runContainer(name string, args []string) (instance, error) {
	env, err := inClusterEnv(o.Server)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.WorkDir, name)
	c, err := container.Run(context.Background(), container.Spec{
		Layout: o.Image.Layout, Ref: o.Image.Ref, Args: args, Env: env, ReadOnlyRoot: true,
		Mounts:  []container.Mount{{Source: o.ServiceAccountDir, Destination: container.ServiceAccountDir, ReadOnly: true}},
		WorkDir: dir, LogPath: filepath.Join(o.LogDir, name+".log"), Name: name,
	})
	if err != nil {
		return nil, err
	}
	return containerRun{c}, nil
}

func (o *Operator) runProcess(name string, args []string) (instance, error) {
	kubeconfig, err := serviceAccountKubeconfig(o.Server, o.ServiceAccountDir)
	if err != nil {
		return nil, err
	}
	// A pod finds its namespace, where the Lease goes, in the mounted namespace file.
	cmd := exec.Command(o.Binary, append(args, "--leader-election-namespace="+OperatorNamespace)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p, err := o.Start(name, cmd)
	if err != nil {
		return nil, err
	}
	return processRun{p}, nil
}

// withFlag returns args with flag set to value, replacing any value the chart gave it.
func withFlag(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if a != flag && !strings.HasPrefix(a, flag+"=") {
			out = append(out, a)
		}
	}
	return append(out, flag+"="+value)
}

func (o *Operator) name() string {
	if o.Name == "" {
		return "operator"
	}
	return o.Name
}

// Kill sends SIGKILL, the way a node failure or an OOM kill ends the manager, and waits until it
// is gone.
func (o *Operator) Kill() error {
	if o.run == nil {
		return fmt.Errorf("operator %s not running", o.name())
	}
	err := o.run.kill()
	o.run = nil
	return err
}

// Stop stops the running manager gracefully, if any.
func (o *Operator) Stop() error {
	if o.run == nil {
		return nil
	}
	err := o.run.stop()
	o.run = nil
	return err
}

// Signal sends sig to the running manager: SIGSTOP and SIGCONT pause and resume it, as a frozen
// process or VM would be.
func (o *Operator) Signal(sig syscall.Signal) error {
	if o.run == nil {
		return fmt.Errorf("operator %s not running", o.name())
	}
	return o.run.signal(sig)
}

// Err reports a manager that exited on its own.
func (o *Operator) Err() error {
	if o.run == nil {
		return nil
	}
	return o.run.exited()
}

// LogPaths are the logs of every run, oldest first.
func (o *Operator) LogPaths() []string {
	paths := make([]string, len(o.runs))
	for i, r := range o.runs {
		paths[i] = r.LogPath()
	}
	return paths
}

// Leads reports whether the running manager has acquired the leader election Lease (it logs it).
func (o *Operator) Leads() bool {
	if o.run == nil {
		return false
	}
	b, err := os.ReadFile(o.run.LogPath())
	return err == nil && strings.Contains(strings.ToLower(string(b)), "successfully acquired lease")
}

type containerRun struct{ c *container.Container }

func (r containerRun) kill() error {
	if err := r.c.Kill(syscall.SIGKILL); err != nil {
		return err
	}
	<-r.c.Done()
	return r.c.Stop() // removes runc's state of the container
}

func (r containerRun) stop() error { return r.c.Stop() }

func (r containerRun) signal(sig syscall.Signal) error { return r.c.Kill(sig) }

func (r containerRun) exited() error {
	select {
	case <-r.c.Done():
		return r.c.Wait()
	default:
		return nil
	}
}

func (r containerRun) LogPath() string { return r.c.LogPath() }

type processRun struct{ p *testenv.Process }

func (r processRun) kill() error { return r.p.Kill() }

func (r processRun) stop() error     { return r.p.Stop() }
func (r processRun) exited() error   { return r.p.Err() }
func (r processRun) LogPath() string { return r.p.LogPath() }

func (r processRun) signal(sig syscall.Signal) error { return syscall.Kill(r.p.PID(), sig) }
