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
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The keys: the role of each key in status, the ids of new keys, the token lifetime the Secret
// declares and the TTL waits it implies. Part of the decide stage.

// ttlWaitEnd is when a TTL wait that starts at from ends: the longest TTL wait declared since the
// old keys began to seal (the current one at least), rounded up to a whole second.
func ttlWaitEnd(from time.Time, w *mrtrv1alpha1.TTLWaits) *metav1.Time {
	t := metav1.NewTime(ceilSecond(from.Add(retiringTTLWait(w))))
	return &t
}

// retiringTTLWait is how long the TTL wait lasts from the moment no pod seals with the old keys:
// the longest TTL wait declared since they began to seal (trackTTLWaits keeps it).
func retiringTTLWait(w *mrtrv1alpha1.TTLWaits) time.Duration {
	if w.Retiring != nil {
		return w.Retiring.Duration
	}
	return w.Primary.Duration // a status from before ttlWaits.retiring: the longest known
}

// extendTTLWait moves the end of the TTL wait later when a longer TTL was declared since it began,
// so that raising tokenTTL during the wait still covers every token sealed with the old keys.
func extendTTLWait(o outcome) outcome {
	if o.status.PhaseStartedAt == nil {
		return o
	}
	until := ttlWaitEnd(o.status.PhaseStartedAt.Time, o.status.TTLWaits)
	if until.After(o.status.TTLWaitUntil.Time) {
		o = o.event(corev1Normal, mrtrv1alpha1.EventTTLWaitExtended, "Rotate", "a TTL wait of %v was declared since the old keys last sealed: the wait now ends at %s (was %s)",
			retiringTTLWait(o.status.TTLWaits), until.UTC().Format(time.RFC3339), o.status.TTLWaitUntil.UTC().Format(time.RFC3339))
		o.status.TTLWaitUntil = until
	}
	return o
}

// keyStatuses lists kr's keys with their roles in phase, keeping known creation times. The
// staged key is Accepted while the write that staged it is on its way to the pods, Staged once it
// has reached them all.
func keyStatuses(f facts, kr *keyring.Keyring, phase mrtrv1alpha1.Phase, staged string) []mrtrv1alpha1.KeyStatus {
	known := make(map[string]mrtrv1alpha1.KeyStatus, len(f.in.Status.Keys))
	for _, k := range f.in.Status.Keys {
		known[k.ID] = k
	}
	arriving := phase == mrtrv1alpha1.PhaseRemoving || phase == mrtrv1alpha1.PhaseRevoking
	ids, keys := kr.IDs(), kr.Keys()
	out := make([]mrtrv1alpha1.KeyStatus, len(ids))
	for i, id := range ids {
		was, ok := known[id]
		role := mrtrv1alpha1.KeyRetiring
		switch {
		case i == 0:
			role = mrtrv1alpha1.KeyPrimary
		case id == staged && arriving && was.Role != mrtrv1alpha1.KeyStaged:
			role = mrtrv1alpha1.KeyAccepted
		case id == staged:
			role = mrtrv1alpha1.KeyStaged
		case phase == mrtrv1alpha1.PhaseAccepting && i == len(ids)-1:
			role = mrtrv1alpha1.KeyAccepted
		}
		created := was.CreatedAt
		if !ok {
			created = f.now
		}
		out[i] = mrtrv1alpha1.KeyStatus{ID: id, Role: role, CreatedAt: created, PythonKid: keys[i].PythonKid()}
		if role == mrtrv1alpha1.KeyPrimary {
			since := metav1.Time{}
			if ok && was.Role == mrtrv1alpha1.KeyPrimary {
				since = was.Sealing()
			}
			if since.IsZero() {
				since = f.now
			}
			out[i].SealingSince = &since
		}
	}
	return out
}

// newKeys are the first n of Input.FreshKeys under new ids that neither kr (nil for none), nor
// status, nor a revoked key has used, and that no revocation request names.
func newKeys(f facts, st mrtrv1alpha1.MRTRKeyringStatus, kr *keyring.Keyring, n int) []keyring.Key {
	var used []string
	if kr != nil {
		used = kr.IDs()
	}
	for _, k := range f.in.Status.Keys {
		used = append(used, k.ID)
	}
	for _, k := range st.RevokedKeys {
		used = append(used, k.ID)
	}
	// Nor one a request names, handled or not: a key named by a request never seals. (Such ids
	// are skipped, not taken as used: a request naming an id of the future must not move every
	// id after it.)
	named := mrtrv1alpha1.ParseIDs(st.LastHandledRevokeRequest)
	for _, r := range mrtrv1alpha1.ParseRevokeRequests(f.in.RevokeRequest) {
		named = append(named, r.Target)
	}
	out := make([]keyring.Key, n)
	for i := range out {
		id := NewKeyID(f.in.Now, used...)
		for slices.Contains(named, id) {
			used = append(used, id)
			id = NewKeyID(f.in.Now, used...)
		}
		out[i] = keyring.NewKey(id, f.in.FreshKeys[i].Secret())
		used = append(used, id)
	}
	return out
}

// publishTokenTTL rewrites the Secret, keys unchanged, when the token lifetime it declares to the
// servers (keyring.TokenTTLDataKey, written with every keyring) is not spec.tokenTTL: the servers
// then refuse to seal longer tokens than the rotation waits for. The fingerprint does not change,
// so nothing restarts.
func publishTokenTTL(f facts, o outcome) outcome {
	sec := f.in.Secret
	if o.conflict || o.write != nil || sec.State != SecretValid || sec.Keyring.Fingerprint() != o.status.SecretFingerprint ||
		sec.TokenTTL == f.in.Settings.TokenTTL {
		return o
	}
	o.write = &secretWrite{keyring: sec.Keyring, phase: o.status.Phase, staged: f.staged}
	return o
}
