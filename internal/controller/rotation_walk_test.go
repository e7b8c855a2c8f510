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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// settle waits until the keyring's Secret exists and every workload is stamped with its
// fingerprint, completes those rollouts, and waits for the keyring to be Ready and idle. It returns
// the keyring in the Secret.
func settle(kr *mrtrv1alpha1.MRTRKeyring, ws []client.Object) *keyring.Keyring {
	GinkgoHelper()
	var cur *keyring.Keyring
	Eventually(func(g Gomega) {
		cur = secretKeyring(g, kr.Namespace, kr.EffectiveSecretName())
		for _, w := range ws {
			h, _ := stampOf(g, w)
			g.Expect(h).To(Equal(cur.Fingerprint()), "stamp of %s", w.GetName())
		}
	}).Should(Succeed())
	for _, w := range ws {
		rollOut(w, -1)
	}
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		g.Expect(k.Status.SecretFingerprint).To(Equal(cur.Fingerprint()))
		g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "Ready: %+v", k.Status.Conditions)
		g.Expect(condition(k, mrtrv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(k.Status.Workloads).To(HaveLen(min(len(ws), rotation.MaxListedWorkloads)))
		g.Expect(k.Status.WorkloadCount).To(BeEquivalentTo(len(ws)))
		g.Expect(k.Status.WorkloadsUpToDate).To(BeEquivalentTo(len(ws)))
		for _, w := range k.Status.Workloads {
			g.Expect(w.UpToDate).To(BeTrue(), "workload %s/%s: %s", w.Kind, w.Name, w.Message)
		}
	}).Should(Succeed())
	return cur
}

// reconciledSince waits until the operator has logged a reconcile of a keyring in namespace after
// the log held offset bytes: proof that a pass ran, for tests that assert nothing changed.
func reconciledSince(offset int, namespace string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		tail := logs.String()[offset:]
		found := false
		for line := range strings.SplitSeq(tail, "\n") {
			if strings.Contains(line, "reconciled") && strings.Contains(line, namespace) {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "no reconcile of a keyring in %s logged yet", namespace)
	}).Should(Succeed())
}

// phaseHook runs inside each phase of walkRotation, once the phase's writes were observed and
// before the test lets it progress.
type phaseHook func(phase mrtrv1alpha1.Phase)

