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
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// sealWithStaged starts a rotation of a keyring that has a staged key: every pod accepts it
// already, so it seals at once ([N, A]) and the rotation skips Accepting. That every pod accepts
// it is proven again first (delivered), for targets added since it was staged; and in Restart
// delivery the pods that the rollout of the staging write replaced knew only the keyring before
// it, so the rotation starts no sooner than terminationGracePeriod after that rollout.
func (p *pass) sealWithStaged(kr *keyring.Keyring, staged, request string) {
	if !p.delivered(true) {
		p.st.RolledOutAt = nil // a rollout under way proves nothing yet
		return
	}
	if !p.replacedPodsGone() {
		return
	}
	keys := kr.Keys()
	i := slices.IndexFunc(keys, func(k keyring.Key) bool { return k.ID() == staged })
	next, err := keyring.New(moveFirst(keys, i)...)
	if err != nil { // unreachable: same keys, another order
		p.stall(mrtrv1alpha1.ReasonSecretInvalid, "cannot reorder the keyring: %v", err)
		return
	}
	p.st.LastHandledRotateRequest = p.in.RotateRequest
	p.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (%s): staged key %s, which every pod accepts, seals from now on; keyring %s (keys %s)",
		request, staged, next.Fingerprint(), strings.Join(next.IDs(), ", "))
	p.enter(mrtrv1alpha1.PhaseSealingWithNew, next, true, "")
}

// settle ends Removing or Revoking, whose keyring kr has reached every pod: Stable, its staged key
// now Staged. status.rolledOutAt keeps when that was seen, for sealWithStaged.
func (p *pass) settle(kr *keyring.Keyring) {
	staged := p.stagedKey(kr)
	p.st.TTLWaitUntil, p.st.RolledOutAt = nil, nil
	if staged != "" {
		p.st.RolledOutAt = &p.now
	}
	p.transition(mrtrv1alpha1.PhaseStable)
	p.st.Keys = p.keyStatuses(kr, mrtrv1alpha1.PhaseStable, staged)
}

// revoke handles mrtr.dev/revoke, in every phase: the keys a new value names are removed at once,
// without the TTL wait, and so is any revoked key the Secret holds again. Tokens sealed with them
// fail from then on, which is the point. A revoked primary is replaced in the same write by the
// key that every pod is likeliest to accept (the staged key, else a retiring one, else the one on
// its way, else a fresh key, when every key is revoked); a revoked staged key by a fresh one. It
// reports whether it wrote the Secret: the phase is then Revoking, and any rotation under way is
// abandoned. The schedule stays: the next rotation starts when due, at once if it was (a revocation
// is not a rotation: lastRotationTime and rotationsCompleted do not move).
func (p *pass) revoke(kr *keyring.Keyring) bool {
	drop, named, readded := p.revocations(kr)
	if len(drop) == 0 {
		return false
	}
	roles := make(map[string]mrtrv1alpha1.KeyRole, len(p.st.Keys))
	for _, k := range p.st.Keys {
		roles[k.ID] = k.Role
	}
	var gone []string
	for _, id := range kr.IDs() {
		if drop[id] {
			gone = append(gone, id)
			p.recordRevoked(id, roles[id])
		}
	}
	next, staged, err := p.without(kr, drop, roles)
	if err != nil { // unreachable: known keys and fresh ones under new ids
		p.stall(mrtrv1alpha1.ReasonSecretInvalid, "cannot build the keyring without the revoked keys: %v", err)
		return true
	}

	primaryRevoked := drop[kr.Primary().ID()]
	var what string
	switch {
	case readded && len(named) == 0:
		what = fmt.Sprintf("the Secret holds revoked key(s) %s again: removed", strings.Join(gone, ", "))
	case len(gone) == kr.Len():
		what = fmt.Sprintf("revoked every key (%s): new key %s seals; every token in flight fails", strings.Join(gone, ", "), next.Primary().ID())
	case primaryRevoked:
		what = fmt.Sprintf("revoked key(s) %s, the primary among them: %s seals from now on; tokens sealed with the revoked keys fail", strings.Join(gone, ", "), next.Primary().ID())
	default:
		what = fmt.Sprintf("revoked key(s) %s: tokens sealed with them fail", strings.Join(gone, ", "))
	}
	if ph := p.st.Phase; ph != mrtrv1alpha1.PhaseStable && ph != mrtrv1alpha1.PhaseRevoking {
		what += fmt.Sprintf("; the rotation under way (%s) is abandoned", ph)
	}
	p.event(corev1Warning, mrtrv1alpha1.EventKeyRevoked, "Revoke", "%s, at once, without the TTL wait; keyring %s (keys %s)",
		what, next.Fingerprint(), describeKeys(next, staged))
	p.enter(mrtrv1alpha1.PhaseRevoking, next, true, staged)
	return true
}

