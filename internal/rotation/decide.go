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
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// outcome is what decide settled, from the facts alone: the status as the phase machine leaves it
// (describe completes it), the Secret write, the stamp, the evictions, the events, and a stall
// found while deciding. describe reads it and changes none of it.
type outcome struct {
	status mrtrv1alpha1.MRTRKeyringStatus
	// write, when not nil, is what the Secret must hold.
	write *secretWrite
	// stamp is the fingerprint the pod templates of stampTargets must carry, "" for none.
	stamp        string
	stampTargets []string
	// held are the fights that hold a target's stamp back this pass (planStamps).
	held  []mrtrv1alpha1.StampFight
	evict []string
	// nudge are the pods to nudge after the write (nudgePods).
	nudge []string
	// copyTo are the places whose copy must be written after the Secret and status (copyTo).
	copyTo []string
	// restarts is what restartOverdue found of the overdue pods.
	restarts restarts
	events   []Event
	stall    *stall
	// conflict: the Secret belongs to another keyring, so nothing is written or stamped.
	conflict bool
	// rekeyed: this pass starts the rotation that facts.rekey asked for.
	rekeyed bool
	// progress is how far the target keyring has reached the targets (showProgress).
	progress progress
	// exit is the verdict of the exit check that kept the phase this pass (readyToSeal), nil when
	// none ran or the phase left.
	exit *verdict
	// rotation is, in Stable, rotationDue's verdict on the status the move leaves: when the next
	// rotation falls due, or why it is due now; nil in the other phases.
	rotation *verdict
	// waiting is the verdict the phase waits on after the move (waitsOn), nil for none.
	waiting *verdict
	// deadlines are the times at which a timed check may change this outcome (deadlines).
	deadlines []time.Time
	// due is, in Stable, when the next rotation falls due by rotationInterval alone (before the
	// rotation windows move it); zero in the other phases.
	due time.Time
	// firstDue is, in Stable, when the next rotation first falls due: the first moment at or after
	// due inside a rotation window (due itself without windows). Unlike status.nextRotationTime,
	// which each window the rotation misses moves on, it stays put until the rotation happens,
	// and it is derived from what status and spec keep (the last rotation, the interval, the
	// windows), so a restarted operator finds the same: the wait of a due rotation counts from it
	// (dueDeadline).
	firstDue time.Time
	// windows is, in Stable with rotation windows that parse, the RotationWindowWarning decided
	// (windowWarningOf); nil otherwise, when the condition stays as it was.
	windows *windowWarning
}

// windowWarning is what the rotation windows do to the next rotation, as RotationWindowWarning
// says it: describe words it and decides nothing.
type windowWarning struct {
	// due is when the next rotation falls due by rotationInterval; start is the first moment at or
	// after it in a window (firstDue), zero when no window opens within five years.
	due, start time.Time
	// late: start is more than rotationInterval after due, or there is none: the primary key
	// outlives the interval.
	late bool
	// missed is the window the rotation fell due in, once it closed before the rotation started
	// (a staged key not yet delivered held it back, the operator was away): nil until then.
	missed *mrtrv1alpha1.RotationWindowStatus
	// next is the window the rotation now waits for (status.nextWindow): open now, or the next to
	// open; nil when none opens within five years.
	next *mrtrv1alpha1.RotationWindowStatus
}

// secretWrite is a keyring to write, annotated with the phase it is written for and its staged key.
type secretWrite struct {
	keyring *keyring.Keyring
	phase   mrtrv1alpha1.Phase
	staged  string
}

// stall says why progress is blocked.
type stall struct{ reason, message string }

// change is what a phase's exit decides once its check passes: the phase that follows, with the
// keyring it runs (written now, or already in the Secret) and that keyring's staged key.
type change struct {
	phase   mrtrv1alpha1.Phase
	keyring *keyring.Keyring
	staged  string
	write   bool
}

