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
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// verdict is what one exit check found, as cert-manager's policy checks return their reason and
// message: whether the phase may leave, what it waits for, until when, and that in a sentence.
// decide acts on pass; describe renders the rest (status.waitingFor) and takes the requeue from
// until. Each timed rule (the termination grace after a rollout, the propagation delay, the TTL
// wait, the schedule and its windows) is written once, in its check: no stage computes a deadline
// of its own.
type verdict struct {
	pass bool
	what mrtrv1alpha1.Wait
	// forWhom names the workloads and pods it waits for, when it waits for some.
	forWhom []string
	// until is when the check's answer changes by itself: when it passes, or, for one that passes
	// now, when it stops (a rotation window that closes on a rotation due); zero for never.
	until time.Time
	// message says, with absolute times only, what the phase waits for; or, when it passes, why
	// (the reason a rotation starts, quoted by its event).
	message string
}

// status renders v as status.waitingFor.
func (v verdict) status() *mrtrv1alpha1.WaitingFor {
	w := &mrtrv1alpha1.WaitingFor{What: v.what, For: v.forWhom, Message: v.message}
	if !v.until.IsZero() {
		until := metav1.NewTime(v.until)
		w.Until = &until
	}
	return w
}

// waitsOn is the verdict the phase of o waits on after its move, nil when nothing is awaited:
// the one check of each phase that is not passed yet, or the next rotation. decide alone knows
// which check each phase waits on; describe renders this one (status.waitingFor) and takes the
// requeue from its until.
func waitsOn(f facts, o outcome) *verdict {
	st, p := o.status, o.progress
	switch {
	case st.Phase == mrtrv1alpha1.PhaseStable:
		return waitsInStable(f, o)
	case st.Phase == mrtrv1alpha1.PhaseWaitingTTL && st.TTLWaitUntil != nil:
		v := tokensExpired(f, st)
		return &v
	case len(p.v.behind) > 0:
		return copiesVerdict(p.v, purposes[st.Phase])
	case p.v.secretOnly:
		v := propagated(f, st)
		v.message += purposes[st.Phase]
		return &v
	case len(p.pending) > 0 || p.selected != "":
		return waitsForDelivery(o, purposes[st.Phase])
	case st.Phase == mrtrv1alpha1.PhaseAccepting && o.exit != nil && !o.exit.pass:
		return o.exit // the replaced pods' grace (readyToSeal)
	}
	return &verdict{what: mrtrv1alpha1.WaitDelivery,
		message: fmt.Sprintf("the operator's next pass: keyring %s has reached every pod", st.TargetFingerprint)}
}

// purposes says why each phase that follows a write waits for every pod to run its keyring.
var purposes = map[mrtrv1alpha1.Phase]string{
	mrtrv1alpha1.PhaseAccepting:      ", so that every pod accepts the new key before any pod seals with it",
	mrtrv1alpha1.PhaseSealingWithNew: ", so that no pod seals with the old key any more",
	mrtrv1alpha1.PhaseRemoving:       ", so that no pod holds the removed keys any more",
	mrtrv1alpha1.PhaseRevoking:       ", so that no pod holds the revoked keys any more",
}

// waitsInStable: between rotations, the next one is due on schedule or on request (o.rotation);
// one that is due waits for the check that held it back (o.exit).
func waitsInStable(f facts, o outcome) *verdict {
	st, r, due := o.status, o.progress, o.rotation
	switch {
	case f.in.Settings.Suspend:
		return due
	case len(r.v.behind) > 0:
		return copiesVerdict(r.v, "")
	case len(r.pending) > 0 || r.selected != "":
		return waitsForDelivery(o, "")
	case o.exit != nil && !o.exit.pass:
		return o.exit
	case st.NextRotationTime == nil || due.pass:
		return nil
	}
	return due
}

// waitsForDelivery: the keyring has not reached every pod yet.
func waitsForDelivery(o outcome, purpose string) *verdict {
	st, r := o.status, o.progress
	c := r.counts()
	w := &verdict{what: mrtrv1alpha1.WaitDelivery}
	for _, t := range r.pending {
		if len(w.forWhom) < maxNamed {
			w.forWhom = append(w.forWhom, t.ref())
		}
	}
	laggards := make([]string, 0, maxNamed)
	for _, t := range r.pending {
		laggards = append(laggards, podNames(t.laggards)...)
	}
	laggards = append(laggards, podNames(r.v.selectedLaggards)...)
	switch {
	case r.v.reload || len(r.pending) == 0:
		for _, l := range laggards {
			if len(w.forWhom) < maxNamed {
				w.forWhom = append(w.forWhom, l)
			}
		}
		note := ""
		if len(laggards) > 0 {
			note = " (laggards: " + joinSome(laggards, ", ", len(laggards)) + ")"
		}
		w.message = fmt.Sprintf("%d of %d pods to acknowledge keyring %s%s%s", c.pods-c.acknowledged, c.pods, st.TargetFingerprint, note, purpose)
	default:
		w.message = fmt.Sprintf("%d of %d workloads to roll out keyring %s (%s)%s", c.workloads-c.upToDate, c.workloads,
			st.TargetFingerprint, messages(r.pending), purpose)
	}
	return w
}

// propagated is the exit check of a Secret-only keyring's phases: nothing proves that the Secret
// arrived, so the phase waits spec.propagationDelay from its start.
func propagated(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	d := f.in.Settings.PropagationDelay
	until := phaseStart(f.in, st).Add(d)
	return verdict{pass: !f.in.Now.Before(until), what: mrtrv1alpha1.WaitPropagation, until: until,
		message: fmt.Sprintf("the Secret to reach every mounted copy: no workload or pod proves it, so the phase waits spec.propagationDelay (%s), until %s",
			d, until.UTC().Format(time.RFC3339))}
}

// replacedGone is the timed half of replacedPodsGone, which says when it applies: the pods a
// rollout replaced have stopped terminationGracePeriod after status.rolledOutAt, which must be set.
func replacedGone(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	grace := f.in.Settings.TerminationGracePeriod
	until := st.RolledOutAt.Add(grace)
	return verdict{pass: !f.in.Now.Before(until), what: mrtrv1alpha1.WaitReplacedPods, until: until,
		message: fmt.Sprintf("the pods the rollout replaced to stop: terminationGracePeriod (%s) after the rollout, until %s, so that no pod that knew only the old key still serves when the new key seals",
			grace, until.UTC().Format(time.RFC3339))}
}

// tokensExpired is the exit check of WaitingTTL (rule 2): every token sealed with the old keys
// has expired by status.ttlWaitUntil, which must be set.
func tokensExpired(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	until := st.TTLWaitUntil.Time
	return verdict{pass: !f.in.Now.Before(until), what: mrtrv1alpha1.WaitTokenExpiry, until: until,
		message: fmt.Sprintf("the tokens sealed with the old keys to expire: the TTL wait ends at %s; then the old keys are removed", until.UTC().Format(time.RFC3339))}
}
