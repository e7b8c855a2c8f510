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

package harness

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// TestPromotePatches checks promotePatches against what argo-rollouts v1.8.3's getPatches
// (pkg/kubectl-argo-rollouts/cmd/promote) returns for the same Rollouts without flags.
func TestPromotePatches(t *testing.T) {
	const canary = "spec: {strategy: {canary: {steps: [{setWeight: 50}, {pause: {}}]}}}\n"
	for _, tc := range []struct {
		name, rollout         string
		spec, status, unified string
	}{{
		name:    "a canary paused at its pause step",
		rollout: canary + "status: {currentStepIndex: 1, controllerPause: true, pauseConditions: [{reason: CanaryPauseStep}]}",
		status:  clearPauseConditionsPatch, unified: unpauseAndClearPauseConditionsPatch,
	}, {
		name:    "spec.paused as well",
		rollout: "spec: {paused: true, strategy: {canary: {steps: [{pause: {}}]}}}\nstatus: {pauseConditions: [{reason: PausedByUser}]}",
		spec:    unpausePatch, status: clearPauseConditionsPatch, unified: unpauseAndClearPauseConditionsPatch,
	}, {
		name:    "no pause condition yet: the next step",
		rollout: canary + "status: {currentStepIndex: 1}",
		status:  `{"status":{"pauseConditions":null, "currentStepIndex":2}}`,
		unified: `{"spec":{"paused":false},"status":{"pauseConditions":null, "currentStepIndex":2}}`,
	}, {
		name:    "past the last step: stays there",
		rollout: canary + "status: {currentStepIndex: 2}",
		status:  `{"status":{"pauseConditions":null, "currentStepIndex":2}}`,
		unified: `{"spec":{"paused":false},"status":{"pauseConditions":null, "currentStepIndex":2}}`,
	}, {
		name: "paused on an inconclusive analysis",
		rollout: canary + "status: {currentStepIndex: 0, controllerPause: true, pauseConditions: [{reason: InconclusiveAnalysisRun}]," +
			" canary: {currentStepAnalysisRunStatus: {status: Inconclusive}}}",
		status:  `{"status":{"pauseConditions":null, "controllerPause":false, "currentStepIndex":1}}`,
		unified: unpauseAndClearPauseConditionsPatch,
	}, {
		name:    "blue-green, not paused: nothing to do but the unified patch",
		rollout: "spec: {strategy: {blueGreen: {activeService: web}}}",
		unified: unpauseAndClearPauseConditionsPatch,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// As the API client decodes it: integers as int64.
			j, err := yaml.YAMLToJSON([]byte(tc.rollout))
			if err != nil {
				t.Fatal(err)
			}
			ro := &unstructured.Unstructured{}
			if err := json.Unmarshal(j, &ro.Object); err != nil {
				t.Fatal(err)
			}
			spec, status, unified := promotePatches(ro)
			if spec != tc.spec || status != tc.status || unified != tc.unified {
				t.Errorf("patches (spec, status, unified):\n got %q\n     %q\n     %q\nwant %q\n     %q\n     %q",
					spec, status, unified, tc.spec, tc.status, tc.unified)
			}
		})
	}
}
