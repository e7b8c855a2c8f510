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

// StatefulSet is the apps/v1 StatefulSet kind.
const StatefulSet = mrtrv1alpha1.KindStatefulSet

// The reconciler lists and watches the kind, and patches its stamp (see its RBAC comment).
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list;watch;patch

var _ = register(kindOf[*appsv1.StatefulSet]{
	name: StatefulSet, order: 1, version: appsv1.SchemeGroupVersion,
	object:      func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
	list:        func() client.ObjectList { return &appsv1.StatefulSetList{} },
	podTemplate: func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
	podSelector: func(s *appsv1.StatefulSet) *metav1.LabelSelector { return s.Spec.Selector },
	counted:     func(s *appsv1.StatefulSet) int32 { return s.Status.Replicas },
	rolledOut:   statefulSetRollout,
	stripped: func(s *appsv1.StatefulSet, t corev1.PodTemplateSpec) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta, Status: s.Status, Spec: appsv1.StatefulSetSpec{
			Replicas: s.Spec.Replicas, Selector: s.Spec.Selector, UpdateStrategy: s.Spec.UpdateStrategy, Template: t,
		}}
	},
	statusOf: func(s *appsv1.StatefulSet) any { return s.Status },
})

func statefulSetRollout(s *appsv1.StatefulSet) Rollout {
	name := Ref{Kind: StatefulSet, Name: s.Name}
	st := s.Status
	r := Rollout{Desired: replicas(s.Spec.Replicas), Ready: min(st.UpdatedReplicas, st.AvailableReplicas)}
	var v *intstr.IntOrString
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		v = ru.MaxUnavailable
	}
	r.MaxUnavailable = scaled(v, intstr.FromInt32(1), r.Desired, true)
	// The StatefulSet controller leaves observedGeneration at 0 until it first sees the object.
	if st.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration {
		r.Unobserved = true
		r.Message = fmt.Sprintf("%s: waiting for the statefulset controller to observe generation %d", name, s.Generation)
		return r
	}
	switch {
	case st.UpdatedReplicas < r.Desired:
		r.Message = fmt.Sprintf("%s: %d of %d pods updated%s", name, st.UpdatedReplicas, r.Desired, heldBack(s))
	case st.Replicas > st.UpdatedReplicas:
		r.Message = fmt.Sprintf("%s: %d old pods pending termination", name, st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < r.Desired:
		r.Message = fmt.Sprintf("%s: %d of %d pods available", name, st.AvailableReplicas, r.Desired)
	// currentRevision catches up with updateRevision once every pod runs it; until then some pod may
	// still run the previous template even though the counts look complete.
	case st.UpdateRevision != st.CurrentRevision:
		r.Message = fmt.Sprintf("%s: waiting for revision %s to become current (still %s)", name, st.UpdateRevision, st.CurrentRevision)
	default:
		r.Done = true
		r.Message = fmt.Sprintf("%s: rolled out, %d of %d pods updated and available", name, r.Ready, r.Desired)
	}
	return r
}

// heldBack explains why a StatefulSet will not replace all its pods by itself.
func heldBack(s *appsv1.StatefulSet) string {
	u := s.Spec.UpdateStrategy
	switch {
	case u.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return " (updateStrategy OnDelete: pods are replaced only when deleted)"
	case u.RollingUpdate != nil && u.RollingUpdate.Partition != nil && *u.RollingUpdate.Partition > 0:
		return fmt.Sprintf(" (partition %d holds back the pods below that ordinal)", *u.RollingUpdate.Partition)
	}
	return ""
}