// revocations are the ids of kr to remove now: those a new mrtr.dev/revoke value names (named, all
// of kr's for RevokeAll), and any revoked before that kr holds again (readded). A value naming no
// key of kr is refused with an event, once.
func (p *pass) revocations(kr *keyring.Keyring) (drop map[string]bool, named []string, readded bool) {
	req := p.in.RevokeRequest
	handled := req != "" && req != p.st.LastHandledRevokeRequest && req != p.in.Secret.HandledRevokeRequest
	if handled {
		p.st.LastHandledRevokeRequest = req
		named = splitIDs(req)
		if slices.ContainsFunc(named, func(id string) bool { return strings.HasPrefix(id, mrtrv1alpha1.RevokeAll) }) {
			named = kr.IDs()
		}
	}
	revoked := make(map[string]bool, len(p.st.RevokedKeys))
	for _, k := range p.st.RevokedKeys {
		revoked[k.ID] = true
	}
	drop = map[string]bool{}
	var unknown []string
	for _, id := range named {
		if _, ok := kr.Lookup(id); ok {
			drop[id] = true
		} else if !revoked[id] {
			unknown = append(unknown, id)
		}
	}
	switch {
	case handled && len(named) == 0:
		p.event(corev1Warning, mrtrv1alpha1.EventRevokeIgnored, "Revoke", "%s=%q names no key id (a comma-separated list of ids, or %q for every key); nothing revoked",
			mrtrv1alpha1.RevokeAnnotation, req, mrtrv1alpha1.RevokeAll)
	case len(unknown) > 0:
		p.event(corev1Warning, mrtrv1alpha1.EventRevokeIgnored, "Revoke", "%s=%q: no key %s in keyring %s (keys %s); nothing revoked for it",
			mrtrv1alpha1.RevokeAnnotation, req, strings.Join(unknown, ", "), kr.Fingerprint(), strings.Join(kr.IDs(), ", "))
	}
	for _, id := range kr.IDs() {
		if revoked[id] {
			drop[id], readded = true, true
		}
	}
	return drop, named, readded
}

// without is kr without the keys of drop, and its staged key: a revoked primary's successor seals,
// fresh keys fill in for a keyring left empty and, when nextKey is Staged, for a staged key gone
// (revoked, or the successor).
func (p *pass) without(kr *keyring.Keyring, drop map[string]bool, roles map[string]mrtrv1alpha1.KeyRole) (*keyring.Keyring, string, error) {
	var left []keyring.Key
	for _, k := range kr.Keys() {
		if !drop[k.ID()] {
			left = append(left, k)
		}
	}
	staged := p.stagedKey(kr)
	if drop[staged] {
		staged = ""
	}
	if drop[kr.Primary().ID()] {
		if i := successor(left, roles); i >= 0 {
			left = moveFirst(left, i)
		}
		if len(left) > 0 && left[0].ID() == staged {
			staged = ""
		}
	}
	fresh := 0
	if len(left) == 0 {
		fresh++ // every key is revoked: a new primary
	}
	if staged == "" && p.in.Settings.Staged() && len(left)+fresh < keyring.MaxKeys {
		fresh++
	}
	keys := p.freshKeys(kr, fresh)
	if len(left) == 0 {
		left, keys = keys[:1], keys[1:]
	}
	if len(keys) > 0 {
		left = append(left, keys[0])
		staged = keys[0].ID()
	}
	next, err := keyring.New(left...)
	return next, staged, err
}

