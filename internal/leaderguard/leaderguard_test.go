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

package leaderguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const validity = 10 * time.Second

var leases atomic.Int32

// elect runs a client-go leader elector on lease until the returned stop is called, and waits until
// it leads. Its timings are controller-runtime's defaults; the elector keeps the real clock.
func elect(lease *Lease) (stop func()) {
	GinkgoHelper()
	leading := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lease, LeaseDuration: 15 * time.Second, RenewDeadline: validity, RetryPeriod: 2 * time.Second,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(leading) },
			OnStoppedLeading: func() {},
		},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(ctx)
	}()
	Eventually(leading).Should(BeClosed())
	return func() {
		cancel()
		Eventually(done).Should(BeClosed())
	}
}

func newLease(clock *clocktesting.FakeClock) *Lease {
	GinkgoHelper()
	lease, err := NewLease(cfg, LeaseConfig{Namespace: "default", Name: fmt.Sprintf("guard-%d", leases.Add(1)), Validity: validity, Clock: clock})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(lease.Close)
	return lease
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"v": "1"}}
}

// expectRefused asserts err is the guard's refusal, naming what it refused.
func expectRefused(err error, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(errors.Is(err, ErrNotLeader)).To(BeTrue(), "not the guard's refusal: %v", err)
	Expect(err.Error()).To(ContainSubstring(what))
}

var _ = Describe("the lease guard", func() {
	It("sends writes while the lease is held, and refuses every kind of write once it is not", func() {
		clock := clocktesting.NewFakeClock(time.Now())
		lease := newLease(clock)
		guarded := NewClient(k8sClient, lease.Session())
		stop := elect(lease)
		defer stop()

		By("holding the lease: writes reach the API server")
		held := configMap(fmt.Sprintf("held-%d", leases.Load()))
		Expect(guarded.Create(ctx, held)).To(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: held.Name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}}}
		Expect(guarded.Create(ctx, pod)).To(Succeed())

		By("past the validity since the last renewal, by the replica's clock (a paused process)")
		clock.Step(validity)
		_, err := lease.HeldUntil()
		expectRefused(err, "last renewed 10s ago, it counts as held for 10s")

		late := configMap(held.Name + "-late")
		expectRefused(guarded.Create(ctx, late), "not sending a create of *v1.ConfigMap default/"+late.Name)
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(late), &corev1.ConfigMap{}))).To(BeTrue())

		changed := held.DeepCopy()
		changed.Data["v"] = "2"
		expectRefused(guarded.Update(ctx, changed), "not sending an update")
		expectRefused(guarded.Patch(ctx, held.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"3"}}`))),
			"not sending a patch")
		expectRefused(guarded.Status().Update(ctx, pod.DeepCopy()), "not sending an update of status")
		expectRefused(guarded.SubResource("eviction").Create(ctx, pod.DeepCopy(),
			&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod.Name}}), "not sending a create of eviction")
		expectRefused(guarded.Delete(ctx, held.DeepCopy()), "not sending a delete")
		expectRefused(guarded.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("default")), "not sending a delete of every")

		By("none reached the API server; reads still pass")
		var now corev1.ConfigMap
		Expect(guarded.Get(ctx, client.ObjectKeyFromObject(held), &now)).To(Succeed())
		Expect(now.Data).To(Equal(map[string]string{"v": "1"}))
		Expect(guarded.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})).To(Succeed())

		By("the next renewal holds the lease again")
		Eventually(func() error { _, err := lease.HeldUntil(); return err }).Should(Succeed())
		Expect(guarded.Patch(ctx, held.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"4"}}`)))).To(Succeed())

		By("a new session (the next manager) leaves the old one's client refused, renewed or not")
		next := NewClient(k8sClient, lease.Session())
		expectRefused(guarded.Create(ctx, configMap(held.Name+"-old")), "the manager this client belongs to has stopped")
		Eventually(func() error { return next.Create(ctx, configMap(held.Name+"-next")) }).Should(Succeed())
		expectRefused(guarded.Create(ctx, configMap(held.Name+"-old")), "the manager this client belongs to has stopped")
	})

	It("refuses writes at once when the lease is released", func() {
		clock := clocktesting.NewFakeClock(time.Now())
		lease := newLease(clock)
		guarded := NewClient(k8sClient, lease.Session())
		stop := elect(lease)
		Expect(guarded.Create(ctx, configMap(fmt.Sprintf("released-%d", leases.Load())))).To(Succeed())
		stop() // ReleaseOnCancel: the elector writes an empty holder
		_, err := lease.HeldUntil()
		expectRefused(err, "does not hold the leader lease")
		expectRefused(guarded.Create(ctx, configMap(fmt.Sprintf("released-%d-late", leases.Load()))), "not sending a create")
	})

	It("writes its leader election events only while it holds the lease: never 'stopped leading'", func() {
		clock := clocktesting.NewFakeClock(time.Now())
		lease := newLease(clock)
		name := strings.TrimPrefix(lease.Describe(), "default/")
		stop := elect(lease)
		stop() // ReleaseOnCancel: the lease is released, then client-go records "stopped leading"

		By("leading again under the same identity: its second 'became leader' is recorded after 'stopped leading'")
		stop = elect(lease)
		defer stop()
		// One broadcaster writes a lease's events in the order recorded, and folds the second
		// "became leader" into the first (count 2): once it shows, "stopped leading" was handled.
		var list corev1.EventList
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.List(ctx, &list, client.InNamespace("default"))).To(Succeed())
			g.Expect(list.Items).To(ContainElement(And(
				HaveField("InvolvedObject.Name", name),
				HaveField("Message", lease.Identity()+" became leader"),
				HaveField("Count", BeNumerically("==", 2)))))
		}).Should(Succeed())
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name {
				Expect(e.Message).NotTo(ContainSubstring("stopped leading"), "a replica that did not hold the lease wrote an event")
			}
		}
	})

	It("abandons a write that waits past the lease's end", func() {
		clock := clocktesting.NewFakeClock(time.Now())
		lease := newLease(clock)
		stop := elect(lease)
		defer stop()
		until, err := lease.HeldUntil()
		Expect(err).NotTo(HaveOccurred())
		// The deadline is the lease's end by the replica's clock, given to the request's context.
		ctx, cancel, err := guard(ctx, lease, "a create", configMap("deadline"))
		Expect(err).NotTo(HaveOccurred())
		defer cancel()
		deadline, ok := ctx.Deadline()
		Expect(ok).To(BeTrue())
		Expect(deadline).To(Equal(until))
	})
})