// decide makes the move (move), then derives the progress of its target keyring, the stall of a
// phase that waits too long for it, the verdict the phase waits on and the deadlines of every
// timed check: decide alone says what is stalled and when to look again.
func decide(f facts) outcome {
	o := move(f)
	o.progress = showProgress(f, o)
	if o.stall == nil {
		o.stall = o.progress.claimed()
	}
	if o.status.Phase == mrtrv1alpha1.PhaseStable {
		due := rotationDue(f.in, o.status)
		o.rotation = &due
		o.windows = windowWarningOf(f, o)
	}
	if o.stall == nil {
		o.stall = blocked(f, o)
	}
	o.waiting = waitsOn(f, o)
	o.deadlines = deadlines(f, o)
	return o
}

// deadlines are the times at which a timed check may change the outcome, for describe to requeue
// by the earliest future one: the until of the verdict the phase waits on (the next rotation, the
// end of the TTL wait, of the propagation delay, of the replaced pods' grace), of the exit check
// that held the phase (readyToSeal), in Stable that of rotationDue (the next rotation, or the close of the window a due rotation has not started in),
// the deadline past which the wait for a rollout is stuck (stuckAt), a laggard's reload deadline,
// a held restart's recheck, the end of a stamp's back-off.
func deadlines(f facts, o outcome) []time.Time {
	in := f.in
	at := []time.Time{stuckAt(f, o)}
	for _, v := range []*verdict{o.waiting, o.exit, o.rotation} {
		if v != nil {
			at = append(at, v.until) // zero when no time ends it
		}
	}
	// A laggard to restart may come first, in any phase.
	at = append(at, nextReloadDeadline(in, o.status, o.progress.v))
	// So may an overdue one held back, by its workload's pace or its node.
	if len(o.restarts.byWorkload) > 0 {
		at = append(at, in.Now.Add(HeldRestartRecheck))
	}
	// So may the end of a stamp's back-off.
	at = append(at, o.heldUntil())
	if nextRotationWaits(f, o) {
		at = append(at, in.Now.Add(NextRotationDelay))
	}
	return at
}

// NextRotationDelay is how soon a pass that ended a rotation or a revocation looks again when the
// next rotation is already due. A move makes one transition, and nothing else may wake the keyring:
// its own status write does not, and a source Secret holding a newer key has sent its event.
const NextRotationDelay = time.Second

// nextRotationWaits reports whether this pass entered Stable with a rotation already due: a
// source's newer key (which changed mid-rotation), a request, or a rekey owed to namespaces that
// left (with a key source, the rekey waits for the source's next key, which rotation.pass says).
func nextRotationWaits(f facts, o outcome) bool {
	if o.status.Phase != mrtrv1alpha1.PhaseStable || f.status.Phase == mrtrv1alpha1.PhaseStable || f.in.Settings.Suspend {
		return false
	}
	return o.rotation != nil && o.rotation.pass || f.rekey != "" && !f.in.Settings.Source
}

// move makes at most one transition, and at most one Secret write: the Secret settled against
// status first, then a revocation, else the exit of the phase in status; then what follows from
// the result (the token lifetime published, the stamp, the overdue pods, the outage warning).
func move(f facts) outcome {
	o := reportRefusals(f, outcome{status: f.status})
	if owner := f.in.Secret.ClaimedBy; owner != "" {
		// Two keyrings driving one Secret would each advance its rotation on their own workloads:
		// the second one touches nothing, so the phase and timers in its status stay as they were.
		o.conflict = true
		return o.stalled(mrtrv1alpha1.ReasonConflict, "Secret %s belongs to MRTRKeyring %s: this keyring writes and stamps nothing while %s exists; give it another spec.secretName",
			f.in.SecretName, owner, owner)
	}
	kr, settled, o := settleSecret(f, o)
	if kr != nil {
		// A revocation comes first, in every phase, and before a keyring taken as it is is written:
		// no key a request names is written to seal.
		revoked := false
		if o, revoked = revoke(f, o, kr); !revoked && settled {
			o = advance(f, o, kr)
		}
	}
	o = publishTokenTTL(f, o)
	if !f.in.Settings.Reload() && (f.in.Secret.State == SecretValid || o.write != nil) {
		// Only a keyring that is valid and ours is ever rolled out.
		o.stamp = o.status.TargetFingerprint
	}
	o = planStamps(f, o)
	o = restartOverdue(f, o)
	o.copyTo = copyTo(f, o)
	o = gatePlaces(f, o)
	o = nudgePods(f, o)
	o = placeEvents(f, o)
	o = trackSource(f, o)
	if out := outages(f.in); out != "" && o.write != nil && len(f.in.Workloads) > 0 {
		// A rotation restarts them three times.
		o = o.event(corev1Warning, mrtrv1alpha1.EventRestartIsOutage, "Rotate", "rolling out keyring %s: %s", o.write.keyring.Fingerprint(), out)
	}
	return o
}

