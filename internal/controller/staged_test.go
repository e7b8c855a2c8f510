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
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// staged makes a keyring stage its next key (the API's default; newKeyring sets AtRotation).
func staged(ws ...client.Object) func(*mrtrv1alpha1.MRTRKeyringSpec) {
	return func(s *mrtrv1alpha1.MRTRKeyringSpec) {
		s.NextKey = mrtrv1alpha1.NextKeyStaged
		s.Workloads = targets(ws...)
	}
}

func keyRoles(k *mrtrv1alpha1.MRTRKeyring) []mrtrv1alpha1.KeyRole {
	out := make([]mrtrv1alpha1.KeyRole, len(k.Status.Keys))
	for i, ks := range k.Status.Keys {
		out[i] = ks.Role
	}
	return out
}

// eventuallyStamped waits until w's pod template carries kr's fingerprint.
func eventuallyStamped(w client.Object, kr *keyring.Keyring) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		fp, _ := stampOf(g, w)
		g.Expect(fp).To(Equal(kr.Fingerprint()))
	}).Should(Succeed())
}

// inPhase waits until kr is in phase and returns the keyring its Secret holds then.
func inPhase(kr *mrtrv1alpha1.MRTRKeyring, phase mrtrv1alpha1.Phase) *keyring.Keyring {
	GinkgoHelper()
	var cur *keyring.Keyring
	Eventually(func(g Gomega) {
		g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(phase))
		cur = secretKeyring(g, kr.Namespace, kr.EffectiveSecretName())
		g.Expect(kr.Status.SecretFingerprint).To(Equal(cur.Fingerprint()))
	}).Should(Succeed())
	return cur
}

// startStagedRotation requests a rotation of a settled staged keyring and lets it seal with the
// staged key: first the keyring waits terminationGracePeriod after the rollout that staged it.
func startStagedRotation(kr *mrtrv1alpha1.MRTRKeyring, request string) *keyring.Keyring {
	GinkgoHelper()
	requestRotation(kr, request)
	Eventually(func(g Gomega) {
		k := getKeyring(g, kr)
		g.Expect(k.Status.RolledOutAt).NotTo(BeNil())
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable), "the pods the staging rollout replaced may still serve")
	}).Should(Succeed())
	advance(kr, testGrace)
	return inPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
}

