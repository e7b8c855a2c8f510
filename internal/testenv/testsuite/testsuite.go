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

// Package testsuite starts a testenv.Env for a Ginkgo suite or a Go test, with the timeout policy
// and the logging every suite shares. It is apart from testenv so that the tools that start an
// Env (the local cluster, the scale benchmark, the demo) link neither Ginkgo nor package testing.
package testsuite

import (
	"context"
	"io"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// Start is a Ginkgo suite's set-up, called from its BeforeSuite: it logs to GinkgoWriter (and to
// logs, if given) down to V(2), so that debug lines are shown on a failure and can be grepped for
// key bytes, sets the timeout policy, and starts an Env that is stopped after the suite.
func Start(ctx context.Context, opts testenv.Options, logs ...io.Writer) *testenv.Env {
	ginkgo.GinkgoHelper()
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(append([]io.Writer{ginkgo.GinkgoWriter}, logs...)...)),
		zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	gomega.SetDefaultEventuallyTimeout(testenv.Timeout)
	gomega.SetDefaultEventuallyPollingInterval(testenv.PollingInterval)
	ginkgo.By("starting etcd and kube-apiserver (envtest)")
	e, err := testenv.Start(ctx, opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func() {
		ginkgo.By("stopping etcd and kube-apiserver")
		gomega.Expect(e.Stop()).To(gomega.Succeed())
	})
	return e
}

// ForTest starts an Env for one Go test and stops it when the test ends.
func ForTest(t testing.TB, opts testenv.Options) *testenv.Env {
	t.Helper()
	e, err := testenv.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	return e
}
