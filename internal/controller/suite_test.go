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

package controller

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/metrics"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	// +kubebuilder:scaffold:imports
)

// The suite runs the real reconciler in a real manager against a real kube-apiserver and etcd
// (envtest), in the style of the kubebuilder cronjob tutorial: tests change the world through
// k8sClient and assert on it with Eventually. No controller-manager runs in envtest, so the tests
// play the workload controllers themselves (kubecontroller_test.go), which gives them exact control
// over instant, slow and stuck rollouts. The reconciler reads a fake clock, so TTL waits and
// deadlines pass when a test says so, not in real time.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	cfg       *rest.Config
	scheme    = runtime.NewScheme()
	k8sClient client.Client
	// managerClient is the running manager's client, whose reads come from its cache (and so
	// support its field indexes).
	managerClient client.Client
	// fakeClock is the reconciler's time; tests advance it (and then poke the keyring, see poke).
	fakeClock = clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// testMetrics is the reconciler's metrics recorder, on a registry of the suite's own.
	testMetrics     = metrics.New(fakeClock.Now)
	metricsRegistry = prometheus.NewPedanticRegistry()
	// logs receives everything the manager and the reconciler log, for the key-leak checks.
	logs = &syncBuffer{}

	// operator is the running manager, if any (startOperator / stopOperator).
	operator struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	// V(2) and below, so that debug lines are grepped for key bytes too.
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, logs)), zap.UseDevMode(true),
		zap.Level(zapcore.Level(-2))))
	ctx, cancel = context.WithCancel(context.Background())
	// Generous for a loaded 2-core machine; a passing Eventually returns as soon as it holds.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)

	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(mrtrv1alpha1.AddToScheme(scheme)).To(Succeed())
	Expect(workload.AddToScheme(scheme)).To(Succeed())
	// +kubebuilder:scaffold:scheme

	By("bootstrapping test environment")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// KUBEBUILDER_ASSETS comes from the Makefile (hack/build-controlplane.sh envtest prints it).
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run `make test`, or export KUBEBUILDER_ASSETS=$(hack/build-controlplane.sh envtest)")
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(metricsRegistry.Register(testMetrics)).To(Succeed())

	startOperator()
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	stopOperator()
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// startOperator starts a manager running the reconciler, as cmd/main.go does (minus metrics
// serving, probes and leader election).
func startOperator() {
	GinkgoHelper()
	Expect(operator.cancel).To(BeNil(), "the operator is already running")
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A restarted operator registers the same controller name again in this process.
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	Expect(err).NotTo(HaveOccurred())
	managerClient = mgr.GetClient()
	r := &MRTRKeyringReconciler{Client: managerClient, Clock: fakeClock, Metrics: testMetrics, ReadNodes: true, KindRecheck: time.Second}
	Expect(r.SetupWithManager(mgr)).To(Succeed())

	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed(), "failed to run manager")
	}()
	operator.cancel, operator.done = mcancel, done
}

// stopOperator stops the manager and waits until it has stopped, so that nothing it does can be
// mistaken for what the next one does.
func stopOperator() {
	GinkgoHelper()
	if operator.cancel == nil {
		return
	}
	operator.cancel()
	Eventually(operator.done).WithTimeout(30 * time.Second).Should(BeClosed())
	operator.cancel, operator.done = nil, nil
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of the manager's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
