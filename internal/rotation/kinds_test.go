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

package rotation

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// A target of a kind the cluster does not serve is reported in Ready=False naming the kind, and
// waited for like a missing one; a target whose controller gave up on its rollout (an aborted Argo
// Rollout) stalls at once, with the controller's reason.
func TestUnservedAndDegradedTargets(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	t.Run("a kind not served", func(t *testing.T) {
		in := input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a),
			Workload{Kind: mrtrv1alpha1.KindRollout, Name: "web", NotServed: "argoproj.io/v1alpha1 Rollout"})
		d := Step(in)
		c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionReady)
		if c.Status != metav1.ConditionFalse || c.Reason != mrtrv1alpha1.ReasonKindNotServed ||
			!strings.Contains(c.Message, "Rollout/web: the API server does not serve argoproj.io/v1alpha1 Rollout") {
			t.Fatalf("Ready = %s %s %q", c.Status, c.Reason, c.Message)
		}
		if d.Status.Workloads[0].Found || d.Status.Phase != mrtrv1alpha1.PhaseStable {
			t.Errorf("status = %+v", d.Status.Workloads)
		}
	})
	t.Run("an aborted rollout", func(t *testing.T) {
		w := deployment("api", fp(t, b, a), false)
		w.Kind, w.Name, w.Degraded = mrtrv1alpha1.KindRollout, "web", true
		w.Message = "Rollout/web: Degraded: RolloutAborted: Rollout aborted update to revision 3"
		in := input(status(t, mrtrv1alpha1.PhaseSealingWithNew, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), w)
		d := Step(in)
		checkDecision(t, in, d, want{phase: mrtrv1alpha1.PhaseSealingWithNew, stalled: mrtrv1alpha1.ReasonWorkloadDegraded, requeue: 9 * time.Minute, events: []string{mrtrv1alpha1.ReasonWorkloadDegraded}})
		c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
		if !strings.Contains(c.Message, "RolloutAborted: Rollout aborted update to revision 3") {
			t.Errorf("Stalled message = %q", c.Message)
		}
		// Healthy again: the stall goes, and the phase advances.
		in.Workloads[0].Degraded, in.Workloads[0].RolledOut = false, true
		checkDecision(t, in, Step(in), want{phase: mrtrv1alpha1.PhaseWaitingTTL, requeue: 6 * time.Minute})
	})
}
