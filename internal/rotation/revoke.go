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
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// revoke handles mrtr.dev/revoke, in every phase: the keys a new value names are removed at once,
// without the TTL wait, and so is any revoked key the Secret holds again. Tokens sealed with them
// fail from then on, which is the point. A revoked primary is replaced in the same write by the
// key that every pod is likeliest to accept (the staged key, else a retiring one, else the one on
// its way, else a fresh key, when every key is revoked); a revoked staged key by a fresh one. It
// reports whether it wrote the Secret: the phase is then Revoking, and any rotation under way is
// abandoned. The schedule stays: the next rotation starts when due, at once if it was (a revocation
// is not a rotation: lastRotationTime and rotationsCompleted do not move).
func revoke(f facts, o outcome, kr *keyring.Keyring) (outcome, bool) {
	o, r := revocations(f, o, kr)
	if len(r.drop) == 0 {
		return o, false
	}
	roles := make(map[string]mrtrv1alpha1.KeyRole, len(o.status.Keys))
	for _, k := range o.status.Keys {
		roles[k.ID] = k.Role
	}
	var gone []string
	for _, id := range kr.IDs() {
		if r.drop[id] {
			gone = append(gone, id)
			o.status.RevokedKeys = recordRevoked(o.status.RevokedKeys, id, roles[id], f.now)
		}
	}
	next, staged, err := without(f, o.status, kr, r.drop, roles)
	if err != nil {
		return o.cannotBuild(err), true
	}
	o = retire(f, o, kr, gone)

	var what string
	switch {
	case r.readded && len(r.named) == 0:
		what = fmt.Sprintf("the Secret holds revoked key(s) %s again: removed", strings.Join(gone, ", "))
	case len(gone) == kr.Len():
		what = fmt.Sprintf("revoked every key (%s): new key %s seals; every token in flight fails", strings.Join(gone, ", "), next.Primary().ID())
	case r.drop[kr.Primary().ID()]:
		what = fmt.Sprintf("revoked key(s) %s, the primary among them: %s seals from now on; tokens sealed with the revoked keys fail", strings.Join(gone, ", "), next.Primary().ID())
	default:
		what = fmt.Sprintf("revoked key(s) %s: tokens sealed with them fail", strings.Join(gone, ", "))
	}
	if successor := next.Primary().ID(); r.drop[kr.Primary().ID()] && !onEveryPod(roles[successor]) {
		// The window of a revoked primary: no key left is on every pod (revoked twice in a row, or
		// in Removing, or every key), and sealing on with the revoked key would keep it trusted.
		what += fmt.Sprintf("; %s is not on every pod yet: until every pod runs keyring %s (Revoking ends), a pod that does not hold it refuses the tokens sealed with it",
			successor, next.Fingerprint())
	}
	if ph := o.status.Phase; ph != mrtrv1alpha1.PhaseStable && ph != mrtrv1alpha1.PhaseRevoking {
		what += fmt.Sprintf("; the rotation under way (%s) is abandoned", ph)
	}
	o = o.event(corev1Warning, mrtrv1alpha1.EventKeyRevoked, "Revoke", "%s, at once, without the TTL wait; keyring %s (keys %s)",
		what, next.Fingerprint(), describeKeys(next, staged))
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseRevoking, keyring: next, staged: staged, write: true}), true
}

// revocation is what a pass revokes from a keyring.
type revocation struct {
	// drop are the ids to remove now.
	drop map[string]bool
	// named are the ids a new mrtr.dev/revoke value names (all of the keyring's for RevokeAll).
	named []string
	// readded: the keyring holds a key revoked before.
	readded bool
}

