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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// lockedLabel marks the namespaces whose keyring Secrets an admission policy (lockSecretUpdates)
// refuses to update: a policy engine that refuses the operator's write.
const lockedLabel = "test.mrtr.dev/locked"

// lockSecretUpdates installs, once, a ValidatingAdmissionPolicy that refuses every update of a
// Secret in a namespace labelled lockedLabel=true.
var lockSecretUpdates = func() func() {
	installed := false
	return func() {
		GinkgoHelper()
		if installed {
			return
		}
		installed = true
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "test-locked-secrets"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "keyring Secrets are locked in this namespace"}},
			},
		}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-locked-secrets"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{lockedLabel: "true"}}},
			},
		}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
	}
}()

// expectLocked waits until the policy refuses an update in namespace ns (policies take effect a
// moment after they are created).
func expectLocked(ns string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var s corev1.Secret
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "payments"}, &s)).To(Succeed())
		s.Annotations = map[string]string{"test.mrtr.dev/probe": time.Now().String()}
		// Refused by the policy, not by a conflict with the operator's own write of the copy: any
		// error would pass before the API server enforces the policy.
		g.Expect(k8sClient.Update(ctx, &s)).To(MatchError(ContainSubstring("keyring Secrets are locked")))
	}).Should(Succeed())
}

// condition returns the condition typ of ck, nil when it has none.
func clusterCondition(ck *mrtrv1alpha1.ClusterMRTRKeyring, typ string) *metav1.Condition {
	return meta.FindStatusCondition(ck.Status.Conditions, typ)
}

// namespaceItem is the status.namespaces item of ns, nil when it is not listed.
func namespaceItem(ck *mrtrv1alpha1.ClusterMRTRKeyring, ns string) *mrtrv1alpha1.NamespaceStatus {
	for i := range ck.Status.Namespaces.Items {
		if ck.Status.Namespaces.Items[i].Name == ns {
			return &ck.Status.Namespaces.Items[i]
		}
	}
	return nil
}

// templateStamp is the stamp on the pod template of Deployment api in ns.
func templateStamp(g Gomega, ns string) string {
	var d appsv1.Deployment
	g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api"}, &d)).To(Succeed())
	return d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation]
}

