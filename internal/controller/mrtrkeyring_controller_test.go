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
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

var _ = Describe("MRTRKeyring controller", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })
	AfterEach(func() {
		if !CurrentSpecReport().Failed() {
			expectNoKeyBytes(ns)
		}
	})

	It("walks a full rotation phase by phase", func() {
		web := createWorkload(workload.Deployment, ns, "web", 3, nil)
		kr := createKeyring(ns, "payments", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })

		By("creating the Secret with one key and stamping the workload with its fingerprint")
		a := settle(kr, []client.Object{web})
		Expect(a.Len()).To(Equal(1))
		Expect(getKeyring(Default, kr).ManagedFields).To(ContainElement(And(
			HaveField("Manager", mrtrv1alpha1.FieldManager), HaveField("Subresource", "status"))),
			"status is written as the operator's field manager")
		Eventually(func(g Gomega) {
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("SecretCreated:")))
		}).Should(Succeed())

		b := walkRotation(kr, []client.Object{web}, a, "first", nil)
		Expect(b.Primary().ID()).NotTo(Equal(a.Primary().ID()))
		Eventually(func(g Gomega) {
			evs := keyringEvents(g, kr)
			g.Expect(evs).To(ContainElement(HavePrefix("RotationStarted:")))
			g.Expect(evs).To(ContainElement(HavePrefix("KeySealing:")))
			g.Expect(evs).To(ContainElement(HavePrefix("KeyRemoved:")))
			g.Expect(evs).To(ContainElement(HavePrefix("RotationCompleted:")))
		}).Should(Succeed())
		// One event per step that means something, not one per phase and detail: four per rotation.
		Expect(keyringEvents(Default, kr)).To(HaveLen(5), "SecretCreated and the rotation's four")

		By("re-applying the same rotation request does nothing (GitOps)")
		offset := len(logs.String())
		requestRotation(kr, "first")
		poke(kr)
		reconciledSince(offset, ns)
		k := getKeyring(Default, kr)
		Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		Expect(k.Status.RotationsCompleted).To(Equal(int64(1)))

		By("a new value requests the next rotation")
		c := walkRotation(kr, []client.Object{web}, b, "second", nil)

		By("each rotation's events are objects of their own, with their own key ids")
		Eventually(func(g Gomega) {
			evs := keyringEvents(g, kr)
			g.Expect(evs).To(HaveLen(9), "SecretCreated and each rotation's four")
			for _, k := range []*keyring.Keyring{b, c} {
				g.Expect(evs).To(ContainElement(And(HavePrefix("RotationStarted:"), ContainSubstring("created key "+k.Primary().ID()+","))))
			}
		}).Should(Succeed())
	})

	It("exposes the keyring's metrics and forgets them when the keyring is deleted", func() {
		web := createWorkload(workload.Deployment, ns, "web", 2, nil) // 2: walkRotation rolls one replica out first
		kr := createKeyring(ns, "measured", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})
		walkRotation(kr, []client.Object{web}, a, "measure", nil)

		Eventually(func(g Gomega) {
			v, ok := metricValue(g, "mrtr_keyring_phase", kr, map[string]string{"phase": "Stable"})
			g.Expect(ok).To(BeTrue())
			g.Expect(v).To(Equal(1.0))
			_, ok = metricValue(g, "mrtr_keyring_phase", kr, map[string]string{"phase": "Removing"})
			g.Expect(ok).To(BeFalse(), "one series, for the current phase")
			v, _ = metricValue(g, "mrtr_keyring_rotations_completed_total", kr, nil)
			g.Expect(v).To(Equal(1.0))
			next, ok := metricValue(g, "mrtr_keyring_next_rotation_timestamp_seconds", kr, nil)
			g.Expect(ok).To(BeTrue())
			g.Expect(next).To(BeNumerically("~", float64(fakeClock.Now().Add(testInterval).Unix()), 1))
			age, ok := metricValue(g, "mrtr_keyring_primary_key_age_seconds", kr, nil)
			g.Expect(ok).To(BeTrue())
			// The new key began to seal when SealingWithNew began (it was made earlier, when
			// Accepting began); since then the fake clock moved on by the TTL wait.
			g.Expect(age).To(BeNumerically("~", testTTLWait.Seconds(), 1))
			// Accepting, SealingWithNew and Removing each waited for a rollout (the histogram is over
			// all keyrings).
			var waits float64
			for _, p := range []string{"Accepting", "SealingWithNew", "Removing"} {
				n, _ := metricValue(g, "mrtr_keyring_rollout_wait_seconds", nil, map[string]string{"phase": p})
				waits += n
			}
			g.Expect(waits).To(BeNumerically(">=", 3))
		}).Should(Succeed())

		Expect(k8sClient.Delete(ctx, kr)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, m := range []string{"mrtr_keyring_phase", "mrtr_keyring_rotations_completed_total",
				"mrtr_keyring_primary_key_age_seconds", "mrtr_keyring_pods"} {
				_, ok := metricValue(g, m, kr, nil)
				g.Expect(ok).To(BeFalse(), "%s still has a series for the deleted keyring", m)
			}
		}).Should(Succeed())
	})

	It("resumes after the operator is stopped and started in every phase", func() {
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		kr := createKeyring(ns, "restarts", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})
		DeferCleanup(func() {
			if operator == nil {
				startOperator()
			}
		})

		restart := func(phase mrtrv1alpha1.Phase) {
			By("restarting the operator in " + string(phase))
			before := getKeyring(Default, kr).Status.DeepCopy()
			_, gen := stampOf(Default, web)
			secretFP := secretKeyring(Default, ns, kr.EffectiveSecretName()).Fingerprint()
			stopOperator()
			offset := len(logs.String())
			startOperator()
			poke(kr)
			reconciledSince(offset, ns)

			after := getKeyring(Default, kr).Status
			Expect(after.Phase).To(Equal(phase))
			Expect(after.PhaseStartedAt).To(Equal(before.PhaseStartedAt), "the phase's start is kept")
			Expect(after.TTLWaitUntil).To(Equal(before.TTLWaitUntil), "the TTL wait is not reset")
			Expect(after.RolledOutAt).To(Equal(before.RolledOutAt))
			Expect(after.TargetFingerprint).To(Equal(before.TargetFingerprint))
			Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Fingerprint()).To(Equal(secretFP))
			_, genAfter := stampOf(Default, web)
			Expect(genAfter).To(Equal(gen), "no second stamp: the pods are not restarted again")
		}
		walkRotation(kr, []client.Object{web}, a, "restart-me", restart)
	})

	It("resumes in the phase of a Secret write whose status update was lost", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "lost-status", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})
		DeferCleanup(func() {
			if operator == nil {
				startOperator()
			}
		})

		By("the operator stops right after writing the Accepting keyring, before writing status")
		stopOperator()
		ab, err := keyring.New(append(a.Keys(), keyringOf("k-resumed").Keys()...)...)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			var sec corev1.Secret
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kr.EffectiveSecretName()}, &sec)).To(Succeed())
			sec.Data = map[string][]byte{keyring.SecretDataKey: mustMarshal(ab)}
			sec.Annotations[mrtrv1alpha1.PhaseAnnotation] = string(mrtrv1alpha1.PhaseAccepting)
			sec.Annotations[mrtrv1alpha1.FingerprintAnnotation] = ab.Fingerprint()
			g.Expect(k8sClient.Update(ctx, &sec)).To(Succeed())
		}).Should(Succeed())
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))

		startOperator()
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(k.Status.SecretFingerprint).To(Equal(ab.Fingerprint()))
			g.Expect(secretKeyring(g, ns, kr.EffectiveSecretName()).Fingerprint()).To(Equal(ab.Fingerprint()))
			h, _ := stampOf(g, web)
			g.Expect(h).To(Equal(ab.Fingerprint()))
			evs := keyringEvents(g, kr)
			g.Expect(evs).To(ContainElement(HavePrefix("Resumed:")))
			g.Expect(evs).NotTo(ContainElement(HavePrefix("SecretChanged:")), "our own write is not a change behind our back")
		}).Should(Succeed())

		By("the resumed rotation goes on")
		rollOut(web, -1)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil())
		}).Should(Succeed())
		advance(kr, testGrace)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseSealingWithNew))
			g.Expect(secretKeyring(g, ns, kr.EffectiveSecretName()).Primary().ID()).To(Equal("k-resumed"))
		}).Should(Succeed())
	})

	It("rotates a Secret-only keyring (no targets) by waiting propagationDelay in each phase", func() {
		const propagation = 30 * time.Second
		kr := createKeyring(ns, "secret-only", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.PropagationDelay = metav1.Duration{Duration: propagation}
		})
		a := settle(kr, nil)
		phaseIs := func(want mrtrv1alpha1.Phase) *keyring.Keyring {
			GinkgoHelper()
			var cur *keyring.Keyring
			Eventually(func(g Gomega) {
				g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(want))
				cur = secretKeyring(g, ns, kr.EffectiveSecretName())
			}).Should(Succeed())
			return cur
		}

		requestRotation(kr, "go")
		ab := phaseIs(mrtrv1alpha1.PhaseAccepting)
		Expect(ab.Primary().ID()).To(Equal(a.Primary().ID()))
		offset := len(logs.String())
		advance(kr, propagation-time.Second)
		reconciledSince(offset, ns)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting), "the mounted copies may not have [A, B] yet")

		advance(kr, time.Second)
		ba := phaseIs(mrtrv1alpha1.PhaseSealingWithNew)
		Expect(ba.IDs()[1:]).To(Equal(a.IDs()))
		advance(kr, propagation)
		phaseIs(mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait)
		b := phaseIs(mrtrv1alpha1.PhaseRemoving)
		Expect(b.IDs()).To(Equal([]string{ba.Primary().ID()}))
		advance(kr, propagation)
		phaseIs(mrtrv1alpha1.PhaseStable)
		Expect(getKeyring(Default, kr).Status.RotationsCompleted).To(Equal(int64(1)))
	})

	It("extends a TTL wait under way when tokenTTL is raised, and never shortens one", func() {
		const propagation = 30 * time.Second
		kr := createKeyring(ns, "ttl-raised", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.PropagationDelay = metav1.Duration{Duration: propagation}
		})
		settle(kr, nil)
		requestRotation(kr, "go")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		advance(kr, propagation)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		advance(kr, propagation)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
		until := getKeyring(Default, kr).Status.TTLWaitUntil.Time

		By("raising tokenTTL by ten minutes moves the end of the wait ten minutes later")
		const raise = 10 * time.Minute
		patch := fmt.Sprintf(`{"spec":{"tokenTTL":%q}}`, (testTokenTTL + raise).String())
		Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.TTLWaitUntil.Time).To(BeTemporally("==", until.Add(raise)))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("TTLWaitExtended: ")))
			// The servers learn the new lifetime from the Secret, beside keyring.json.
			var sec corev1.Secret
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kr.EffectiveSecretName()}, &sec)).To(Succeed())
			g.Expect(string(sec.Data[keyring.TokenTTLDataKey])).To(Equal("660"))
		}).Should(Succeed())

		By("lowering it back does not shorten the wait: the old key stays until the longer deadline")
		patch = fmt.Sprintf(`{"spec":{"tokenTTL":%q}}`, testTokenTTL.String())
		Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
		offset := len(logs.String())
		advance(kr, testTTLWait)
		reconciledSince(offset, ns)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL), "removed at the old deadline")
		advance(kr, raise)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseRemoving)
	})

	It("does not rotate again for a rotate value a deleted keyring of the same Secret handled", func() {
		const propagation = 30 * time.Second
		spec := func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.PropagationDelay = metav1.Duration{Duration: propagation} }
		kr := createKeyring(ns, "recreated", spec)
		settle(kr, nil)
		requestRotation(kr, "r1")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		for _, next := range []mrtrv1alpha1.Phase{mrtrv1alpha1.PhaseSealingWithNew, mrtrv1alpha1.PhaseWaitingTTL} {
			advance(kr, propagation)
			eventuallyInPhase(kr, next)
		}
		advance(kr, testTTLWait)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseRemoving)
		advance(kr, propagation)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		rotated := secretKeyring(Default, ns, kr.EffectiveSecretName())

		By("deleting the keyring, then creating it again with the same annotation")
		Expect(k8sClient.Delete(ctx, kr)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), &mrtrv1alpha1.MRTRKeyring{}))
		}).Should(BeTrue())
		again := newKeyring(ns, "recreated", spec)
		again.Annotations = map[string]string{mrtrv1alpha1.RotateAnnotation: "r1"}
		Expect(k8sClient.Create(ctx, again)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, again))).To(Succeed()) })
		// It resumes in the phase of the last Secret write, Removing, which finishes as before.
		eventuallyInPhase(again, mrtrv1alpha1.PhaseRemoving)
		advance(again, propagation)
		eventuallyInPhase(again, mrtrv1alpha1.PhaseStable)
		reconcileNow(again)
		Expect(getKeyring(Default, again).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable), "r1 was handled for this Secret")
		Expect(secretKeyring(Default, ns, again.EffectiveSecretName()).Fingerprint()).To(Equal(rotated.Fingerprint()))
	})

	It("reschedules the next rotation at once when rotationInterval is shortened", func() {
		kr := createKeyring(ns, "interval-shortened", nil) // 24h
		settle(kr, nil)
		patch := `{"spec":{"rotationInterval":"1h"}}`
		Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.NextRotationTime.Time).To(BeTemporally("==", k.Status.Keys[0].CreatedAt.Add(time.Hour)))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("RotationRescheduled: ")))
		}).Should(Succeed())
		advance(kr, time.Hour)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
	})

	It("warns that each restart of a Deployment with strategy Recreate is an outage", func() {
		obj := newWorkload(workload.Deployment, ns, "recreate", 2, nil)
		obj.(*appsv1.Deployment).Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		rollOut(obj, -1)
		kr := createKeyring(ns, "outage", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(obj) })
		settle(kr, []client.Object{obj})
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Message).To(ContainSubstring("every restart is an outage for Deployment/recreate"))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("RestartIsOutage: ")))
		}).Should(Succeed())
	})

	It("keeps status within its limits and rotates with more selected workloads than status lists", func() {
		const n = 260 // more than status.workloads may hold (256)
		sel := map[string]string{"tier": "many"}
		ws := make([]client.Object, n)
		for i := range ws {
			ws[i] = createWorkload(workload.Deployment, ns, fmt.Sprintf("mcp-%03d", i), 1, sel)
		}
		kr := createKeyring(ns, "hundreds", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.WorkloadSelector = &metav1.LabelSelector{MatchLabels: sel}
		})
		a := settle(kr, ws)
		requestRotation(kr, "many")
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(k.Status.WorkloadCount).To(BeEquivalentTo(n))
			g.Expect(k.Status.WorkloadsUpToDate).To(BeZero(), "none has rolled out [A, B] yet")
			g.Expect(k.Status.Workloads).To(HaveLen(rotation.MaxListedWorkloads))
			g.Expect(condition(k, mrtrv1alpha1.ConditionReconciling).Message).To(ContainSubstring(fmt.Sprintf("and %d more", n-10)))
		}).Should(Succeed())
		ab := secretKeyring(Default, ns, kr.EffectiveSecretName())
		Expect(ab.Primary().ID()).To(Equal(a.Primary().ID()))
		for _, w := range ws {
			Eventually(func(g Gomega) { h, _ := stampOf(g, w); g.Expect(h).To(Equal(ab.Fingerprint())) }).Should(Succeed())
			rollOut(w, -1)
		}
		Eventually(func(g Gomega) { g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil()) }).Should(Succeed())
		advance(kr, testGrace) // the replaced pods stop
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("never fights over a workload: a second keyring targeting it stalls on a Conflict until the first is gone", func() {
		web := createWorkload(workload.Deployment, ns, "shared", 2, nil)
		first := createKeyring(ns, "first", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(first, []client.Object{web})
		_, gen := stampOf(Default, web)

		second := createKeyring(ns, "second", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		eventuallyInConflict(second, "Deployment/shared (MRTRKeyring first)")
		reconcileNow(second)
		h, after := stampOf(Default, web)
		Expect(h).To(Equal(a.Fingerprint()), "the first keyring's stamp stays")
		Expect(after).To(Equal(gen), "no second stamp: no restart")

		By("deleting the first keyring, the second takes the workload over")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		settle(second, []client.Object{web})
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(web), &d)).To(Succeed())
			g.Expect(d.Annotations).To(HaveKeyWithValue(mrtrv1alpha1.StampedByAnnotation, "second"))
		}).Should(Succeed())
	})

	It("gives a workload that its owner lets two keyrings share one stamp per keyring", func() {
		obj := newWorkload(workload.Deployment, ns, "both", 2, nil)
		obj.SetAnnotations(map[string]string{mrtrv1alpha1.SharedByAnnotation: "first, second"})
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		rollOut(obj, -1)
		first := createKeyring(ns, "first", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(obj) })
		second := createKeyring(ns, "second", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(obj) })
		stamps := func(g Gomega) (string, string) {
			var d appsv1.Deployment
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), &d)).To(Succeed())
			return d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation], d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotationPrefix+"second"]
		}
		var a, b string
		Eventually(func(g Gomega) {
			a, b = secretKeyring(g, ns, "first").Fingerprint(), secretKeyring(g, ns, "second").Fingerprint()
			fa, fb := stamps(g)
			g.Expect(fa).To(Equal(a))
			g.Expect(fb).To(Equal(b))
		}).Should(Succeed())
		rollOut(obj, -1)
		for _, kr := range []*mrtrv1alpha1.MRTRKeyring{first, second} {
			Eventually(func(g Gomega) {
				k := getKeyring(g, kr)
				g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%s: %+v", kr.Name, k.Status.Conditions)
			}).Should(Succeed())
		}

		By("a rotation of one keyring changes its own stamp only")
		requestRotation(second, "go")
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, second).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			fa, fb := stamps(g)
			g.Expect(fa).To(Equal(a))
			g.Expect(fb).To(Equal(secretKeyring(g, ns, "second").Fingerprint()))
			g.Expect(fb).NotTo(Equal(b))
		}).Should(Succeed())
	})

	It("never fights over a Secret: a second keyring with the same secretName stalls on a Conflict and writes nothing", func() {
		first := createKeyring(ns, "first", nil)
		a := settle(first, nil)
		second := createKeyring(ns, "second", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = first.Name })
		requestRotation(second, "go")
		eventuallyInConflict(second, "belongs to MRTRKeyring first")
		reconcileNow(second)
		Expect(secretKeyring(Default, ns, first.Name).Fingerprint()).To(Equal(a.Fingerprint()), "the Secret is untouched")
		Expect(getKeyring(Default, first).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))

		By("deleting the first keyring, the second takes the Secret over, as it is")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(func(g Gomega) {
			k := getKeyring(g, second)
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(k.Status.Keys[0].ID).To(Equal(a.Primary().ID()), "the keys are kept")
		}).Should(Succeed())
	})

	It("rolls out to every workload whose pod template references the Secret, listed or not", func() {
		kr := createKeyring(ns, "consumed", nil) // names no workload
		a := settle(kr, nil)
		obj, err := testworld.Workload{Kind: workload.Deployment, Namespace: ns, Name: "unlisted", Replicas: 2,
			Secret: kr.EffectiveSecretName()}.New()
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		rollOut(obj, -1)
		// The new consumer is stamped with the keyring in service, and gated from then on.
		settle(kr, []client.Object{obj})
		walkRotation(kr, []client.Object{obj}, a, "consumers", nil)
	})

	It("rotates several workloads of all three kinds, named and selected", func() {
		mcp := map[string]string{"tier": "mcp"}
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		db := createWorkload(workload.StatefulSet, ns, "db", 3, mcp)
		agent := createWorkload(workload.DaemonSet, ns, "agent", 0, mcp)
		api := createWorkload(workload.Deployment, ns, "api", 2, mcp)
		other := createWorkload(workload.Deployment, ns, "other", 1, map[string]string{"tier": "web"})
		kr := createKeyring(ns, "many", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = targets(web, api) // api is both named and selected
			s.WorkloadSelector = &metav1.LabelSelector{MatchLabels: mcp}
		})
		ws := []client.Object{db, web, agent, api}
		a := settle(kr, ws)
		Expect(getKeyring(Default, kr).Status.Workloads).To(HaveLen(4), "each target once")
		walkRotation(kr, ws, a, "all-kinds", nil)
		notStamped(other)
	})

	It("reports a stalled rollout naming the workload, and resumes when it completes", func() {
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		kr := createKeyring(ns, "stall", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})

		requestRotation(kr, "go")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		stallDeployment(kr, web.(*appsv1.Deployment))

		By("past spec.rolloutDeadline the keyring is Stalled and does not advance")
		advance(kr, testRolloutWait+time.Second)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			st := condition(k, mrtrv1alpha1.ConditionStalled)
			g.Expect(st.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(st.Reason).To(Equal(mrtrv1alpha1.ReasonRolloutDeadlineExceeded))
			g.Expect(st.Message).To(ContainSubstring("Deployment/web"))
			g.Expect(k.Status.Workloads).To(HaveLen(1))
			g.Expect(k.Status.Workloads[0].Message).To(ContainSubstring("exceeded its progress deadline"))
			g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(secretKeyring(g, ns, kr.EffectiveSecretName()).Primary().ID()).To(Equal(a.Primary().ID()))
			failed, _ := metricValue(g, "mrtr_keyring_rotations_failed_total", kr,
				map[string]string{"reason": mrtrv1alpha1.ReasonRolloutDeadlineExceeded})
			g.Expect(failed).To(Equal(1.0))
		}).Should(Succeed())

		By("the rollout completes: the stall clears and the rotation goes on by itself")
		rollOut(web, -1)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).NotTo(Equal(metav1.ConditionTrue))
			g.Expect(k.Status.RolledOutAt).NotTo(BeNil())
		}).Should(Succeed())
		advance(kr, testGrace)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("does not leave Accepting while a named workload is missing", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "missing", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = append(targets(web), mrtrv1alpha1.WorkloadReference{Kind: mrtrv1alpha1.KindStatefulSet, Name: "late"})
		})
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			r := condition(k, mrtrv1alpha1.ConditionReady)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(mrtrv1alpha1.ReasonWorkloadNotFound))
			g.Expect(r.Message).To(ContainSubstring("StatefulSet/late"))
		}).Should(Succeed())
		a := secretKeyringEventually(ns, kr.EffectiveSecretName())
		rollOut(web, -1)

		requestRotation(kr, "go")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		rollOutTarget(kr, web)
		advance(kr, testGrace)
		offset := len(logs.String())
		advance(kr, testGrace)
		reconciledSince(offset, ns)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Primary().ID()).To(Equal(a.Primary().ID()))

		By("the workload appears and rolls out: the rotation goes on")
		late := createWorkload(workload.StatefulSet, ns, "late", 1, nil)
		Eventually(func(g Gomega) {
			h, _ := stampOf(g, late)
			g.Expect(h).To(Equal(getKeyring(g, kr).Status.TargetFingerprint))
		}).Should(Succeed())
		rollOut(late, -1)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil())
		}).Should(Succeed())
		advance(kr, testGrace)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
	})

	It("starts no rotation while suspended, and finishes one already under way", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "suspended", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = targets(web)
			s.Suspend = true
		})
		a := settle(kr, []client.Object{web})

		By("neither a request nor a due interval starts one")
		offset := len(logs.String())
		requestRotation(kr, "now")
		fakeClock.Step(testInterval + time.Minute)
		poke(kr)
		reconciledSince(offset, ns)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Fingerprint()).To(Equal(a.Fingerprint()))

		By("resumed, the rotation starts; suspended again halfway, it still finishes")
		setSuspend(kr, false)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		setSuspend(kr, true)
		rollOutTarget(kr, web)
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil())
		}).Should(Succeed())
		advance(kr, testGrace)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		rollOutTarget(kr, web)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseRemoving)
		rollOutTarget(kr, web)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(k.Status.RotationsCompleted).To(Equal(int64(1)))
		}).Should(Succeed())
	})

	It("adopts an existing valid Secret without changing its keys, and retires them at the next rotation", func() {
		old := keyringOf("handmade-1", "handmade-2")
		// Made with kubectl apply: its last-applied-configuration annotation repeats the keys.
		handmade := corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adopted"},
			Type:       keyring.SecretType,
			Data:       map[string][]byte{keyring.SecretDataKey: mustMarshal(old)},
		}
		applied, err := json.Marshal(handmade)
		Expect(err).NotTo(HaveOccurred())
		handmade.Annotations = map[string]string{lastAppliedAnnotation: string(applied), "team": "payments"}
		Expect(k8sClient.Create(ctx, &handmade)).To(Succeed())
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		kr := createKeyring(ns, "adopter", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.SecretName = "adopted"
			s.Workloads = targets(web)
		})
		a := settle(kr, []client.Object{web})
		Expect(a.Fingerprint()).To(Equal(old.Fingerprint()), "the adopted keys are kept as they are")
		k := getKeyring(Default, kr)
		Expect(k.Status.Keys).To(HaveLen(2))
		Expect(k.Status.Keys[0].Role).To(Equal(mrtrv1alpha1.KeyPrimary))
		Expect(k.Status.Keys[1].Role).To(Equal(mrtrv1alpha1.KeyRetiring))
		for i, key := range old.Keys() {
			Expect(k.Status.Keys[i].PythonKid).To(Equal(key.PythonKid()), "status names the kid python-sdk tokens of %s carry", key.ID())
		}
		Eventually(func(g Gomega) {
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("SecretAdopted:")))
		}).Should(Succeed())

		walkRotation(kr, []client.Object{web}, a, "take-over", nil)

		By("the retired keys are gone from the whole Secret, kubectl's copy of them included")
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "adopted"}, &s)).To(Succeed())
		Expect(s.Annotations).NotTo(HaveKey(lastAppliedAnnotation))
		Expect(s.Annotations).To(HaveKeyWithValue("team", "payments"), "the user's other annotations are kept")
		served, err := json.Marshal(s)
		Expect(err).NotTo(HaveOccurred())
		for _, k := range old.Keys() {
			Expect(string(served)).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString(k.Secret())), "key %s", k.ID())
		}
	})

	DescribeTable("refuses a Secret that holds something else, and never overwrites it",
		func(secretType corev1.SecretType, data []byte, reason string) {
			createSecret(ns, "foreign", secretType, data)
			web := createWorkload(workload.Deployment, ns, "web", 1, nil)
			kr := createKeyring(ns, "refuser", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
				s.SecretName = "foreign"
				s.Workloads = targets(web)
			})
			Eventually(func(g Gomega) {
				k := getKeyring(g, kr)
				st := condition(k, mrtrv1alpha1.ConditionStalled)
				g.Expect(st.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(st.Reason).To(Equal(reason))
				g.Expect(st.Message).To(ContainSubstring("foreign"))
				g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			}).Should(Succeed())
			var s corev1.Secret
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "foreign"}, &s)).To(Succeed())
			Expect(s.Data[keyring.SecretDataKey]).To(Equal(data))
			notStamped(web)

			By("deleting the Secret lets the operator create its own")
			Expect(k8sClient.Delete(ctx, &s)).To(Succeed())
			Eventually(func(g Gomega) {
				secretKeyring(g, ns, "foreign")
				g.Expect(condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled).Status).NotTo(Equal(metav1.ConditionTrue))
			}).Should(Succeed())
		},
		Entry("not a keyring", corev1.SecretType(keyring.SecretType), []byte(`{"keys":[{"id":"x","secret":"c2hvcnQ="}]}`), mrtrv1alpha1.ReasonSecretInvalid),
		Entry("another type", corev1.SecretTypeOpaque, []byte("hello"), mrtrv1alpha1.ReasonSecretWrongType),
	)

	It("recreates a Secret deleted behind its back and rolls the new keyring out", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "deleted", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})

		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kr.EffectiveSecretName()}})).To(Succeed())
		var b *keyring.Keyring
		Eventually(func(g Gomega) {
			b = secretKeyring(g, ns, kr.EffectiveSecretName())
			g.Expect(b.Fingerprint()).NotTo(Equal(a.Fingerprint()))
			g.Expect(getKeyring(g, kr).Status.SecretFingerprint).To(Equal(b.Fingerprint()))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("SecretRecreated:")))
		}).Should(Succeed())
		settle(kr, []client.Object{web})
	})

	It("keeps and rolls out a valid keyring edited behind its back, and stalls on an invalid edit", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "tampered", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) })
		a := settle(kr, []client.Object{web})

		By("a valid edit is kept as it is (it may hold keys someone seals with)")
		edited, err := keyring.New(append(a.Keys(), keyringOf("hand-added").Keys()...)...)
		Expect(err).NotTo(HaveOccurred())
		setSecretData(ns, kr.EffectiveSecretName(), mustMarshal(edited))
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.SecretFingerprint).To(Equal(edited.Fingerprint()))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(HavePrefix("SecretChanged:")))
			h, _ := stampOf(g, web)
			g.Expect(h).To(Equal(edited.Fingerprint()))
		}).Should(Succeed())
		Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Fingerprint()).To(Equal(edited.Fingerprint()))
		settle(kr, []client.Object{web})

		By("an invalid edit is reported and not rolled out")
		setSecretData(ns, kr.EffectiveSecretName(), []byte("not json"))
		Eventually(func(g Gomega) {
			st := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled)
			g.Expect(st.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(st.Reason).To(Equal(mrtrv1alpha1.ReasonSecretInvalid))
		}).Should(Succeed())
		h, _ := stampOf(Default, web)
		Expect(h).To(Equal(edited.Fingerprint()), "an invalid keyring is never rolled out")
	})
})

