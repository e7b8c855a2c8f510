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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// argo is a canary Rollout of three replicas with two steps, generation 4, whose status edit sets
// (on top of a healthy, fully promoted one).
func argo(edit func(*ArgoRollout)) *ArgoRollout {
	three := int32(3)
	ro := &ArgoRollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 4},
		Spec: ArgoRolloutSpec{Replicas: &three, Strategy: ArgoRolloutStrategy{Canary: &ArgoCanaryStrategy{
			Steps: []runtime.RawExtension{{Raw: []byte(`{"setWeight":20}`)}, {Raw: []byte(`{"pause":{}}`)}}}}},
		Status: ArgoRolloutStatus{ObservedGeneration: "4", Phase: "Healthy", CurrentPodHash: "abc", StableRS: "abc",
			Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}}
	if edit != nil {
		edit(ro)
	}
	return ro
}

// Done means what `kubectl argo rollouts status` calls Healthy, and no pod of an older template.
func TestArgoRolloutStatus(t *testing.T) {
	tests := map[string]struct {
		ro      *ArgoRollout
		want    Rollout
		message string
	}{
		"healthy and fully promoted: rolled out": {
			ro: argo(nil), want: Rollout{Done: true, Ready: 3, Desired: 3}, message: "rolled out (Healthy, fully promoted)"},
		"a generation the controller has not observed": {
			ro:   argo(func(r *ArgoRollout) { r.Generation = 5 }),
			want: Rollout{Unobserved: true, Ready: 3, Desired: 3}, message: "observe generation 5"},
		"a status the controller never wrote": {
			ro:   argo(func(r *ArgoRollout) { r.Status = ArgoRolloutStatus{} }),
			want: Rollout{Unobserved: true, Desired: 3}, message: "observe generation 4"},
		"a canary paused at a step waits for promotion": {
			ro: argo(func(r *ArgoRollout) {
				r.Status.Phase, r.Status.Message, r.Status.StableRS, r.Status.UpdatedReplicas = "Paused", "CanaryPauseStep", "old", 1
				r.Status.ControllerPause, r.Status.CurrentStepIndex = true, new(int32(1))
				r.Status.PauseConditions = []ArgoPauseCondition{{Reason: "CanaryPauseStep"}}
			}),
			want: Rollout{Ready: 1, Desired: 3}, message: "paused at step 1 of 2 (CanaryPauseStep): waiting for promotion (kubectl argo rollouts promote web)"},
		"promoted, the controller yet to unpause it": {
			ro: argo(func(r *ArgoRollout) {
				r.Status.Phase, r.Status.ControllerPause = "Paused", true
			}),
			want: Rollout{Ready: 3, Desired: 3}, message: "waiting for the Argo Rollouts controller to unpause it"},
		"paused by hand (spec.paused)": {
			ro: argo(func(r *ArgoRollout) {
				r.Spec.Paused, r.Status.Phase, r.Status.Message = true, "Paused", "manually paused"
			}),
			want: Rollout{Ready: 3, Desired: 3}, message: "waiting for it to be resumed"},
		"aborted: Degraded, with the controller's reason": {
			ro: argo(func(r *ArgoRollout) {
				r.Status.Phase, r.Status.Message, r.Status.Abort, r.Status.UpdatedReplicas = "Degraded", "RolloutAborted: Rollout aborted update to revision 7", true, 0
			}),
			want: Rollout{Degraded: true, Desired: 3}, message: "Degraded: RolloutAborted: Rollout aborted update to revision 7"},
		"progressing through its steps": {
			ro: argo(func(r *ArgoRollout) {
				r.Status.Phase, r.Status.Message, r.Status.UpdatedReplicas, r.Status.CurrentStepIndex = "Progressing", "more replicas need to be updated", 1, new(int32(0))
			}),
			want: Rollout{Ready: 1, Desired: 3}, message: "Progressing at step 0 of 2: more replicas need to be updated"},
		"Healthy while old pods wait out scaleDownDelaySeconds (traffic routing): not done, they run the old keyring": {
			ro:   argo(func(r *ArgoRollout) { r.Status.Replicas = 5 }),
			want: Rollout{Ready: 3, Desired: 3}, message: "2 pods of older templates still running"},
		"a template taken from another workload (spec.workloadRef) is not stamped here": {
			ro:   argo(func(r *ArgoRollout) { r.Spec.WorkloadRef = &ArgoWorkloadRef{Kind: "Deployment", Name: "web"} }),
			want: Rollout{Ready: 3, Desired: 3}, message: "target that workload instead"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := RolloutStatus(tc.ro)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Message, tc.message) || !strings.HasPrefix(got.Message, "Rollout/web: ") {
				t.Errorf("Message = %q, want it to contain %q", got.Message, tc.message)
			}
			got.Message = ""
			if got != tc.want {
				t.Errorf("RolloutStatus = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A Rollout's pods are those its selector selects, counted by status.replicas, like any workload's
// (Reload delivery gates them by acknowledgement); and the cache keeps what those read.
func TestArgoRolloutAdapter(t *testing.T) {
	ro := argo(func(r *ArgoRollout) {
		r.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		r.Spec.Template.Annotations = map[string]string{"mrtr.dev/keyring-hash": "0123456789abcdef"}
	})
	sel, err := Selector(ro)
	if err != nil || sel.String() != "app=web" {
		t.Fatalf("Selector = %v, %v", sel, err)
	}
	if n := CountedPods(ro); n != 3 {
		t.Errorf("CountedPods = %d, want 3", n)
	}
	stripped, err := StripWorkload(ro)
	if err != nil {
		t.Fatal(err)
	}
	s := stripped.(*ArgoRollout)
	if Fingerprint(s) != "0123456789abcdef" || s.Spec.Selector == nil || s.Status.Phase != "Healthy" || len(s.Spec.Strategy.Canary.Steps) != 2 {
		t.Errorf("stripped = %+v", s)
	}
	if k, err := KindOf(ro); err != nil || k != ArgoRolloutKind {
		t.Errorf("KindOf = %s, %v", k, err)
	}
	if v := APIVersion(ArgoRolloutKind); v != "argoproj.io/v1alpha1" {
		t.Errorf("APIVersion = %s", v)
	}
}
