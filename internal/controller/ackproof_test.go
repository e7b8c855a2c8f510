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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// TestAckWriter: the gatherer reads, for rotation's acceptance rule (rotation/ackproof.go), who
// wrote a pod's acknowledgement, from the Pod as read and as the cache strips it.
func TestAckWriter(t *testing.T) {
	const key = ack.AnnotationPrefix + "weather"
	written := time.Date(2026, 12, 2, 8, 0, 10, 0, time.UTC)
	fields := func(keys ...string) *metav1.FieldsV1 {
		var b strings.Builder
		b.WriteString(`{"f:metadata":{"f:annotations":{".":{}`)
		for _, k := range keys {
			b.WriteString(`,"f:` + k + `":{}`)
		}
		b.WriteString(`}}}`)
		return metav1.NewFieldsV1(b.String())
	}
	entry := func(manager, subresource string, at time.Time, keys ...string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &metav1.Time{Time: at}, FieldsType: "FieldsV1", FieldsV1: fields(keys...), Subresource: subresource}
	}
	kubelet := metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		Time: &metav1.Time{Time: written}, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)}
	for name, c := range map[string]struct {
		value   string // "" for no annotation
		managed []metav1.ManagedFieldsEntry
		want    rotation.Writer
	}{
		"no acknowledgement": {managed: []metav1.ManagedFieldsEntry{kubelet}},
		"the reporter's": {value: "fp-1", managed: []metav1.ManagedFieldsEntry{kubelet, entry(ack.FieldManager, "", written.Add(time.Second), key)},
			want: rotation.Writer{Manager: ack.FieldManager, At: written.Add(time.Second)}},
		"through pods/status, under the reporter's name": {value: "fp-1",
			managed: []metav1.ManagedFieldsEntry{kubelet, entry(ack.FieldManager, "status", written, key)},
			want:    rotation.Writer{Manager: ack.FieldManager, Subresource: "status", At: written}},
		"by kubectl": {value: "fp-1", managed: []metav1.ManagedFieldsEntry{entry("kubectl-annotate", "", written, key)},
			want: rotation.Writer{Manager: "kubectl-annotate", At: written}},
		"the reporter's entry owns another Secret's acknowledgement only": {value: "fp-1",
			managed: []metav1.ManagedFieldsEntry{entry(ack.FieldManager, "", written, ack.AnnotationPrefix+"other"),
				entry("kubectl-annotate", "", written, key)},
			want: rotation.Writer{Manager: "kubectl-annotate", At: written}},
		"no record of the writer": {value: "fp-1", managed: []metav1.ManagedFieldsEntry{kubelet}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: c.managed}}
			if c.value != "" {
				pod.Annotations = map[string]string{key: c.value, "example.com/other": "x"}
			}
			// What the cache keeps must gather the same.
			stripped, err := workload.StripPod(pod)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []*corev1.Pod{pod, stripped.(*corev1.Pod)} {
				if got := ackWriter(p, key); got != c.want {
					t.Errorf("ackWriter = %+v, want %+v", got, c.want)
				}
			}
		})
	}
}
