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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// answer is a keyring as the API server answers a write of it: compact JSON.
func answer(t testing.TB, rv string, labels, annotations map[string]string) []byte {
	kr := mrtrv1alpha1.MRTRKeyring{
		TypeMeta: metav1.TypeMeta{APIVersion: mrtrv1alpha1.GroupVersion.String(), Kind: "MRTRKeyring"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kr", ResourceVersion: rv, Labels: labels, Annotations: annotations,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "mrtr-operator", Operation: metav1.ManagedFieldsOperationUpdate,
				Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{}}}`)}}}},
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
