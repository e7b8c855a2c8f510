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
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// Who wrote an annotation, from the object's managedFields: the API server records, for each
// field, the field manager that last set it, the subresource it came through (pods/status is
// "status") and when, by its own clock. The operator reads two such records: who wrote a pod's
// acknowledgement (taken as proof only from the pod's own reporter), and who wrote a workload's
// stamp (another manager putting it back is a fight with GitOps, not a reason to restart again).

// annotationPath is where an entry's fieldsV1 owns the annotations read: the path, as managedFields
// name it, and owned, which decodes the keys owned there (each "f:<key>") in one pass. Walking the
// path one map at a time decoded each level again: 3 times the CPU and 7 times the allocations of
// one typed decode, on every workload event (StampWriters runs in the cache's transform).
type annotationPath struct {
	steps []string
	owned func(fieldsV1 []byte) (map[string]struct{}, error)
}

// podFields and templateFields are a pod's and a pod template's annotations in a fieldsV1.
type (
	podFields struct {
		Metadata struct {
			Annotations map[string]struct{} `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	templateFields struct {
		Spec struct {
			Template podFields `json:"f:template"`
		} `json:"f:spec"`
	}
)

var (
	podAnnotations = annotationPath{[]string{"f:metadata", "f:annotations"}, func(raw []byte) (map[string]struct{}, error) {
		var f podFields
		err := json.Unmarshal(raw, &f)
		return f.Metadata.Annotations, err
	}}
	templateAnnotations = annotationPath{[]string{"f:spec", "f:template", "f:metadata", "f:annotations"}, func(raw []byte) (map[string]struct{}, error) {
		var f templateFields
		err := json.Unmarshal(raw, &f)
		return f.Spec.Template.Metadata.Annotations, err
	}}
)

// AcknowledgementWriter returns the managedFields entry that owns pod's annotation key, false when
// none does (the API server always records one; a pod from a cache that dropped them has none).
func AcknowledgementWriter(pod client.Object, key string) (metav1.ManagedFieldsEntry, bool) {
	return annotationWriter(pod.GetManagedFields(), podAnnotations, key)
}

// StampWriter returns the managedFields entry that owns the pod-template annotation key of
// workload obj (its stamp), false when none does.
func StampWriter(obj client.Object, key string) (metav1.ManagedFieldsEntry, bool) {
	return annotationWriter(obj.GetManagedFields(), templateAnnotations, key)
}

// isStamp reports whether a pod-template annotation is a stamp.
func isStamp(key string) bool {
	return key == mrtrv1alpha1.FingerprintAnnotation || strings.HasPrefix(key, mrtrv1alpha1.FingerprintAnnotationPrefix)
}

// StampWriters keeps, of obj's managedFields, the entries that own a stamp, each reduced to those
// annotations: what StampWriter reads, for a cache that drops the rest.
func StampWriters(obj client.Object) []metav1.ManagedFieldsEntry {
	return annotationWriters(obj.GetManagedFields(), templateAnnotations, isStamp)
}

func annotationWriter(managed []metav1.ManagedFieldsEntry, path annotationPath, key string) (metav1.ManagedFieldsEntry, bool) {
	needle := []byte(`"f:` + key + `"`)
	for _, m := range managed {
		if m.FieldsV1 == nil || !bytes.Contains(m.FieldsV1.GetRawBytes(), needle) {
			continue
		}
		if slices.Contains(ownedAnnotations(m.FieldsV1.GetRawBytes(), path), key) {
			return m, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// ownedAnnotations lists the annotation keys at path that a managedFields entry's fieldsV1 owns
// (for a pod's: {"f:metadata":{"f:annotations":{"f:<key>":{}}}}); nil when it owns none or does not
// parse.
func ownedAnnotations(raw []byte, path annotationPath) []string {
	owned, err := path.owned(raw)
	if err != nil {
		return nil
	}
	var keys []string
	for k := range owned {
		if name, ok := strings.CutPrefix(k, "f:"); ok {
			keys = append(keys, name)
		}
	}
	return keys
}

// annotationWriters keeps, of managed, the entries that own an annotation at path for which keep
// is true, each reduced to those annotations: what annotationWriter reads, in a few hundred bytes
// instead of the kubelet's whole status entry or a GitOps tool's whole spec.
func annotationWriters(managed []metav1.ManagedFieldsEntry, path annotationPath, keep func(string) bool) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, m := range managed {
		if m.FieldsV1 == nil || !bytes.Contains(m.FieldsV1.GetRawBytes(), []byte(`"f:annotations"`)) {
			continue
		}
		owned := map[string]any{}
		for _, k := range ownedAnnotations(m.FieldsV1.GetRawBytes(), path) {
			if keep(k) {
				owned["f:"+k] = struct{}{}
			}
		}
		if len(owned) == 0 {
			continue
		}
		var fields any = owned
		for _, step := range slices.Backward(path.steps) {
			fields = map[string]any{step: fields}
		}
		raw, err := json.Marshal(fields)
		if err != nil {
			continue // cannot happen: strings and empty structs always encode
		}
		out = append(out, metav1.ManagedFieldsEntry{Manager: m.Manager, Operation: m.Operation, APIVersion: m.APIVersion,
			Time: m.Time, FieldsType: m.FieldsType, FieldsV1: metav1.NewFieldsV1(string(raw)), Subresource: m.Subresource})
	}
	return out
}

// acknowledgementWriters keeps, of a pod's managedFields, the entries that own an acknowledgement.
func acknowledgementWriters(managed []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return annotationWriters(managed, podAnnotations, func(k string) bool { return strings.HasPrefix(k, ack.AnnotationPrefix) })
}