var _ = Describe("A staged next key, and revocation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })
	AfterEach(func() {
		if !CurrentSpecReport().Failed() {
			expectNoKeyBytes(ns)
		}
	})

	It("rotates in two rounds: the staged key seals at once, the old one leaves and the next is staged", func() {
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		kr := createKeyring(ns, "staged", staged(web))
		an := settle(kr, []client.Object{web})
		Expect(an.Len()).To(Equal(2))
		Expect(keyRoles(getKeyring(Default, kr))).To(Equal([]mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyPrimary, mrtrv1alpha1.KeyStaged}))
		a, n := an.IDs()[0], an.IDs()[1]
		_, gen := stampOf(Default, web)

		By("SealingWithNew, straight from Stable: [N, A]")
		na := startStagedRotation(kr, "two-rounds")
		Expect(na.IDs()).To(Equal([]string{n, a}))
		eventuallyStamped(web, na)

		By("WaitingTTL once it rolled out, then Removing: [N, M]")
		rollOut(web, -1)
		inPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
		fakeClock.SetTime(getKeyring(Default, kr).Status.TTLWaitUntil.Time)
		poke(kr)
		nm := inPhase(kr, mrtrv1alpha1.PhaseRemoving)
		Expect(nm.Primary().ID()).To(Equal(n))
		Expect(nm.Len()).To(Equal(2))
		Expect(nm.IDs()[1]).NotTo(BeElementOf(a, n))
		Expect(keyRoles(getKeyring(Default, kr))).To(Equal([]mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyPrimary, mrtrv1alpha1.KeyAccepted}))

		By("Stable once that rolled out, the new key staged")
		eventuallyStamped(web, nm)
		rollOut(web, -1)
		inPhase(kr, mrtrv1alpha1.PhaseStable)
		k := getKeyring(Default, kr)
		Expect(keyRoles(k)).To(Equal([]mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyPrimary, mrtrv1alpha1.KeyStaged}))
		Expect(k.Status.RotationsCompleted).To(Equal(int64(1)))
		_, after := stampOf(Default, web)
		Expect(after-gen).To(Equal(int64(2)), "two rounds: the workload is stamped twice")
		evs := keyringEvents(Default, kr)
		Expect(evs).NotTo(ContainElement(HavePrefix("KeySealing:")), "no Accepting phase to end")
		Expect(evs).To(ContainElement(HavePrefix("RotationStarted:")))
		Expect(evs).To(ContainElement(HavePrefix("RotationCompleted:")))
	})

	// revokePrimary revokes kr's primary key and checks that it is gone at once, recorded and
	// announced, and that the keyring is Stable again with another primary after one round.
	revokePrimary := func(kr *mrtrv1alpha1.MRTRKeyring, web client.Object, cur *keyring.Keyring) {
		GinkgoHelper()
		revoked := cur.Primary().ID()
		requestRevocation(kr, revoked)
		// Waited for by the key's absence: the keyring may be Revoking already (an earlier revocation).
		var after *keyring.Keyring
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseRevoking))
			after = secretKeyring(g, kr.Namespace, kr.EffectiveSecretName())
			g.Expect(after.IDs()).NotTo(ContainElement(revoked))
			g.Expect(kr.Status.SecretFingerprint).To(Equal(after.Fingerprint()))
		}).Should(Succeed())
		k := getKeyring(Default, kr)
		Expect(k.Status.RevokedKeys).To(ContainElement(And(HaveField("ID", revoked), HaveField("Role", mrtrv1alpha1.KeyPrimary))))
		c := meta.FindStatusCondition(k.Status.Conditions, mrtrv1alpha1.ConditionKeyRevoked)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Message).To(ContainSubstring(revoked))
		Eventually(func(g Gomega) {
			g.Expect(keyringEvents(g, kr)).To(ContainElement(And(HavePrefix("KeyRevoked:"), ContainSubstring(revoked))))
		}).Should(Succeed())
		eventuallyStamped(web, after)
		rollOut(web, -1)
		stable := inPhase(kr, mrtrv1alpha1.PhaseStable)
		Expect(stable.Fingerprint()).To(Equal(after.Fingerprint()))
		Expect(keyRoles(getKeyring(Default, kr))).To(Equal([]mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyPrimary, mrtrv1alpha1.KeyStaged}))
	}

	// In every phase the key after the primary is the one every pod is likeliest to accept: the
	// staged key, the old key (SealingWithNew, WaitingTTL), the key on its way (Accepting,
	// Removing, Revoking).
	DescribeTable("revokes the primary key at once in every phase, the key after it taking over",
		func(phase mrtrv1alpha1.Phase) {
			web := createWorkload(workload.Deployment, ns, "web", 1, nil)
			edit := staged(web)
			if phase == mrtrv1alpha1.PhaseAccepting {
				edit = func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.Workloads = targets(web) } // AtRotation, at first
			}
			kr := createKeyring(ns, "revoked", edit)
			cur := settle(kr, []client.Object{web})
			switch phase {
			case mrtrv1alpha1.PhaseAccepting:
				// A keyring from before Staged: no staged key, so its next rotation has an Accepting round.
				Eventually(func() error {
					k := getKeyring(Default, kr)
					k.Spec.NextKey = mrtrv1alpha1.NextKeyStaged
					return k8sClient.Update(ctx, k)
				}).Should(Succeed())
				requestRotation(kr, "go")
				cur = inPhase(kr, mrtrv1alpha1.PhaseAccepting)
			case mrtrv1alpha1.PhaseRevoking:
				revokePrimary(kr, web, cur) // then revoke the new primary while the first revocation rolls out
				cur = secretKeyring(Default, ns, kr.EffectiveSecretName())
				requestRevocation(kr, cur.IDs()[1])
				cur = inPhase(kr, mrtrv1alpha1.PhaseRevoking)
			case mrtrv1alpha1.PhaseSealingWithNew, mrtrv1alpha1.PhaseWaitingTTL, mrtrv1alpha1.PhaseRemoving:
				cur = startStagedRotation(kr, "go")
				if phase != mrtrv1alpha1.PhaseSealingWithNew {
					rollOutTarget(kr, web)
					cur = inPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
				}
				if phase == mrtrv1alpha1.PhaseRemoving {
					fakeClock.SetTime(getKeyring(Default, kr).Status.TTLWaitUntil.Time)
					poke(kr)
					cur = inPhase(kr, mrtrv1alpha1.PhaseRemoving)
				}
			}
			want := cur.IDs()[1]
			revokePrimary(kr, web, cur)
			Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Primary().ID()).To(Equal(want))
		},
		Entry("Stable: the staged key takes over", mrtrv1alpha1.PhaseStable),
		Entry("Accepting (a keyring moving to Staged): the accepted key takes over", mrtrv1alpha1.PhaseAccepting),
		Entry("SealingWithNew: the old key, which every pod accepts, seals again", mrtrv1alpha1.PhaseSealingWithNew),
		Entry("WaitingTTL: the old key seals again", mrtrv1alpha1.PhaseWaitingTTL),
		Entry("Removing: the key on its way takes over", mrtrv1alpha1.PhaseRemoving),
		Entry("Revoking: the key on its way takes over", mrtrv1alpha1.PhaseRevoking),
	)

	It("acts on every revocation request of a burst, the first too, and the staged key one names never seals", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "burst", staged(web))
		before := settle(kr, []client.Object{web})
		leaked := before.IDs()[1] // the staged key, which the next rotation would make primary
		// Three requests at once, as kubectl mrtr revoke leaves them when the operator was away.
		requestRevocation(kr, leaked+",k20990101-000000,k20990102-000000")
		after := inPhase(kr, mrtrv1alpha1.PhaseRevoking)
		Expect(after.IDs()).NotTo(ContainElement(leaked))
		Expect(after.Primary().ID()).To(Equal(before.Primary().ID()))
		Expect(getKeyring(Default, kr).Status.LastHandledRevokeRequest).To(Equal(leaked + ",k20990101-000000,k20990102-000000"))
		rollOutTarget(kr, web)
		inPhase(kr, mrtrv1alpha1.PhaseStable)
		sealing := startStagedRotation(kr, "go")
		Expect(sealing.Primary().ID()).NotTo(Equal(leaked))
		Expect(sealing.IDs()).NotTo(ContainElement(leaked))
	})

	It("replaces every key at once when the whole Secret leaked", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "leaked", staged(web))
		before := settle(kr, []client.Object{web})
		requestRevocation(kr, "*")
		after := inPhase(kr, mrtrv1alpha1.PhaseRevoking)
		Expect(after.Len()).To(Equal(2))
		for _, id := range before.IDs() {
			Expect(after.IDs()).NotTo(ContainElement(id))
		}
		Eventually(func(g Gomega) {
			g.Expect(keyringEvents(g, kr)).To(ContainElement(And(HavePrefix("KeyRevoked:"), ContainSubstring("every token in flight fails"))))
		}).Should(Succeed())
	})

	It("handles a numbered request once: not again once pruned and put back, nor for a re-created keyring", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "numbered", staged(web))
		before := settle(kr, []client.Object{web})
		value, _ := mrtrv1alpha1.AppendRevokeRequests("", 0, "*incident-1")
		requestRevocation(kr, value)
		revoked := inPhase(kr, mrtrv1alpha1.PhaseRevoking)
		Expect(revoked.IDs()).NotTo(ContainElements(before.IDs()))
		rollOutTarget(kr, web)
		inPhase(kr, mrtrv1alpha1.PhaseStable)
		Expect(getKeyring(Default, kr).Status.LastHandledRevokeSequence).To(Equal(int64(1)))

		By("pruning it, as the next kubectl mrtr revoke does, then putting it back, as GitOps may")
		requestRevocation(kr, "")
		requestRevocation(kr, value)
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		Expect(secretKeyring(Default, ns, kr.EffectiveSecretName()).Fingerprint()).To(Equal(revoked.Fingerprint()), "revoked again")

		By("deleting the keyring and creating it again with the same request: the Secret records sequence 1")
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kr.EffectiveSecretName()}, &s)).To(Succeed())
		Expect(s.Annotations).To(HaveKeyWithValue(mrtrv1alpha1.HandledRevokeSequenceAnnotation, "1"))
		Expect(k8sClient.Delete(ctx, kr)).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), &mrtrv1alpha1.MRTRKeyring{}) }).ShouldNot(Succeed())
		again := newKeyring(ns, "numbered", staged(web))
		again.Annotations = map[string]string{mrtrv1alpha1.RevokeAnnotation: value}
		Expect(k8sClient.Create(ctx, again)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, again))).To(Succeed()) })
		Eventually(func(g Gomega) {
			k := getKeyring(g, again)
			g.Expect(k.Status.LastHandledRevokeSequence).To(Equal(int64(1)))
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		}).Should(Succeed())
		// The pass that restored the sequence is the one that would have revoked.
		Expect(secretKeyring(Default, ns, again.EffectiveSecretName()).Fingerprint()).To(Equal(revoked.Fingerprint()), "revoked again")
	})

	It("never adds a revoked key back: not for a re-created keyring, nor for a Secret edited to hold it", func() {
		web := createWorkload(workload.Deployment, ns, "web", 1, nil)
		kr := createKeyring(ns, "remembers", staged(web))
		an := settle(kr, []client.Object{web})
		revokedKey := an.Keys()[1] // the staged key: revoking it stages another
		requestRevocation(kr, revokedKey.ID())
		inPhase(kr, mrtrv1alpha1.PhaseRevoking)
		rollOutTarget(kr, web)
		inPhase(kr, mrtrv1alpha1.PhaseStable)

		By("deleting the keyring and creating it again, with the same request: the Secret remembers")
		Expect(k8sClient.Delete(ctx, kr)).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), &mrtrv1alpha1.MRTRKeyring{}) }).ShouldNot(Succeed())
		again := newKeyring(ns, "remembers", staged(web))
		again.Annotations = map[string]string{mrtrv1alpha1.RevokeAnnotation: revokedKey.ID()}
		Expect(k8sClient.Create(ctx, again)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, again))).To(Succeed()) })
		Eventually(func(g Gomega) {
			k := getKeyring(g, again)
			g.Expect(k.Status.RevokedKeys).To(ContainElement(HaveField("ID", revokedKey.ID())))
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		}).Should(Succeed())

		By("editing the Secret behind the operator's back to hold the revoked key again")
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: again.EffectiveSecretName()}, &s)).To(Succeed())
		cur, err := keyring.Parse(s.Data[keyring.SecretDataKey])
		Expect(err).NotTo(HaveOccurred())
		withRevoked, err := keyring.New(append(cur.Keys(), revokedKey)...)
		Expect(err).NotTo(HaveOccurred())
		s.Data[keyring.SecretDataKey], err = keyring.Marshal(withRevoked)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Update(ctx, &s)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(secretKeyring(g, ns, again.EffectiveSecretName()).IDs()).NotTo(ContainElement(revokedKey.ID()))
			g.Expect(keyringEvents(g, again)).To(ContainElement(And(HavePrefix("KeyRevoked:"), ContainSubstring("again"))))
		}).Should(Succeed())
		Expect(slices.Contains(secretKeyring(Default, ns, again.EffectiveSecretName()).IDs(), cur.Primary().ID())).To(BeTrue(),
			"the primary is kept")
	})
})
