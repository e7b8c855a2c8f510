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

// Deployment is the apps/v1 Deployment kind.
const Deployment = mrtrv1alpha1.KindDeployment

// The reconciler lists and watches the kind, and patches its stamp (see its RBAC comment).
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;patch

var _ = register(kindOf[*appsv1.Deployment]{
	name: Deployment, order: 0, version: appsv1.SchemeGroupVersion,
	object:      func() *appsv1.Deployment { return &appsv1.Deployment{} },
	list:        func() client.ObjectList { return &appsv1.DeploymentList{} },
	podTemplate: func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
	podSelector: func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector },
	counted:     func(d *appsv1.Deployment) int32 { return d.Status.Replicas },
	rolledOut:   deploymentRollout,
	stripped: func(d *appsv1.Deployment, t corev1.PodTemplateSpec) *appsv1.Deployment {
		return &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Status: d.Status, Spec: appsv1.DeploymentSpec{
			Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Strategy: d.Spec.Strategy, Paused: d.Spec.Paused, Template: t,
		}}
	},
	statusOf: func(d *appsv1.Deployment) any { return d.Status },
})

// deploymentTimedOutReason is the Progressing condition's reason once progressDeadlineSeconds
// passed (k8s.io/kubernetes/pkg/controller/deployment/util.TimedOutReason).
const deploymentTimedOutReason = "ProgressDeadlineExceeded"

func deploymentRollout(d *appsv1.Deployment) Rollout {
	name := Ref{Kind: Deployment, Name: d.Name}
	st := d.Status
	r := Rollout{Desired: replicas(d.Spec.Replicas), Ready: min(st.UpdatedReplicas, st.AvailableReplicas)}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		r.MaxUnavailable = r.Desired
		if r.Desired > 0 {
			r.Outage = "strategy Recreate stops every pod before it starts new ones"
		}
	} else {
		var v *intstr.IntOrString
		if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
			v = ru.MaxUnavailable
		}
		r.MaxUnavailable = scaled(v, intstr.FromString("25%"), r.Desired, false)
	}
	if d.Generation > st.ObservedGeneration {
		r.Unobserved = true
		r.Message = fmt.Sprintf("%s: waiting for the deployment controller to observe generation %d", name, d.Generation)
		return r
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == deploymentTimedOutReason {
			r.Stuck = true
			r.Message = fmt.Sprintf("%s: exceeded its progress deadline: %s", name, c.Message)
			return r
		}
	}
	switch {
	case st.UpdatedReplicas < r.Desired:
		r.Message = fmt.Sprintf("%s: %d of %d replicas updated", name, st.UpdatedReplicas, r.Desired)
	case st.Replicas > st.UpdatedReplicas:
		r.Message = fmt.Sprintf("%s: %d old replicas pending termination", name, st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		r.Message = fmt.Sprintf("%s: %d of %d updated replicas available", name, st.AvailableReplicas, st.UpdatedReplicas)
	case st.TerminatingReplicas != nil && *st.TerminatingReplicas > 0:
		r.Message = fmt.Sprintf("%s: %d replaced pods still terminating", name, *st.TerminatingReplicas)
	default:
		r.Done = true
		r.Message = fmt.Sprintf("%s: rolled out, %d of %d replicas updated and available", name, r.Ready, r.Desired)
	}
	if !r.Done && d.Spec.Paused {
		r.Message += " (the deployment is paused)"
	}
	return r
}
