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

package workload

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a managedFields entry of manager owning fieldsV1.
func entry(manager, fieldsV1 string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fieldsV1)}
}

func TestAnnotationWritersReadTheirPathOnly(t *testing.T) {
	const stamp = "keyring-hash.mrtr.dev/kr"
	dep := &appsv1.Deployment{}
	dep.ManagedFields = []metav1.ManagedFieldsEntry{
		// The workload's own annotation of that name is not its template's.
		entry("gitops", `{"f:metadata":{"f:annotations":{"f:`+stamp+`":{}}},"f:spec":{"f:replicas":{}}}`),
		entry("mrtr-operator", `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{".":{},"f:`+stamp+`":{},"f:team":{}}}}}}`),
		entry("broken", `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:`+stamp+`":"not an object"}}}}}`),
	}
	if w, ok := StampWriter(dep, stamp); !ok || w.Manager != "mrtr-operator" {
		t.Errorf("StampWriter = %q, %v; want mrtr-operator", w.Manager, ok)
	}
	if _, ok := StampWriter(dep, "team.other/x"); ok {
		t.Error("StampWriter found a writer of an annotation nobody owns")
	}
	kept := StampWriters(dep)
	if len(kept) != 1 || kept[0].Manager != "mrtr-operator" ||
		kept[0].FieldsV1.GetRawString() != `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:`+stamp+`":{}}}}}}` {
		t.Errorf("StampWriters kept %v, want the operator's entry reduced to its stamp", kept)
	}

	pod := &corev1.Pod{}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		entry("kubelet", `{"f:status":{"f:phase":{}}}`),
		entry("reporter", `{"f:metadata":{"f:annotations":{"f:ack.mrtr.dev/kr":{}}}}`),
	}
	if w, ok := AcknowledgementWriter(pod, "ack.mrtr.dev/kr"); !ok || w.Manager != "reporter" {
		t.Errorf("AcknowledgementWriter = %q, %v; want reporter", w.Manager, ok)
	}
}

// FuzzOwnedAnnotations feeds both paths whatever a client may have written as a fieldsV1: never a
// panic, and only keys that a generic decode finds at the path (any key there, in any case: what
// encoding/json matches a field name with).
func FuzzOwnedAnnotations(f *testing.F) {
	f.Add([]byte(`{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:a":{}}}}}}`))
	f.Add([]byte(`{"f:metadata":{"f:annotations":{".":{},"f:b":{}}}}`))
	f.Add([]byte(`{"f:metadata":[1,2]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var tree any
		if json.Unmarshal(raw, &tree) != nil {
			tree = nil
		}
		for _, path := range []annotationPath{podAnnotations, templateAnnotations} {
			there := keysAt(tree, path.steps)
			for _, k := range ownedAnnotations(raw, path) {
				if !there["f:"+k] {
					t.Fatalf("key %q is not at %v in %q", k, path.steps, raw)
				}
			}
		}
	})
}

// keysAt is every key of the objects at path in tree, each step matched without regard to case.
func keysAt(tree any, path []string) map[string]bool {
	nodes := []any{tree}
	for _, step := range path {
		var next []any
		for _, n := range nodes {
			if m, ok := n.(map[string]any); ok {
				for k, v := range m {
					if strings.EqualFold(k, step) {
						next = append(next, v)
					}
				}
			}
		}
		nodes = next
	}
	keys := map[string]bool{}
	for _, n := range nodes {
		if m, ok := n.(map[string]any); ok {
			for k := range m {
				keys[k] = true
			}
		}
	}
	return keys
}
