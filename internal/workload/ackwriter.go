/*
Copyright 2026.

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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// Who wrote an acknowledgement, from the Pod's managedFields: the API server records, for each
// field, the field manager that last set it, the subresource it came through (pods/status is
// "status") and when, by its own clock. The operator takes an acknowledgement as proof only when
// that record shows the pod's own reporter (see the controller's acceptance rule).

// ackFieldsPrefix starts the managedFields name of an acknowledgement annotation.
var ackFieldsPrefix = []byte(`"f:` + ack.AnnotationPrefix)

// AcknowledgementWriter returns the managedFields entry that owns pod's annotation key, false when
// none does (the API server always records one; a pod from a cache that dropped them has none).
func AcknowledgementWriter(pod client.Object, key string) (metav1.ManagedFieldsEntry, bool) {
	for _, m := range pod.GetManagedFields() {
		if m.FieldsV1 == nil || !bytes.Contains(m.FieldsV1.Raw, ackFieldsPrefix) {
			continue
		}
		for _, k := range ownedAnnotations(m.FieldsV1.Raw) {
			if k == key {
				return m, true
			}
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// ownedAnnotations lists the annotation keys a managedFields entry's fieldsV1 owns
// ({"f:metadata":{"f:annotations":{"f:<key>":{}}}}); nil when it owns none or does not parse.
func ownedAnnotations(raw []byte) []string {
	var fields struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	var keys []string
	for k := range fields.Metadata.Annotations {
		if name, ok := strings.CutPrefix(k, "f:"); ok {
			keys = append(keys, name)
		}
	}
	return keys
}

// acknowledgementWriters keeps, of pod's managedFields, the entries that own an acknowledgement,
// each reduced to those annotations: what AcknowledgementWriter reads, in a few hundred bytes
// instead of the kubelet's whole status entry.
func acknowledgementWriters(managed []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, m := range managed {
		if m.FieldsV1 == nil || !bytes.Contains(m.FieldsV1.Raw, ackFieldsPrefix) {
			continue
		}
		owned := map[string]struct{}{}
		for _, k := range ownedAnnotations(m.FieldsV1.Raw) {
			if strings.HasPrefix(k, ack.AnnotationPrefix) {
				owned["f:"+k] = struct{}{}
			}
		}
		if len(owned) == 0 {
			continue
		}
		raw, err := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:annotations": owned}})
		if err != nil {
			continue // cannot happen: strings and empty structs always encode
		}
		out = append(out, metav1.ManagedFieldsEntry{Manager: m.Manager, Operation: m.Operation, APIVersion: m.APIVersion,
			Time: m.Time, FieldsType: m.FieldsType, FieldsV1: &metav1.FieldsV1{Raw: raw}, Subresource: m.Subresource})
	}
	return out
}