// settleSecret settles what the Secret holds against what status says was written. It returns the
// Secret's keyring when it is valid and ours to use (nil otherwise), and whether the phase machine
// may advance from it this pass: not when this pass writes it already (taken as it is), which a
// revocation still overrides.
func settleSecret(f facts, o outcome) (*keyring.Keyring, bool, outcome) {
	sec, name := f.in.Secret, f.in.SecretName
	switch sec.State {
	case SecretWrongType:
		return nil, false, o.stalled(mrtrv1alpha1.ReasonSecretWrongType, "Secret %s: %s; it is never overwritten: delete it and a new keyring is created", name, sec.Problem)
	case SecretInvalid:
		return nil, false, o.stalled(mrtrv1alpha1.ReasonSecretInvalid, "Secret %s: %s; it is never overwritten: fix or delete it", name, sec.Problem)
	case SecretAbsent:
		return nil, false, createSecret(f, o)
	}
	kr, fp := sec.Keyring, sec.Keyring.Fingerprint()
	switch {
	case fp == o.status.SecretFingerprint:
		return kr, true, o
	case f.resume != "":
		o = o.event(corev1Normal, mrtrv1alpha1.EventResumed, "Resume", "Secret %s holds keyring %s written for phase %s; resuming there", name, fp, f.resume)
		return kr, true, enter(f, o, change{phase: f.resume, keyring: kr, staged: f.staged})
	case o.status.SecretFingerprint == "":
		o = o.event(corev1Normal, mrtrv1alpha1.EventSecretAdopted, "Adopt", "adopted the keyring in Secret %s (keys %s); rolling it out", name, strings.Join(kr.IDs(), ", "))
	default:
		o = o.event(corev1Warning, mrtrv1alpha1.EventSecretChanged, "Adopt", "Secret %s was changed behind the operator's back (fingerprint %s, expected %s); keeping its keys (%s) and rolling them out", name, fp, o.status.SecretFingerprint, strings.Join(kr.IDs(), ", "))
	}
	// Taken as it is: the data is not changed, only annotated as ours (the same keyring is written).
	if o.status.NextRotationTime == nil {
		o = scheduleFrom(f, o, f.now)
	}
	return kr, false, enter(f, o, change{phase: mrtrv1alpha1.PhaseStable, keyring: kr, write: true})
}

// createSecret writes a new keyring for a Secret that is absent: a fresh primary key and, when
// nextKey is Staged, a fresh staged key.
func createSecret(f facts, o outcome) outcome {
	if f.in.Settings.Source {
		return createFromSource(f, o)
	}
	n := 1
	if f.in.Settings.Staged() {
		n = 2
	}
	keys := newKeys(f, o.status, nil, n)
	kr, err := keyring.New(keys...)
	if err != nil {
		return o.cannotBuild(err)
	}
	staged := ""
	if n == 2 {
		staged = keys[1].ID()
	}
	if o.status.SecretFingerprint == "" {
		o = o.event(corev1Normal, mrtrv1alpha1.EventSecretCreated, "Create", "created Secret %s with keys %s", f.in.SecretName, describeKeys(kr, staged))
	} else {
		o = o.event(corev1Warning, mrtrv1alpha1.EventSecretRecreated, "Create", "Secret %s was deleted behind the operator's back; recreated with new keys %s and rolling them out (tokens sealed with the lost keys fail on each pod once it runs the new keys)", f.in.SecretName, describeKeys(kr, staged))
	}
	// A new keyring has nothing a pending revocation could name.
	if fresh := newRevokeRequests(f.in, o.status); len(fresh) > 0 {
		o.status = handledRevokeRequests(f.in, o.status, fresh)
	}
	o = scheduleFrom(f, o, f.now)
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseStable, keyring: kr, staged: staged, write: true})
}

