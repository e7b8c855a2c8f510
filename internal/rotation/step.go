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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Step decides one reconcile pass. It is pure: same Input, same Decision. It makes at most one
// phase transition, and at most one Secret write, per pass; the write or the stamps it causes wake
// the next pass through the watches, and timed steps through Decision.RequeueAfter.
func Step(in Input) Decision {
	p := &pass{in: in, now: metav1.NewTime(in.Now.Truncate(time.Second)), st: *in.Status.DeepCopy()}
	if p.st.Phase == "" {
		p.st.Phase = mrtrv1alpha1.PhaseStable
	}
	p.trackTTLWaits()
	p.restoreRecords()
	if owner := in.Secret.ClaimedBy; owner != "" {
		// Two keyrings driving one Secret would each advance its rotation on their own workloads:
		// the second one touches nothing, so the phase and timers in its status stay as they were.
		p.stall(mrtrv1alpha1.ReasonConflict, "Secret %s belongs to MRTRKeyring %s: this keyring writes and stamps nothing while %s exists; give it another spec.secretName",
			in.SecretName, owner, owner)
		p.conflict = true
	} else if kr := p.reconcileSecret(); kr != nil && !p.revoke(kr) {
		p.advance(kr)
	}
	p.finish()
	return p.d
}

// pass holds one Step's working state.
type pass struct {
	in  Input
	now metav1.Time // in.Now truncated to the second, as status stores it
	st  mrtrv1alpha1.MRTRKeyringStatus
	d   Decision
	// stallReason and stallMessage are set when progress is blocked.
	stallReason, stallMessage string
	// conflict: the Secret belongs to another keyring, so nothing is written or stamped.
	conflict bool
}

// reconcileSecret settles what the Secret holds against what status says was written. It returns
// the keyring the phase machine may advance from, or nil when this pass must not advance (a write
// is already planned, or the Secret is unusable).
func (p *pass) reconcileSecret() *keyring.Keyring {
	sec, name := p.in.Secret, p.in.SecretName
	switch sec.State {
	case SecretWrongType:
		p.stall(mrtrv1alpha1.ReasonSecretWrongType, "Secret %s: %s; it is never overwritten: delete it and a new keyring is created", name, sec.Problem)
		return nil
	case SecretInvalid:
		p.stall(mrtrv1alpha1.ReasonSecretInvalid, "Secret %s: %s; it is never overwritten: fix or delete it", name, sec.Problem)
		return nil
	case SecretAbsent:
		keys := p.freshKeys(nil, 1)
		if p.in.Settings.Staged() {
			keys = p.freshKeys(nil, 2)
		}
		kr, err := keyring.New(keys...)
		if err != nil { // unreachable: the reconciler generates valid keys
			p.stall(mrtrv1alpha1.ReasonSecretInvalid, "cannot build a new keyring: %v", err)
			return nil
		}
		if p.st.SecretFingerprint == "" {
			p.event(corev1Normal, mrtrv1alpha1.EventSecretCreated, "Create", "created Secret %s with keys %s", name, describeKeys(kr, stagedID(keys)))
		} else {
			p.event(corev1Warning, mrtrv1alpha1.EventSecretRecreated, "Create", "Secret %s was deleted behind the operator's back; recreated with new keys %s and rolling them out (tokens sealed with the lost keys fail on each pod once it runs the new keys)", name, describeKeys(kr, stagedID(keys)))
		}
		// A new keyring has nothing a pending revocation could name.
		p.st.LastHandledRevokeRequest = p.in.RevokeRequest
		p.st.NextRotationTime = p.at(p.in.Settings.RotationInterval)
		p.enter(mrtrv1alpha1.PhaseStable, kr, true, stagedID(keys))
		return nil
	}
	kr, fp := sec.Keyring, sec.Keyring.Fingerprint()
	switch {
	case fp == p.st.SecretFingerprint:
		return kr
	case sec.writtenByUs():
		// Our own write whose status update was lost (a restart, a conflict, a re-created keyring).
		p.event(corev1Normal, mrtrv1alpha1.EventResumed, "Resume", "Secret %s holds keyring %s written for phase %s; resuming there", name, fp, sec.WrittenPhase)
		p.enter(sec.WrittenPhase, kr, false, p.stagedKey(kr))
		return kr
	case p.st.SecretFingerprint == "":
		p.event(corev1Normal, mrtrv1alpha1.EventSecretAdopted, "Adopt", "adopted the keyring in Secret %s (keys %s); rolling it out", name, strings.Join(kr.IDs(), ", "))
	default:
		p.event(corev1Warning, mrtrv1alpha1.EventSecretChanged, "Adopt", "Secret %s was changed behind the operator's back (fingerprint %s, expected %s); keeping its keys (%s) and rolling them out", name, fp, p.st.SecretFingerprint, strings.Join(kr.IDs(), ", "))
	}
	// Taken as it is: the data is not changed, only annotated as ours (the same keyring is written).
	if p.st.NextRotationTime == nil {
		p.st.NextRotationTime = p.at(p.in.Settings.RotationInterval)
	}
	p.enter(mrtrv1alpha1.PhaseStable, kr, true, "")
	return nil
}

