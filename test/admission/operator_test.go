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

package admission

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// The operator's side: config/rbac/role.yaml (the manager's ClusterRole, generated from the RBAC
// markers) bound to the operator's ServiceAccount, and config/admission (the policy that confines
// the role's "patch pods" to the annotation that makes the kubelet sync a pod at once).
const (
	operatorNS         = "mrtr-operator-system"
	operatorSA         = "controller-manager"
	operatorPolicyName = "mrtr-operator-pod-annotation"
	operatorPodsNS     = "payments"
	operatorPodName    = "server"
	// unrelatedNS holds a pod that mounts a Secret but is no keyring consumer.
	unrelatedNS = "unrelated"
	// podsSA runs the pods of operatorPodsNS, bound to the consumer role, as the servers are.
	podsSA              = "mcp"
	operatorDeniedFixed = "the mrtr-operator (system:serviceaccount:" + operatorNS + ":" + operatorSA +
		") may change nothing on pod " + operatorPodsNS + "/" + operatorPodName + " but its annotation mrtr.dev/keyring-written"
)

var _ = Describe("the operator's pod annotation policy", Ordered, func() {
	var (
		pod      *corev1.Pod
		operator client.Client
	)
	rbacDir := filepath.Join("..", "..", "config", "rbac")

	BeforeAll(func() {
		By("applying the manager's role and the pod annotation policy as they ship")
		objs, err := testenv.ApplyFile(ctx, admin, filepath.Join(rbacDir, "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(1))
		role := objs[0].GetName()
		objs, err = testenv.ApplyKustomization(ctx, admin, filepath.Join("..", "..", "config", "admission"))
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).To(HaveLen(2))

		By("type-checking the policy against the Pod schema the API server serves")
		expectTypeChecks(operatorPolicyName)

		By("binding the role to the operator's ServiceAccount")
		for _, n := range []string{operatorNS, operatorPodsNS, unrelatedNS} {
			Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
		}
		Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: podsSA, Namespace: operatorPodsNS}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: podsSA + "-keyring-consumer", Namespace: operatorPodsNS},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: consumerRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: podsSA, Namespace: operatorPodsNS}},
		})).To(Succeed())
		Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: operatorSA, Namespace: operatorNS}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "manager-rolebinding"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorSA, Namespace: operatorNS}},
		})).To(Succeed())
		pod = mountingPod(operatorPodsNS, operatorPodName)
		pod.Labels = map[string]string{"app": "server"}
		pod.Annotations = map[string]string{"team": "payments"}
		Expect(admin.Create(ctx, pod)).To(Succeed())
		By("the pod acknowledging the keyring of the Secret it mounts, with a token bound to it, as pkg/ack does")
		asPod := clientWithToken(tokenFor(operatorPodsNS, podsSA, pod))
		Eventually(func() error { return testworld.Acknowledge(ctx, asPod, podRef(pod), "payments", fp1) }).Should(Succeed(),
			"the pod could not acknowledge")
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: operatorSA, Namespace: operatorNS}}
		Expect(admin.SubResource("token").Create(ctx, account, request)).To(Succeed())
		operator = clientWithToken(request.Status.Token)

		By("waiting until RBAC and the policy are in force for the operator")
		Eventually(func(g Gomega) {
			err := operator.Patch(ctx, podRef(pod), client.RawPatch("application/merge-patch+json",
				[]byte(`{"metadata":{"labels":{"app":"other"}}}`)), client.DryRunAll)
			expectOperatorDeniedIn(g, err, operatorDeniedFixed)
		}).Should(Succeed(), "the operator's policy never took effect")
	})

	AfterAll(func() {
		for _, n := range []string{operatorNS, operatorPodsNS, unrelatedNS} {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "manager-rolebinding"}}
		Expect(client.IgnoreNotFound(admin.Delete(ctx, binding))).To(Succeed())
	})

	It("lets the operator write the annotation, change it and remove it", func() {
		Expect(operatorPatch(operator, pod, written(fp1+"/1"))).To(Succeed())
		Expect(get(pod).Annotations).To(HaveKeyWithValue(mrtrv1alpha1.WrittenAnnotation, fp1+"/1"))
		Expect(operatorPatch(operator, pod, written(fp1+"/2"))).To(Succeed())
		Expect(get(pod).Annotations).To(HaveKeyWithValue(mrtrv1alpha1.WrittenAnnotation, fp1+"/2"))
		By("conditional on the uid and resourceVersion read, as syncPods sends it")
		cur := get(pod)
		Expect(operatorPatch(operator, pod, fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q,"annotations":{%q:%q}}}`,
			cur.UID, cur.ResourceVersion, mrtrv1alpha1.WrittenAnnotation, fp1+"/3"))).To(Succeed())
		Expect(get(pod).Annotations).To(HaveKeyWithValue(mrtrv1alpha1.WrittenAnnotation, fp1+"/3"))
		Expect(operatorPatch(operator, pod, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, mrtrv1alpha1.WrittenAnnotation))).To(Succeed())
		Expect(get(pod).Annotations).NotTo(HaveKey(mrtrv1alpha1.WrittenAnnotation))
	})

	DescribeTable("refuses the operator any other change to a pod",
		func(patch string) {
			before := get(pod)
			expectOperatorDeniedIn(Default, operatorPatch(operator, pod, patch), operatorDeniedFixed)
			after := get(pod)
			Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the pod changed")
		},
		Entry("another annotation", `{"metadata":{"annotations":{"team":"other"}}}`),
		Entry("removing another annotation", `{"metadata":{"annotations":{"team":null}}}`),
		Entry("a new annotation", `{"metadata":{"annotations":{"mrtr.dev/rotate":"now"}}}`),
		Entry("its annotation together with another",
			`{"metadata":{"annotations":{"mrtr.dev/keyring-written":"0123456789abcdef/3","team":"other"}}}`),
		Entry("a label", `{"metadata":{"labels":{"app":"other"}}}`),
		Entry("a finalizer", `{"metadata":{"finalizers":["example.com/hold"]}}`),
		Entry("an ownerReference", `{"metadata":{"ownerReferences":[`+
			`{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"00000000-0000-0000-0000-000000000001"}]}}`),
		Entry("the spec", `{"spec":{"activeDeadlineSeconds":5}}`),
	)

	DescribeTable("refuses the operator a value of its annotation that is not a nudge's",
		func(value string) {
			before := get(pod)
			expectOperatorDeniedIn(Default, operatorPatch(operator, pod, written(value)),
				"may set mrtr.dev/keyring-written on pod "+operatorPodsNS+"/"+operatorPodName+" only to <fingerprint>/<n>")
			Expect(get(pod).ResourceVersion).To(Equal(before.ResourceVersion), "the pod changed")
		},
		Entry("arbitrary text", "anything at all"),
		Entry("a bare fingerprint", fp1),
		Entry("upper-case hex", "0123456789ABCDEF/1"),
		Entry("a number too large", fp1+"/1000000"),
		Entry("a trailing line", fp1+"/1\nmore"),
	)

	It("refuses the operator a nudge of a pod in an unrelated namespace, which mounts a Secret but acknowledges none", func() {
		other := mountingPod(unrelatedNS, "server")
		Expect(admin.Create(ctx, other)).To(Succeed())
		expectOperatorDeniedIn(Default, operatorPatch(operator, other, written(fp1+"/1")),
			"may nudge only a keyring consumer: pod "+unrelatedNS+"/server acknowledges no keyring")
		Expect(get(other).Annotations).NotTo(HaveKey(mrtrv1alpha1.WrittenAnnotation))

		By("an admin's change there is not the policy's business")
		Expect(mergePatch(admin, other, written("anything"))).To(Succeed())
	})

	It("refuses the operator a nudge of a pod that acknowledges a keyring of a Secret it does not mount", func() {
		// It once mounted payments (its acknowledgement says so); now it mounts another Secret only.
		other := newPod(operatorPodsNS, "other-secret", podsSA)
		other.Spec.Volumes = []corev1.Volume{projectedSecret("tls")}
		Expect(admin.Create(ctx, other)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, other))).To(Succeed()) })
		asOther := clientWithToken(tokenFor(operatorPodsNS, podsSA, other))
		Expect(mergePatch(asOther, other, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ack.AnnotationKey("payments"), fp1))).To(Succeed())
		expectOperatorDeniedIn(Default, operatorPatch(operator, other, written(fp1+"/1")),
			"may nudge only a keyring consumer: pod "+operatorPodsNS+"/other-secret acknowledges no keyring")

		By("and lets it nudge a pod that mounts the Secret through a projected volume")
		projected := newPod(operatorPodsNS, "projected", podsSA)
		projected.Spec.Volumes = []corev1.Volume{projectedSecret("payments")}
		Expect(admin.Create(ctx, projected)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(admin.Delete(ctx, projected))).To(Succeed()) })
		asProjected := clientWithToken(tokenFor(operatorPodsNS, podsSA, projected))
		Expect(mergePatch(asProjected, projected,
			fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ack.AnnotationKey("payments"), fp1))).To(Succeed())
		Expect(operatorPatch(operator, projected, written(fp1+"/1"))).To(Succeed())
	})

	DescribeTable("refuses the operator a rewrite of the managedFields that say who wrote the acknowledgement",
		func(edit func(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry) {
			before := get(pod)
			ackEntry := slices.IndexFunc(before.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == ack.FieldManager })
			Expect(ackEntry).NotTo(Equal(-1), "the pod's acknowledgement has no entry of %s: %+v", ack.FieldManager, before.ManagedFields)
			entries := edit(slices.Clone(before.ManagedFields))
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": entries,
				"annotations": map[string]string{mrtrv1alpha1.WrittenAnnotation: fp1 + "/7"}}})
			Expect(err).NotTo(HaveOccurred())
			expectOperatorDeniedIn(Default, operatorPatch(operator, pod, string(patch)),
				"may not change the managedFields of pod "+operatorPodsNS+"/"+operatorPodName)
			Expect(get(pod).ResourceVersion).To(Equal(before.ResourceVersion), "the pod changed")
		},
		Entry("the acknowledgement's time, as if written before the Secret", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			i := slices.IndexFunc(e, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == ack.FieldManager })
			e[i].Time = &metav1.Time{Time: e[i].Time.Add(-time.Hour)}
			return e
		}),
		Entry("the acknowledgement's writer renamed", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			i := slices.IndexFunc(e, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == ack.FieldManager })
			e[i].Manager = "someone-else"
			return e
		}),
		Entry("the acknowledgement's entry dropped", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			return slices.DeleteFunc(e, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == ack.FieldManager })
		}),
		Entry("the acknowledgement's subresource changed", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			i := slices.IndexFunc(e, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == ack.FieldManager })
			e[i].Subresource = "status"
			return e
		}),
		Entry("the acknowledgement claimed by the operator's own entry", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			return append(e, metav1.ManagedFieldsEntry{Manager: mrtrv1alpha1.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &metav1.Time{Time: time.Now()}, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(ownsAck)})
		}),
		Entry("a new entry of another manager", func(e []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
			return append([]metav1.ManagedFieldsEntry{{Manager: "forger", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &metav1.Time{Time: time.Now()}, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(ownsAck)}}, e...)
		}),
	)

	It("lets the operator take its annotation from another field manager that set it, and nothing else", func() {
		By("someone who may patch pods sets the annotation, and one of their own")
		Expect(admin.Patch(ctx, podRef(pod), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"mrtr.dev/keyring-written":"`+fp1+`/5","note":"kept"}}}`)),
			client.FieldOwner("someone"))).To(Succeed())
		Expect(operatorPatch(operator, pod, written(fp1+"/6"))).To(Succeed())
		after := get(pod)
		Expect(after.Annotations).To(HaveKeyWithValue(mrtrv1alpha1.WrittenAnnotation, fp1+"/6"))
		writer, ok := workload.AcknowledgementWriter(after, mrtrv1alpha1.WrittenAnnotation)
		Expect(ok).To(BeTrue())
		Expect(writer.Manager).To(Equal(mrtrv1alpha1.FieldManager))
		note, ok := workload.AcknowledgementWriter(after, "note")
		Expect(ok).To(BeTrue())
		Expect(note.Manager).To(Equal("someone"), "the other manager's entry lost more than the annotation")

		By("and when that annotation was all the other manager owned, its entry goes")
		Expect(admin.Patch(ctx, podRef(pod), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"mrtr.dev/keyring-written":"`+fp1+`/8"}}}`)), client.FieldOwner("only-the-nudge"))).To(Succeed())
		Expect(operatorPatch(operator, pod, written(fp1+"/9"))).To(Succeed())
		Expect(get(pod).ManagedFields).NotTo(ContainElement(HaveField("Manager", "only-the-nudge")))
	})

	It("refuses the operator a pod's acknowledgement (which the acknowledgement policy refuses it too)", func() {
		before := get(pod)
		err := operatorPatch(operator, pod, `{"metadata":{"annotations":{"loaded.mrtr.dev/payments":"forged"}}}`)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "not a 403 Forbidden: %v", err)
		Expect(get(pod).ResourceVersion).To(Equal(before.ResourceVersion), "the pod changed")
	})

	It("refuses the operator a pod of its own, even where RBAC would allow it", func() {
		// RBAC grants the operator no create: add it, so that the refusal is the policy's.
		Expect(admin.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "create-pods", Namespace: operatorPodsNS},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}},
		})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "create-pods", Namespace: operatorPodsNS},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "create-pods"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorSA, Namespace: operatorNS}},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			err := operator.Create(ctx, newPod(operatorPodsNS, "made-by-operator", "default"), client.DryRunAll)
			expectOperatorDeniedIn(g, err, "it may not create pods")
		}).Should(Succeed())
	})

	It("leaves everyone else alone: an admin changes labels and annotations", func() {
		Expect(mergePatch(admin, pod, `{"metadata":{"labels":{"app":"renamed"},"annotations":{"team":"other"}}}`)).To(Succeed())
		Expect(get(pod).Labels).To(HaveKeyWithValue("app", "renamed"))
	})
})

// ownsAck is the fieldsV1 of an entry that owns the pod's acknowledgement of Secret payments.
var ownsAck = `{"f:metadata":{"f:annotations":{"f:` + ack.AnnotationKey("payments") + `":{}}}}`

// fp1 is a fingerprint as pkg/keyring makes them: 16 hex digits.
const fp1 = "0123456789abcdef"

// written is the merge patch of the operator's nudge annotation to value.
func written(value string) string {
	return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.WrittenAnnotation, value)
}

// projectedSecret is a projected volume of the Secret name.
func projectedSecret(name string) corev1.Volume {
	return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}}}}
}

// mountingPod is a pod of podsSA that mounts the Secret payments, as a keyring's consumer does.
func mountingPod(namespace, name string) *corev1.Pod {
	pod := newPod(namespace, name, podsSA)
	consumer := testworld.ConsumerPodSpec("payments")
	pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts = consumer.Volumes, consumer.Containers[0].VolumeMounts
	return pod
}

func podRef(pod *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
}

// operatorPatch patches pod as the operator does (internal/controller's syncPods): a JSON merge
// patch, under the operator's field manager.
func operatorPatch(c client.Client, pod *corev1.Pod, patch string) error {
	return c.Patch(ctx, podRef(pod), client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(mrtrv1alpha1.FieldManager))
}

// expectOperatorDeniedIn asserts that err is the operator policy's denial with message.
func expectOperatorDeniedIn(g Gomega, err error, message string) {
	g.Expect(err).To(HaveOccurred(), "the request was admitted; expected: %s", message)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "not a 403 Forbidden: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(
		fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", operatorPolicyName, operatorPolicyName)))
	g.Expect(err.Error()).To(ContainSubstring(message))
}