// reconcileErrors is controller-runtime's count of the passes of controller that returned an error
// (each one backs its keyring off).
func reconcileErrors(controller string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

var _ = Describe("ClusterMRTRKeyring places that fail, are refused or leave", func() {
	BeforeEach(func() {
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
	})

	It("holds the phase on a copy update an admission policy refuses, without evicting or stamping there, and stalls after rolloutDeadline", func() {
		name := "fleet-refused"
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1)}
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		lockSecretUpdates()
		setLabel(tenants[1].ns, lockedLabel, "true")
		expectLocked(tenants[1].ns)
		before := secretKeyring(Default, tenants[1].ns, "payments").Fingerprint()

		requestClusterRotation(name, "refused-1")
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			item := namespaceItem(ck, tenants[1].ns)
			g.Expect(item).NotTo(BeNil())
			g.Expect(item.State).To(Equal(mrtrv1alpha1.NamespaceWriteRefused))
			g.Expect(item.Message).To(ContainSubstring("ValidatingAdmissionPolicy 'test-locked-secrets'"))
			g.Expect(item.Message).To(ContainSubstring("keyring Secrets are locked"))
			partial := clusterCondition(ck, mrtrv1alpha1.ConditionPartiallyReady)
			g.Expect(partial).NotTo(BeNil())
			g.Expect(partial.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(partial.Message).To(ContainSubstring(tenants[1].ns))
			g.Expect(clusterEvents(g, name)).To(ContainElement(ContainSubstring("WriteRefused: the write of Secret " + tenants[1].ns + "/payments was refused")))
		}).Should(Succeed())
		// Every pod that can acknowledge does; the refused namespace's pods cannot (their copy is stale).
		acknowledgeCopies(name, tenants[0])
		fakeClock.Step(testReloadDeadline + time.Second)
		pokeCluster(name)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			stalled := clusterCondition(ck, mrtrv1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionFalse), "not before rolloutDeadline")
		}).Should(Succeed())
		fakeClock.Step(testRolloutWait)
		pokeCluster(name)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			stalled := clusterCondition(ck, mrtrv1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(mrtrv1alpha1.ReasonWriteRefused))
			g.Expect(stalled.Message).To(ContainSubstring(tenants[1].ns))
		}).Should(Succeed())
		for _, p := range tenants[1].pods {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})).To(Succeed(), "a pod whose copy cannot be written was evicted")
		}
		Expect(secretKeyring(Default, tenants[1].ns, "payments").Fingerprint()).To(Equal(before))

		By("the policy lifted: the copy is written, its pods acknowledge, the rotation goes on")
		setLabel(tenants[1].ns, lockedLabel, "")
		pokeCluster(name)
		acknowledgeCopies(name, tenants...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		Eventually(func(g Gomega) {
			partial := clusterCondition(getClusterKeyring(g, name), mrtrv1alpha1.ConditionPartiallyReady)
			g.Expect(partial).NotTo(BeNil())
			g.Expect(partial.Status).To(Equal(metav1.ConditionFalse))
		}).Should(Succeed())
		expectNoKeyBytes(metav1.NamespaceDefault)
	})

	It("in Restart delivery stamps no workload of a namespace whose copy update is refused", func() {
		name := "fleet-restart-refused"
		tenants := []*tenant{newTenant(name, 0), newTenant(name, 0)}
		spec := newKeyring("", name, func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = "payments" }).Spec
		Expect(k8sClient.Create(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}}})).To(Succeed())
		var stable string
		Eventually(func(g Gomega) {
			stable = leadKeyring(g, name).Fingerprint()
			for _, t := range tenants {
				g.Expect(templateStamp(g, t.ns)).To(Equal(stable), "the stamp in %s", t.ns)
			}
		}).Should(Succeed())
		lockSecretUpdates()
		setLabel(tenants[1].ns, lockedLabel, "true")
		expectLocked(tenants[1].ns)

		requestClusterRotation(name, "restart-refused-1")
		var accepting string
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			accepting = ck.Status.TargetFingerprint
			g.Expect(templateStamp(g, tenants[0].ns)).To(Equal(accepting))
			item := namespaceItem(ck, tenants[1].ns)
			g.Expect(item).NotTo(BeNil())
			g.Expect(item.State).To(Equal(mrtrv1alpha1.NamespaceWriteRefused))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(templateStamp(g, tenants[1].ns)).To(Equal(stable), "restarted onto a stale copy")
		}, "2s").Should(Succeed())
	})

	It("treats an immutable copy as a conflict and a create refused by a full quota as a namespace apart: the others rotate, without an error backoff", func() {
		name := "fleet-immutable"
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1)}
		full := newTenant("quota-"+name, 1)
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: full.ns, Name: "secrets"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/secrets": resource.MustParse("0")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		// envtest runs no quota controller: the status a controller-manager would write.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/secrets": resource.MustParse("0")}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
		setLabel(full.ns, "fleet", name)

		errorsBefore := reconcileErrors("clustermrtrkeyring")
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: tenants[1].ns, Name: "payments"}, &s)).To(Succeed())
		s.Immutable = new(true)
		Expect(k8sClient.Update(ctx, &s)).To(Succeed())
		pokeCluster(name)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(tenants[1].ns, mrtrv1alpha1.NamespaceConflict))
			g.Expect(namespaceItem(ck, tenants[1].ns).Message).To(ContainSubstring("immutable"))
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(full.ns, mrtrv1alpha1.NamespaceWriteRefused))
			g.Expect(namespaceItem(ck, full.ns).Message).To(ContainSubstring("exceeded quota"))
			partial := clusterCondition(ck, mrtrv1alpha1.ConditionPartiallyReady)
			g.Expect(partial).NotTo(BeNil())
			g.Expect(partial.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(partial.Message).To(And(ContainSubstring(tenants[1].ns), ContainSubstring(full.ns), ContainSubstring("immutable"), ContainSubstring("quota")))
		}).Should(Succeed())

		requestClusterRotation(name, "immutable-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		acknowledgeCopies(name, tenants[0])
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		ck := getClusterKeyring(Default, name)
		Expect(clusterCondition(ck, mrtrv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
		Expect(reconcileErrors("clustermrtrkeyring")).To(Equal(errorsBefore), "a refused namespace turned a pass into an error")
	})

	It("rekeys at once when a namespace leaves with spec.onLeave Rekey, dropping the staged key it holds", func() {
		name := "fleet-rekey"
		tenants := []*tenant{newTenant(name, 1), newTenant(name, 1)}
		spec := newKeyring("", name, reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.SecretName = "payments"
			s.NextKey = mrtrv1alpha1.NextKeyStaged
		})).Spec
		Expect(k8sClient.Create(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec, OnLeave: mrtrv1alpha1.OnLeaveRekey,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}}})).To(Succeed())
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, tenants...)
		held := secretKeyring(Default, tenants[1].ns, "payments").IDs()
		Expect(held).To(HaveLen(2), "the primary and the staged key")

		setLabel(tenants[1].ns, "fleet", "")
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(tenants[1].ns, mrtrv1alpha1.NamespaceLeft))
			g.Expect(clusterEvents(g, name)).To(ContainElement(And(ContainSubstring("NamespaceLeft: namespace "+tenants[1].ns),
				ContainSubstring(held[0]), ContainSubstring("kubectl mrtr revoke cmkr/"+name))))
		}).Should(Succeed())
		ids := leadKeyring(Default, name).IDs()
		Expect(ids).To(HaveLen(2))
		Expect(ids[0]).To(Equal(held[0]), "the primary seals until the new key is accepted everywhere")
		Expect(ids).NotTo(ContainElement(held[1]), "the staged key the namespace holds is dropped")

		acknowledgeCopies(name, tenants[0])
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeCopies(name, tenants[0])
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseWaitingTTL)
		fakeClock.Step(testTTLWait + time.Second)
		pokeCluster(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseRemoving)
		acknowledgeCopies(name, tenants[0])
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		for _, id := range held {
			Expect(leadKeyring(Default, name).IDs()).NotTo(ContainElement(id), "a key the namespace that left holds")
		}
		Expect(getClusterKeyring(Default, name).Status.Namespaces.PendingRekey).To(BeEmpty())
	})

	It("takes a Secret labelled as its copy in a namespace it never selected for none of its own", func() {
		name := "fleet-forged"
		ours := newTenant(name, 1)
		outside := newTenant("outside-"+name, 0)
		createClusterKeyring(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeCopies(name, ours)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: outside.ns, Name: "payments",
			Labels: map[string]string{mrtrv1alpha1.ClusterKeyringLabel: name}}, Type: "mrtr.dev/keyring"})).To(Succeed())
		pokeCluster(name)
		Consistently(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Namespaces.Left).To(BeZero())
			g.Expect(namespaceStates(ck)).NotTo(HaveKey(outside.ns))
		}, "2s").Should(Succeed())
		Expect(clusterEvents(Default, name)).NotTo(ContainElement(ContainSubstring(outside.ns)))
	})
})
