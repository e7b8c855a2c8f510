//go:build e2e

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

// Package e2e runs the product end to end on a local cluster (test/localcluster): the operator as its
// own process, a Deployment of the example MCP server whose pods run as real processes, and real MCP
// clients doing MRTR round trips through a non-sticky balancer while the keyring rotates.
//
//	make test-e2e        (or: go test -tags e2e ./test/e2e/ -v -ginkgo.v)
package e2e

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	RunSpecs(t, "MRTR operator end-to-end suite")
}

// startStack is every spec container's set-up: it starts a stack (harness.Start) with opts, its
// progress in GinkgoWriter and its logs in $E2E_LOG_DIR when set, and stops it when the container
// (or the spec) that called it ends.
func startStack(ctx context.Context, opts harness.Options) *harness.Env {
	GinkgoHelper()
	if opts.LogDir == "" {
		opts.LogDir = os.Getenv("E2E_LOG_DIR")
	}
	if opts.Logf == nil {
		opts.Logf = func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) }
	}
	env, err := harness.Start(ctx, opts)
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	Expect(err).NotTo(HaveOccurred())
	return env
}

// requireRealNode fails the specs that need the real node (a kubelet with containerd) on a machine
// that cannot run one, saying why.
func requireRealNode() {
	GinkgoHelper()
	kind, reason, err := localcluster.ChooseNode(localcluster.NodeAuto, 1)
	Expect(err).NotTo(HaveOccurred())
	Expect(kind).To(Equal(localcluster.NodeReal), "these specs need the real node: %s", reason)
}
