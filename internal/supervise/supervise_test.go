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

package supervise

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/controller"
	"github.com/mrtr-dev/mrtr-operator/internal/leaderguard"
)

// Short leader election timings, so that an outage loses the lease within seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// runs records each manager Run starts: when it started and stopped, and why it stopped.
type runs struct {
	mu      sync.Mutex
	started []time.Time
	stopped []error
}

func (r *runs) count() (started, stopped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started), len(r.stopped)
}

// recorded is a manager whose Start is recorded in runs.
type recorded struct {
	manager.Manager
	runs *runs
}

func (m recorded) Start(ctx context.Context) error {
	m.runs.mu.Lock()
	m.runs.started = append(m.runs.started, time.Now())
	m.runs.mu.Unlock()
	err := m.Manager.Start(ctx)
	m.runs.mu.Lock()
	m.runs.stopped = append(m.runs.stopped, err)
	m.runs.mu.Unlock()
	return err
}

// supervised runs the operator as cmd/main.go does (leader election with the lease guard, each
// manager built afresh), through config, until the spec ends.
func supervised(apiserver *rest.Config, lease string) *runs {
	GinkgoHelper()
	l, err := leaderguard.NewLease(apiserver, leaderguard.LeaseConfig{Namespace: "default", Name: lease, Validity: renewDeadline})
	Expect(err).NotTo(HaveOccurred())
	r := &runs{}
	build := func() (manager.Manager, error) {
		mgr, err := ctrl.NewManager(apiserver, ctrl.Options{
			Scheme:                              k8sClient.Scheme(),
			Cache:                               controller.CacheOptions(),
			Metrics:                             metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress:              "0",
			LeaderElection:                      true,
			LeaderElectionResourceLockInterface: l,
			LeaseDuration:                       new(leaseDuration),
			RenewDeadline:                       new(renewDeadline),
			RetryPeriod:                         new(retryPeriod),
			LeaderElectionReleaseOnCancel:       true,
			// Each run registers the same controller again, in the same process.
			Controller: config.Controller{SkipNameValidation: new(true)},
		})
		if err != nil {
			return nil, err
		}
		c, err := controller.NewClient(mgr) // as cmd/main.go: the lease guards its status writes too
		if err != nil {
			return nil, err
		}
		if err := (&controller.MRTRKeyringReconciler{Shared: &controller.Shared{
			Client: leaderguard.NewClient(c, l.Session()), APIReader: mgr.GetAPIReader(),
		}}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
		return recorded{Manager: mgr, runs: r}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: apiserver, Build: build, Log: GinkgoLogr}) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
		l.Close()
	})
	return r
}

// apiServerAddr is the host:port of envtest's API server.
func apiServerAddr() string {
	GinkgoHelper()
	u, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	return u.Host
}

// through is cfg, but reaching the API server through p.
func through(p *proxy) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + p.addr
	return c
}

var keyrings int

// createKeyring creates a keyring of its own namespace, with the API server's defaults and no
// workload: the operator's first write of its status is its phase.
func createKeyring() *mrtrv1alpha1.MRTRKeyring {
	GinkgoHelper()
	keyrings++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("supervise-%d", keyrings)}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "weather"}}
	Expect(k8sClient.Create(ctx, kr)).To(Succeed())
	return kr
}

// phaseWritten waits until kr has a phase, and returns when the test saw it.
func phaseWritten(kr *mrtrv1alpha1.MRTRKeyring) time.Time {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
		g.Expect(kr.Status.Phase).NotTo(BeEmpty())
	}).Should(Succeed())
	return time.Now()
}

var _ = Describe("Run", func() {
	It("waits for an API server that is away at start, instead of failing", func() {
		p := newProxy(apiServerAddr())
		p.Down()
		r := supervised(through(p), "at-start")
		kr := createKeyring()
		Consistently(func() int { started, _ := r.count(); return started }, 2*time.Second).Should(BeZero(),
			"a manager started while the API server was away")
		p.Up()
		back := time.Now()
		written := phaseWritten(kr)
		started, stopped := r.count()
		Expect(started).To(Equal(1))
		Expect(stopped).To(BeZero())
		AddReportEntry("from the API server's return to the first phase write, at start", written.Sub(back).Round(time.Millisecond))
	})

	It("after an outage that loses the lease, stops the manager and competes again in the process", func() {
		p := newProxy(apiServerAddr())
		r := supervised(through(p), "outage")
		phaseWritten(createKeyring())

		By("cutting the manager off from the API server past its renew deadline")
		p.Down()
		Eventually(func() int { _, stopped := r.count(); return stopped }).Should(Equal(1))
		r.mu.Lock()
		Expect(r.stopped[0]).To(MatchError(ContainSubstring("leader election lost")))
		r.mu.Unlock()
		kr := createKeyring() // written while the operator cannot see it

		By("the API server returns: the next manager leads and writes the new keyring's phase")
		p.Up()
		back := time.Now()
		written := phaseWritten(kr)
		started, stopped := r.count()
		Expect(started).To(Equal(2))
		Expect(stopped).To(Equal(1))
		AddReportEntry("from the API server's return to the next phase write, after a lost lease", written.Sub(back).Round(time.Millisecond))
		GinkgoWriter.Printf("from the API server's return to the next phase write: %v\n", written.Sub(back).Round(time.Millisecond))
	})
})
