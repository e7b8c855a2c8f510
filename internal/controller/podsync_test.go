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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

var _ = Describe("Reload delivery's pod annotation (reloadTrigger)", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
	})

	written := func(g Gomega, pod *corev1.Pod) string {
		var got corev1.Pod
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), &got)).To(Succeed())
		return got.Annotations[mrtrv1alpha1.WrittenAnnotation]
	}

	It("annotates each pod that must load a keyring with its fingerprint and the nudge's number, right after each Secret write", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		pods := []*corev1.Pod{createPod(ns, "api-1", map[string]string{"app": "api"}), createPod(ns, "api-2", map[string]string{"app": "api"})}
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pods...)
		acknowledgedSeen(kr, len(pods))

		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		var accepting string
		Eventually(func(g Gomega) { accepting = secretKeyring(g, ns, "payments").Fingerprint() }).Should(Succeed())
		for _, p := range pods {
			Eventually(func(g Gomega) { g.Expect(written(g, p)).To(Equal(accepting + "/1")) }).Should(Succeed(), "pod %s", p.Name)
		}

		By("the next write annotates them again, with its own fingerprint")
		acknowledgeAll(kr, pods...)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		var sealing string
		Eventually(func(g Gomega) { sealing = secretKeyring(g, ns, "payments").Fingerprint() }).Should(Succeed())
		Expect(sealing).NotTo(Equal(accepting))
		for _, p := range pods {
			Eventually(func(g Gomega) { g.Expect(written(g, p)).To(Equal(sealing + "/1")) }).Should(Succeed(), "pod %s", p.Name)
		}
	})

	It("changes a pod that already carries the value the nudge would write, so that its kubelet is woken", func() {
		d := createWorkload(workload.Deployment, ns, "api", 1, nil)
		pod := createPod(ns, "api-1", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pod)
		acknowledgedSeen(kr, 1)
		waitPastWrite(ns, "payments")

		By("someone who may patch pods presets the value of the nudge that the next write makes")
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "payments"}, &s)).To(Succeed())
		cur, err := keyring.Parse(s.Data[keyring.SecretDataKey])
		Expect(err).NotTo(HaveOccurred())
		extra, err := keyring.GenerateKey("by-hand", 32)
		Expect(err).NotTo(HaveOccurred())
		edited, err := keyring.New(append(cur.Keys(), extra)...)
		Expect(err).NotTo(HaveOccurred())
		preset := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.WrittenAnnotation, edited.Fingerprint()+"/1")
		Expect(k8sClient.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(preset)), client.FieldOwner("someone"))).To(Succeed())

		By("editing the Secret behind the operator's back, which it adopts and writes again")
		s.Data[keyring.SecretDataKey], err = keyring.Marshal(edited)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Update(ctx, &s)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(written(g, pod)).To(Equal(edited.Fingerprint() + "/2")) }).Should(Succeed())
	})

	It("nudges a pod only once it acknowledges the keyring Secret, as the admission policy admits", func() {
		d := createWorkload(workload.Deployment, ns, "api", 1, nil)
		pod := createPod(ns, "api-1", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		// The first write's pass ended with Stable: a nudge of it would have been written by then.
		Expect(written(Default, pod)).To(BeEmpty(), "a pod that acknowledged nothing was nudged (the policy refuses that)")

		By("the pod acknowledging the keyring: the next write nudges it")
		acknowledgeAll(kr, pod)
		acknowledgedSeen(kr, 1)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		fp := secretKeyring(Default, ns, "payments").Fingerprint()
		Eventually(func(g Gomega) { g.Expect(written(g, pod)).To(Equal(fp + "/1")) }).Should(Succeed())
	})

	It("nudges no pod that does not mount the keyring Secret as a volume", func() {
		d := createWorkload(workload.Deployment, ns, "api", 2, nil)
		// Sorted before api-1, so its nudge, if any, is tried before api-1's.
		envOnly := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-0", Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "payments"}}}}}}},
		}
		Expect(k8sClient.Create(ctx, envOnly)).To(Succeed())
		pod := createPod(ns, "api-1", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(d) }))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pod, envOnly)
		acknowledgedSeen(kr, 2)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		Eventually(func(g Gomega) { g.Expect(written(g, pod)).To(HaveSuffix("/1")) }).Should(Succeed())
		Expect(written(Default, envOnly)).To(BeEmpty())
	})

	It("writes nothing on pods with reloadTrigger None", func() {
		d := createWorkload(workload.Deployment, ns, "api", 1, nil)
		pod := createPod(ns, "api-1", map[string]string{"app": "api"})
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = targets(d)
			s.ReloadTrigger = mrtrv1alpha1.ReloadTriggerNone
		}))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pod)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		acknowledgeAll(kr, pod)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		Expect(written(Default, pod)).To(BeEmpty())
	})
})
