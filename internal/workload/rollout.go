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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rollout is what a workload's status says about its current pod template.
type Rollout struct {
	// Done: every pod the workload wants runs the current template and is available, and no pod of an
	// older template is left. Only then may the rotation rely on what the template carries.
	Done bool
	// Stuck: the workload's own controller gave up (a Deployment's progressDeadlineSeconds passed).
	// Done is false; the rollout may still finish later, e.g. after a fix to the workload.
	Stuck bool
	// Ready is how many pods run the current template and are available, Desired how many should.
	Ready, Desired int32
	// Message says, naming the workload, what the rollout is waiting for.
	Message string
	// Unobserved: the workload's controller has not yet seen its latest spec (observedGeneration
	// behind generation), so the rollout of that spec has not begun.
	Unobserved bool
	// Outage, when not empty, says why every restart of the workload is an outage: its update
	// strategy stops every pod before it starts new ones.
	Outage string
}

// deploymentTimedOutReason is the Progressing condition's reason once progressDeadlineSeconds
// passed (k8s.io/kubernetes/pkg/controller/deployment/util.TimedOutReason).
const deploymentTimedOutReason = "ProgressDeadlineExceeded"

// RolloutStatus reports whether the workload's current pod template has rolled out, in the sense of
// `kubectl rollout status` (kubectl pkg/polymorphichelpers/rollout_status.go), with two differences
// that our invariant needs, because a pod that does not run the current template may still run with
// an old keyring:
//   - "some pods stay on the old template" is never done: a StatefulSet with a partition, or any
//     workload with the OnDelete strategy, is done only once every pod was replaced (kubectl calls a
//     partitioned rollout complete, and refuses OnDelete);
//   - a Deployment whose replaced pods are still terminating (status.terminatingReplicas) is not done,
//     since those pods may still be serving.
//
// It reads obj only, so it is pure; the error is for an unsupported type.
func RolloutStatus(obj client.Object) (Rollout, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return deploymentRollout(o), nil
	case *appsv1.StatefulSet:
		return statefulSetRollout(o), nil
	case *appsv1.DaemonSet:
		return daemonSetRollout(o), nil
	}
	_, err := KindOf(obj)
	return Rollout{}, err
}

func deploymentRollout(d *appsv1.Deployment) Rollout {
	name := Ref{Kind: Deployment, Name: d.Name}
	st := d.Status
	r := Rollout{Desired: replicas(d.Spec.Replicas), Ready: min(st.UpdatedReplicas, st.AvailableReplicas)}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && r.Desired > 0 {
		r.Outage = "strategy Recreate stops every pod before it starts new ones"
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

func statefulSetRollout(s *appsv1.StatefulSet) Rollout {
	name := Ref{Kind: StatefulSet, Name: s.Name}
	st := s.Status
	r := Rollout{Desired: replicas(s.Spec.Replicas), Ready: min(st.UpdatedReplicas, st.AvailableReplicas)}
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

func daemonSetRollout(d *appsv1.DaemonSet) Rollout {
	name := Ref{Kind: DaemonSet, Name: d.Name}
	st := d.Status
	r := Rollout{Desired: st.DesiredNumberScheduled, Ready: min(st.UpdatedNumberScheduled, st.NumberAvailable)}
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

// replicas is spec.replicas with the API's default of 1 when unset.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
