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
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// progress is how far the outcome's target keyring has reached the targets, with what each waits
// for: decide checks the deadlines on it (blocked), describe renders it, from the same messages.
type progress struct {
	// v is the delivery of the outcome's target keyring.
	v delivery
	// targets are v.targets with what each waits for ("" when nothing).
	targets []shown
	// missing and pending are those of v, with their messages.
	missing, pending []shown
	// selected says which selected pods lag, "" when none does.
	selected string
}

// shown is a target and what it waits for.
type shown struct {
	target
	message string
}

// showProgress derives the progress of o's target keyring: the delivery observed, or, when o
// writes or moves the target, the delivery of what it writes.
func showProgress(f facts, o outcome) progress {
	p := progress{v: f.delivery}
	if o.write != nil || p.v.target != o.status.TargetFingerprint {
		p.v = observeDelivery(f.in, o.status.TargetFingerprint, o.write != nil)
	}
	p.targets = make([]shown, len(p.v.targets))
	for i, t := range p.v.targets {
		p.targets[i] = shown{target: t, message: waitsFor(o, p.v, t)}
		switch {
		case !t.Found:
			p.missing = append(p.missing, p.targets[i])
		case !t.upToDate:
			p.pending = append(p.pending, p.targets[i])
		}
	}
	if lag := p.v.selectedLaggards; len(lag) > 0 {
		p.selected = fmt.Sprintf("selected pods: %d of %d acknowledged keyring %s; waiting for %s", len(p.v.selected)-len(lag),
			len(p.v.selected), p.v.target, joinSome(podNames(lag), ", ", len(lag)))
	}
	return p
}

// waitsFor says what t waits for before it runs the target keyring, "" when nothing.
// Workload.Message already names the workload; the other texts are prefixed with it.
func waitsFor(o outcome, v delivery, t target) string {
	fp := v.target
	switch {
	case !t.Found && t.NotServed != "":
		return fmt.Sprintf("%s: the API server does not serve %s (is its CRD installed?)", t.ref(), t.NotServed)
	case !t.Found:
		return t.ref() + " not found"
	case v.reload:
		return podsWaitFor(o, v, t)
	case t.Stamp != fp && o.heldFight(t.Workload) != nil:
		return fightMessage(*o.heldFight(t.Workload))
	case t.Stamp != fp && o.stamp == fp && slices.Contains(o.stampTargets, t.ref()), t.Stamp == fp && t.Unobserved:
		// Stamped as this pass ends, or stamped and its controller yet to begin: one message for
		// both, so that a pass that finds the stamp before the rollout has nothing new to write.
		return t.ref() + ": rollout of keyring " + fp + " started"
	case t.Stamp != fp:
		return t.ref() + ": pod template not yet stamped with keyring " + fp
	case t.RolledOut:
		return ""
	case t.Message != "":
		return t.Message
	}
	return fmt.Sprintf("%s: %d of %d pods ready", t.ref(), t.Ready, t.Desired)
}

// podsWaitFor says what the pods of t wait for, "" when every one runs the target keyring.
func podsWaitFor(o outcome, v delivery, t target) string {
	if !seenAll(t.Workload) {
		return fmt.Sprintf("%s: %d pods seen of the %d it counts", t.ref(), len(t.Pods), t.CountedPods)
	}
	if len(t.laggards) == 0 {
		return ""
	}
	msg := fmt.Sprintf("%s: %d of %d pods run keyring %s; waiting for %s", t.ref(), len(t.Pods)-len(t.laggards), len(t.Pods),
		v.target, joinSome(podNames(t.laggards), ", ", len(t.laggards)))
	if h := o.restarts.byWorkload[t.ref()].message(); h != "" {
		msg += "; " + h
	}
	return msg
}

