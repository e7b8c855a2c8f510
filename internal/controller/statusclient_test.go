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
	"encoding/json"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// answer is a keyring as the API server answers a write of it: compact JSON.
func answer(t testing.TB, rv string, labels, annotations map[string]string) []byte {
	kr := mrtrv1alpha1.MRTRKeyring{
		TypeMeta: metav1.TypeMeta{APIVersion: mrtrv1alpha1.GroupVersion.String(), Kind: "MRTRKeyring"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kr", ResourceVersion: rv, Labels: labels, Annotations: annotations,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "mrtr-operator", Operation: metav1.ManagedFieldsOperationUpdate,
				Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)}}},
		Status: mrtrv1alpha1.MRTRKeyringStatus{Phase: mrtrv1alpha1.PhaseStable},
	}
	b, err := json.Marshal(&kr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAnswerResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name                string
		labels, annotations map[string]string
	}{
		{name: "plain"},
		{name: "an annotation of that name", annotations: map[string]string{"resourceVersion": "1"}},
		{name: "a label of that name", labels: map[string]string{"resourceVersion": "2"}},
		{name: "a key that ends in it", annotations: map[string]string{`a"resourceVersion`: `":"3`}},
		{name: "a value that holds it", annotations: map[string]string{"a": `"resourceVersion":"4"`}},
	} {
		got, err := answerResourceVersion(answer(t, "123456", tc.labels, tc.annotations))
		if err != nil || got != "123456" {
			t.Errorf("%s: answerResourceVersion = %q, %v; want 123456", tc.name, got, err)
		}
	}
	for _, bad := range []string{`{"metadata":{"name":"kr"}}`, `not json`, `{"metadata":{"resourceVersion":7}}`} {
		if got, err := answerResourceVersion([]byte(bad)); err == nil {
			t.Errorf("answerResourceVersion(%s) = %q, want an error", bad, got)
		}
	}
}

// FuzzAnswerResourceVersion checks that no label or annotation, whatever its key and value, makes
// the answer's resourceVersion read wrong.
func FuzzAnswerResourceVersion(f *testing.F) {
	f.Add("resourceVersion", "1", `a"resourceVersion`, `":"2`)
	f.Add("k", `"resourceVersion":"`, "resourceVersion", "")
	f.Fuzz(func(t *testing.T, labelKey, labelValue, annotationKey, annotationValue string) {
		got, err := answerResourceVersion(answer(t, "98765", map[string]string{labelKey: labelValue},
			map[string]string{annotationKey: annotationValue}))
		if err != nil || got != "98765" {
			t.Fatalf("answerResourceVersion = %q, %v; want 98765", got, err)
		}
	})
}

var _ = Describe("The reconcilers' client (NewClient)", func() {
	It("updates a keyring's status, takes the resourceVersion of the answer, and is refused a stale copy", func() {
		kr := createKeyring(newNamespace(), "status-client", nil)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
			g.Expect(kr.Status.Phase).NotTo(BeEmpty())
		}).Should(Succeed())
		var stale *mrtrv1alpha1.MRTRKeyring
		// Retried only if the operator writes the status between the read and the writes.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
			stale = kr.DeepCopy()
			kr.Status.RotationsCompleted = 42
			g.Expect(reconcilerClient.Status().Update(ctx, kr, client.FieldOwner("status-client-test"))).To(Succeed())
			g.Expect(kr.ResourceVersion).NotTo(Equal(stale.ResourceVersion))
			g.Expect(kr.Status.RotationsCompleted).To(BeEquivalentTo(42), "the status sent is kept")
			// A second write from that resourceVersion succeeds: it is the one the API server holds.
			kr.Status.RotationsCompleted = 43
			g.Expect(reconcilerClient.Status().Update(ctx, kr, client.FieldOwner("status-client-test"))).To(Succeed())
		}).Should(Succeed())
		var live mrtrv1alpha1.MRTRKeyring
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), &live)).To(Succeed())
		Expect(live.Status.RotationsCompleted).To(BeEquivalentTo(43))
		err := reconcilerClient.Status().Update(ctx, stale, client.FieldOwner("status-client-test"))
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "a status update of a stale copy: %v", err)
	})
})
