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
	"k8s.io/apimachinery/pkg/util/intstr"
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
	// Degraded: the workload's controller gave up on this rollout for good (an Argo Rollout that
	// was aborted, or whose progress deadline passed): it completes only once someone acts.
	Degraded bool
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
	// MaxUnavailable is how many of its pods its update strategy lets be unavailable at once, as
	// its controller resolves maxUnavailable against the pods it wants (0 for none: it surges
	// instead); it paces the operator's restarts of pods that do not acknowledge.
	MaxUnavailable int32
}

// scaled resolves an update strategy's maxUnavailable against desired pods, as the workload's
// controller does (roundUp: StatefulSets and DaemonSets round a percentage up, Deployments down),
// with def where it is unset. An invalid value, which the API server refuses, counts as 1.
func scaled(v *intstr.IntOrString, def intstr.IntOrString, desired int32, roundUp bool) int32 {
	if v == nil {
		v = &def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(desired), roundUp)
	if err != nil {
		return 1
	}
	return int32(min(max(n, 0), int(desired)))
}

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
	a, err := adapterFor(obj)
	if err != nil {
		return Rollout{}, err
	}
	return a.rollout(obj), nil
}

// replicas is spec.replicas with the API's default of 1 when unset.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