// revocations are the ids of kr to remove now: those the new requests of mrtr.dev/revoke name, and
// any revoked before that kr holds again. A request is new until it is handled (status, or the
// Secret's record; see mrtrv1alpha1.RevokeRequest): a numbered one until its sequence is at or
// below the highest handled, an unnumbered one until it is among those recorded. So no request is
// lost, however many follow one another while the operator is away, and none is handled twice,
// however many a keyring sees. An item naming no key of kr is refused with an event, once.
func revocations(f facts, o outcome, kr *keyring.Keyring) (outcome, revocation) {
	var r revocation
	fresh := newRevokeRequests(f.in, o.status)
	if len(fresh) > 0 {
		o.status = handledRevokeRequests(f.in, o.status, fresh)
		for _, req := range fresh {
			r.named = append(r.named, req.Target)
		}
		if slices.ContainsFunc(fresh, mrtrv1alpha1.RevokeRequest.RevokesAll) {
			r.named = kr.IDs()
		}
	}
	revoked := make(map[string]bool, len(o.status.RevokedKeys))
	for _, k := range o.status.RevokedKeys {
		revoked[k.ID] = true
	}
	r.drop = map[string]bool{}
	var unknown []string
	for _, id := range r.named {
		if _, ok := kr.Lookup(id); ok {
			r.drop[id] = true
		} else if !revoked[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		o = o.event(corev1Warning, mrtrv1alpha1.EventRevokeIgnored, "Revoke", "%s=%q: no key %s in keyring %s (keys %s); nothing revoked for it",
			mrtrv1alpha1.RevokeAnnotation, f.in.RevokeRequest, strings.Join(unknown, ", "), kr.Fingerprint(), strings.Join(kr.IDs(), ", "))
	}
	for _, id := range kr.IDs() {
		if revoked[id] {
			r.drop[id], r.readded = true, true
		}
	}
	return o, r
}

// newRevokeRequests are the requests of mrtr.dev/revoke not handled yet, by this keyring (status)
// or by an earlier one of the same name (the Secret's record).
func newRevokeRequests(in Input, st mrtrv1alpha1.MRTRKeyringStatus) []mrtrv1alpha1.RevokeRequest {
	handled := append(mrtrv1alpha1.ParseIDs(st.LastHandledRevokeRequest), mrtrv1alpha1.ParseIDs(in.Secret.HandledRevokeRequest)...)
	return mrtrv1alpha1.PendingRevokeRequests(mrtrv1alpha1.ParseRevokeRequests(in.RevokeRequest),
		max(st.LastHandledRevokeSequence, in.Secret.HandledRevokeSequence), handled)
}

// handledRevokeRequests is st once fresh are handled too: the highest sequence handled, and the
// unnumbered requests handled that the annotation holds, in its order. An unnumbered request the
// annotation no longer holds is forgotten here, on a pass that handles a new request, and not
// before: that bounds the record by the annotation, and a request dropped and put back in between
// (a GitOps tool replacing the annotation) is not taken for new. Numbered requests need no record
// but the sequence, which is what lets kubectl mrtr revoke prune them from the annotation.
func handledRevokeRequests(in Input, st mrtrv1alpha1.MRTRKeyringStatus, fresh []mrtrv1alpha1.RevokeRequest) mrtrv1alpha1.MRTRKeyringStatus {
	handled := append(mrtrv1alpha1.ParseIDs(st.LastHandledRevokeRequest), mrtrv1alpha1.ParseIDs(in.Secret.HandledRevokeRequest)...)
	var unnumbered []string
	for _, r := range mrtrv1alpha1.ParseRevokeRequests(in.RevokeRequest) {
		if r.Sequence == 0 && (slices.Contains(handled, r.Target) || slices.Contains(fresh, r)) {
			unnumbered = append(unnumbered, r.Target)
		}
	}
	st.LastHandledRevokeRequest = mrtrv1alpha1.FormatIDs(unnumbered)
	st.LastHandledRevokeSequence = max(st.LastHandledRevokeSequence, in.Secret.HandledRevokeSequence, mrtrv1alpha1.LastRevokeSequence(fresh))
	return st
}

// without is kr without the keys of drop, and its staged key: a revoked primary's successor seals,
// a fresh key fills in for a keyring left empty and, when nextKey is Staged, for a staged key gone
// (revoked, or the successor).
func without(f facts, st mrtrv1alpha1.MRTRKeyringStatus, kr *keyring.Keyring, drop map[string]bool, roles map[string]mrtrv1alpha1.KeyRole) (*keyring.Keyring, string, error) {
	var dropped []string
	for _, id := range kr.IDs() {
		if drop[id] {
			dropped = append(dropped, id)
		}
	}
	staged := f.staged
	if drop[staged] {
		staged = ""
	}
	fresh := newKeys(f, st, kr, 2)
	if key, ok := sourceKey(f, st, kr); ok && !drop[key.ID()] {
		// A keyring with a source fills in with the source's new key, when it holds one; else a
		// stand-in generated key, so that the revoked keys leave every pod at once.
		fresh[0] = key
	}
	next, err := kr, error(nil)
	if successor := successor(kr, drop, roles); successor == "" {
		// Every key is revoked: a fresh one seals.
		next, err = keyring.New(fresh[0])
		fresh = fresh[1:]
	} else {
		if next, err = next.SetPrimary(successor); err == nil {
			next, err = next.Delete(dropped...)
		}
		if successor == staged {
			staged = ""
		}
	}
	if err == nil && staged == "" && f.in.Settings.Staged() && next.Len() < keyring.MaxKeys {
		next, err = next.Add(fresh[0])
		staged = fresh[0].ID()
	}
	return next, staged, err
}

// successor is the key to seal once the keys of drop are gone, "" when every key is: the primary
// when it stays; else the staged key, which every pod accepts; else a retiring one, which every
// pod accepts too; else the one on its way to the pods; else the first left.
func successor(kr *keyring.Keyring, drop map[string]bool, roles map[string]mrtrv1alpha1.KeyRole) string {
	left := slices.DeleteFunc(kr.IDs(), func(id string) bool { return drop[id] })
	switch {
	case len(left) == 0:
		return ""
	case !drop[kr.Primary().ID()]:
		return left[0]
	}
	for _, want := range []mrtrv1alpha1.KeyRole{mrtrv1alpha1.KeyStaged, mrtrv1alpha1.KeyRetiring, mrtrv1alpha1.KeyAccepted} {
		if i := slices.IndexFunc(left, func(id string) bool { return roles[id] == want }); i >= 0 {
			return left[i]
		}
	}
	return left[0]
}

// onEveryPod reports whether a key in role is on every pod: a staged key, or a retiring one (it
// sealed, so every pod held it). An accepted key is on its way; a fresh key on no pod yet.
func onEveryPod(role mrtrv1alpha1.KeyRole) bool {
	return role == mrtrv1alpha1.KeyStaged || role == mrtrv1alpha1.KeyRetiring
}

// recordRevoked appends id to the revoked keys, keeping the last MaxRevokedKeys.
func recordRevoked(ks []mrtrv1alpha1.RevokedKey, id string, role mrtrv1alpha1.KeyRole, now metav1.Time) []mrtrv1alpha1.RevokedKey {
	ks = append(slices.Clip(ks), mrtrv1alpha1.RevokedKey{ID: id, RevokedAt: now, Role: role})
	if n := len(ks) - mrtrv1alpha1.MaxRevokedKeys; n > 0 {
		ks = slices.Clone(ks[n:])
	}
	return ks
}

// revokedCondition is KeyRevoked: True, naming the latest revocation, once any key was revoked.
func revokedCondition(ks []mrtrv1alpha1.RevokedKey) metav1.Condition {
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
