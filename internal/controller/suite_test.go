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
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/mrtr-dev/mrtr-operator/internal/members"
	"github.com/mrtr-dev/mrtr-operator/internal/metrics"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
	// +kubebuilder:scaffold:imports
)

// The suite runs the real reconciler in a real manager against a real kube-apiserver and etcd
// (envtest), in the style of the kubebuilder cronjob tutorial: tests change the world through
// k8sClient and assert on it with Eventually. No controller-manager runs in envtest, so the tests
// play the workload controllers themselves (internal/testworld), which gives them exact control
// over instant, slow and stuck rollouts. The reconciler reads a fake clock, so TTL waits and
// deadlines pass when a test says so, not in real time.

var (
	ctx       context.Context
	cancel    context.CancelFunc
	env       *testenv.Env
	cfg       *rest.Config
	k8sClient client.Client
	// managerClient is the running manager's client, whose reads come from its cache (and so
	// support its field indexes).
	managerClient client.Client
	// reconcilerClient is the reconcilers' client (NewClient over the running manager's).
	reconcilerClient client.Client
	// fakeClock is the reconciler's time; tests advance it (and then poke the keyring, see poke).
	fakeClock = clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// testMetrics is the reconciler's metrics recorder, on a registry of the suite's own.
	testMetrics     = metrics.New(fakeClock.Now)
	metricsRegistry = prometheus.NewPedanticRegistry()
	// logs receives everything the manager and the reconciler log, for the key-leak checks.
	logs = &syncBuffer{}

	// operator is the running manager, if any (startOperator / stopOperator).
	operator *testenv.Manager
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(func() { cancel() })
	env = testsuite.Start(ctx, testenv.Options{CRDs: true}, logs)
	cfg, k8sClient = env.Config, env.Client
	Expect(metricsRegistry.Register(testMetrics)).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterResourceNamespace}})).To(Succeed())
	startOperator()
	DeferCleanup(stopOperator)
})

// startOperator starts a manager running the reconciler, as cmd/main.go does (minus metrics
// serving, probes and leader election).
func startOperator() {
	GinkgoHelper()
	startOperatorWith(nil)
}

// startOperatorWith starts the operator with reg as its member registry (nil: none, so that a
// keyring with spec.members is left alone).
func startOperatorWith(reg *members.Registry) {
	GinkgoHelper()
	Expect(operator).To(BeNil(), "the operator is already running")
	// A restarted operator registers the same controller name again in this process.
	skip := true
	var err error
	operator, err = env.StartManager(ctx, ctrl.Options{Cache: CacheOptions(), Controller: config.Controller{SkipNameValidation: &skip}},
		func(mgr ctrl.Manager) error {
			c, err := NewClient(mgr)
			if err != nil {
				return err
			}
			reconcilerClient = c
			shared := &Shared{Client: c, Clock: fakeClock, Metrics: testMetrics, ReadNodes: true,
				ClusterKeyrings: clusterResourceNamespace}
			if err := (&MRTRKeyringReconciler{Shared: shared}).SetupWithManager(mgr); err != nil {
				return err
			}
			return (&ClusterMRTRKeyringReconciler{Shared: shared, Members: reg}).SetupWithManager(mgr)
		})
	Expect(err).NotTo(HaveOccurred())
	managerClient = operator.Client
}

// stopOperator stops the manager and waits until it has stopped, so that nothing it does can be
// mistaken for what the next one does.
func stopOperator() {
	GinkgoHelper()
	if operator == nil {
		return
	}
	Expect(operator.Stop()).To(Succeed(), "the manager failed")
	operator = nil
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