// walkRotation requests one rotation of kr, whose workloads ws are settled on keyring from, and
// walks it phase by phase, checking the Secret, the status and every pod-template stamp at each
// step; it asserts the two orders of the invariant: no key seals before every workload rolled out
// the keyring that accepts it, and no key is removed before the TTL wait has passed. It returns
// the keyring after the rotation.
func walkRotation(kr *mrtrv1alpha1.MRTRKeyring, ws []client.Object, from *keyring.Keyring, request string, hook phaseHook) *keyring.Keyring {
	GinkgoHelper()
	ns, secret := kr.Namespace, kr.EffectiveSecretName()
	if hook == nil {
		hook = func(mrtrv1alpha1.Phase) {}
	}
	completed := getKeyring(Default, kr).Status.RotationsCompleted
	gens := map[string]int64{}
	// expectStamps checks that every workload carries fp, stamped exactly once since the last call.
	expectStamps := func(g Gomega, fp string) {
		for _, w := range ws {
			h, gen := stampOf(g, w)
			g.Expect(h).To(Equal(fp), "stamp of %s", w.GetName())
			if before, ok := gens[w.GetName()]; ok {
				g.Expect(gen).To(Equal(before+1), "%s must be stamped exactly once per phase", w.GetName())
			}
		}
	}
	recordGens := func() {
		for _, w := range ws {
			_, gens[w.GetName()] = stampOf(Default, w)
		}
	}
	recordGens()

	By("Accepting: the new key is appended, the old one still seals")
	requestRotation(kr, request)
	var accept *keyring.Keyring
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		accept = secretKeyring(g, ns, secret)
		g.Expect(accept.Len()).To(Equal(from.Len() + 1))
		g.Expect(accept.IDs()[:from.Len()]).To(Equal(from.IDs()), "old keys first, in order")
		g.Expect(accept.Primary().ID()).To(Equal(from.Primary().ID()), "the old key still seals")
		g.Expect(k.Status.Keys).To(HaveLen(accept.Len()))
		g.Expect(k.Status.Keys[0].Role).To(Equal(mrtrv1alpha1.KeyPrimary))
		g.Expect(k.Status.Keys[accept.Len()-1].Role).To(Equal(mrtrv1alpha1.KeyAccepted))
		g.Expect(k.Status.TargetFingerprint).To(Equal(accept.Fingerprint()))
		g.Expect(condition(k, mrtrv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
		expectStamps(g, accept.Fingerprint())
	}).Should(Succeed())
	newID := accept.IDs()[accept.Len()-1]
	hook(mrtrv1alpha1.PhaseAccepting)
	recordGens()

	By("Accepting holds while any workload has not rolled out: accept before seal")
	first := ws[0]
	if d, ok := first.(*appsv1.Deployment); ok {
		// One replica rolled out of one is a complete rollout: nothing would be partial.
		Expect(*d.Spec.Replicas).To(BeNumerically(">=", 2), "walkRotation rolls out one replica of %s first: it needs two", d.Name)
	}
	rollOut(first, 1) // one pod of the first workload runs [A, B]; the rest still run [A]
	for _, w := range ws[1:] {
		rollOut(w, -1)
	}
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Workloads).NotTo(BeEmpty())
		var st *mrtrv1alpha1.WorkloadStatus
		for i := range k.Status.Workloads {
			if k.Status.Workloads[i].Name == first.GetName() {
				st = &k.Status.Workloads[i]
			}
		}
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.ReadyReplicas).To(Equal(int32(1)), "the partial rollout of %s is observed", first.GetName())
		g.Expect(st.UpToDate).To(BeFalse())
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		g.Expect(secretKeyring(g, ns, secret).Primary().ID()).To(Equal(from.Primary().ID()))
	}).Should(Succeed())

	By("Accepting holds for terminationGracePeriod after the rollout completes")
	rollOut(first, -1)
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.RolledOutAt).NotTo(BeNil())
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		g.Expect(secretKeyring(g, ns, secret).Primary().ID()).To(Equal(from.Primary().ID()))
	}).Should(Succeed())

	By("SealingWithNew: the new key seals, the old ones still open")
	advance(kr, testGrace)
	var seal *keyring.Keyring
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseSealingWithNew))
		seal = secretKeyring(g, ns, secret)
		g.Expect(seal.Primary().ID()).To(Equal(newID))
		g.Expect(seal.IDs()[1:]).To(Equal(from.IDs()))
		g.Expect(k.Status.Keys[0].Role).To(Equal(mrtrv1alpha1.KeyPrimary))
		for _, ks := range k.Status.Keys[1:] {
			g.Expect(ks.Role).To(Equal(mrtrv1alpha1.KeyRetiring))
		}
		expectStamps(g, seal.Fingerprint())
	}).Should(Succeed())
	hook(mrtrv1alpha1.PhaseSealingWithNew)
	recordGens()

	By("WaitingTTL: once no pod seals with the old keys, their tokens get tokenTTL + clockSkew + grace")
	for _, w := range ws {
		rollOut(w, -1)
	}
	var until time.Time
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		g.Expect(k.Status.TTLWaitUntil).NotTo(BeNil())
		until = k.Status.TTLWaitUntil.Time
		g.Expect(secretKeyring(g, ns, secret).Fingerprint()).To(Equal(seal.Fingerprint()))
	}).Should(Succeed())
	Expect(until).To(BeTemporally("~", fakeClock.Now().Add(testTTLWait), time.Second))
	hook(mrtrv1alpha1.PhaseWaitingTTL)

	By("WaitingTTL keeps the old keys until the wait is over: wait before remove")
	fakeClock.SetTime(until.Add(-time.Second))
	offset := len(logs.String())
	poke(kr)
	reconciledSince(offset, ns)
	Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
	Expect(secretKeyring(Default, ns, secret).Fingerprint()).To(Equal(seal.Fingerprint()))
	for _, w := range ws {
		h, gen := stampOf(Default, w)
		Expect(h).To(Equal(seal.Fingerprint()))
		Expect(gen).To(Equal(gens[w.GetName()]), "WaitingTTL stamps nothing")
	}

	By("Removing: the old keys are dropped")
	advance(kr, time.Second)
	var removed *keyring.Keyring
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseRemoving))
		removed = secretKeyring(g, ns, secret)
		g.Expect(removed.IDs()).To(Equal([]string{newID}))
		expectStamps(g, removed.Fingerprint())
	}).Should(Succeed())
	hook(mrtrv1alpha1.PhaseRemoving)
	recordGens()

	By("Stable again once the removal rolled out")
	for _, w := range ws {
		rollOut(w, -1)
	}
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		g.Expect(k.Status.RotationsCompleted).To(Equal(completed + 1))
		g.Expect(k.Status.LastRotationTime).NotTo(BeNil())
		g.Expect(k.Status.NextRotationTime).NotTo(BeNil())
		g.Expect(k.Status.NextRotationTime.Time).To(BeTemporally("~", fakeClock.Now().Add(testInterval), time.Second))
		g.Expect(k.Status.TTLWaitUntil).To(BeNil())
		g.Expect(k.Status.Keys).To(HaveLen(1))
		g.Expect(k.Status.Keys[0].ID).To(Equal(newID))
		g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(k, mrtrv1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).NotTo(Equal(metav1.ConditionTrue))
		g.Expect(k.Status.ObservedGeneration).To(Equal(k.Generation))
	}).Should(Succeed())
	return removed
}

// notStamped asserts that obj was never given a keyring fingerprint stamp.
func notStamped(obj client.Object) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	Expect(workload.Fingerprint(obj)).To(BeEmpty(), "%s must not be stamped", obj.GetName())
}
