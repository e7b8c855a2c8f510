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
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// ArgoRolloutKind is the Argo Rollout (argoproj.io/v1alpha1), served only where the Argo Rollouts
// CRD is installed: the manager watches it once the API server serves it.
const ArgoRolloutKind = mrtrv1alpha1.KindRollout

// ArgoRolloutGroupVersion is the Rollout's API group and version.
var ArgoRolloutGroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// The reconciler lists and watches the kind, and patches its stamp (see its RBAC comment).
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=list;watch;patch

var _ = register(kindOf[*ArgoRollout]{
	name: ArgoRolloutKind, order: 3, version: ArgoRolloutGroupVersion,
	object:      func() *ArgoRollout { return &ArgoRollout{} },
	list:        func() client.ObjectList { return &ArgoRolloutList{} },
	podTemplate: func(r *ArgoRollout) *corev1.PodTemplateSpec { return &r.Spec.Template },
	podSelector: func(r *ArgoRollout) *metav1.LabelSelector { return r.Spec.Selector },
	counted:     func(r *ArgoRollout) int32 { return r.Status.Replicas },
	rolledOut:   argoRollout,
	stripped: func(r *ArgoRollout, t corev1.PodTemplateSpec) *ArgoRollout {
		return &ArgoRollout{TypeMeta: r.TypeMeta, ObjectMeta: r.ObjectMeta, Status: r.Status, Spec: ArgoRolloutSpec{
			Replicas: r.Spec.Replicas, Selector: r.Spec.Selector, Paused: r.Spec.Paused, WorkloadRef: r.Spec.WorkloadRef,
			Strategy: ArgoRolloutStrategy{Canary: r.Spec.Strategy.Canary}, Template: t,
		}}
	},
	statusOf: func(r *ArgoRollout) any { return r.Status },
})

// ArgoRollout is the part of an argoproj.io/v1alpha1 Rollout that the operator reads, in a type of
// its own: argo-rollouts' Go module would bring its whole dependency tree for a handful of fields.
// Decoding keeps these fields and drops the others; the operator writes a Rollout only through a
// merge patch of its stamp (Stamp), the difference from the object as read, so the fields this type
// lacks are never written.
//
// +kubebuilder:object:root=true
type ArgoRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ArgoRolloutSpec   `json:"spec,omitempty"`
	Status            ArgoRolloutStatus `json:"status,omitempty"`
}

// ArgoRolloutList is a list of Rollouts.
//
// +kubebuilder:object:root=true
type ArgoRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ArgoRollout `json:"items"`
}

// ArgoRolloutSpec is what the operator reads of a Rollout's spec.
//
// +kubebuilder:object:generate=true
type ArgoRolloutSpec struct {
	Replicas *int32                 `json:"replicas,omitempty"`
	Selector *metav1.LabelSelector  `json:"selector,omitempty"`
	Template corev1.PodTemplateSpec `json:"template,omitempty"`
	// WorkloadRef, when set, takes the pod template from another workload (a Deployment): the
	// Rollout's own template is empty, so stamping it restarts nothing. Not supported: target the
	// workload it references, or give the Rollout its own template.
	WorkloadRef *ArgoWorkloadRef    `json:"workloadRef,omitempty"`
	Paused      bool                `json:"paused,omitempty"`
	Strategy    ArgoRolloutStrategy `json:"strategy,omitempty"`
}

// ArgoWorkloadRef is spec.workloadRef.
//
// +kubebuilder:object:generate=true
type ArgoWorkloadRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ArgoRolloutStrategy is spec.strategy, of which the canary's steps are counted (for messages).
//
// +kubebuilder:object:generate=true
type ArgoRolloutStrategy struct {
	Canary *ArgoCanaryStrategy `json:"canary,omitempty"`
}

// ArgoCanaryStrategy is spec.strategy.canary.
//
// +kubebuilder:object:generate=true
type ArgoCanaryStrategy struct {
	Steps []runtime.RawExtension `json:"steps,omitempty"`
}

// ArgoRolloutStatus is what the operator reads of a Rollout's status: what `kubectl argo rollouts
// status` reads (the phase the controller computes, its generation, the pause conditions) and the
// replica counts.
//
// +kubebuilder:object:generate=true
type ArgoRolloutStatus struct {
	// ObservedGeneration is a string in this API: the controller writes metadata.generation.
	ObservedGeneration string                 `json:"observedGeneration,omitempty"`
	Phase              string                 `json:"phase,omitempty"`
	Message            string                 `json:"message,omitempty"`
	Abort              bool                   `json:"abort,omitempty"`
	ControllerPause    bool                   `json:"controllerPause,omitempty"`
	PauseConditions    []ArgoPauseCondition   `json:"pauseConditions,omitempty"`
	CurrentStepIndex   *int32                 `json:"currentStepIndex,omitempty"`
	CurrentPodHash     string                 `json:"currentPodHash,omitempty"`
	StableRS           string                 `json:"stableRS,omitempty"`
	Replicas           int32                  `json:"replicas,omitempty"`
	UpdatedReplicas    int32                  `json:"updatedReplicas,omitempty"`
	ReadyReplicas      int32                  `json:"readyReplicas,omitempty"`
	AvailableReplicas  int32                  `json:"availableReplicas,omitempty"`
	Conditions         []ArgoRolloutCondition `json:"conditions,omitempty"`
}

