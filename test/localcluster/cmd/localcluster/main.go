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

// Command localcluster starts the local cluster of package localcluster, optionally runs a command
// against it (with KUBECONFIG set), prints how to reach it with kubectl, and stops everything on
// Ctrl-C or SIGTERM, or when the command exits. `make run-local` runs the manager this way.
//
//	localcluster [-crds DIR]... [-kubeconfig PATH] [-log-dir DIR] [-nodes N] [-node real|kwok] [-- COMMAND [ARG]...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts localcluster.Options
	var crds pathList
	var kubeconfig string
	// A flag set of our own: controller-runtime, imported through the package, registers a global
	// -kubeconfig flag of a different meaning.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.Var(&crds, "crds", "folder or file of CRDs to install (repeatable)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "also copy the admin kubeconfig to this path")
	fs.StringVar(&opts.LogDir, "log-dir", "", "folder for the components' logs (default: a temporary one)")
	fs.IntVar(&opts.Nodes, "nodes", 1, "number of simulated nodes (more than one asks for kwok)")
	fs.StringVar((*string)(&opts.Node), "node", "",
		"real or kwok (default: $"+localcluster.NodeEnv+", else real where this machine can run it)")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag
	opts.CRDDirectoryPaths = crds

	// Signals are caught from here on, so that Ctrl-C during a slow start still cleans up.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if opts.LogDir == "" {
		dir, err := os.MkdirTemp("", "localcluster-logs-")
		if err != nil {
			return err
		}
		opts.LogDir = dir
	}
	begin := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(startCtx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "localcluster: stopping")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster: stop:", err)
		}
	}()

	path := c.KubeconfigPath()
	if kubeconfig != "" {
		if err := copyFile(c.KubeconfigPath(), kubeconfig); err != nil {
			return err
		}
		if path, err = filepath.Abs(kubeconfig); err != nil {
			return err
		}
	}
	fmt.Printf(`localcluster: ready in %s, node(s) %s
  %s
  export KUBECONFIG=%s
  kubectl get nodes,pods -A
  logs: %s
`, time.Since(begin).Round(100*time.Millisecond), strings.Join(c.NodeNames(), ", "), c.NodeReason(), path, c.LogDir())

	var done <-chan struct{}
	var proc *testenv.Process
	if args := fs.Args(); len(args) > 0 {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if proc, err = c.StartProcess(filepath.Base(args[0]), cmd); err != nil {
			return err
		}
		fmt.Printf("localcluster: running %s (log also in %s)\n", strings.Join(args, " "), proc.LogPath())
		done = proc.Done()
	}
	fmt.Println("localcluster: press Ctrl-C to stop")

	select {
	case <-ctx.Done():
		return nil
	case <-done:
		return proc.Err()
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig to %s: %w", to, err)
	}
	return nil
}
