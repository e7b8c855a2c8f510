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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// testPropagation is the propagationDelay of the keyrings with a source here: they have no
// workloads, so each phase waits it (fake time).
const testPropagation = 10 * time.Second

// sourceKey is n bytes naming c: distinct keys for distinct c, remembered as keys that must never
// show up in status, events or logs.
func sourceKey(c byte, n int) []byte {
	b := bytes.Repeat([]byte{c}, n)
	leaks["source/"+string(c)] = b
	return b
}

// sourceID is the id a key without a version takes.
func sourceID(b []byte) string { return rotation.SourceKeyID(rotation.SourceDigest(b)) }

// writeSource creates or replaces the source Secret's data, as the External Secrets Operator
// writes a secret manager's current version.
func writeSource(namespace, name string, data map[string][]byte) {
	GinkgoHelper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(s), s)
	if err != nil {
		s.Data = data
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		return
	}
	s.Data = data
	Expect(k8sClient.Update(ctx, s)).To(Succeed())
}

// sourcedKeyring creates the Secret-only keyring web whose keys come from the Secret src.
func sourcedKeyring(ns string) *mrtrv1alpha1.MRTRKeyring {
	GinkgoHelper()
	return createKeyring(ns, "web", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
		s.RotationInterval = metav1.Duration{}
		s.KeySource = secretSource("src")
		s.PropagationDelay = metav1.Duration{Duration: testPropagation}
	})
}

// keyIDs are the ids the keyring Secret web holds, primary first.
func keyIDs(g Gomega, ns string) []string { return secretKeyring(g, ns, "web").IDs() }

// expectAccepting waits for kr, woken by its source's new key, to accept it: in phase Accepting,
// its Secret holding ids, primary first.
func expectAccepting(kr *mrtrv1alpha1.MRTRKeyring, ids ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		g.Expect(keyIDs(g, kr.Namespace)).To(Equal(ids))
	}).Should(Succeed())
}

// walkTo advances fake time by the propagation delay, waking kr, until it is in phase.
func walkTo(kr *mrtrv1alpha1.MRTRKeyring, phase mrtrv1alpha1.Phase) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		if getKeyring(g, kr).Status.Phase != phase {
			advance(kr, testPropagation)
		}
		g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(phase))
	}).Should(Succeed())
}