// advance makes at most one transition, from the phase in status, once its exit check passes.
func (p *pass) advance(kr *keyring.Keyring) {
	s := p.in.Settings
	switch p.st.Phase {
	case mrtrv1alpha1.PhaseStable:
		p.scheduleRotation()
		request, due := p.rotationDue()
		if !due {
			return
		}
		if staged := p.stagedKey(kr); staged != "" {
			p.sealWithStaged(kr, staged, request)
			return
		}
		if kr.Len() >= keyring.MaxKeys {
			p.stall(mrtrv1alpha1.ReasonKeyringFull, "the keyring holds %d keys, the most allowed: remove keys no replica seals with (Retiring) so a new key can be added", kr.Len())
			return
		}
		next, err := keyring.New(append(kr.Keys(), p.freshKeys(kr, 1)...)...)
		if err != nil { // unreachable: NewKeyID never repeats an id in kr
			p.stall(mrtrv1alpha1.ReasonKeyringFull, "cannot add a key: %v", err)
			return
		}
		p.st.LastHandledRotateRequest = p.in.RotateRequest
		added := next.Keys()[next.Len()-1].ID()
		p.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (%s): created key %s, accepted everywhere before it seals; keyring %s (keys %s)",
			request, added, next.Fingerprint(), strings.Join(next.IDs(), ", "))
		p.enter(mrtrv1alpha1.PhaseAccepting, next, true, "")
	case mrtrv1alpha1.PhaseAccepting:
		if !p.delivered(true) {
			p.st.RolledOutAt = nil // a rollout that regressed proves nothing yet
			return
		}
		if !p.replacedPodsGone() {
			return
		}
		keys := kr.Keys()
		newest := keys[len(keys)-1]
		next, err := keyring.New(append([]keyring.Key{newest}, keys[:len(keys)-1]...)...)
		if err != nil { // unreachable: same keys, another order
			p.stall(mrtrv1alpha1.ReasonSecretInvalid, "cannot reorder the keyring: %v", err)
			return
		}
		p.event(corev1Normal, mrtrv1alpha1.EventKeySealing, "Rotate", "every pod accepts key %s: it seals from now on; keyring %s (keys %s)",
			newest.ID(), next.Fingerprint(), strings.Join(next.IDs(), ", "))
		p.enter(mrtrv1alpha1.PhaseSealingWithNew, next, true, "")
	case mrtrv1alpha1.PhaseSealingWithNew:
		if !p.delivered(false) {
			return
		}
		until := metav1.NewTime(ceilSecond(p.in.Now.Add(p.retiringTTLWait())))
		p.st.TTLWaitUntil = &until
		p.st.RolledOutAt = nil
		p.transition(mrtrv1alpha1.PhaseWaitingTTL) // no event: status.ttlWaitUntil says when it ends
	case mrtrv1alpha1.PhaseWaitingTTL:
		if p.st.TTLWaitUntil == nil { // lost (an edited status): wait the whole time again from now
			until := metav1.NewTime(ceilSecond(p.in.Now.Add(p.retiringTTLWait())))
			p.st.TTLWaitUntil = &until
		}
		p.extendTTLWait()
		if p.in.Now.Before(p.st.TTLWaitUntil.Time) {
			return
		}
		keys := kr.Keys()
		kept, staged := []keyring.Key{keys[0]}, "" // a new slice: appending to keys[:1] would overwrite keys[1]
		if s.Staged() {
			kept = append(kept, p.freshKeys(kr, 1)...)
			staged = kept[1].ID()
		}
		next, _ := keyring.New(kept...) // the first key of a valid keyring, and a fresh one
		removed := make([]string, 0, len(keys)-1)
		for _, k := range keys[1:] {
			removed = append(removed, k.ID())
		}
		if len(removed) > 0 || staged != "" {
			p.event(corev1Normal, mrtrv1alpha1.EventKeyRemoved, "Rotate", "removed key(s) %s: every token sealed with them has expired; keyring %s (keys %s)",
				strings.Join(removed, ", "), next.Fingerprint(), describeKeys(next, staged))
		}
		p.enter(mrtrv1alpha1.PhaseRemoving, next, true, staged)
	case mrtrv1alpha1.PhaseRemoving:
		if !p.delivered(false) {
			return
		}
		p.st.LastRotationTime = &p.now
		p.st.NextRotationTime = p.at(s.RotationInterval)
		p.st.RotationsCompleted++
		p.settle(kr)
		p.event(corev1Normal, mrtrv1alpha1.EventRotationCompleted, "Rotate", "rotation completed; keys %s; next rotation at %s",
			describeKeys(kr, p.stagedKey(kr)), p.st.NextRotationTime.UTC().Format(time.RFC3339))
	case mrtrv1alpha1.PhaseRevoking:
		if !p.delivered(false) {
			return
		}
		p.settle(kr)
		p.event(corev1Normal, mrtrv1alpha1.EventRevocationCompleted, "Revoke", "every pod runs keyring %s (keys %s), without the revoked keys",
			kr.Fingerprint(), describeKeys(kr, p.stagedKey(kr)))
	default:
		p.stall(mrtrv1alpha1.ReasonSecretInvalid, "status.phase %q is unknown", p.st.Phase)
	}
}

