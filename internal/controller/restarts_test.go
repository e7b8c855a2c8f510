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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

var _ = Describe("restarts for missing acknowledgements (Reload delivery)", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
	})

	// node creates a Node whose Ready condition is ready, and returns a function that sets it.
	node := func(name string, ready corev1.ConditionStatus) func(corev1.ConditionStatus) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
		set := func(s corev1.ConditionStatus) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s, Reason: "Test",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
				g.Expect(k8sClient.Status().Update(ctx, n)).To(Succeed())
			}).Should(Succeed())
		}
		set(ready)
		return set
	}
	// onNode creates a consumer pod bound to a node: evicted, it stays terminating (no kubelet).
	onNode := func(name, nodeName string) *corev1.Pod {
		pod := createPodWith(ns, name, map[string]string{"app": "api"}, func(p *corev1.Pod) { p.Spec.NodeName = nodeName })
		return pod
	}
	available := func(d client.Object, n int32) {
		Eventually(func(g Gomega) {
			dep := d.(*appsv1.Deployment)
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
			dep.Status.AvailableReplicas, dep.Status.ReadyReplicas = n, n
			g.Expect(k8sClient.Status().Update(ctx, dep)).To(Succeed())
		}).Should(Succeed())
	}
	terminating := func(g Gomega, pod *corev1.Pod) bool {
		var got corev1.Pod
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &got)).To(Succeed())
		return got.DeletionTimestamp != nil
	}

	It("spares the pod of a node that is not Ready, paces the others to maxUnavailable, and suspects the path", func() {
		down := fmt.Sprintf("node-down-%s", ns)
		setDown := node(down, corev1.ConditionFalse)
		node(fmt.Sprintf("node-up-%s", ns), corev1.ConditionTrue)
		d := createWorkload(workload.Deployment, ns, "api", 3, nil) // maxUnavailable 25% of 3: one at a time
		pods := []*corev1.Pod{onNode("api-1", down), onNode("api-2", "node-up-"+ns), onNode("api-3", "node-up-"+ns)}
		available(d, 2) // api-1's node is down
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pods...)

		By("no pod acknowledges the next keyring within reloadDeadline: their path is cut")
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		advance(kr, testReloadDeadline)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.Workloads).To(HaveLen(1))
			g.Expect(st.Workloads[0].Message).To(ContainSubstring("not restarted while their node is not Ready: api-1 (node " + down + ")"))
			g.Expect(st.Workloads[0].Message).To(ContainSubstring(
				"restarts paced, at most 1 of its pods out of service at once (maxUnavailable), 1 now: waiting to restart api-2, api-3"))
			c := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionAcknowledgementPathSuspect)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(HavePrefix("3 of 3 pods did not acknowledge keyring "))
		}).Should(Succeed())
		for _, p := range pods {
			Expect(terminating(Default, p)).To(BeFalse(), "pod %s was evicted", p.Name)
		}

		By("the node comes back: one pod is restarted, and the next waits while it is out of service")
		setDown(corev1.ConditionTrue)
		available(d, 3)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.Workloads).To(HaveLen(1))
			g.Expect(terminating(g, pods[0])).To(BeTrue(), "api-1 not restarted; the keyring's workload reads: %s", st.Workloads[0].Message)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.Workloads[0].Message).To(ContainSubstring("1 now: waiting to restart api-2, api-3"))
		}).Should(Succeed())
		Expect(terminating(Default, pods[1]) || terminating(Default, pods[2])).To(BeFalse(), "two pods out of service at once")
	})
})
