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

package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// keyringView is what `status NAME` shows: the keyring as its status has it, and, in Reload
// delivery, each pod of its targets as the API server has it now, with the fingerprint it
// acknowledged. Status is the operator's view (it counts and gates); the pods are read to show each
// one, the operator's laggards marked.
type keyringView struct {
	kr        *mrtrv1alpha1.MRTRKeyring
	workloads []workloadView
	// selected are the pods spec.podSelector selects, those of the targets aside (they are listed
	// with their workload, as the operator counts them); nil without a podSelector.
	selected *podsView
	// namespaces are a ClusterMRTRKeyring's, as its status counts and lists them; nil for an
	// MRTRKeyring.
	namespaces *mrtrv1alpha1.NamespacesStatus
	// members are a ClusterMRTRKeyring's member clusters (membersOf); nil without spec.members
	// and status.members.
	members []memberView
}

type workloadView struct {
	mrtrv1alpha1.WorkloadStatus
	pods *podsView // nil when not read: Restart delivery, or the workload was not found
}

// podsView is a list of pods, or why it could not be read (the plugin's user may lack list
// permission on pods or workloads: the rest of the picture still shows).
type podsView struct {
	pods []podView
	err  error
}

type podView struct {
	name         string
	created      time.Time
	acknowledged string // the keyring fingerprint the pod acknowledged; "" for none
	terminating  bool
	laggard      bool // the operator named it among the laggards
}

// reload reports whether kr delivers by acknowledgement, as the operator reads its spec.
func reload(kr *mrtrv1alpha1.MRTRKeyring) bool { return rotation.SettingsFrom(kr.Spec).Reload() }

// secretName is the keyring Secret's name: status's, else the spec's default.
func secretName(kr *mrtrv1alpha1.MRTRKeyring) string {
	if kr.Status.SecretName != "" {
		return kr.Status.SecretName
	}
	return kr.EffectiveSecretName()
}

// gather reads the pods of kr's targets, as the operator selects them, into a keyringView. Those of
// a ClusterMRTRKeyring (namespaces not nil) are not read: they are in many namespaces, and the
// status says which are behind (its namespaces, and the laggards each workload names).
func gather(ctx context.Context, c client.Reader, kr *mrtrv1alpha1.MRTRKeyring, namespaces *mrtrv1alpha1.NamespacesStatus) keyringView {
	v := keyringView{kr: kr, namespaces: namespaces}
	key := ack.AnnotationKey(secretName(kr))
	seen := map[string]bool{}
	for _, ws := range kr.Status.Workloads {
		wv := workloadView{WorkloadStatus: ws}
		if reload(kr) && ws.Found && namespaces == nil {
			pods, err := workloadPods(ctx, c, kr.Namespace, ws)
			wv.pods = podViews(pods, err, key, ws.Laggards)
			for _, p := range pods {
				seen[p.Name] = true
			}
		}
		v.workloads = append(v.workloads, wv)
	}
	if sel := kr.Spec.PodSelector; sel != nil && namespaces == nil {
		pods, err := selectedPods(ctx, c, kr.Namespace, sel)
		pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return seen[p.Name] })
		var laggards []string
		if kr.Status.SelectedPods != nil {
			laggards = kr.Status.SelectedPods.Laggards
		}
		v.selected = podViews(pods, err, key, laggards)
	}
	return v
}

// workloadPods lists the pods that the workload's controller selects, as the operator does.
func workloadPods(ctx context.Context, c client.Reader, ns string, ws mrtrv1alpha1.WorkloadStatus) ([]corev1.Pod, error) {
	obj, err := workload.New(ws.Kind)
	if err != nil {
		return nil, err
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ws.Name}, obj); err != nil {
		return nil, fmt.Errorf("get %s %s: %w", ws.Kind, ws.Name, err)
	}
	sel, err := workload.Selector(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", ws.Kind, ws.Name, err)
	}
	return workload.ListPods(ctx, c, ns, sel)
}

func selectedPods(ctx context.Context, c client.Reader, ns string, sel *metav1.LabelSelector) ([]corev1.Pod, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("spec.podSelector: %w", err)
	}
	return workload.ListPods(ctx, c, ns, s)
}

func podViews(pods []corev1.Pod, err error, key string, laggards []string) *podsView {
	v := &podsView{err: err}
	for _, p := range pods {
		v.pods = append(v.pods, podView{
			name:         p.Name,
			created:      p.CreationTimestamp.Time,
			acknowledged: p.Annotations[key],
			terminating:  p.DeletionTimestamp != nil,
			laggard:      slices.Contains(laggards, p.Name),
		})
	}
	return v
}