// successor is the index in left of the key to seal after a revoked primary, -1 for none: the
// staged key, which every pod accepts; else a retiring one, which every pod accepts too; else the
// one on its way to the pods.
func successor(left []keyring.Key, roles map[string]mrtrv1alpha1.KeyRole) int {
	for _, want := range []mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyStaged, mrtrv1alpha1.KeyRetiring, mrtrv1alpha1.KeyAccepted} {
		if i := slices.IndexFunc(left, func(k keyring.Key) bool { return roles[k.ID()] == want }); i >= 0 {
			return i
		}
	}
	if len(left) > 0 {
		return 0
	}
	return -1
}

// moveFirst is keys with keys[i] first, the others in their order.
func moveFirst(keys []keyring.Key, i int) []keyring.Key {
	out := append(make([]keyring.Key, 0, len(keys)), keys[i])
	out = append(out, keys[:i]...)
	return append(out, keys[i+1:]...)
}

// restoreRecords takes into status what the Secret records and status lacks (a status update lost
// after the Secret write, a keyring re-created for the Secret): the revoked keys, so that none is
// ever added again, and the requests handled, so that the next write records them still.
func (p *pass) restoreRecords() {
	if p.st.LastHandledRotateRequest == "" {
		p.st.LastHandledRotateRequest = p.in.Secret.HandledRotateRequest
	}
	if p.st.LastHandledRevokeRequest == "" {
		p.st.LastHandledRevokeRequest = p.in.Secret.HandledRevokeRequest
	}
	for _, id := range p.in.Secret.Revoked {
		if !slices.ContainsFunc(p.st.RevokedKeys, func(k mrtrv1alpha1.RevokedKey) bool { return k.ID == id }) {
			p.recordRevoked(id, "")
		}
	}
}

// recordRevoked appends id to status.revokedKeys, keeping the last MaxRevokedKeys.
func (p *pass) recordRevoked(id string, role mrtrv1alpha1.KeyRole) {
	p.st.RevokedKeys = append(p.st.RevokedKeys, mrtrv1alpha1.RevokedKey{ID: id, RevokedAt: p.now, Role: role})
	if n := len(p.st.RevokedKeys) - mrtrv1alpha1.MaxRevokedKeys; n > 0 {
		p.st.RevokedKeys = slices.Clone(p.st.RevokedKeys[n:])
	}
}

// revokedCondition is KeyRevoked: True, naming the latest revocation, once any key was revoked.
func (p *pass) revokedCondition() metav1.Condition {
	ks := p.st.RevokedKeys
	if len(ks) == 0 {
		return condition(mrtrv1alpha1.ConditionKeyRevoked, false, mrtrv1alpha1.ReasonNoneRevoked, "no key of this keyring was revoked")
	}
	last := ks[len(ks)-1].RevokedAt
	var ids []string
	for _, k := range ks {
		if k.RevokedAt.Equal(&last) {
			id := k.ID
			if k.Role != "" {
				id += " (" + string(k.Role) + ")"
			}
			ids = append(ids, id)
		}
	}
	return condition(mrtrv1alpha1.ConditionKeyRevoked, true, mrtrv1alpha1.ReasonKeyRevoked,
		fmt.Sprintf("key(s) %s revoked at %s: tokens sealed with them fail", strings.Join(ids, ", "), last.UTC().Format(time.RFC3339)))
}