// claimed stalls on targets whose stamp belongs to another keyring, in Restart delivery: the
// reconciler does not stamp them, so a rotation cannot leave its first phase until the owner is
// gone (or the workload leaves this keyring's targets). A workload that needs two keyrings needs
// one stamp for each, not one fought over. Reload delivery stamps nothing: each keyring waits for
// its own acknowledgement, and two keyrings never touch the same thing.
func (p progress) claimed() *stall {
	if p.v.reload {
		return nil
	}
	var claimed []string
	for _, t := range p.v.targets {
		if t.Found && t.ClaimedBy != "" {
			claimed = append(claimed, fmt.Sprintf("%s (MRTRKeyring %s)", t.ref(), t.ClaimedBy))
		}
	}
	if len(claimed) == 0 {
		return nil
	}
	return &stall{mrtrv1alpha1.ReasonConflict, fmt.Sprintf("the stamps of %s belong to another keyring: this keyring does not stamp them while that one exists",
		joinSome(claimed, ", ", len(claimed)))}
}

// blocked is the stall of a phase that waits too long: a target missing while Accepting, or a
// keyring that has not reached every pod within spec.rolloutDeadline.
func blocked(f facts, o outcome) *stall {
	st, s, p := o.status, f.in.Settings, o.progress
	if d := p.degraded(st.TargetFingerprint); d != nil && o.write == nil {
		return d
	}
	if st.Phase == mrtrv1alpha1.PhaseStable && o.write == nil {
		return dueBlocked(f, o)
	}
	if st.Phase == mrtrv1alpha1.PhaseWaitingTTL && o.write == nil && len(p.v.behind) > 0 {
		// The TTL wait holds for a copy behind (a member that cannot be reached, a namespace that
		// joined again holding an older keyring): that hold stalls after rolloutDeadline too.
		if f.in.Now.Before(rolloutDeadline(f, st)) {
			return nil
		}
		return copiesBlocked(f, p.v, s.RolloutDeadline)
	}
	if !WaitsForRollout(st.Phase) || o.write != nil {
		return nil
	}
	if st.Phase == mrtrv1alpha1.PhaseAccepting && len(p.missing) > 0 {
		return &stall{mrtrv1alpha1.ReasonWorkloadNotFound, "the rotation does not advance past Accepting until these targets exist (or leave the spec): " + refs(p.missing)}
	}
	if f.in.Now.Before(rolloutDeadline(f, st)) {
		return nil
	}
	if c := copiesBlocked(f, p.v, s.RolloutDeadline); c != nil {
		return c
	}
	switch {
	case len(p.pending) > 0:
		return &stall{mrtrv1alpha1.ReasonRolloutDeadlineExceeded, fmt.Sprintf("%s has not rolled out keyring %s within %s: %s; the rotation continues once it does",
			refs(p.pending), st.TargetFingerprint, s.RolloutDeadline, messages(p.pending))}
	case p.selected != "":
		return &stall{mrtrv1alpha1.ReasonRolloutDeadlineExceeded, fmt.Sprintf("keyring %s has not reached every pod within %s: %s; the rotation continues once it does",
			st.TargetFingerprint, s.RolloutDeadline, p.selected)}
	}
	return nil
}

