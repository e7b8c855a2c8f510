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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

var _ = Describe("A stamp another field manager puts back", func() {
	It("is not stamped again before a back-off, and the fight is reported naming the workload and the manager", func() {
		ns := newNamespace()
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		kr := createKeyring(ns, "gitops", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		old := settle(kr, []client.Object{web}).Fingerprint()
		requestRotation(kr, "go")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		target := getKeyring(Default, kr).Status.TargetFingerprint
		stamp := func(g Gomega) string { h, _ := stampOf(g, web); return h }
		Eventually(func(g Gomega) { g.Expect(stamp(g)).To(Equal(target)) }).Should(Succeed())

		// What a GitOps tool with the stamp in its source does on every sync.
		revert := func() {
			GinkgoHelper()
			patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, mrtrv1alpha1.FingerprintAnnotation, old)
			Expect(k8sClient.Patch(ctx, web, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("argocd-controller"))).To(Succeed())
		}
		reported := func(times int) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				msg := fmt.Sprintf(`Deployment/web: field manager "argocd-controller" put back the stamp the operator wrote (%d times)`, times)
				g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring(mrtrv1alpha1.EventStampReverted + ": " + msg)))
				c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStampReverted)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonRevertedByOtherManager))
				g.Expect(c.Message).To(ContainSubstring(msg))
			}).Should(Succeed())
		}

		By("the first revert: reported, and left alone")
		revert()
		reported(1)
		reconcileNow(kr)
		reconcileNow(kr)
		Expect(stamp(Default)).To(Equal(old), "stamped again within the back-off: a restart per sync")
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))

		By("after the back-off, stamped once more; the condition clears while the stamp holds")
		advance(kr, rotation.StampBackoff)
		Eventually(func(g Gomega) {
			g.Expect(stamp(g)).To(Equal(target))
			g.Expect(condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStampReverted).Type).To(BeEmpty())
		}).Should(Succeed())

		By("a second revert doubles the back-off")
		revert()
		reported(2)
		advance(kr, rotation.StampBackoff)
		reconcileNow(kr)
		Expect(stamp(Default)).To(Equal(old), "the second back-off is twice the first")
		advance(kr, rotation.StampBackoff+time.Second)
		Eventually(func(g Gomega) { g.Expect(stamp(g)).To(Equal(target)) }).Should(Succeed())

		By("the rotation goes on once the stamp holds and rolls out")
		rollOut(web, -1)
		Eventually(func(g Gomega) { g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil()) }).Should(Succeed())
		advance(kr, testGrace)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})
})
