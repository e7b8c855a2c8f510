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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// In Reload delivery the tests play the pods with internal/testworld: envtest runs no kubelet, so a
// pod is an object that exists, and it acknowledges a keyring when the test has it write what the
// library's ack package writes. The workload controllers are still played by rollOut (its status
// counts the pods).

// reloading makes a keyring's spec Reload delivery with a short reload deadline.
func reloading(edit func(*mrtrv1alpha1.MRTRKeyringSpec)) func(*mrtrv1alpha1.MRTRKeyringSpec) {
	return func(s *mrtrv1alpha1.MRTRKeyringSpec) {
		s.Delivery = mrtrv1alpha1.DeliveryReload
		s.ReloadDeadline = metav1.Duration{Duration: testReloadDeadline}
		if edit != nil {
			edit(s)
		}
	}
}

const testReloadDeadline = time.Minute

// createPod creates a pod with labels that mounts the Secret payments, as a workload's controller
// or a user would.
func createPod(namespace, name string, labels map[string]string) *corev1.Pod {
	GinkgoHelper()
	return createPodWith(namespace, name, labels, nil)
}

// createPodWith is createPod with edit applied to the pod before it is created.
func createPodWith(namespace, name string, labels map[string]string, edit func(*corev1.Pod)) *corev1.Pod {
	GinkgoHelper()
	pod := testworld.NewPod(namespace, name, labels, "payments")
	if edit != nil {
		edit(pod)
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	return pod
}

// acknowledge has pod acknowledge that it loaded the keyring of fingerprint fp from Secret secret.
func acknowledge(pod *corev1.Pod, secret, fp string) {
	GinkgoHelper()
	Expect(testworld.Acknowledge(ctx, k8sClient, pod, secret, fp)).To(Succeed())
}

// acknowledgeAll makes every pod acknowledge the keyring the Secret holds now.
func acknowledgeAll(kr *mrtrv1alpha1.MRTRKeyring, pods ...*corev1.Pod) {
	GinkgoHelper()
	var fp string
	Eventually(func(g Gomega) { fp = secretKeyring(g, kr.Namespace, kr.EffectiveSecretName()).Fingerprint() }).Should(Succeed())
	for _, p := range pods {
		acknowledge(p, kr.EffectiveSecretName(), fp)
	}
}

// acknowledgedSeen waits until kr's status counts n pods that acknowledged its keyring: the
// operator has then read the acknowledgements, so a write that follows nudges those pods. Without
// it, a rotation requested at once may write the Secret from a cache that still lacks them, and
// rightly nudge nobody.
func acknowledgedSeen(kr *mrtrv1alpha1.MRTRKeyring, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(getKeyring(g, kr).Status.PodsAcknowledged).To(BeEquivalentTo(n))
	}).Should(Succeed())
}

// waitPastWrite waits until the API server's clock (this machine's) is a second past the operator's
// last write of the Secret: a pod created then started, for sure, with what the write held.
func waitPastWrite(namespace, name string) {
	GinkgoHelper()
	var s corev1.Secret
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)).To(Succeed())
	written := lastWrittenAt(&s)
	Expect(written.IsZero()).To(BeFalse(), "the operator never wrote Secret %s", name)
	Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).Should(BeTemporally(">", written))
}