// scheduleRotation keeps status.nextRotationTime one rotationInterval after the last rotation or,
// before the first, after the primary key was created: an edited interval takes effect at once, in
// both directions, instead of at the time computed from the old one (up to a month away).
func (p *pass) scheduleRotation() {
	base := p.st.LastRotationTime
	if since := p.primarySealing(); base == nil && !since.IsZero() {
		base = &since
	}
	if base == nil {
		if p.st.NextRotationTime == nil {
			p.st.NextRotationTime = p.at(p.in.Settings.RotationInterval)
		}
		return
	}
	// Whole seconds, as status stores them, so that the value survives the round trip unchanged.
	next := metav1.NewTime(base.Add(p.in.Settings.RotationInterval).Truncate(time.Second))
	if old := p.st.NextRotationTime; old == nil || !old.Equal(&next) {
		if old != nil {
			p.event(corev1Normal, mrtrv1alpha1.EventRotationRescheduled, "Schedule", "rotationInterval is %v: next rotation at %s (was %s)",
				p.in.Settings.RotationInterval, next.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339))
		}
		p.st.NextRotationTime = &next
	}
}

// trackTTLWaits keeps status.ttlWaits at the longest TTL waits declared while the keys sealed: the
// current settings' wait raises them, nothing lowers them until the keys they cover leave sealing.
func (p *pass) trackTTLWaits() {
	cur := p.in.Settings.TTLWait()
	w := mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: cur}}
	if p.st.TTLWaits != nil {
		w.Primary.Duration = max(p.st.TTLWaits.Primary.Duration, cur)
		if r := p.st.TTLWaits.Retiring; r != nil {
			w.Retiring = &metav1.Duration{Duration: max(r.Duration, cur)}
		}
	}
	p.st.TTLWaits = &w
}

// retiringTTLWait is how long the TTL wait lasts from the moment no pod seals with the old keys:
// the longest TTL wait declared since they began to seal (the current one at least).
func (p *pass) retiringTTLWait() time.Duration {
	w := p.st.TTLWaits // set by trackTTLWaits
	if w.Retiring != nil {
		return w.Retiring.Duration
	}
	return w.Primary.Duration // a status from before ttlWaits.retiring: the longest known
}

