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

package rotation

import (
	"fmt"
	"strings"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// delivered is the exit check of the phases that wait for a keyring to reach the pods: every
// target runs status.targetFingerprint (Workload: acknowledged in Reload delivery, rolled out in
// Restart delivery), and so does every selected pod. A missing target blocks only when
// blockOnMissing (Accepting: it could come back with an old keyring); later, a missing target has
// no pods that could seal. A Secret-only keyring, with nothing to prove it, waits PropagationDelay.
func (p *pass) delivered(blockOnMissing bool) bool {
	if p.secretOnly() {
		return !p.in.Now.Before(p.phaseStart().Add(p.in.Settings.PropagationDelay))
	}
	missing, pending := p.lagging()
	if blockOnMissing && len(missing) > 0 {
		return false
	}
	return len(pending) == 0 && len(p.laggards(p.in.SelectedPods, true)) == 0
}

// secretOnly: no target workload and no selected pod, so nothing can prove that a keyring arrived.
func (p *pass) secretOnly() bool { return len(p.in.Workloads) == 0 && len(p.in.SelectedPods) == 0 }

// replacedPodsGone is Accepting's second exit check in Restart delivery. A rollout is complete once
// no running pod has the old template, but the pods it replaced may still serve for
// terminationGracePeriod while they stop (kubectl rollout status does not see them for
// StatefulSets and DaemonSets), and they know only the old keys: a token sealed with the new key
// must not reach them. So the phase ends that long after the rollout was first seen complete
// (status.rolledOutAt, kept across restarts). Reload delivery counts terminating pods until they
// are gone, and restarts none but the laggards, so it needs no such wait.
func (p *pass) replacedPodsGone() bool {
	if len(p.in.Workloads) == 0 || p.in.Settings.Reload() {
		return true
	}
	if p.st.RolledOutAt == nil {
		p.st.RolledOutAt = &p.now
	}
	return !p.in.Now.Before(p.st.RolledOutAt.Add(p.in.Settings.TerminationGracePeriod))
}

// lagging lists the targets that do not exist, and the found ones not yet up to date.
func (p *pass) lagging() (missing, pending []Workload) {
	for _, w := range p.in.Workloads {
		switch {
		case !w.Found:
			missing = append(missing, w)
		case !p.upToDate(w):
			pending = append(pending, w)
		}
	}
	return missing, pending
}

// WaitsForRollout reports whether phase ph ends when its keyring has reached every pod (a rollout,
// or every acknowledgement).
func WaitsForRollout(ph mrtrv1alpha1.Phase) bool {
	return ph == mrtrv1alpha1.PhaseAccepting || ph == mrtrv1alpha1.PhaseSealingWithNew || ph == mrtrv1alpha1.PhaseRemoving ||
		ph == mrtrv1alpha1.PhaseRevoking
}

// checkBlocked is the stall check run after advance: a target missing while Accepting, or a
// keyring that has not reached every pod within spec.rolloutDeadline.
func (p *pass) checkBlocked() {
	p.checkClaims()
	if p.st.Phase == mrtrv1alpha1.PhaseStable && p.d.Secret == nil {
		p.checkDueBlocked()
		return
	}
	if !WaitsForRollout(p.st.Phase) || p.d.Secret != nil {
		return
	}
	missing, pending := p.lagging()
	if p.st.Phase == mrtrv1alpha1.PhaseAccepting && len(missing) > 0 {
		p.stall(mrtrv1alpha1.ReasonWorkloadNotFound, "the rotation does not advance past Accepting until these targets exist (or leave the spec): %s", refs(missing))
		return
	}
	if p.in.Now.Before(p.rolloutDeadline()) {
		return
	}
	if len(pending) > 0 {
		p.stall(mrtrv1alpha1.ReasonRolloutDeadlineExceeded, "%s has not rolled out keyring %s within %s: %s; the rotation continues once it does",
			refs(pending), p.st.TargetFingerprint, p.in.Settings.RolloutDeadline, p.messages(pending))
	} else if s := p.describeSelected(); s != "" {
		p.stall(mrtrv1alpha1.ReasonRolloutDeadlineExceeded, "keyring %s has not reached every pod within %s: %s; the rotation continues once it does",
			p.st.TargetFingerprint, p.in.Settings.RolloutDeadline, s)
	}
}

// checkDueBlocked stalls a rotation that fell due but cannot start: a staged key seals only once
// every pod runs the keyring that staged it (sealWithStaged), so a target that does not roll it
// out holds the rotation in Stable. The deadline counts from the due time, spec.rolloutDeadline,
// as in the phases that wait for a rollout. (A requested rotation has no time of its own to count
// from; its wait shows in Reconciling.)
func (p *pass) checkDueBlocked() {
	deadline, ok := p.dueDeadline()
	if !ok || p.in.Now.Before(deadline) {
		return
	}
	missing, pending := p.lagging()
	switch {
	case len(missing) > 0:
		p.stall(mrtrv1alpha1.ReasonWorkloadNotFound, "the rotation due at %s does not start until these targets exist (or leave the spec): %s",
			p.st.NextRotationTime.UTC().Format(time.RFC3339), refs(missing))
	case len(pending) > 0:
		p.stall(mrtrv1alpha1.ReasonRolloutDeadlineExceeded, "the rotation due at %s waits for %s to run keyring %s, which stages its next key: %s",
			p.st.NextRotationTime.UTC().Format(time.RFC3339), refs(pending), p.st.TargetFingerprint, p.messages(pending))
	case p.describeSelected() != "":
		p.stall(mrtrv1alpha1.ReasonRolloutDeadlineExceeded, "the rotation due at %s waits for keyring %s to reach every pod: %s",
			p.st.NextRotationTime.UTC().Format(time.RFC3339), p.st.TargetFingerprint, p.describeSelected())
	}
}

// dueDeadline is, for a rotation due by the interval that a staged key holds back, when its wait
// for delivery counts as stuck.
func (p *pass) dueDeadline() (time.Time, bool) {
	t := p.st.NextRotationTime
	if t == nil || p.in.Settings.Suspend || p.in.Now.Before(t.Time) || p.in.Secret.State != SecretValid || p.stagedKey(p.in.Secret.Keyring) == "" {
		return time.Time{}, false
	}
	return t.Add(p.in.Settings.RolloutDeadline), true
}

// checkClaims stalls on targets whose stamp belongs to another keyring, in Restart delivery: the
// reconciler does not stamp them, so a rotation cannot leave its first phase until the owner is
// gone (or the workload leaves this keyring's targets). A workload that needs two keyrings needs
// one stamp for each, not one fought over. Reload delivery stamps nothing: each keyring waits for
// its own acknowledgement, and two keyrings never touch the same thing.
func (p *pass) checkClaims() {
	if p.in.Settings.Reload() {
		return
	}
	var claimed []string
	for _, w := range p.in.Workloads {
		if w.Found && w.ClaimedBy != "" {
			claimed = append(claimed, fmt.Sprintf("%s (MRTRKeyring %s)", w.ref(), w.ClaimedBy))
		}
	}
	if len(claimed) > 0 {
		p.stall(mrtrv1alpha1.ReasonConflict, "the stamps of %s belong to another keyring: this keyring does not stamp them while that one exists",
			joinSome(claimed, ", ", len(claimed)))
	}
}

func (p *pass) phaseStart() time.Time {
	if p.st.PhaseStartedAt == nil {
		return p.in.Now
	}
	return p.st.PhaseStartedAt.Time
}

func (p *pass) rolloutDeadline() time.Time { return p.phaseStart().Add(p.in.Settings.RolloutDeadline) }

// nextDeadline is the earliest future time at which a timed check may change the outcome: the
// next rotation, the end of the TTL wait or of the propagation delay, or a rollout deadline.
func (p *pass) nextDeadline() time.Duration {
	switch p.in.Secret.State {
	case SecretInvalid:
		return 0 // nothing timed can help: only a fix of the Secret (a watch event) can
	case SecretWrongType:
		// The reconciler watches keyring Secrets only: the deletion of this one, which is the fix,
		// brings no event, so look again now and then.
		return WrongTypeRecheck
	}
	var at time.Time
	switch ph := p.st.Phase; {
	case ph == mrtrv1alpha1.PhaseStable:
		if !p.in.Settings.Suspend && p.st.NextRotationTime != nil {
			at = p.st.NextRotationTime.Time
		}
		// A rotation due (or requested) that seals with a staged key first waits for the pods the
		// last rollout replaced to stop (sealWithStaged), and is stuck past its deadline.
		if _, due := p.rotationDue(); due && p.st.RolledOutAt != nil && !p.in.Settings.Reload() {
			at = p.st.RolledOutAt.Add(p.in.Settings.TerminationGracePeriod)
		} else if d, ok := p.dueDeadline(); ok && d.After(p.in.Now) {
			at = d
		}
	case ph == mrtrv1alpha1.PhaseWaitingTTL:
		if p.st.TTLWaitUntil != nil {
			at = p.st.TTLWaitUntil.Time
		}
	case WaitsForRollout(ph) && p.secretOnly():
		at = p.phaseStart().Add(p.in.Settings.PropagationDelay)
	case ph == mrtrv1alpha1.PhaseAccepting && p.st.RolledOutAt != nil:
		at = p.st.RolledOutAt.Add(p.in.Settings.TerminationGracePeriod)
	case WaitsForRollout(ph) && p.in.Now.Before(p.rolloutDeadline()):
		at = p.rolloutDeadline()
	}
	// A laggard to restart may come first, in any phase.
	if r := p.nextReloadDeadline(); !r.IsZero() && (at.IsZero() || !at.After(p.in.Now) || r.Before(at)) {
		at = r
	}
	if d := at.Sub(p.in.Now); !at.IsZero() && d > 0 {
		return d
	}
	return 0
}

// WrongTypeRecheck is how often a keyring whose Secret has another type looks again.
const WrongTypeRecheck = 10 * time.Second

func refs(ws []Workload) string {
	s := make([]string, min(len(ws), maxNamed+1))
	for i := range s {
		s[i] = ws[i].ref()
	}
	return joinSome(s, ", ", len(ws))
}

// messages says what each workload waits for before it runs the target keyring.
func (p *pass) messages(ws []Workload) string {
	s := make([]string, min(len(ws), maxNamed+1))
	for i := range s {
		s[i] = p.describe(ws[i])
	}
	return joinSome(s, "; ", len(ws))
}

// maxNamed is how many workloads a condition message or event names; the rest are counted, so
// that a keyring with thousands of targets keeps its messages within the API's 32 KiB.
const maxNamed = 10

// joinSome joins the first maxNamed of s, which holds at least those of the total items, and
// counts the others.
func joinSome(s []string, sep string, total int) string {
	if total <= maxNamed {
		return strings.Join(s, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(s[:maxNamed], sep), sep, total-maxNamed)
}

// describe says what w waits for before it runs the target keyring, "" when nothing.
// Workload.Message already names the workload; the other texts are prefixed with it.
func (p *pass) describe(w Workload) string {
	fp := p.st.TargetFingerprint
	switch {
	case !w.Found:
		return w.ref() + " not found"
	case p.in.Settings.Reload():
		return p.describePods(w)
	case w.Stamp != fp && p.d.Stamp == fp && w.ClaimedBy == "", w.Stamp == fp && w.Unobserved:
		// Stamped as this pass ends, or stamped and its controller yet to begin: one message for
		// both, so that a pass that finds the stamp before the rollout has nothing new to write.
		return w.ref() + ": rollout of keyring " + fp + " started"
	case w.Stamp != fp:
		return w.ref() + ": pod template not yet stamped with keyring " + fp
	case w.RolledOut:
		return ""
	case w.Message != "":
		return w.Message
	}
	return fmt.Sprintf("%s: %d of %d pods ready", w.ref(), w.Ready, w.Desired)
}
