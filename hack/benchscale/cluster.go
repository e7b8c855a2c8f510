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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// managerProcess is the manager binary's name, and so its command name in cpuByProcess.
const managerProcess = "manager"

// buildManager builds the manager binary once for every size, as `make build` would, into a
// temporary folder that cleanup removes.
func buildManager(ctx context.Context, root string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "benchscale-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, managerProcess)
	progress("building the manager (go build -o %s ./cmd)", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build ./cmd: %w", err)
	}
	return bin, cleanup, nil
}

// controlPlane is one envtest: a kube-apiserver and etcd with the CRDs installed, and an admin
// kubeconfig for the manager.
type controlPlane struct {
	env *envtest.Environment
	// config is the harness's own: high QPS and burst, so that the harness's requests are never
	// throttled on the client side and the manager is the only thing that waits.
	config     *rest.Config
	kubeconfig string
}

// startControlPlane starts envtest with the CRDs of config/crd/bases and writes, into dir, a
// kubeconfig of a system:masters user for the manager (the RBAC of config/rbac is not what is
// measured here).
func startControlPlane(root, dir string) (*controlPlane, error) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	cp := &controlPlane{env: env}
	user, err := env.AddUser(envtest.User{Name: "benchscale-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		cp.stop()
		return nil, fmt.Errorf("add the manager's user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		cp.stop()
		return nil, fmt.Errorf("the manager's kubeconfig: %w", err)
	}
	cp.kubeconfig = filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, kc, 0o600); err != nil {
		cp.stop()
		return nil, err
	}
	cp.config = rest.CopyConfig(cfg)
	cp.config.QPS, cp.config.Burst = 500, 1000
	return cp, nil
}

func (cp *controlPlane) stop() {
	if err := cp.env.Stop(); err != nil {
		progress("warning: stopping envtest: %v", err)
	}
}