var _ = Describe("MRTRKeyring with a secret key source", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("rotates to the source's new key, keeping the old one until the TTL wait ends", func() {
		a, b := sourceKey('a', 32), sourceKey('b', 48)
		writeSource(ns, "src", map[string][]byte{"key": a})
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) {
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a)}))
			st := getKeyring(g, kr).Status
			g.Expect(st.KeySource).NotTo(BeNil())
			g.Expect(st.KeySource.Version).To(Equal(sourceID(a)))
			g.Expect(condition(kr, mrtrv1alpha1.ConditionKeySourceReady).Reason).To(Equal(mrtrv1alpha1.ReasonSourceInService))
			g.Expect(st.NextRotationTime).To(BeNil())
		}).Should(Succeed())

		// The watch on the source wakes the keyring: no poke.
		writeSource(ns, "src", map[string][]byte{"key": b})
		expectAccepting(kr, sourceID(a), sourceID(b))

		walkTo(kr, mrtrv1alpha1.PhaseSealingWithNew)
		Eventually(func(g Gomega) {
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(b), sourceID(a)}))
		}).Should(Succeed())
		walkTo(kr, mrtrv1alpha1.PhaseWaitingTTL)
		var until time.Time
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.TTLWaitUntil).NotTo(BeNil())
			until = st.TTLWaitUntil.Time
			g.Expect(st.KeySource.Version).To(Equal(sourceID(b)))
		}).Should(Succeed())

		// Just before the TTL wait ends, the old key is still there.
		advance(kr, until.Sub(fakeClock.Now())-time.Second)
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		Expect(keyIDs(Default, ns)).To(ContainElement(sourceID(a)))

		// Once it ends, the old key goes, and is remembered as retired.
		advance(kr, 2*time.Second)
		Eventually(func(g Gomega) {
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(b)}))
		}).Should(Succeed())
		walkTo(kr, mrtrv1alpha1.PhaseStable)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.RotationsCompleted).To(Equal(int64(1)))
			g.Expect(st.KeySource.Retired).To(HaveLen(1))
			g.Expect(st.KeySource.Retired[0].Version).To(Equal(sourceID(a)))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring(mrtrv1alpha1.EventSourceVersionInService + ": source version " + sourceID(b))))
		}).Should(Succeed())
		expectNoKeyBytes(ns)
	})

	It("is woken by a source Secret of the keyring type too, which the cache of Secret metadata leaves out", func() {
		a, b := sourceKey('c', 32), sourceKey('d', 32)
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"},
			Type: keyring.SecretType, Data: map[string][]byte{"key": a}}
		Expect(k8sClient.Create(ctx, src)).To(Succeed())
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) {
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a)}))
		}).Should(Succeed())

		// No poke: only the watch of keyring Secrets can wake the keyring.
		writeSource(ns, "src", map[string][]byte{"key": b})
		expectAccepting(kr, sourceID(a), sourceID(b))
		expectNoKeyBytes(ns)
	})

	It("finishes the rotation under way when the source changes twice, skips the value in between, then rotates to the newest", func() {
		a, b, c, d := sourceKey('A', 32), sourceKey('B', 32), sourceKey('C', 32), sourceKey('D', 32)
		writeSource(ns, "src", map[string][]byte{"key": a})
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) { g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a)})) }).Should(Succeed())
		writeSource(ns, "src", map[string][]byte{"key": b})
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)

		writeSource(ns, "src", map[string][]byte{"key": c})
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.KeySource.ObservedVersion).To(Equal(sourceID(c)))
		}).Should(Succeed())
		writeSource(ns, "src", map[string][]byte{"key": d})
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.KeySource.ObservedVersion).To(Equal(sourceID(d)))
			g.Expect(st.KeySource.SkippedVersions).To(Equal([]string{sourceID(c)}))
			g.Expect(st.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a), sourceID(b)}))
		}).Should(Succeed())

		// The rotation to B finishes; the one to D starts by itself.
		walkTo(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait+time.Second)
		Eventually(func(g Gomega) {
			// The clock moves only until the first rotation has completed: the next one starts by
			// itself, and a step of the clock after it started could carry it past Accepting (with
			// no pods, time alone ends a phase) and on to a second completion (seen under load).
			if getKeyring(g, kr).Status.RotationsCompleted < 1 {
				advance(kr, testPropagation)
			}
			st := getKeyring(g, kr).Status
			g.Expect(st.RotationsCompleted).To(Equal(int64(1)))
			g.Expect(st.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(b), sourceID(d)}))
		}).Should(Succeed())
		walkTo(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait+time.Second)
		walkTo(kr, mrtrv1alpha1.PhaseStable)
		Eventually(func(g Gomega) {
			g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(d)}))
			g.Expect(getKeyring(g, kr).Status.KeySource.Version).To(Equal(sourceID(d)))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring(mrtrv1alpha1.EventSourceVersionSkipped)))
		}).Should(Succeed())
		expectNoKeyBytes(ns)
	})

	It("keeps the last good keyring when the source is deleted or too short, with a condition naming what is wrong", func() {
		a := sourceKey('e', 32)
		writeSource(ns, "src", map[string][]byte{"key": a})
		kr := sourcedKeyring(ns)
		var fp string
		Eventually(func(g Gomega) {
			fp = secretKeyring(g, ns, "web").Fingerprint()
			g.Expect(getKeyring(g, kr).Status.SecretFingerprint).To(Equal(fp))
		}).Should(Succeed())

		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}})).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionKeySourceReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonSourceNotFound))
			g.Expect(c.Message).To(ContainSubstring("source Secret src does not exist"))
			g.Expect(condition(kr, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(secretKeyring(g, ns, "web").Fingerprint()).To(Equal(fp))
		}).Should(Succeed())

		writeSource(ns, "src", map[string][]byte{"key": sourceKey('f', 16)})
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionKeySourceReady)
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonSourceKeyTooShort))
			g.Expect(c.Message).To(ContainSubstring("holds 16 bytes"))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring(mrtrv1alpha1.EventSourceRefused + ": " + mrtrv1alpha1.ReasonSourceKeyTooShort)))
		}).Should(Succeed())

		writeSource(ns, "src", map[string][]byte{"other": a})
		Eventually(func(g Gomega) {
			g.Expect(condition(getKeyring(g, kr), mrtrv1alpha1.ConditionKeySourceReady).Reason).To(Equal(mrtrv1alpha1.ReasonSourceKeyMissing))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(secretKeyring(Default, ns, "web").Fingerprint()).To(Equal(fp))
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		expectNoKeyBytes(ns)
	})

	It("writes nothing, and nothing seals, while the source holds no key it can take", func() {
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled)
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonNoKey))
			g.Expect(c.Message).To(ContainSubstring("nothing seals"))
		}).Should(Succeed())
		// Not written at all: NotFound, not merely an error reading it.
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the keyring Secret: %v", err)
		a := sourceKey('g', 32)
		writeSource(ns, "src", map[string][]byte{"key": a})
		Eventually(func(g Gomega) { g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a)})) }).Should(Succeed())
	})

	It("refuses a retired key coming back, with a reason", func() {
		a, b := sourceKey('h', 32), sourceKey('i', 32)
		writeSource(ns, "src", map[string][]byte{"key": a})
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) { g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(a)})) }).Should(Succeed())
		writeSource(ns, "src", map[string][]byte{"key": b})
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		walkTo(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait+time.Second)
		walkTo(kr, mrtrv1alpha1.PhaseStable)
		Eventually(func(g Gomega) { g.Expect(keyIDs(g, ns)).To(Equal([]string{sourceID(b)})) }).Should(Succeed())

		writeSource(ns, "src", map[string][]byte{"key": a})
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionKeySourceReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonSourceFlapping))
			g.Expect(c.Message).To(ContainSubstring("retired"))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(keyIDs(Default, ns)).To(Equal([]string{sourceID(b)}))
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
	})

	It("takes the version annotation as the key's id, and refuses a rotation request with nothing new to rotate to", func() {
		a := sourceKey('j', 32)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src",
			Annotations: map[string]string{mrtrv1alpha1.KeyVersionAnnotation: "v7"}}, Data: map[string][]byte{"key": a}}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		kr := sourcedKeyring(ns)
		Eventually(func(g Gomega) { g.Expect(keyIDs(g, ns)).To(Equal([]string{"v7"})) }).Should(Succeed())
		requestRotation(kr, "now")
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.LastHandledRotateRequest).To(Equal("now"))
			g.Expect(keyringEvents(g, kr)).To(ContainElement(ContainSubstring(mrtrv1alpha1.EventRotateRequestIgnored)))
		}).Should(Succeed())
		Expect(keyIDs(Default, ns)).To(Equal([]string{"v7"}))
	})
})

