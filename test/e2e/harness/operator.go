/*
Copyright 2026.

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
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// Operator runs the operator's manager binary as its own process against the cluster, as a Deployment
// would, and can kill it without warning to prove that a restart resumes where it was.
type Operator struct {
	Binary string
	Start  StartFunc
	// Name prefixes its processes' names (and log files): "operator" when empty.
	Name string
	// LeaseNamespace, when set, runs it with leader election, its Lease in that namespace: several
	// Operators then run at once and one leads.
	LeaseNamespace string

	proc  *localcluster.Process
	procs []*localcluster.Process // every run, for their logs
}

// Launch starts a new operator process; the previous one must have been stopped or killed.
func (o *Operator) Launch() error {
	if o.proc != nil {
		return fmt.Errorf("operator already running (pid %d)", o.proc.PID())
	}
	// No metrics, no probes (nothing scrapes them here).
	args := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false"}
	if o.LeaseNamespace != "" {
		args = append(args[:2], "--leader-elect", "--leader-election-namespace="+o.LeaseNamespace)
	}
	name := o.Name
	if name == "" {
		name = "operator"
	}
	p, err := o.Start(fmt.Sprintf("%s-%d", name, len(o.procs)+1), exec.Command(o.Binary, args...))
	if err != nil {
		return err
	}
	o.proc = p
	o.procs = append(o.procs, p)
	return nil
}

// Kill sends SIGKILL, the way a node failure or an OOM kill ends the operator, and waits until the
// process is gone.
func (o *Operator) Kill() error {
	if o.proc == nil {
		return fmt.Errorf("operator not running")
	}
	if err := syscall.Kill(o.proc.PID(), syscall.SIGKILL); err != nil {
		return err
	}
	<-o.proc.Done()
	o.proc = nil
	return nil
}

// Stop stops the running operator gracefully, if any.
func (o *Operator) Stop() error {
	if o.proc == nil {
		return nil
	}
	err := o.proc.Stop()
	o.proc = nil
	return err
}

// Err reports an operator that exited on its own.
func (o *Operator) Err() error {
	if o.proc == nil {
		return nil
	}
	return o.proc.Err()
}

// LogPaths are the logs of every run, oldest first.
func (o *Operator) LogPaths() []string {
	paths := make([]string, len(o.procs))
	for i, p := range o.procs {
		paths[i] = p.LogPath()
	}
	return paths
}

// Leads reports whether the running process has acquired the leader election Lease (it logs it).
func (o *Operator) Leads() bool {
	if o.proc == nil {
		return false
	}
	b, err := os.ReadFile(o.proc.LogPath())
	return err == nil && strings.Contains(string(b), "Successfully acquired lease")
}