// keyringOf returns a keyring of fresh random keys with the given ids.
func keyringOf(ids ...string) *keyring.Keyring {
	GinkgoHelper()
	keys := make([]keyring.Key, len(ids))
	for i, id := range ids {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		keys[i] = keyring.NewKey(id, b)
	}
	kr, err := keyring.New(keys...)
	Expect(err).NotTo(HaveOccurred())
	return kr
}

func mustMarshal(kr *keyring.Keyring) []byte {
	GinkgoHelper()
	b, err := keyring.Marshal(kr)
	Expect(err).NotTo(HaveOccurred())
	rememberKeys(b)
	return b
}

func createSecret(namespace, name string, typ corev1.SecretType, data []byte) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       typ,
		Data:       map[string][]byte{keyring.SecretDataKey: data},
	})).To(Succeed())
}

func setSecretData(namespace, name string, data []byte) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var s corev1.Secret
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)).To(Succeed())
		s.Data = map[string][]byte{keyring.SecretDataKey: data}
		err := k8sClient.Update(ctx, &s)
		g.Expect(apierrors.IsConflict(err)).To(BeFalse())
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
}

func setSuspend(kr *mrtrv1alpha1.MRTRKeyring, suspend bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		k.Spec.Suspend = suspend
		g.Expect(k8sClient.Update(ctx, k)).To(Succeed())
	}).Should(Succeed())
}

func secretKeyringEventually(namespace, name string) *keyring.Keyring {
	GinkgoHelper()
	var kr *keyring.Keyring
	Eventually(func(g Gomega) { kr = secretKeyring(g, namespace, name) }).Should(Succeed())
	return kr
}
