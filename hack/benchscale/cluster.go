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
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// managerProcess is the manager binary's name, and so its command name in cpuByProcess.
const managerProcess = "manager"

// buildManager builds the manager binary once for every size, as the image holds it, into a
// temporary folder that cleanup removes.
func buildManager(ctx context.Context) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "benchscale-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, managerProcess)
	progress("building the manager (go build -o %s %s)", bin, testenv.ManagerPackage)
	if err := testenv.Build(ctx, testenv.ManagerPackage, bin); err != nil {
		cleanup()
		return "", nil, err
	}
	return bin, cleanup, nil
}

// controlPlane is one envtest: a kube-apiserver and etcd with the CRDs installed, and an admin
// kubeconfig for the manager.
type controlPlane struct {
	env *testenv.Env
	// config is the harness's own: high QPS and burst, so that the harness's requests are never
	// throttled on the client side and the manager is the only thing that waits.
	config     *rest.Config
	kubeconfig string
}

// startControlPlane starts envtest with the CRDs and writes, into dir, a kubeconfig of a
// system:masters user for the manager (the RBAC of config/rbac is not what is measured here).
func startControlPlane(ctx context.Context, dir string) (*controlPlane, error) {
	env, err := testenv.Start(ctx, testenv.Options{CRDs: true})
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{env: env, kubeconfig: filepath.Join(dir, "manager.kubeconfig")}
	if err := env.WriteKubeconfig(cp.kubeconfig, "benchscale-manager"); err != nil {
		cp.stop()
		return nil, err
	}
	cp.config = harnessConfig(env)
	return cp, nil
}

// harnessConfig is the admin's config with a high QPS and burst, for the harness.
func harnessConfig(env *testenv.Env) *rest.Config {
	c := rest.CopyConfig(env.Config)
	c.QPS, c.Burst = 500, 1000
	return c
}

func (cp *controlPlane) stop() {
	if err := cp.env.Stop(); err != nil {
		progress("warning: stopping envtest: %v", err)
	}
}
