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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// DaemonSet is the apps/v1 DaemonSet kind.
const DaemonSet = mrtrv1alpha1.KindDaemonSet

// The reconciler lists and watches the kind, and patches its stamp (see its RBAC comment).
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=list;watch;patch

var _ = register(kindOf[*appsv1.DaemonSet]{
	name: DaemonSet, order: 2, version: appsv1.SchemeGroupVersion,
	object:      func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
	list:        func() client.ObjectList { return &appsv1.DaemonSetList{} },
	podTemplate: func(d *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &d.Spec.Template },
	podSelector: func(d *appsv1.DaemonSet) *metav1.LabelSelector { return d.Spec.Selector },
	counted: func(d *appsv1.DaemonSet) int32 {
		return d.Status.CurrentNumberScheduled + d.Status.NumberMisscheduled
	},
	rolledOut: daemonSetRollout,
	stripped: func(d *appsv1.DaemonSet, t corev1.PodTemplateSpec) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Status: d.Status, Spec: appsv1.DaemonSetSpec{
			Selector: d.Spec.Selector, UpdateStrategy: d.Spec.UpdateStrategy, Template: t,
		}}
	},
	statusOf: func(d *appsv1.DaemonSet) any { return d.Status },
})

func daemonSetRollout(d *appsv1.DaemonSet) Rollout {
	name := Ref{Kind: DaemonSet, Name: d.Name}
	st := d.Status
	r := Rollout{Desired: st.DesiredNumberScheduled, Ready: min(st.UpdatedNumberScheduled, st.NumberAvailable)}
	var v *intstr.IntOrString
	if ru := d.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		v = ru.MaxUnavailable
	}
	r.MaxUnavailable = scaled(v, intstr.FromInt32(1), r.Desired, true)
	if d.Generation > st.ObservedGeneration {
		r.Unobserved = true
		r.Message = fmt.Sprintf("%s: waiting for the daemonset controller to observe generation %d", name, d.Generation)
		return r
	}
	switch {
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		onDelete := ""
		if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
			onDelete = " (updateStrategy OnDelete: pods are replaced only when deleted)"
		}
		r.Message = fmt.Sprintf("%s: %d of %d pods updated%s", name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled, onDelete)
	case st.NumberAvailable < st.DesiredNumberScheduled:
		r.Message = fmt.Sprintf("%s: %d of %d pods available", name, st.NumberAvailable, st.DesiredNumberScheduled)
	// A pod on a node that should not run one is still a pod that may run an old template.
	case st.NumberMisscheduled > 0:
		r.Message = fmt.Sprintf("%s: %d pods running on nodes that should not run one", name, st.NumberMisscheduled)
	default:
		r.Done = true
		r.Message = fmt.Sprintf("%s: rolled out, %d of %d pods updated and available", name, r.Ready, r.Desired)
	}
	return r
}