// extendTTLWait moves the end of the TTL wait later when a longer TTL was declared since it began,
// so that raising tokenTTL during the wait still covers every token sealed with the old keys.
func (p *pass) extendTTLWait() {
	if p.st.PhaseStartedAt == nil {
		return
	}
	until := metav1.NewTime(ceilSecond(p.st.PhaseStartedAt.Add(p.retiringTTLWait())))
	if until.After(p.st.TTLWaitUntil.Time) {
		p.event(corev1Normal, mrtrv1alpha1.EventTTLWaitExtended, "Rotate", "a TTL wait of %v was declared since the old keys last sealed: the wait now ends at %s (was %s)",
			p.retiringTTLWait(), until.UTC().Format(time.RFC3339), p.st.TTLWaitUntil.UTC().Format(time.RFC3339))
		p.st.TTLWaitUntil = &until
	}
}

// primarySealing is when the primary key in status began to seal, zero when unknown.
func (p *pass) primarySealing() metav1.Time {
	if len(p.st.Keys) == 0 {
		return metav1.Time{}
	}
	return p.st.Keys[0].Sealing()
}

// rotationDue reports whether a rotation must start now, and why.
func (p *pass) rotationDue() (why string, due bool) {
	if p.in.Settings.Suspend {
		return "", false
	}
	// Handled once for this Secret, by this keyring (status) or by an earlier one of the same name
	// (the Secret's annotation): never again.
	if r := p.in.RotateRequest; r != "" && r != p.st.LastHandledRotateRequest && r != p.in.Secret.HandledRotateRequest {
		return fmt.Sprintf("requested by %s=%q", mrtrv1alpha1.RotateAnnotation, r), true
	}
	if t := p.st.NextRotationTime; t != nil && !p.in.Now.Before(t.Time) {
		return "interval elapsed", true
	}
	return "", false
}

// enter starts phase with keyring kr in the Secret, staged its staged key ("" for none): written
// now (write) or already there.
func (p *pass) enter(phase mrtrv1alpha1.Phase, kr *keyring.Keyring, write bool, staged string) {
	if write {
		p.d.Secret, p.d.SecretPhase, p.d.SecretStaged = kr, phase, staged
	}
	p.st.SecretFingerprint = kr.Fingerprint()
	p.st.TargetFingerprint = kr.Fingerprint()
	p.st.Keys = p.keyStatuses(kr, phase, staged)
	if phase != mrtrv1alpha1.PhaseWaitingTTL {
		p.st.TTLWaitUntil = nil
	}
	switch w := p.st.TTLWaits; {
	case phase == mrtrv1alpha1.PhaseSealingWithNew && p.st.Phase != phase:
		// A new key takes over sealing: the old primary's longest wait now covers the retiring
		// keys, and the new primary's starts from the current one.
		retiring := w.Primary
		w.Retiring, w.Primary = &retiring, metav1.Duration{Duration: p.in.Settings.TTLWait()}
	case phase == mrtrv1alpha1.PhaseRemoving || phase == mrtrv1alpha1.PhaseStable:
		w.Retiring = nil // the keys it covered are gone, or never were
	case phase == mrtrv1alpha1.PhaseRevoking:
		// Whichever key seals now may have sealed before, under any of the waits known: keep the
		// longest for it. Keys left retiring leave at the next rotation, which covers them anew.
		if w.Retiring != nil {
			w.Primary.Duration = max(w.Primary.Duration, w.Retiring.Duration)
		}
		w.Retiring = nil
	}
	p.st.RolledOutAt = nil
	p.transition(phase)
}

// transition records the phase change. It emits no event: the caller emits the one event that
// says what the change means (RotationStarted, KeySealing, KeyRemoved, RotationCompleted, or why
// the Secret was taken as it is), so that a rotation costs four events, not one per step and
// detail.
func (p *pass) transition(phase mrtrv1alpha1.Phase) {
	p.st.Phase = phase
	p.st.PhaseStartedAt = &p.now
	p.st.RestartedPods = nil // they were restarted for the keyring of the phase before
}

