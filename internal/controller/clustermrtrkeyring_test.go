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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// clusterResourceNamespace is the operator's namespace in these tests: the cluster keyrings' lead
// Secrets live there.
const clusterResourceNamespace = "mrtr-system"

// tenant is one selected namespace of a cluster keyring test: a Deployment api whose pod template
// mounts the Secret payments, and its pods (envtest runs no workload controller: the Deployment
// counts none, and the tests play the pods).
type tenant struct {
	ns   string
	pods []*corev1.Pod
}

// newTenant creates a namespace labelled fleet=fleet with the Deployment api and n pods of it.
func newTenant(fleet string, n int) *tenant {
	GinkgoHelper()
	return newTenantIn(k8sClient, fleet, n)
}

// newTenantIn is newTenant in the cluster of c.
func newTenantIn(c client.Client, fleet string, n int) *tenant {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: map[string]string{"fleet": fleet}}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	labels := map[string]string{"app": "api"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "api"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1"}},
					Volumes:    []corev1.Volume{{Name: "keyring", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "payments"}}}},
				},
			},
		},
	}
	Expect(c.Create(ctx, d)).To(Succeed())
	t := &tenant{ns: ns.Name}
	for i := range n {
		pod := testworld.NewPod(ns.Name, fmt.Sprintf("api-%d", i), labels, "payments")
		Expect(c.Create(ctx, pod)).To(Succeed())
		t.pods = append(t.pods, pod)
	}
	return t
}

// createClusterKeyring creates a Reload-delivery ClusterMRTRKeyring named name of the Secret
// payments over the namespaces labelled fleet=name.
func createClusterKeyring(name string) {
	GinkgoHelper()
	spec := newKeyring("", name, reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = "payments" })).Spec
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}},
	}
	Expect(k8sClient.Create(ctx, ck)).To(Succeed())
}

func getClusterKeyring(g Gomega, name string) *mrtrv1alpha1.ClusterMRTRKeyring {
	var ck mrtrv1alpha1.ClusterMRTRKeyring
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, &ck)).To(Succeed())
	return &ck
}

// leadKeyring is the keyring of ck's lead Secret.
func leadKeyring(g Gomega, name string) *keyring.Keyring {
	return secretKeyring(g, clusterResourceNamespace, mrtrv1alpha1.LeadSecretName(name))
}

// acknowledgeCopies makes every pod of every tenant acknowledge the keyring its namespace's copy
// holds now, once every copy holds the lead Secret's: what the library's reporter does after the
// kubelet projected it.
func acknowledgeCopies(name string, tenants ...*tenant) string {
	GinkgoHelper()
	var fp string
	Eventually(func(g Gomega) {
		fp = leadKeyring(g, name).Fingerprint()
		for _, t := range tenants {
			g.Expect(secretKeyring(g, t.ns, "payments").Fingerprint()).To(Equal(fp), "the copy in %s", t.ns)
		}
	}).Should(Succeed())
	for _, t := range tenants {
		for _, p := range t.pods {
			acknowledge(p, "payments", fp)
		}
	}
	return fp
}

// eventuallyClusterPhase waits until ck is in phase with its Secret's fingerprint, and returns it.
func eventuallyClusterPhase(name string, phase mrtrv1alpha1.Phase) *mrtrv1alpha1.ClusterMRTRKeyring {
	GinkgoHelper()
	var ck *mrtrv1alpha1.ClusterMRTRKeyring
	Eventually(func(g Gomega) {
		ck = getClusterKeyring(g, name)
		g.Expect(ck.Status.Phase).To(Equal(phase))
	}).Should(Succeed())
	return ck
}