// advance leaves the phase in status once its exit check passes.
func advance(f facts, o outcome, kr *keyring.Keyring) outcome {
	switch o.status.Phase {
	case mrtrv1alpha1.PhaseStable:
		return leaveStable(f, o, kr)
	case mrtrv1alpha1.PhaseAccepting:
		return leaveAccepting(f, o, kr)
	case mrtrv1alpha1.PhaseSealingWithNew:
		return leaveSealingWithNew(f, o)
	case mrtrv1alpha1.PhaseWaitingTTL:
		return leaveWaitingTTL(f, o, kr)
	case mrtrv1alpha1.PhaseRemoving:
		return leaveRemoving(f, o, kr)
	case mrtrv1alpha1.PhaseRevoking:
		return leaveRevoking(f, o, kr)
	}
	return o.stalled(mrtrv1alpha1.ReasonSecretInvalid, "status.phase %q is unknown", o.status.Phase)
}

// leaveStable starts a rotation once one is due or requested: by sealing with the staged key
// (sealWithStaged), or else by adding a new key that every pod must accept first (Accepting).
func leaveStable(f facts, o outcome, kr *keyring.Keyring) outcome {
	if f.in.Settings.Source {
		// The source, not the clock, says when: no schedule, no window, no rekey of its own.
		o.status.NextRotationTime, o.status.NextWindow = nil, nil
		return rotateToSource(f, o, kr)
	}
	o = scheduleRotation(f, o)
	if f.rekey != "" && !f.in.Settings.Suspend {
		return rekey(f, o, kr)
	}
	due := rotationDue(f.in, o.status)
	if !due.pass {
		if w := f.in.Settings.Windows; !w.Valid() {
			return o.stalled(mrtrv1alpha1.ReasonRotationWindowInvalid, "%s; no rotation starts on schedule until it is fixed (a rotation requested through %s and a revocation still do)",
				w.Problem, mrtrv1alpha1.RotateAnnotation)
		}
		return o
	}
	if f.staged != "" {
		return sealWithStaged(f, o, kr, due.message)
	}
	added := newKeys(f, o.status, kr, 1)[0]
	next, err := kr.Add(added)
	if errors.Is(err, keyring.ErrFull) {
		return o.stalled(mrtrv1alpha1.ReasonKeyringFull, "the keyring holds %d keys, the most allowed: remove keys no replica seals with (Retiring) so a new key can be added", kr.Len())
	} else if err != nil {
		return o.cannotBuild(err)
	}
	o.status.LastHandledRotateRequest = f.in.RotateRequest
	o = o.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (%s): created key %s, accepted everywhere before it seals; keyring %s (keys %s)",
		due.message, added.ID(), next.Fingerprint(), strings.Join(next.IDs(), ", "))
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseAccepting, keyring: next, write: true})
}

// rekey starts the rotation that namespaces which left with spec.onLeave Rekey are owed: to a
// fresh key, accepted everywhere before it seals, and without the staged key, which they hold.
// Dropping a staged key is safe at any time: nothing ever sealed with it.
func rekey(f facts, o outcome, kr *keyring.Keyring) outcome {
	next := kr
	var err error
	if f.staged != "" {
		if next, err = kr.Delete(f.staged); err != nil {
			return o.cannotBuild(err)
		}
	}
	added := newKeys(f, o.status, next, 1)[0]
	next, err = next.Add(added)
	if errors.Is(err, keyring.ErrFull) {
		return o.stalled(mrtrv1alpha1.ReasonKeyringFull, "the keyring holds %d keys, the most allowed: remove keys no replica seals with (Retiring) so a new key can be added", kr.Len())
	} else if err != nil {
		return o.cannotBuild(err)
	}
	dropped := ""
	if f.staged != "" {
		dropped = fmt.Sprintf("; staged key %s dropped", f.staged)
	}
	o.rekeyed = true
	o = o.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (%s): created key %s, accepted everywhere before it seals%s; keyring %s (keys %s)",
		f.rekey, added.ID(), dropped, next.Fingerprint(), strings.Join(next.IDs(), ", "))
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseAccepting, keyring: next, write: true})
}

