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
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// Selector is the label selector by which obj's controller selects its pods (spec.selector).
func Selector(obj client.Object) (labels.Selector, error) {
	a, err := adapterFor(obj)
	if err != nil {
		return nil, err
	}
	sel := a.selector(obj)
	if sel == nil {
		// The API server requires one; a nil selector must not select every pod of the namespace.
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(sel)
}

// CountedPods is how many pods, terminating ones aside, obj's controller counts as its own in its
// status: a view with fewer pods than that is missing some.
func CountedPods(obj client.Object) int32 {
	a, err := adapterFor(obj)
	if err != nil {
		return 0
	}
	return a.countedPods(obj)
}

// ListPods lists the pods of namespace that sel selects and that can still serve: not Succeeded
// or Failed. Terminating pods are included: they serve until they are gone. Sorted by name.
func ListPods(ctx context.Context, c client.Reader, namespace string, sel labels.Selector) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list pods matching %s in namespace %s: %w", sel, namespace, err)
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// AcknowledgementKeys returns the acknowledgement annotations a pod carries (ack.AnnotationPrefix),
// sorted: one per keyring Secret whose keyring it reports.
func AcknowledgementKeys(pod client.Object) []string {
	var keys []string
	for k := range pod.GetAnnotations() {
		if strings.HasPrefix(k, ack.AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// StripPod is a cache transform for Pods: it keeps what the operator reads (name, labels,
// acknowledgements and who wrote them, the operator's own nudge (mrtrv1alpha1.WrittenAnnotation),
// creation and deletion times, owners, phase, node, and the Secrets the pod references) and drops
// the rest (the spec but for its Secret references and node, the status but for its phase, every
// other annotation, the managed fields of anything but an acknowledgement), so that watching every
// pod of the cluster costs little memory.
func StripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		Generation: pod.Generation, CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp,
		Labels: pod.Labels, OwnerReferences: pod.OwnerReferences, ManagedFields: acknowledgementWriters(pod.ManagedFields),
	}, Status: corev1.PodStatus{Phase: pod.Status.Phase}}
	keys := AcknowledgementKeys(pod)
	if _, ok := pod.Annotations[mrtrv1alpha1.WrittenAnnotation]; ok {
		// The operator's own nudge: its next one must differ from it (NextNudge).
		keys = append(keys, mrtrv1alpha1.WrittenAnnotation)
	}
	for _, k := range keys {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = pod.Annotations[k]
	}
	// The Secret references as stripTemplate keeps them, volumes apart from environment variables:
	// only a Secret volume is refreshed in a running pod, so only its pods are nudged (MountedSecrets).
	out.Spec = stripTemplate(&corev1.PodTemplateSpec{Spec: pod.Spec}).Spec
	out.Spec.NodeName = pod.Spec.NodeName
	return out, nil
}

// MountedSecrets returns the Secrets pod mounts as volumes (a secret volume or a projected Secret),
// sorted: the ones the kubelet refreshes in a running pod, unlike Secret environment variables.
func MountedSecrets(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			names = append(names, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					names = append(names, src.Secret.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