var _ = Describe("ClusterMRTRKeyring with a secret key source", func() {
	It("reads its source in the operator's namespace and rotates every copy when it changes", func() {
		name := "sourced"
		t := newTenant(name, 1)
		src := "cluster-src-" + t.ns
		a, b := sourceKey('k', 32), sourceKey('l', 32)
		writeSource(clusterResourceNamespace, src, map[string][]byte{"key": a})
		spec := newKeyring("", name, reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = "payments" })).Spec
		spec.RotationInterval = metav1.Duration{}
		spec.KeySource = secretSource(src)
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}}}
		Expect(k8sClient.Create(ctx, ck)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ck))).To(Succeed()) })

		Eventually(func(g Gomega) {
			g.Expect(leadKeyring(g, name).IDs()).To(Equal([]string{sourceID(a)}))
			ks := getClusterKeyring(g, name).Status.KeySource
			g.Expect(ks).NotTo(BeNil())
			g.Expect(ks.Version).To(Equal(sourceID(a)))
		}).Should(Succeed())

		writeSource(clusterResourceNamespace, src, map[string][]byte{"key": b})
		Eventually(func(g Gomega) {
			g.Expect(getClusterKeyring(g, name).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(leadKeyring(g, name).IDs()).To(Equal([]string{sourceID(a), sourceID(b)}))
		}).Should(Succeed())
		acknowledgeCopies(name, t)
		Eventually(func(g Gomega) {
			g.Expect(getClusterKeyring(g, name).Status.Phase).To(Equal(mrtrv1alpha1.PhaseSealingWithNew))
			g.Expect(secretKeyring(g, t.ns, "payments").IDs()).To(Equal([]string{sourceID(b), sourceID(a)}))
		}).Should(Succeed())
	})
})