// sealWithStaged starts a rotation of a keyring that has a staged key: every pod accepts it
// already, so it seals at once ([N, A]) and the rotation skips Accepting. That every pod accepts
// it is proven again first (delivered), for targets added since it was staged; and in Restart
// delivery the pods that the rollout of the staging write replaced knew only the keyring before
// it, so the rotation starts no sooner than terminationGracePeriod after that rollout.
func sealWithStaged(f facts, o outcome, kr *keyring.Keyring, request string) outcome {
	if o = readyToSeal(f, o); !o.exit.pass {
		return o
	}
	next, err := kr.SetPrimary(f.staged)
	if err != nil {
		return o.cannotBuild(err)
	}
	o.status.LastHandledRotateRequest = f.in.RotateRequest
	o = o.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (%s): staged key %s, which every pod accepts, seals from now on; keyring %s (keys %s)",
		request, f.staged, next.Fingerprint(), strings.Join(next.IDs(), ", "))
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseSealingWithNew, keyring: next, write: true})
}

// leaveAccepting makes the new key primary once every pod accepts it (rule 1), and, in Restart
// delivery, the pods the rollout replaced have stopped.
func leaveAccepting(f facts, o outcome, kr *keyring.Keyring) outcome {
	if o = readyToSeal(f, o); !o.exit.pass {
		return o
	}
	ids := kr.IDs()
	newest := ids[len(ids)-1]
	next, err := kr.SetPrimary(newest)
	if err != nil {
		return o.cannotBuild(err)
	}
	o = o.event(corev1Normal, mrtrv1alpha1.EventKeySealing, "Rotate", "every pod accepts key %s: it seals from now on; keyring %s (keys %s)",
		newest, next.Fingerprint(), strings.Join(next.IDs(), ", "))
	if f.in.Settings.Source {
		o = inService(f, o, newest)
	}
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseSealingWithNew, keyring: next, write: true})
}

// leaveSealingWithNew starts the TTL wait once no pod seals with the old keys.
func leaveSealingWithNew(f facts, o outcome) outcome {
	if !delivered(f, o.status, false).pass {
		return o
	}
	o.status.TTLWaitUntil = ttlWaitEnd(f.in.Now, o.status.TTLWaits)
	o.status.RolledOutAt = nil
	return transition(f, o, mrtrv1alpha1.PhaseWaitingTTL) // no event: status.ttlWaitUntil says when it ends
}

// leaveWaitingTTL removes the old keys once every token sealed with them has expired (rule 2),
// staging a fresh key when nextKey is Staged.
func leaveWaitingTTL(f facts, o outcome, kr *keyring.Keyring) outcome {
	if len(f.in.Places) > 0 && !delivered(f, o.status, false).pass {
		// A place behind (one that joined again holding an older keyring) may have sealed with the
		// old primary until its pods run this phase's keyring: the wait starts again once they do.
		o.status.TTLWaitUntil = nil
		return o
	}
	if o.status.TTLWaitUntil == nil { // lost (an edited status): wait the whole time again from now
		o.status.TTLWaitUntil = ttlWaitEnd(f.in.Now, o.status.TTLWaits)
	}
	o = extendTTLWait(o)
	if !tokensExpired(f, o.status).pass {
		return o
	}
	removed := kr.IDs()[1:]
	next, err := kr.Delete(removed...)
	staged := ""
	if err == nil && f.in.Settings.Staged() {
		fresh := newKeys(f, o.status, kr, 1)[0]
		next, err = next.Add(fresh)
		staged = fresh.ID()
	}
	if err != nil {
		return o.cannotBuild(err)
	}
	o = retire(f, o, kr, removed)
	if len(removed) > 0 || staged != "" {
		o = o.event(corev1Normal, mrtrv1alpha1.EventKeyRemoved, "Rotate", "removed key(s) %s: every token sealed with them has expired; keyring %s (keys %s)",
			strings.Join(removed, ", "), next.Fingerprint(), describeKeys(next, staged))
	}
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseRemoving, keyring: next, staged: staged, write: true})
}

