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
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The suite reads and writes Rollouts as unstructured objects, not through the operator's own
// type (internal/workload.ArgoRollout): what the suite checks about a Rollout must not come from
// the code under test.

// RolloutGVK is the Argo Rollout's group, version and kind.
var RolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// rolloutWeight is the canary's one setWeight step: half the pods run the new template, half the
// old, until the promotion.
const rolloutWeight = 50

// rolloutObject is the example server as an Argo Rollout: the pods of d (Options.ArgoRollout),
// rolled out as a canary of two steps, setWeight 50 and an indefinite pause, which waits for a
// promotion (PromoteRollout). Like d's rolling update, it adds the new pods before it removes old
// ones (maxSurge 100%, maxUnavailable 0), so old and new pods serve side by side. The first
// revision of a Rollout skips the steps: it has no stable pods to keep.
func rolloutObject(d *appsv1.Deployment) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec)
	if err != nil {
		return nil, err
	}
	delete(spec, "strategy")
	delete(spec, "revisionHistoryLimit")
	delete(spec, "progressDeadlineSeconds")
	spec["strategy"] = map[string]any{"canary": map[string]any{
		"maxSurge": "100%", "maxUnavailable": int64(0),
		"steps": []any{
			map[string]any{"setWeight": int64(rolloutWeight)},
			map[string]any{"pause": map[string]any{}},
		},
	}}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(RolloutGVK)
	u.SetNamespace(d.Namespace)
	u.SetName(d.Name)
	u.SetLabels(d.Labels)
	return u, nil
}

// rolloutReference is the keyring's reference to the Rollout name.
func rolloutReference(name string) mrtrv1alpha1.WorkloadReference {
	return mrtrv1alpha1.WorkloadReference{APIVersion: RolloutGVK.GroupVersion().String(), Kind: mrtrv1alpha1.KindRollout, Name: name}
}

// GetRollout reads the Rollout name of the namespace.
func GetRollout(ctx context.Context, c client.Client, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(RolloutGVK)
	return u, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
}

// rolloutStamp is the keyring fingerprint the Rollout's pod template is stamped with, if any.
func rolloutStamp(ro *unstructured.Unstructured) string {
	fp, _, _ := unstructured.NestedString(ro.Object, "spec", "template", "metadata", "annotations", mrtrv1alpha1.FingerprintAnnotation)
	return fp
}

// RolloutRolledOut is `kubectl argo rollouts status` for a Rollout, from its status alone: the
// controller observed the current spec and calls it Healthy, the current pods are the stable ones
// (fully promoted), and every pod runs the current template and is available.
//
// Like RolledOut, it is an oracle of the suite's own, not internal/workload's: the suite checks
// that the operator waited for the rollout.
func RolloutRolledOut(ro *unstructured.Unstructured) bool {
	want, found, _ := unstructured.NestedInt64(ro.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	st, _, _ := unstructured.NestedMap(ro.Object, "status")
	str := func(k string) string { s, _ := st[k].(string); return s }
	num := func(k string) int64 { n, _ := st[k].(int64); return n }
	return str("observedGeneration") == strconv.FormatInt(ro.GetGeneration(), 10) && str("phase") == "Healthy" &&
		str("currentPodHash") != "" && str("currentPodHash") == str("stableRS") &&
		num("replicas") == want && num("updatedReplicas") == want && num("availableReplicas") == want
}

// RolloutPaused reports whether the Rollout waits at a pause step: the controller has written the
// reason into status.pauseConditions. It is what `kubectl argo rollouts promote` releases.
func RolloutPaused(ro *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(ro.Object, "status", "pauseConditions")
	return len(conds) > 0
}

// The patches of `kubectl argo rollouts promote NAME` (argo-rollouts
// pkg/kubectl-argo-rollouts/cmd/promote, without --full or the deprecated skip flags), verbatim.
const (
	unpausePatch                                = `{"spec":{"paused":false}}`
	clearPauseConditionsPatch                   = `{"status":{"pauseConditions":null}}`
	clearPauseConditionsAndControllerPausePatch = `{"status":{"pauseConditions":null, "controllerPause":false, "currentStepIndex":%d}}`
	unpauseAndClearPauseConditionsPatch         = `{"spec":{"paused":false},"status":{"pauseConditions":null}}`
	clearPauseConditionsPatchWithStep           = `{"status":{"pauseConditions":null, "currentStepIndex":%d}}`
	unpauseAndClearPauseConditionsPatchWithStep = `{"spec":{"paused":false},"status":{"pauseConditions":null, "currentStepIndex":%d}}`
)

// PromoteRollout promotes the Rollout name as `kubectl argo rollouts promote name` does (its
// PromoteRollout and getPatches): a merge patch of the status subresource that clears the pause
// conditions (and, when the controller paused on an inconclusive analysis, its pause too, and
// moves to the next step; without pause conditions, only the next step), then, if spec.paused is
// set, a merge patch of the spec that clears it. On an API server that serves no status
// subresource for Rollouts, the one patch of both goes to the object instead.
func PromoteRollout(ctx context.Context, c client.Client, namespace, name string) error {
	ro, err := GetRollout(ctx, c, namespace, name)
	if err != nil {
		return err
	}
	specPatch, statusPatch, unifiedPatch := promotePatches(ro)
	if statusPatch != "" {
		if err := c.Status().Patch(ctx, ro.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(statusPatch))); err != nil {
			if !apierrors.IsNotFound(err) {
				return err
			}
			specPatch = unifiedPatch
		}
	}
	if specPatch != "" {
		return c.Patch(ctx, ro, client.RawPatch(types.MergePatchType, []byte(specPatch)))
	}
	return nil
}

// promotePatches is the plugin's getPatches without flags.
func promotePatches(ro *unstructured.Unstructured) (specPatch, statusPatch, unifiedPatch string) {
	unifiedPatch = unpauseAndClearPauseConditionsPatch
	if paused, _, _ := unstructured.NestedBool(ro.Object, "spec", "paused"); paused {
		specPatch = unpausePatch
	}
	steps, _, _ := unstructured.NestedSlice(ro.Object, "spec", "strategy", "canary", "steps")
	// replicasetutil.GetCurrentCanaryStep's index: the current one, past the last step at most.
	nextStep := func() (int64, bool) {
		if len(steps) == 0 {
			return 0, false
		}
		i, _, _ := unstructured.NestedInt64(ro.Object, "status", "currentStepIndex")
		if i < int64(len(steps)) {
			i++
		}
		return i, true
	}
	analysis, _, _ := unstructured.NestedString(ro.Object, "status", "canary", "currentStepAnalysisRunStatus", "status")
	controllerPause, _, _ := unstructured.NestedBool(ro.Object, "status", "controllerPause")
	_, canary, _ := unstructured.NestedMap(ro.Object, "spec", "strategy", "canary")
	inconclusive := canary && analysis == "Inconclusive"
	switch {
	case inconclusive && RolloutPaused(ro) && controllerPause:
		if i, ok := nextStep(); ok {
			statusPatch = fmt.Sprintf(clearPauseConditionsAndControllerPausePatch, i)
		}
	case RolloutPaused(ro):
		statusPatch = clearPauseConditionsPatch
	case canary:
		if i, ok := nextStep(); ok {
			statusPatch = fmt.Sprintf(clearPauseConditionsPatchWithStep, i)
			unifiedPatch = fmt.Sprintf(unpauseAndClearPauseConditionsPatchWithStep, i)
		}
	}
	return specPatch, statusPatch, unifiedPatch
}