// degraded stalls on targets whose own controller gave up on their rollout (an Argo Rollout
// aborted): nothing the operator waits for will complete it, so there is no deadline to wait out.
func (p progress) degraded(fingerprint string) *stall {
	var ds []shown
	for _, t := range p.pending {
		if t.Degraded {
			ds = append(ds, t)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	return &stall{mrtrv1alpha1.ReasonWorkloadDegraded, fmt.Sprintf("the rollout of keyring %s stopped: %s; the rotation continues once the rollout is healthy again",
		fingerprint, messages(ds))}
}

// dueBlocked stalls a rotation that fell due but cannot start: a staged key seals only once every
// pod runs the keyring that staged it (sealWithStaged), so a target that does not roll it out
// holds the rotation in Stable. The deadline counts from the first due time (firstDue),
// spec.rolloutDeadline, as in the phases that wait for a rollout; not from
// status.nextRotationTime, which each rotation window the rotation misses moves on: with short
// windows the stall would otherwise show only inside them, and an alert that waits for it to
// last would never fire. (A requested rotation has no time of its own to count from; its wait
// shows in Reconciling.)
func dueBlocked(f facts, o outcome) *stall {
	if lost, ok := heldByUnreachable(f, o); ok && !f.in.Now.Before(lost) {
		return copiesBlocked(f, o.progress.v, f.in.Settings.RolloutDeadline)
	}
	deadline, ok := dueDeadline(f, o)
	if !ok || f.in.Now.Before(deadline) {
		return nil
	}
	p := o.progress
	due := o.firstDue.UTC().Format(time.RFC3339)
	switch {
	case len(p.missing) > 0:
		return &stall{mrtrv1alpha1.ReasonWorkloadNotFound, fmt.Sprintf("the rotation due at %s does not start until these targets exist (or leave the spec): %s",
			due, refs(p.missing))}
	case len(p.pending) > 0:
		return &stall{mrtrv1alpha1.ReasonRolloutDeadlineExceeded, fmt.Sprintf("the rotation due at %s waits for %s to run keyring %s, which stages its next key: %s",
			due, refs(p.pending), o.status.TargetFingerprint, messages(p.pending))}
	case p.selected != "":
		return &stall{mrtrv1alpha1.ReasonRolloutDeadlineExceeded, fmt.Sprintf("the rotation due at %s waits for keyring %s to reach every pod: %s",
			due, o.status.TargetFingerprint, p.selected)}
	}
	return copiesBlocked(f, p.v, f.in.Settings.RolloutDeadline)
}

// heldByUnreachable is, for a rotation due in Stable (on schedule or on request) that copies
// behind hold back, when the longest lost of the unreachable members among them has been lost for
// rolloutDeadline: then it stalls, naming them. A request has no time of its own to count from
// (dueDeadline counts only from a schedule), and what holds it is the member's loss, which
// status.members dates. Only a rotation that is due counts: a member lost while nothing waits
// on it shows in PartiallyReady and its alert, not in Stalled.
func heldByUnreachable(f facts, o outcome) (time.Time, bool) {
	if o.rotation == nil || !o.rotation.pass || f.in.Settings.Suspend || o.write != nil {
		return time.Time{}, false
	}
	var lost time.Time
	for _, name := range o.progress.v.behind {
		if p, _ := f.in.place(name); p.Unreachable != "" && !p.UnreachableSince.IsZero() && (lost.IsZero() || p.UnreachableSince.Before(lost)) {
			lost = p.UnreachableSince
		}
	}
	if lost.IsZero() {
		return time.Time{}, false
	}
	return lost.Add(f.in.Settings.RolloutDeadline), true
}

// dueDeadline is, for a rotation due by the interval that a staged key holds back, when its wait
// for delivery counts as stuck: rolloutDeadline after it first fell due.
func dueDeadline(f facts, o outcome) (time.Time, bool) {
	t, in := o.firstDue, f.in
	if t.IsZero() || in.Settings.Suspend || in.Now.Before(t) || in.Secret.State != SecretValid || f.staged == "" {
		return time.Time{}, false
	}
	return t.Add(in.Settings.RolloutDeadline), true
}

// stuckAt is the deadline past which blocked stalls o's phase (one of deadlines): in a
// phase that waits for a rollout (delivered or not), rolloutDeadline, and in Stable, for a due
// rotation that a staged key holds back, dueDeadline. Neither counts while the phase waits out the
// replaced pods' grace (the rollout is complete), nor for a Secret-only keyring (nothing rolls out).
func stuckAt(f facts, o outcome) time.Time {
	st := o.status
	if w := o.waiting; w != nil && w.what == mrtrv1alpha1.WaitReplacedPods {
		return time.Time{}
	}
	switch {
	case st.Phase == mrtrv1alpha1.PhaseStable:
		lost, held := heldByUnreachable(f, o)
		if d, ok := dueDeadline(f, o); ok && (!held || d.Before(lost)) {
			return d
		}
		if held {
			return lost
		}
	case WaitsForRollout(st.Phase) && !o.progress.v.secretOnly:
		return rolloutDeadline(f, st)
	}
	return time.Time{}
}

// rolloutDeadline is when a phase that waits for a rollout counts as stuck.
func rolloutDeadline(f facts, st mrtrv1alpha1.MRTRKeyringStatus) time.Time {
	return phaseStart(f.in, st).Add(f.in.Settings.RolloutDeadline)
}