// leaveRemoving completes the rotation once every pod runs the keyring without the old keys.
func leaveRemoving(f facts, o outcome, kr *keyring.Keyring) outcome {
	if !delivered(f, o.status, false).pass {
		return o
	}
	o.status.LastRotationTime = nowRef(f)
	o = scheduleFrom(f, o, f.now)
	o.status.RotationsCompleted++
	o = settle(f, o, kr)
	if o.status.NextRotationTime == nil {
		return o.event(corev1Normal, mrtrv1alpha1.EventRotationCompleted, "Rotate", "rotation completed; keys %s; the next rotation starts when source Secret %s holds a new key",
			describeKeys(kr, f.staged), f.in.Source.Name)
	}
	return o.event(corev1Normal, mrtrv1alpha1.EventRotationCompleted, "Rotate", "rotation completed; keys %s; next rotation at %s",
		describeKeys(kr, f.staged), o.status.NextRotationTime.UTC().Format(time.RFC3339))
}

// leaveRevoking ends a revocation once every pod runs the keyring without the revoked keys.
func leaveRevoking(f facts, o outcome, kr *keyring.Keyring) outcome {
	if !delivered(f, o.status, false).pass {
		return o
	}
	o = settle(f, o, kr)
	return o.event(corev1Normal, mrtrv1alpha1.EventRevocationCompleted, "Revoke", "every pod runs keyring %s (keys %s), without the revoked keys",
		kr.Fingerprint(), describeKeys(kr, f.staged))
}

// readyToSeal is the check before a key that every pod should accept begins to seal (rule 1): the
// keyring that holds it has reached every pod, a missing target blocking (it could come back with
// an old keyring), and in Restart delivery the pods its rollout replaced have stopped. A rollout
// under way, or one that regressed, proves nothing yet: status.rolledOutAt is cleared. The verdict
// is the first check that does not pass (o.exit), for waitsOn to render and describe to requeue by.
func readyToSeal(f facts, o outcome) outcome {
	v := delivered(f, o.status, true)
	if !v.pass {
		o.status.RolledOutAt = nil
	} else {
		o, v = replacedPodsGone(f, o)
	}
	o.exit = &v
	return o
}

// delivered is the exit check of the phases that wait for a keyring to reach the pods (see
// delivery.reached). A Secret-only keyring, with nothing to prove it, waits PropagationDelay.
func delivered(f facts, st mrtrv1alpha1.MRTRKeyringStatus, blockOnMissing bool) verdict {
	if len(f.delivery.behind) > 0 {
		return *copiesVerdict(f.delivery, "")
	}
	if f.delivery.secretOnly {
		return propagated(f, st)
	}
	return verdict{pass: f.delivery.reached(blockOnMissing), what: mrtrv1alpha1.WaitDelivery,
		message: "keyring " + f.delivery.target + " to reach every pod"}
}

// replacedPodsGone is the second exit check of Accepting and of sealWithStaged in Restart
// delivery. A rollout is complete once no running pod has the old template, but the pods it
// replaced may still serve for terminationGracePeriod while they stop (kubectl rollout status
// does not see them for StatefulSets and DaemonSets), and they know only the old keys: a token
// sealed with the new key must not reach them. So the phase ends that long after the rollout was
// first seen complete (status.rolledOutAt, kept across restarts: set here, the first time). Reload
// delivery counts terminating pods until they are gone, and restarts none but the laggards, so it
// needs no such wait.
func replacedPodsGone(f facts, o outcome) (outcome, verdict) {
	if len(f.in.Workloads) == 0 || f.in.Settings.Reload() {
		return o, verdict{pass: true, what: mrtrv1alpha1.WaitReplacedPods, message: "no rollout replaced a pod"}
	}
	if o.status.RolledOutAt == nil {
		o.status.RolledOutAt = nowRef(f)
	}
	return o, replacedGone(f, o.status)
}

