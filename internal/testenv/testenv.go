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

// Package testenv is the one way the tests start a real kube-apiserver and etcd (controller-runtime's
// envtest): with the CRDs, the consumers' admission policies and the operator's manager when a
// caller asks for them, under one timeout policy. The envtest suites, the local cluster and the
// scale benchmark all start theirs here, so that a change of how (a flag, a timeout, where the
// binaries come from) is made once. It is also the one build of the binaries they run (Build) and
// the one launcher of child processes (StartProcess). Ginkgo suites and Go tests start an Env
// through package testsuite.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// The timeout policy, for every suite: generous, because the tests share a loaded two-core machine,
// and free when things work, because a passing Eventually returns as soon as it holds.
const (
	// Timeout is Gomega's default Eventually timeout in every suite, and the longest a manager
	// takes to stop.
	Timeout = 60 * time.Second
	// PollingInterval is Gomega's default polling interval in every suite.
	PollingInterval = 20 * time.Millisecond
	// StartTimeout bounds the start (and the stop) of etcd and kube-apiserver; envtest's own
	// default of 20 s is too short on a loaded machine.
	StartTimeout = 2 * time.Minute
)

// Paths inside the repository.
const (
	// CRDDir holds the CRDs, as `make manifests` generates them.
	CRDDir = "config/crd/bases"
	// ConsumerPoliciesDir is the kustomization consumers install: the acknowledgement admission
	// policies and the role their pods are bound to.
	ConsumerPoliciesDir = "config/consumer"
	// marker is the file whose folder is the repository root.
	marker = "hack/build-controlplane.sh"
)

// Options say what an Env holds besides a bare API server.
type Options struct {
	// CRDs installs the CRDs of config/crd/bases.
	CRDs bool
	// AdmissionPolicies applies config/consumer (the acknowledgement admission policies) once the
	// API server runs. Env.Applied lists what it created.
	AdmissionPolicies bool
	// Scheme is the clients' scheme; nil means NewScheme's.
	Scheme *runtime.Scheme
	// BinDir is the folder with etcd and kube-apiserver; "" means $KUBEBUILDER_ASSETS.
	BinDir string
	// Configure, if set, adjusts the environment before it starts (the processes' binaries,
	// output and flags), for callers such as the local cluster that run more than an API server.
	Configure func(*envtest.Environment) error
}

// Env is a running API server.
type Env struct {
	// Config is the REST config of envtest's admin (a client certificate in system:masters).
	Config *rest.Config
	// Client is a direct (uncached) client as that admin, with Scheme.
	Client client.Client
	Scheme *runtime.Scheme
	// Root is the repository's root folder.
	Root string
	// Applied is what Options.AdmissionPolicies created, in order.
	Applied []*unstructured.Unstructured

	env *envtest.Environment
}

// ErrNoAssets says where envtest's binaries come from, for a caller that has none.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: envtest needs a folder with etcd and kube-apiserver; " +
	"run `make test`, or export KUBEBUILDER_ASSETS=$(make -s envtest-assets | tail -1)")

// Start starts etcd and kube-apiserver, installs what opts ask for, and returns once the API server
// serves them. On error, whatever it started is stopped.
func Start(ctx context.Context, opts Options) (e *Env, err error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		if binDir = os.Getenv("KUBEBUILDER_ASSETS"); binDir == "" {
			return nil, ErrNoAssets
		}
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(binDir, bin)); err != nil {
			return nil, fmt.Errorf("envtest's %s is missing from %s (KUBEBUILDER_ASSETS or Options.BinDir): "+
				"export KUBEBUILDER_ASSETS=$(make -s envtest-assets | tail -1): %w", bin, binDir, err)
		}
	}
	scheme := opts.Scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		ControlPlaneStartTimeout: StartTimeout,
		ControlPlaneStopTimeout:  StartTimeout,
		Scheme:                   scheme,
	}
	if opts.CRDs {
		env.CRDDirectoryPaths = []string{filepath.Join(root, CRDDir)}
		env.ErrorIfCRDPathMissing = true
	}
	if opts.Configure != nil {
		if err := opts.Configure(env); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest may have started etcd before kube-apiserver failed.
		return nil, errors.Join(fmt.Errorf("start etcd and kube-apiserver from %s: %w", binDir, err), env.Stop())
	}
	e = &Env{Config: cfg, Scheme: scheme, Root: root, env: env}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
			e = nil
		}
	}()
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return e, err
	}
	if opts.AdmissionPolicies {
		if e.Applied, err = ApplyKustomization(ctx, e.Client, filepath.Join(root, ConsumerPoliciesDir)); err != nil {
			return e, fmt.Errorf("apply %s: %w", ConsumerPoliciesDir, err)
		}
	}
	return e, nil
}

// Stop stops kube-apiserver and etcd, and removes their data.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	return e.env.Stop()
}

// Environment is the envtest environment, for what this package does not wrap (AddUser).
func (e *Env) Environment() *envtest.Environment { return e.env }

// WriteKubeconfig writes to path a kubeconfig of user, a new member of system:masters, as
// kubectl and the processes the tests start read one.
func (e *Env) WriteKubeconfig(path, user string) error {
	kubeconfig, err := e.Kubeconfig(user)
	if err != nil {
		return err
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}

// Kubeconfig is a kubeconfig of user, a new member of system:masters: the https server, its CA
// and the user's client certificate and key, all inline (what a member cluster's kubeconfig
// Secret must hold, see internal/members.RESTConfig).
func (e *Env) Kubeconfig(user string) ([]byte, error) {
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", user, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", user, err)
	}
	return kubeconfig, nil
}

// NewScheme holds client-go's types and mrtr.dev's, which is what the operator reads.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mrtrv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// The workload kinds of other API groups (an Argo Rollout), which the tests create typed.
	if err := workload.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// RepoRoot is the repository's root folder (the one with hack/build-controlplane.sh), found by
// walking up from the working directory, so that a test finds config/ from any package.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("no %s in %s or any parent folder; run from inside the repository", marker, wd)
		}
	}
}