// keyStatuses lists kr's keys with their roles in phase, keeping known creation times. The
// staged key is Accepted while the write that staged it is on its way to the pods, Staged once it
// has reached them all.
func (p *pass) keyStatuses(kr *keyring.Keyring, phase mrtrv1alpha1.Phase, staged string) []mrtrv1alpha1.KeyStatus {
	created := make(map[string]metav1.Time, len(p.in.Status.Keys))
	roles := make(map[string]mrtrv1alpha1.KeyRole, len(p.in.Status.Keys))
	sealing := map[string]metav1.Time{}
	for _, k := range p.in.Status.Keys {
		created[k.ID], roles[k.ID] = k.CreatedAt, k.Role
		if k.Role == mrtrv1alpha1.KeyPrimary {
			sealing[k.ID] = k.Sealing()
		}
	}
	arriving := phase == mrtrv1alpha1.PhaseRemoving || phase == mrtrv1alpha1.PhaseRevoking
	ids := kr.IDs()
	out := make([]mrtrv1alpha1.KeyStatus, len(ids))
	for i, id := range ids {
		role := mrtrv1alpha1.KeyRetiring
		switch {
		case i == 0:
			role = mrtrv1alpha1.KeyPrimary
		case id == staged && arriving && roles[id] != mrtrv1alpha1.KeyStaged:
			role = mrtrv1alpha1.KeyAccepted
		case id == staged:
			role = mrtrv1alpha1.KeyStaged
		case phase == mrtrv1alpha1.PhaseAccepting && i == len(ids)-1:
			role = mrtrv1alpha1.KeyAccepted
		}
		at, ok := created[id]
		if !ok {
			at = p.now
		}
		out[i] = mrtrv1alpha1.KeyStatus{ID: id, Role: role, CreatedAt: at}
		if role == mrtrv1alpha1.KeyPrimary {
			since, ok := sealing[id]
			if !ok || since.IsZero() {
				since = p.now
			}
			out[i].SealingSince = &since
		}
	}
	return out
}

// freshKeys are the first n of Input.FreshKeys under new ids that neither kr (nil for none), nor
// status, nor a revoked key has used.
func (p *pass) freshKeys(kr *keyring.Keyring, n int) []keyring.Key {
	var used []string
	if kr != nil {
		used = kr.IDs()
	}
	for _, k := range p.in.Status.Keys {
		used = append(used, k.ID)
	}
	for _, k := range p.st.RevokedKeys {
		used = append(used, k.ID)
	}
	out := make([]keyring.Key, n)
	for i := range out {
		id := NewKeyID(p.in.Now, used...)
		out[i] = keyring.NewKey(id, p.in.FreshKeys[i].Secret())
		used = append(used, id)
	}
	return out
}

// stagedKey is the id of kr's staged key, "" when it has none: the one our write of the Secret
// staged (StagedKeyAnnotation), if the Secret still holds that write and the key does not seal.
func (p *pass) stagedKey(kr *keyring.Keyring) string {
	sec := p.in.Secret
	if !sec.writtenByUs() || sec.Keyring.Fingerprint() != kr.Fingerprint() || sec.Staged == kr.Primary().ID() {
		return ""
	}
	for _, id := range kr.IDs() {
		if id == sec.Staged {
			return id
		}
	}
	return ""
}

// stagedID is the staged key of a keyring made of keys, primary first: the second, if any.
func stagedID(keys []keyring.Key) string {
	if len(keys) < 2 {
		return ""
	}
	return keys[1].ID()
}

// describeKeys lists kr's ids for messages, the staged one marked.
func describeKeys(kr *keyring.Keyring, staged string) string {
	ids := kr.IDs()
	for i, id := range ids {
		if id == staged {
			ids[i] += " (staged)"
		}
	}
	return strings.Join(ids, ", ")
}

// at is now + d, as status stores times.
func (p *pass) at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(p.now.Add(d))
	return &t
}

// stall records that progress is blocked; the first reason found wins.
func (p *pass) stall(reason, format string, args ...any) {
	if p.stallReason == "" {
		p.stallReason, p.stallMessage = reason, fmt.Sprintf(format, args...)
	}
}

func (p *pass) event(typ, reason, action, format string, args ...any) {
	p.d.Events = append(p.d.Events, Event{Type: typ, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)})
}

// Event types, as in k8s.io/api/core/v1 (not imported to keep this package free of API machinery
// it does not need).
const (
	corev1Normal  = "Normal"
	corev1Warning = "Warning"
)

// ceilSecond rounds t up to a whole second, so a wait stored in status is never shortened.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

func validPhase(p mrtrv1alpha1.Phase) bool {
	switch p {
	case mrtrv1alpha1.PhaseStable, mrtrv1alpha1.PhaseAccepting, mrtrv1alpha1.PhaseSealingWithNew,
		mrtrv1alpha1.PhaseWaitingTTL, mrtrv1alpha1.PhaseRemoving, mrtrv1alpha1.PhaseRevoking:
		return true
	}
	return false
}