// settle ends Removing or Revoking, whose keyring kr has reached every pod: Stable, its staged key
// now Staged. status.rolledOutAt keeps when that was seen, for sealWithStaged.
func settle(f facts, o outcome, kr *keyring.Keyring) outcome {
	o.status.TTLWaitUntil, o.status.RolledOutAt = nil, nil
	if f.staged != "" {
		o.status.RolledOutAt = nowRef(f)
	}
	o = transition(f, o, mrtrv1alpha1.PhaseStable)
	o.status.Keys = keyStatuses(f, kr, mrtrv1alpha1.PhaseStable, f.staged)
	return o
}

// enter starts the phase of c with its keyring in the Secret: written now, or already there.
func enter(f facts, o outcome, c change) outcome {
	if c.write {
		o.write = &secretWrite{keyring: c.keyring, phase: c.phase, staged: c.staged}
	}
	st := &o.status
	st.SecretFingerprint = c.keyring.Fingerprint()
	st.TargetFingerprint = c.keyring.Fingerprint()
	st.Keys = keyStatuses(f, c.keyring, c.phase, c.staged)
	if c.phase != mrtrv1alpha1.PhaseWaitingTTL {
		st.TTLWaitUntil = nil
	}
	w := *st.TTLWaits // set by trackTTLWaits; a copy, so that the facts stay as observed
	switch {
	case c.phase == mrtrv1alpha1.PhaseSealingWithNew && st.Phase != c.phase:
		// A new key takes over sealing: the old primary's longest wait now covers the retiring
		// keys, and the new primary's starts from the current one.
		retiring := w.Primary
		w.Retiring, w.Primary = &retiring, metav1.Duration{Duration: f.in.Settings.TTLWait()}
	case c.phase == mrtrv1alpha1.PhaseRemoving || c.phase == mrtrv1alpha1.PhaseStable:
		w.Retiring = nil // the keys it covered are gone, or never were
	case c.phase == mrtrv1alpha1.PhaseRevoking:
		// Whichever key seals now may have sealed before, under any of the waits known: keep the
		// longest for it. Keys left retiring leave at the next rotation, which covers them anew.
		if w.Retiring != nil {
			w.Primary.Duration = max(w.Primary.Duration, w.Retiring.Duration)
		}
		w.Retiring = nil
	}
	st.TTLWaits = &w
	st.RolledOutAt = nil
	return transition(f, o, c.phase)
}

// transition records the phase change. It emits no event: the caller emits the one event that
// says what the change means (RotationStarted, KeySealing, KeyRemoved, RotationCompleted, or why
// the Secret was taken as it is), so that a rotation costs four events, not one per step and
// detail.
func transition(f facts, o outcome, phase mrtrv1alpha1.Phase) outcome {
	o.status.Phase = phase
	o.status.PhaseStartedAt = nowRef(f)
	o.status.RestartedPods = nil // they were restarted for the keyring of the phase before
	return o
}

// stalled records that progress is blocked; the first reason found wins.
func (o outcome) stalled(reason, format string, args ...any) outcome {
	if o.stall == nil {
		o.stall = &stall{reason: reason, message: fmt.Sprintf(format, args...)}
	}
	return o
}

// cannotBuild stalls on a keyring the verbs refused to build; the error names ids, never bytes.
func (o outcome) cannotBuild(err error) outcome {
	return o.stalled(mrtrv1alpha1.ReasonSecretInvalid, "cannot build the next keyring: %v", err)
}

func (o outcome) event(typ, reason, action, format string, args ...any) outcome {
	o.events = append(slices.Clip(o.events), Event{Type: typ, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)})
	return o
}

// Event types, as in k8s.io/api/core/v1 (not imported to keep this package free of API machinery
// it does not need).
const (
	corev1Normal  = "Normal"
	corev1Warning = "Warning"
)