// ArgoPauseCondition is one entry of status.pauseConditions: why the rollout is paused.
//
// +kubebuilder:object:generate=true
type ArgoPauseCondition struct {
	Reason    string      `json:"reason"`
	StartTime metav1.Time `json:"startTime,omitempty"`
}

// ArgoRolloutCondition is one entry of status.conditions.
//
// +kubebuilder:object:generate=true
type ArgoRolloutCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// The Rollout's phases (status.phase), as the Argo Rollouts controller computes them and `kubectl
// argo rollouts status` reports them.
const (
	argoHealthy     = "Healthy"
	argoProgressing = "Progressing"
	argoPaused      = "Paused"
	argoDegraded    = "Degraded"
)

// AddToScheme registers the kinds the operator reads in types of its own (the Argo Rollout), which
// no client-go scheme knows.
func AddToScheme(s *runtime.Scheme) error {
	// Under the API's kind names, not the Go types'.
	s.AddKnownTypeWithName(ArgoRolloutGroupVersion.WithKind(string(ArgoRolloutKind)), &ArgoRollout{})
	s.AddKnownTypeWithName(ArgoRolloutGroupVersion.WithKind(string(ArgoRolloutKind)+"List"), &ArgoRolloutList{})
	metav1.AddToGroupVersion(s, ArgoRolloutGroupVersion)
	return nil
}

// argoRollout is RolloutStatus for a Rollout: done means what `kubectl argo rollouts status` calls
// Healthy (argo-rollouts utils/rollout GetRolloutPhase: the spec observed, not unpausing, and the
// controller's phase Healthy: every step passed, fully promoted, updated replicas available), and,
// for the invariant, no pod of an older template left (status.replicas equals updatedReplicas:
// with traffic routing or blue-green, Argo calls a rollout Healthy while the old pods wait out
// scaleDownDelaySeconds, and they run the old keyring). A canary paused at a step waits for
// promotion, which the message says; an aborted or degraded one is Degraded, with the controller's
// reason.
func argoRollout(ro *ArgoRollout) Rollout {
	name := Ref{Kind: ArgoRolloutKind, Name: ro.Name}
	st := ro.Status
	r := Rollout{Desired: replicas(ro.Spec.Replicas), Ready: min(st.UpdatedReplicas, st.AvailableReplicas)}
	if ro.Spec.WorkloadRef != nil {
		r.Message = fmt.Sprintf("%s: takes its pod template from %s/%s (spec.workloadRef), which this operator does not stamp: target that workload instead",
			name, ro.Spec.WorkloadRef.Kind, ro.Spec.WorkloadRef.Name)
		return r
	}
	if g, err := strconv.ParseInt(st.ObservedGeneration, 10, 64); st.ObservedGeneration == "" || (err == nil && g < ro.Generation) {
		r.Unobserved = true
		r.Message = fmt.Sprintf("%s: waiting for the Argo Rollouts controller to observe generation %d", name, ro.Generation)
		return r
	}
	if st.ControllerPause && len(st.PauseConditions) == 0 {
		r.Message = fmt.Sprintf("%s: promoted, waiting for the Argo Rollouts controller to unpause it", name)
		return r
	}
	step := ""
	if st.CurrentStepIndex != nil && ro.Spec.Strategy.Canary != nil && len(ro.Spec.Strategy.Canary.Steps) > 0 {
		step = fmt.Sprintf(" at step %d of %d", *st.CurrentStepIndex, len(ro.Spec.Strategy.Canary.Steps))
	}
	switch st.Phase {
	case argoDegraded:
		r.Degraded = true
		r.Message = fmt.Sprintf("%s: Degraded: %s", name, st.Message)
	case argoPaused:
		why := st.Message
		if len(st.PauseConditions) > 0 {
			why = st.PauseConditions[0].Reason
		}
		if ro.Spec.Paused {
			r.Message = fmt.Sprintf("%s: paused%s (spec.paused, %s): waiting for it to be resumed", name, step, why)
		} else {
			r.Message = fmt.Sprintf("%s: paused%s (%s): waiting for promotion (kubectl argo rollouts promote %s)", name, step, why, ro.Name)
		}
	case argoHealthy:
		if st.Replicas > st.UpdatedReplicas {
			r.Message = fmt.Sprintf("%s: Healthy, %d pods of older templates still running", name, st.Replicas-st.UpdatedReplicas)
			break
		}
		r.Done = true
		r.Message = fmt.Sprintf("%s: rolled out (Healthy, fully promoted), %d of %d replicas updated and available", name, r.Ready, r.Desired)
	default: // Progressing, or a controller that has not set a phase
		why := st.Message
		if why == "" {
			why = fmt.Sprintf("%d of %d replicas updated, %d available", st.UpdatedReplicas, r.Desired, st.AvailableReplicas)
		}
		r.Message = fmt.Sprintf("%s: %s%s: %s", name, argoProgressing, step, why)
	}
	return r
}
