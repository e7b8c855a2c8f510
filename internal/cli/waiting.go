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

package cli

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// waitingFor says in one sentence what the keyring's rotation waits for now, from its phase, its
// conditions and its counts. It reads status only as the API defines it, so that a phase this
// build does not know still gets a sentence: the operator's own Reconciling message.
func waitingFor(v keyringView, now time.Time) string {
	kr, st := v.kr, v.kr.Status
	switch stalled := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionStalled); {
	case st.Phase == "":
		return "the operator to reconcile the keyring for the first time: it has no status yet."
	case st.ObservedGeneration < kr.Generation:
		return fmt.Sprintf("the operator to act on the latest spec (generation %d; the status is of generation %d).",
			kr.Generation, st.ObservedGeneration)
	case stalled != nil && stalled.Status == metav1.ConditionTrue:
		return fmt.Sprintf("a fix: the rotation is stalled (%s): %s. It resumes by itself once that is resolved.",
			stalled.Reason, trimPeriod(oneLine(stalled.Message)))
	}
	switch st.Phase {
	case mrtrv1alpha1.PhaseStable:
		return waitingStable(kr, now)
	case mrtrv1alpha1.PhaseWaitingTTL:
		return waitingTTL(kr, now)
	}
	return waitingDelivery(v, now)
}

// waitingStable: between rotations, the next one is due on schedule or on request.
func waitingStable(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	st := kr.Status
	request, pending := pendingRotateRequest(kr)
	reconciling := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionReconciling)
	switch next := st.NextRotationTime; {
	case kr.Spec.Suspend && pending:
		return fmt.Sprintf("a resume: rotations are suspended (spec.suspend), and the rotation requested by %s=%s "+
			"starts once they are resumed (kubectl mrtr resume %s).", mrtrv1alpha1.RotateAnnotation, request, kr.Name)
	case kr.Spec.Suspend:
		return fmt.Sprintf("nothing: rotations are suspended (spec.suspend) until resumed (kubectl mrtr resume %s).", kr.Name)
	case pending:
		return fmt.Sprintf("the operator to start the rotation requested by %s=%s.", mrtrv1alpha1.RotateAnnotation, request)
	case reconciling != nil && reconciling.Status == metav1.ConditionTrue:
		return fmt.Sprintf("the targets to catch up with the keyring (%s): %s.", reconciling.Reason, trimPeriod(oneLine(reconciling.Message)))
	case next == nil:
		return "the operator to schedule the next rotation."
	case !next.After(now):
		return fmt.Sprintf("the operator to start the rotation that fell due %s.", stamp(next.Time, now))
	default:
		return fmt.Sprintf("the next rotation, due %s.", stamp(next.Time, now))
	}
}

// waitingTTL: every pod seals with the new key; the old keys go once their tokens have expired.
func waitingTTL(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	until := kr.Status.TTLWaitUntil
	switch {
	case until == nil:
		return "the operator to start the TTL wait."
	case until.After(now):
		return fmt.Sprintf("the tokens sealed with the old keys to expire: the TTL wait ends at %s (%s left); "+
			"then the old keys are removed.", until.UTC().Format(time.RFC3339), duration.HumanDuration(until.Sub(now)))
	default:
		return fmt.Sprintf("the operator to remove the old keys: the TTL wait ended %s.", stamp(until.Time, now))
	}
}

// phasePurposes says why each phase that follows a write waits for every pod to run its keyring
// (a phase this build does not know goes without).
var phasePurposes = map[mrtrv1alpha1.Phase]string{
	mrtrv1alpha1.PhaseAccepting:      ", so that every pod accepts the new key before any pod seals with it",
	mrtrv1alpha1.PhaseSealingWithNew: ", so that no pod seals with the old key any more",
	mrtrv1alpha1.PhaseRemoving:       ", so that no pod holds the removed keys any more",
}

// waitingDelivery: the phase wrote a keyring and waits until it has reached every pod.
func waitingDelivery(v keyringView, now time.Time) string {
	kr, st := v.kr, v.kr.Status
	purpose := phasePurposes[st.Phase]
	target := orDash(st.TargetFingerprint)
	selected := int32(0)
	if st.SelectedPods != nil {
		selected = st.SelectedPods.Pods
	}
	switch {
	case st.WorkloadCount == 0 && st.PodCount == 0 && selected == 0 && st.PhaseStartedAt != nil:
		until := st.PhaseStartedAt.Add(kr.Spec.PropagationDelay.Duration)
		return fmt.Sprintf("the Secret to reach every mounted copy: no workload or pod proves it, so the phase waits "+
			"spec.propagationDelay (%s), until %s%s.", kr.Spec.PropagationDelay.Duration, stamp(until, now), purpose)
	case st.PodsAcknowledged < st.PodCount:
		return fmt.Sprintf("%d of %d pods to acknowledge keyring %s%s%s.", st.PodCount-st.PodsAcknowledged, st.PodCount,
			target, laggardsNote(v), purpose)
	case st.WorkloadsUpToDate < st.WorkloadCount:
		verb := "run"
		if !reload(kr) {
			verb = "roll out"
		}
		return fmt.Sprintf("%d of %d workloads to %s keyring %s (%s)%s.", st.WorkloadCount-st.WorkloadsUpToDate,
			st.WorkloadCount, verb, target, behind(st), purpose)
	case !reload(kr) && st.Phase == mrtrv1alpha1.PhaseAccepting && st.RolledOutAt != nil:
		until := st.RolledOutAt.Add(kr.Spec.TerminationGracePeriod.Duration)
		return fmt.Sprintf("the pods the rollout replaced to stop: terminationGracePeriod (%s) after the rollout, until %s, "+
			"so that no pod that knew only the old key still serves when the new key seals.",
			kr.Spec.TerminationGracePeriod.Duration, stamp(until, now))
	}
	if r := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionReconciling); r != nil && r.Message != "" {
		return fmt.Sprintf("the operator's next pass: every pod runs keyring %s (%s).", target, trimPeriod(oneLine(r.Message)))
	}
	return fmt.Sprintf("the operator's next pass: every pod runs keyring %s.", target)
}

// laggardsNote names the pods the operator reports as not running the keyring yet.
func laggardsNote(v keyringView) string {
	var names []string
	for _, w := range v.kr.Status.Workloads {
		names = append(names, w.Laggards...)
	}
	if sp := v.kr.Status.SelectedPods; sp != nil {
		names = append(names, sp.Laggards...)
	}
	if len(names) == 0 {
		return ""
	}
	return " (laggards: " + list(names, 10) + ")"
}

// behind names the workloads not up to date, with the operator's message for each.
func behind(st mrtrv1alpha1.MRTRKeyringStatus) string {
	var names []string
	for _, w := range st.Workloads {
		if w.UpToDate {
			continue
		}
		n := string(w.Kind) + "/" + w.Name
		if w.Message != "" {
			n += ": " + oneLine(w.Message)
		}
		names = append(names, n)
	}
	return list(names, 3)
}

// trimPeriod drops a final period, so that a message ends a clause of a sentence.
func trimPeriod(s string) string {
	if n := len(s); n > 0 && s[n-1] == '.' {
		return s[:n-1]
	}
	return s
}
