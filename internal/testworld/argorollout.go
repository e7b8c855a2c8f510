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

package testworld

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// The Argo Rollouts controller, for a canary Rollout of two replicas with one pause step (the
// Rollout CRD is the argo-rollouts module's own; its controller does not run). Each function
// reads ro again and writes its status as the controller would in that state, the current
// template observed, under a pod hash of the template's stamp.

// Promote plays a Rollout whose every step passed: the new pods stable, the old ones gone
// (Healthy).
func Promote(ctx context.Context, c client.Client, ro *workload.ArgoRollout) error {
	return argoStatus(ctx, c, ro, func(st *workload.ArgoRolloutStatus) {
		st.Phase, st.StableRS = "Healthy", st.CurrentPodHash
		st.CurrentStepIndex = new(int32(2))
	})
}

// PauseAtStep plays a canary that runs one new pod beside one old and waits at its pause step.
func PauseAtStep(ctx context.Context, c client.Client, ro *workload.ArgoRollout) error {
	return argoStatus(ctx, c, ro, func(st *workload.ArgoRolloutStatus) {
		st.Phase, st.Message, st.StableRS = "Paused", "CanaryPauseStep", "old"
		st.UpdatedReplicas, st.AvailableReplicas = 1, 2
		st.ControllerPause = true
		st.CurrentStepIndex = new(int32(1))
		st.PauseConditions = []workload.ArgoPauseCondition{{Reason: "CanaryPauseStep", StartTime: metav1.Now()}}
	})
}

// Abort plays someone running kubectl argo rollouts abort: the controller scaled the canary down.
func Abort(ctx context.Context, c client.Client, ro *workload.ArgoRollout) error {
	return argoStatus(ctx, c, ro, func(st *workload.ArgoRolloutStatus) {
		st.Phase, st.Message, st.StableRS, st.Abort = "Degraded", "RolloutAborted: Rollout aborted update to revision 3", "old", true
		st.UpdatedReplicas = 0
	})
}

func argoStatus(ctx context.Context, c client.Client, ro *workload.ArgoRollout, edit func(*workload.ArgoRolloutStatus)) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(ro), ro); err != nil {
		return err
	}
	hash := fmt.Sprintf("h%.8s", workload.Fingerprint(ro))
	st := workload.ArgoRolloutStatus{ObservedGeneration: strconv.FormatInt(ro.Generation, 10), CurrentPodHash: hash,
		Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	edit(&st)
	ro.Status = st
	return writeStatus(ctx, c, ro)
}