// pokeCluster wakes the reconciler for the cluster keyring name (see poke).
func pokeCluster(name string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.mrtr.dev/poke":"%d"}}}`, pokes.Add(1))
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8sClient.Patch(ctx, ck, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// requestClusterRotation sets mrtr.dev/rotate on the cluster keyring name.
func requestClusterRotation(name, value string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RotateAnnotation, value)
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8sClient.Patch(ctx, ck, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// clusterEvents returns "Reason: note" of the events about the cluster keyring name (in default,
// where events about cluster-scoped objects go).
func clusterEvents(g Gomega, name string) []string {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "ClusterMRTRKeyring" && e.Regarding.Name == name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// namespaceStates are status.namespaces.items as name -> state.
func namespaceStates(ck *mrtrv1alpha1.ClusterMRTRKeyring) map[string]mrtrv1alpha1.NamespaceState {
	out := map[string]mrtrv1alpha1.NamespaceState{}
	for _, n := range ck.Status.Namespaces.Items {
		out[n.Name] = n.State
	}
	return out
}

// setLabel sets (or, with value "", removes) a label of the namespace ns.
func setLabel(ns, key, value string) {
	GinkgoHelper()
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, v)
	Expect(k8sClient.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

var _ = Describe("ClusterMRTRKeyring", func() {
	BeforeEach(func() {
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
	})

	It("rotates one keyring across namespaces: every copy holds each phase's keyring, and every pod of every namespace runs it, before the next", func() {
		name := "fleet-walk"
		tenants := []*tenant{newTenant(name, 2), newTenant(name, 1), newTenant(name, 1)}
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Namespaces.Selected).To(BeEquivalentTo(3))
			g.Expect(ck.Status.Namespaces.UpToDate).To(BeEquivalentTo(3))
			g.Expect(ck.Status.PodsAcknowledged).To(BeEquivalentTo(4))
		}).Should(Succeed())
		Expect(secretLabels(tenants[0].ns, "payments")).To(HaveKeyWithValue(mrtrv1alpha1.ClusterKeyringLabel, name))

		requestClusterRotation(name, "walk-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		// Two of three namespaces acknowledge: the phase holds for the third.
		fp := acknowledgeCopies(name, tenants[:2]...)
		Consistently(func(g Gomega) {
			g.Expect(getClusterKeyring(g, name).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		}, "2s").Should(Succeed())
		ck := getClusterKeyring(Default, name)
		Expect(namespaceStates(ck)).To(HaveKeyWithValue(tenants[2].ns, mrtrv1alpha1.NamespaceBehind))
		Expect(ck.Status.Namespaces.Items[0].Name).To(Equal(tenants[2].ns), "those behind come first")
		for _, p := range tenants[2].pods {
			acknowledge(p, "payments", fp)
		}
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeCopies(name, tenants...)
		ck = eventuallyClusterPhase(name, mrtrv1alpha1.PhaseWaitingTTL)
		fakeClock.Step(testTTLWait + time.Second)
		pokeCluster(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseRemoving)
		acknowledgeCopies(name, tenants...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(ck.Status.RotationsCompleted).To(BeEquivalentTo(1))
			g.Expect(ck.Status.Namespaces.UpToDate).To(BeEquivalentTo(3))
		}).Should(Succeed())
		Expect(ck.Status.TTLWaitUntil).NotTo(BeNil())
		expectNoKeyBytes(metav1.NamespaceDefault)
	})

	It("resumes a pass killed between two copy writes: writes the copies still behind, and none twice", func() {
		name := "fleet-crash"
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1), newTenant(name, 1)}
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		requestClusterRotation(name, "crash-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		acknowledgeCopies(name, tenants...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeCopies(name, tenants...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseWaitingTTL)

		// The operator stops; what it leaves is what a kill after the lead Secret, the status and
		// the first copy of the next phase leaves: the other two copies still hold the keyring before.
		stopOperator()
		var before corev1.Secret
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: tenants[1].ns, Name: "payments"}, &before)).To(Succeed())
		fakeClock.Step(testTTLWait + time.Second)
		startOperator()
		pokeCluster(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseRemoving)
		var removing *keyring.Keyring
		Eventually(func(g Gomega) {
			removing = leadKeyring(g, name)
			for _, t := range tenants {
				g.Expect(secretKeyring(g, t.ns, "payments").Fingerprint()).To(Equal(removing.Fingerprint()), "the copy in %s", t.ns)
			}
		}).Should(Succeed())
		stopOperator()
		var first corev1.Secret
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: tenants[0].ns, Name: "payments"}, &first)).To(Succeed())
		for _, t := range tenants[1:] {
			var s corev1.Secret
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: t.ns, Name: "payments"}, &s)).To(Succeed())
			s.Data = before.Data
			s.Annotations[mrtrv1alpha1.FingerprintAnnotation] = before.Annotations[mrtrv1alpha1.FingerprintAnnotation]
			s.Annotations[mrtrv1alpha1.PhaseAnnotation] = before.Annotations[mrtrv1alpha1.PhaseAnnotation]
			Expect(k8sClient.Update(ctx, &s, client.FieldOwner(mrtrv1alpha1.FieldManager))).To(Succeed())
		}
		startOperator()
		pokeCluster(name)
		Eventually(func(g Gomega) {
			for _, t := range tenants {
				g.Expect(secretKeyring(g, t.ns, "payments").Fingerprint()).To(Equal(removing.Fingerprint()), "the copy in %s", t.ns)
			}
		}).Should(Succeed())
		var after corev1.Secret
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: tenants[0].ns, Name: "payments"}, &after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(first.ResourceVersion), "the copy that was up to date is not written again")
		acknowledgeCopies(name, tenants...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
	})

	It("gives a namespace that joins mid-rotation the phase's keyring before its pods count, and leaves one that stops matching with its Secret", func() {
		name := "fleet-join"
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1)}
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		requestClusterRotation(name, "join-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)

		late := newTenant("elsewhere", 1)
		setLabel(late.ns, "fleet", name)
		Eventually(func(g Gomega) {
			g.Expect(secretKeyring(g, late.ns, "payments").Fingerprint()).To(Equal(leadKeyring(g, name).Fingerprint()))
		}).Should(Succeed())
		acknowledgeCopies(name, tenants...)
		Consistently(func(g Gomega) {
			g.Expect(getClusterKeyring(g, name).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting), "the late namespace's pod has not acknowledged")
		}, "2s").Should(Succeed())

		setLabel(tenants[1].ns, "fleet", "")
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(tenants[1].ns, mrtrv1alpha1.NamespaceLeft))
			g.Expect(ck.Status.Namespaces.Left).To(BeEquivalentTo(1))
			g.Expect(clusterEvents(g, name)).To(ContainElement(ContainSubstring("NamespaceLeft: namespace " + tenants[1].ns)))
		}).Should(Succeed())
		left := secretKeyring(Default, tenants[1].ns, "payments").Fingerprint()

		acknowledgeCopies(name, tenants[0], late)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		Expect(secretKeyring(Default, tenants[1].ns, "payments").Fingerprint()).To(Equal(left), "a namespace that left is not rotated; its Secret stays")
	})

	It("never overwrites a Secret that is not its copy, reports the conflict, and rotates the other namespaces", func() {
		name := "fleet-conflict"
		ours := newTenant(name, 1)
		theirs := newTenant(name, 1)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: theirs.ns, Name: "payments"},
			StringData: map[string]string{"note": "someone else's"}})).To(Succeed())
		createClusterKeyring(name)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(theirs.ns, mrtrv1alpha1.NamespaceConflict))
			g.Expect(ck.Status.Namespaces.Conflicts).To(BeEquivalentTo(1))
			g.Expect(clusterEvents(g, name)).To(ContainElement(ContainSubstring("Conflict: Secret " + theirs.ns + "/payments")))
		}).Should(Succeed())
		acknowledgeCopies(name, ours)
		requestClusterRotation(name, "conflict-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		acknowledgeCopies(name, ours)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: theirs.ns, Name: "payments"}, &s)).To(Succeed())
		Expect(s.Data).To(Equal(map[string][]byte{"note": []byte("someone else's")}))
		Expect(s.Labels).NotTo(HaveKey(mrtrv1alpha1.ClusterKeyringLabel))
	})

	It("applies the owner rule between a cluster keyring and an MRTRKeyring of one namespace that claim one Secret, and reports it on both sides", func() {
		name := "fleet-owner"
		first := newTenant(name, 1)  // an MRTRKeyring of the Secret exists before the cluster keyring
		second := newTenant(name, 1) // the cluster keyring's copy exists before an MRTRKeyring
		kr := createKeyring(first.ns, "payments", reloading(nil))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		createClusterKeyring(name)
		acknowledgeCopies(name, second)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(first.ns, mrtrv1alpha1.NamespaceConflict))
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(second.ns, mrtrv1alpha1.NamespaceUpToDate))
		}).Should(Succeed())
		Expect(secretLabels(first.ns, "payments")).To(HaveKeyWithValue(mrtrv1alpha1.KeyringLabel, "payments"))
		Expect(secretLabels(first.ns, "payments")).NotTo(HaveKey(mrtrv1alpha1.ClusterKeyringLabel))

		copied := secretKeyring(Default, second.ns, "payments").Fingerprint()
		late := createKeyring(second.ns, "payments", reloading(nil))
		eventuallyInConflict(late, "ClusterMRTRKeyring."+name)
		Expect(secretKeyring(Default, second.ns, "payments").Fingerprint()).To(Equal(copied), "the MRTRKeyring takes over nothing")
	})

	It("finds the consumers of a Secret named after the keyring, spec.secretName left at its default", func() {
		name := "payments" // the tenants' Deployments and pods mount Secret payments
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1)}
		spec := newKeyring("", name, reloading(nil)).Spec
		Expect(spec.SecretName).To(BeEmpty())
		Expect(k8sClient.Create(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}}})).To(Succeed())
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.WorkloadCount).To(BeEquivalentTo(2))
			g.Expect(ck.Status.PodsAcknowledged).To(BeEquivalentTo(2))
		}).Should(Succeed())
		requestClusterRotation(name, "default-name-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
	})

	It("is refused without a namespaceSelector, with named workloads or a pod selector, or a name too long to label with", func() {
		spec := newKeyring("", "x", nil).Spec
		for what, ck := range map[string]*mrtrv1alpha1.ClusterMRTRKeyring{
			"namespaceSelector": {ObjectMeta: metav1.ObjectMeta{Name: "no-selector"}, Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec}},
			"spec.workloads": {ObjectMeta: metav1.ObjectMeta{Name: "named"}, Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{
				MRTRKeyringSpec: func() mrtrv1alpha1.MRTRKeyringSpec {
					s := spec
					s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: "apps/v1", Kind: mrtrv1alpha1.KindDeployment, Name: "api"}}
					return s
				}(), NamespaceSelector: &metav1.LabelSelector{}}},
			"spec.podSelector": {ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{
				MRTRKeyringSpec: func() mrtrv1alpha1.MRTRKeyringSpec {
					s := spec
					s.PodSelector = &metav1.LabelSelector{}
					return s
				}(), NamespaceSelector: &metav1.LabelSelector{}}},
			"at most 44 characters": {ObjectMeta: metav1.ObjectMeta{Name: "a-name-that-is-far-too-long-to-fit-in-a-label-value"},
				Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec, NamespaceSelector: &metav1.LabelSelector{}}},
		} {
			By(what)
			expectInvalid(k8sClient.Create(ctx, ck), what)
		}
	})
})

// secretLabels reads the labels of a Secret.
func secretLabels(namespace, name string) map[string]string {
	GinkgoHelper()
	var s corev1.Secret
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)).To(Succeed())
	return s.Labels
}