// podUIDs reads the UIDs of the pods of namespace, by name.
func podUIDs(g Gomega, namespace string) map[string]types.UID {
	var list corev1.PodList
	g.Expect(k8sClient.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range list.Items {
		out[p.Name] = p.UID
	}
	return out
}

var _ = Describe("Reload delivery", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		// Reload deadlines count from the later of the phase's start (the reconciler's fake clock)
		// and the pod's creation (the API server's real one): keep the fake clock from running
		// behind, so that a deadline passes when a test advances past it.
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second)) // whole seconds, as status keeps time
		}
	})

	It("rotates without restarting anything: each phase waits until every pod acknowledged its keyring", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		pods := []*corev1.Pod{createPod(ns, "api-1", map[string]string{"app": "api"}), createPod(ns, "api-2", map[string]string{"app": "api"})}
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pods...)
		var before map[string]types.UID
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.PodCount).To(BeEquivalentTo(2))
			g.Expect(st.PodsAcknowledged).To(BeEquivalentTo(2))
			before = podUIDs(g, ns)
		}).Should(Succeed())

		By("Accepting waits for the last pod")
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		var accepting string
		Eventually(func(g Gomega) { accepting = secretKeyring(g, ns, "payments").Fingerprint() }).Should(Succeed())
		acknowledge(pods[0], "payments", accepting)
		Eventually(func(g Gomega) {
			w := getKeyring(g, kr).Status.Workloads[0]
			g.Expect(w.PodsAcknowledged).To(BeEquivalentTo(1))
			g.Expect(w.Laggards).To(Equal([]string{"api-2"}))
			g.Expect(condition(kr, mrtrv1alpha1.ConditionReconciling).Message).To(ContainSubstring("waiting for api-2"))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		acknowledge(pods[1], "payments", accepting)

		By("every later phase waits for both acknowledgements too")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeAll(kr, pods...)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseRemoving)
		acknowledgeAll(kr, pods...)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.RotationsCompleted).To(BeEquivalentTo(1))
			g.Expect(kr.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		}).Should(Succeed())

		By("nothing was restarted: the same pods, and a template never stamped")
		Expect(podUIDs(Default, ns)).To(Equal(before))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(workload.Fingerprint(d)).To(BeEmpty())
		Expect(getKeyring(Default, kr).Status.RestartedPods).To(BeEmpty())
	})

	It("restarts only the pod that does not acknowledge within reloadDeadline, then counts its replacement", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		good := createPod(ns, "api-good", map[string]string{"app": "api"})
		stuck := createPod(ns, "api-stuck", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, good, stuck)

		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		acknowledgeAll(kr, good)
		reconcileNow(kr)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stuck), &corev1.Pod{})).To(Succeed(), "evicted before its deadline")

		By("past the deadline the stuck pod is evicted, named in status and an event")
		advance(kr, testReloadDeadline)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(stuck), &corev1.Pod{}))
		}).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(good), &corev1.Pod{})).To(Succeed(), "the pod that acknowledged was restarted too")
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.RestartedPods).To(Equal([]string{"api-stuck"}))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring("api-stuck did not acknowledge keyring")))
			restarted, ok := metricValue(g, "mrtr_keyring_pods_restarted_total", kr, nil)
			g.Expect(ok).To(BeTrue())
			g.Expect(restarted).To(BeEquivalentTo(1))
			acked, _ := metricValue(g, "mrtr_keyring_pods_acknowledged", kr, nil)
			g.Expect(acked).To(BeEquivalentTo(1))
		}).Should(Succeed())

		By("its replacement started after the write: it runs the keyring without acknowledging")
		waitPastWrite(ns, "payments")
		createPod(ns, "api-new", map[string]string{"app": "api"})
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("takes as proof no acknowledgement written through pods/status or by another field manager, and says so", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		viaStatus := createPod(ns, "api-status", map[string]string{"app": "api"})
		viaKubectl := createPod(ns, "api-kubectl", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, viaStatus, viaKubectl)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		var accepting string
		Eventually(func(g Gomega) { accepting = secretKeyring(g, ns, "payments").Fingerprint() }).Should(Succeed())

		By("forging both acknowledgements: one through pods/status under the reporter's own name, one as kubectl")
		forged := ack.Patch("payments", accepting)
		Expect(k8sClient.Status().Patch(ctx, viaStatus, client.RawPatch(types.MergePatchType, forged),
			client.FieldOwner(ack.FieldManager))).To(Succeed())
		Expect(viaStatus.Annotations).To(HaveKeyWithValue(ack.AnnotationKey("payments"), accepting),
			"the API server dropped the annotation written through pods/status: the door this test closes is not open")
		Expect(k8sClient.Patch(ctx, viaKubectl, client.RawPatch(types.MergePatchType, forged),
			client.FieldOwner("kubectl-annotate"))).To(Succeed())

		By("neither counts: both pods lag, and a Warning event names each")
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.Workloads[0].Laggards).To(ConsistOf("api-kubectl", "api-status"))
			g.Expect(keyringEvents(g, kr)).To(ContainElements(
				ContainSubstring(`AcknowledgementRefused: pod api-status: its acknowledgement of keyring Secret payments is not taken as proof: `+
					`field manager "mrtr-ack" wrote it through pods/status, not through the Pod itself`),
				ContainSubstring(`AcknowledgementRefused: pod api-kubectl: its acknowledgement of keyring Secret payments is not taken as proof: `+
					`field manager "kubectl-annotate" wrote it, not the pod's reporter (mrtr-ack)`)))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		Expect(keyringEvents(Default, kr)).To(HaveEach(Not(ContainSubstring("api-status did not acknowledge"))),
			"the forged pod was restarted before its deadline")
		refusals := 0
		for _, e := range keyringEvents(Default, kr) {
			if strings.HasPrefix(e, mrtrv1alpha1.EventAcknowledgementRefused) {
				refusals++
			}
		}
		Expect(refusals).To(Equal(2), "a refusal is reported once, not once per pass")

		By("the pods' own acknowledgements, once the forged ones are gone, move the rotation on")
		for _, p := range []*corev1.Pod{viaStatus, viaKubectl} {
			remove := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, ack.AnnotationKey("payments"))
			Expect(k8sClient.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(remove)))).To(Succeed())
		}
		acknowledgeAll(kr, viaStatus, viaKubectl)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("waits for a replacement the cache has not shown yet: a partial view proves nothing", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		only := createPod(ns, "api-1", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		acknowledgeAll(kr, only)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.Workloads[0].Message).To(ContainSubstring("1 pods seen of the 2 it counts"))
		}).Should(Succeed())
		Expect(kr.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		second := createPod(ns, "api-2", map[string]string{"app": "api"})
		acknowledgeAll(kr, second)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("gates pods selected by label on their acknowledgement alone, and never restarts them", func() {
		bare := createPod(ns, "bare", map[string]string{"mcp": "payments"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"mcp": "payments"}}
		}))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		advance(kr, testReloadDeadline+time.Second)
		Eventually(func(g Gomega) {
			s := getKeyring(g, kr).Status.SelectedPods
			g.Expect(s).NotTo(BeNil())
			g.Expect(s.Laggards).To(Equal([]string{"bare"}))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(bare), &corev1.Pod{})).To(Succeed(), "a selected pod was evicted")
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		acknowledgeAll(kr, bare)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})
})
