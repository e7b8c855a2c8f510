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
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The key source: a Secret someone else maintains (spec.keySource type Secret) holds the current
// key; each new key it holds is rotated to, as a rotation with nextKey AtRotation. The source is
// untrusted input: judgeSource is the one place that says whether the keyring takes what it holds.
// Part of the decide stage.

// SourceState is what the source Secret turned out to be.
type SourceState int

const (
	// SourceUnused: the keyring's keys are generated; there is no source.
	SourceUnused SourceState = iota
	// SourceValid: the source holds a key of at least keyring.MinSecretBytes under a valid id.
	SourceValid
	// SourceNotFound: no source Secret of that name (or the operator may not read it).
	SourceNotFound
	// SourceKeyMissing: the source Secret has no such data key.
	SourceKeyMissing
	// SourceTooShort: the key has fewer than keyring.MinSecretBytes bytes.
	SourceTooShort
	// SourceVersionInvalid: the KeyVersionAnnotation is not a key id.
	SourceVersionInvalid
)

// SourceObservation is the source Secret as read. Build it with ObserveSource. It holds the key's
// bytes only inside Key, which never prints them.
type SourceObservation struct {
	State SourceState
	// Name and DataKey name the source Secret and its data key, for messages.
	Name, DataKey string
	// Version is the id the key takes (SourceValid): the KeyVersionAnnotation, else SourceKeyID of
	// the digest.
	Version string
	// Digest is SourceDigest of the key's bytes (SourceValid).
	Digest string
	// Key is the key under Version (SourceValid).
	Key keyring.Key
	// Length is the number of bytes the data key holds (SourceTooShort).
	Length int
}

// minLeakingVersion is the shortest version that, found in the key's bytes, is taken for key
// material: shorter ones ("v7") may occur in random bytes by chance and reveal nothing.
const minLeakingVersion = 12

// sharesRun reports whether the version v and the key share a run of minLeakingVersion bytes.
func sharesRun(key []byte, v string) bool {
	for i := 0; i+minLeakingVersion <= len(v); i++ {
		if bytes.Contains(key, []byte(v[i:i+minLeakingVersion])) {
			return true
		}
	}
	return false
}

// sourceDigestLabel separates the source digest from every other hash of a key (the keyring's
// fingerprint, python-sdk's kid): the same bytes hashed elsewhere never give the same value.
const sourceDigestLabel = "mrtr.dev/key-source-digest/v1\x00"

// SourceDigest is the digest that names a source key: 24 hex digits (96 bits) of SHA-256 over a
// fixed label and the bytes. It is one-way, so it reveals nothing of a key of 32 random bytes or
// more, and stable, so the same bytes always get the same id.
func SourceDigest(b []byte) string {
	h := sha256.New()
	h.Write([]byte(sourceDigestLabel))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// SourceKeyID is the id of a source key without a version: "s-" and its digest, 26 characters,
// which no time-based id (NewKeyID) can be.
func SourceKeyID(digest string) string { return "s-" + digest }

// ObserveSource classifies the source Secret from its parts; exists is false when it was not found.
func ObserveSource(exists bool, name, dataKey string, data map[string][]byte, annotations map[string]string) SourceObservation {
	o := SourceObservation{Name: name, DataKey: dataKey}
	raw, ok := data[dataKey]
	switch {
	case !exists:
		o.State = SourceNotFound
		return o
	case !ok:
		o.State = SourceKeyMissing
		return o
	case len(raw) < keyring.MinSecretBytes:
		o.State, o.Length = SourceTooShort, len(raw)
		return o
	}
	o.Digest = SourceDigest(raw)
	o.Version = SourceKeyID(o.Digest)
	if v, ok := annotations[mrtrv1alpha1.KeyVersionAnnotation]; ok {
		// A version that is the key, or shares a long run with it (the value and the version
		// swapped, a template that renders the wrong field), would print key material wherever
		// the id goes.
		if !keyring.ValidID(v) || sharesRun(raw, v) {
			o.State, o.Version = SourceVersionInvalid, ""
			return o
		}
		o.Version = v
	}
	o.State, o.Key = SourceValid, keyring.NewKey(o.Version, raw)
	return o
}

// sourceVerdict is what the keyring makes of what its source holds.
type sourceVerdict struct {
	// reason and message say why the source's key is refused, "" when it is not.
	reason, message string
	// fresh: the key is not in the keyring, and a rotation to it is due.
	fresh bool
	// held is the id under which the keyring holds the source's key already, "" when it does not.
	held string
}

// refused reports whether the source holds nothing the keyring takes.
func (v sourceVerdict) refused() bool { return v.reason != "" }

// judgeSource judges what the source holds against the keyring kr (nil when there is none yet)
// and the status st: the keys it revoked, and the source keys it retired, which never come back.
func judgeSource(in Input, st mrtrv1alpha1.MRTRKeyringStatus, kr *keyring.Keyring) sourceVerdict {
	src := in.Source
	where := fmt.Sprintf("source Secret %s", src.Name)
	switch src.State {
	case SourceNotFound:
		return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceNotFound, message: where + " does not exist"}
	case SourceKeyMissing:
		return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceKeyMissing, message: fmt.Sprintf("%s has no data key %q", where, src.DataKey)}
	case SourceTooShort:
		return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceKeyTooShort, message: fmt.Sprintf("%s: data key %q holds %d bytes, fewer than the %d a key needs",
			where, src.DataKey, src.Length, keyring.MinSecretBytes)}
	case SourceVersionInvalid:
		return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceVersionInvalid, message: fmt.Sprintf("%s: annotation %s is not a key id (1 to %d characters of A-Za-z0-9_-), or is part of the key itself",
			where, mrtrv1alpha1.KeyVersionAnnotation, keyring.MaxIDLength)}
	case SourceUnused:
		return sourceVerdict{}
	}
	id := src.Version
	if slices.ContainsFunc(st.RevokedKeys, func(k mrtrv1alpha1.RevokedKey) bool { return k.ID == id }) || revokedDigest(st, src.Digest) {
		return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceKeyRevoked, message: fmt.Sprintf("%s holds version %s, which was revoked: the keyring serves with the keys that remain; put a new key in the source",
			where, id)}
	}
	if kr != nil {
		secret := src.Key.Secret()
		for _, k := range kr.Keys() {
			same := subtle.ConstantTimeCompare(k.Secret(), secret) == 1
			switch {
			case same:
				return sourceVerdict{held: k.ID()}
			case k.ID() == id:
				return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceVersionReused, message: fmt.Sprintf("%s: version %s names other bytes than key %s in the keyring: a version must name one key only",
					where, id, id)}
			}
		}
	}
	if ks := sourceStatus(st); ks != nil {
		for i, r := range ks.Retired {
			last := i == len(ks.Retired)-1
			switch {
			case r.Digest == src.Digest && last && kr != nil && kr.Len() > 0:
				return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceFlapping, message: fmt.Sprintf("%s went back to version %s, which the last rotation retired: it flaps between two values; the keyring keeps %s sealing; put a new key in the source",
					where, r.Version, kr.Primary().ID())}
			case r.Digest == src.Digest:
				return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceKeyRetired, message: fmt.Sprintf("%s holds version %s again, retired at %s: a retired key never comes back; put a new key in the source",
					where, r.Version, r.RetiredAt.UTC().Format("2006-01-02T15:04:05Z"))}
			case r.Version == id:
				return sourceVerdict{reason: mrtrv1alpha1.ReasonSourceVersionReused, message: fmt.Sprintf("%s: version %s names other bytes than the key retired under it: a version must name one key only",
					where, id)}
			}
		}
	}
	return sourceVerdict{fresh: true}
}

// revokedDigest reports whether a revoked key had this digest (recorded in status.keySource.retired
// when it was revoked), so that a revoked key does not come back under another version.
func revokedDigest(st mrtrv1alpha1.MRTRKeyringStatus, digest string) bool {
	ks := sourceStatus(st)
	if ks == nil {
		return false
	}
	for _, r := range ks.Retired {
		if r.Digest == digest && slices.ContainsFunc(st.RevokedKeys, func(k mrtrv1alpha1.RevokedKey) bool { return k.ID == r.Version }) {
			return true
		}
	}
	return false
}

func sourceStatus(st mrtrv1alpha1.MRTRKeyringStatus) *mrtrv1alpha1.KeySourceStatus {
	return st.KeySource
}

// retire records the keys of kr named by ids as retired source keys, with their digests, keeping
// the last MaxRetiredSourceKeys: a keyring with a source remembers every key it removed, generated
// or not, so none of them is taken from the source again.
func retire(f facts, o outcome, kr *keyring.Keyring, ids []string) outcome {
	if !f.in.Settings.Source || len(ids) == 0 {
		return o
	}
	ks := keySourceStatusOf(o.status)
	for _, id := range ids {
		k, ok := kr.Lookup(id)
		if !ok {
			continue
		}
		ks.Retired = append(ks.Retired, mrtrv1alpha1.RetiredSourceKey{Version: id, Digest: SourceDigest(k.Secret()), RetiredAt: f.now})
	}
	if n := len(ks.Retired) - mrtrv1alpha1.MaxRetiredSourceKeys; n > 0 {
		ks.Retired = slices.Clone(ks.Retired[n:])
	}
	o.status.KeySource = ks
	return o
}

// keySourceStatusOf is a copy of st.keySource to change, never nil.
func keySourceStatusOf(st mrtrv1alpha1.MRTRKeyringStatus) *mrtrv1alpha1.KeySourceStatus {
	if st.KeySource == nil {
		return &mrtrv1alpha1.KeySourceStatus{}
	}
	return st.KeySource.DeepCopy()
}

// sourceKey is the source's key when the keyring takes it as a new key, ok false otherwise.
func sourceKey(f facts, st mrtrv1alpha1.MRTRKeyringStatus, kr *keyring.Keyring) (keyring.Key, bool) {
	if !f.in.Settings.Source {
		return keyring.Key{}, false
	}
	if v := judgeSource(f.in, st, kr); !v.fresh {
		return keyring.Key{}, false
	}
	return f.in.Source.Key, true
}

// createFromSource writes the first keyring of a keyring with a source: its key alone. With none
// the keyring can take, nothing is written and nothing seals: NoKey, naming what is wrong.
func createFromSource(f facts, o outcome) outcome {
	key, ok := sourceKey(f, o.status, nil)
	if !ok {
		v := judgeSource(f.in, o.status, nil)
		return o.stalled(mrtrv1alpha1.ReasonNoKey, "Secret %s is not written, and nothing seals, until the key source holds a key the keyring takes: %s", f.in.SecretName, v.message)
	}
	kr, err := keyring.New(key)
	if err != nil {
		return o.cannotBuild(err)
	}
	o = o.event(corev1Normal, mrtrv1alpha1.EventSecretCreated, "Create", "created Secret %s with key %s from source Secret %s", f.in.SecretName, key.ID(), f.in.Source.Name)
	o = inService(f, o, key.ID())
	if fresh := newRevokeRequests(f.in, o.status); len(fresh) > 0 {
		o.status = handledRevokeRequests(f.in, o.status, fresh)
	}
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseStable, keyring: kr, write: true})
}

// inService records that the source's version id begins to seal, with the event that says so.
func inService(f facts, o outcome, id string) outcome {
	ks := keySourceStatusOf(o.status)
	ks.Version, ks.InServiceSince = id, nowRef(f)
	o.status.KeySource = ks
	return o.event(corev1Normal, mrtrv1alpha1.EventSourceVersionInService, "Rotate", "source version %s (Secret %s) seals from now on", id, f.in.Source.Name)
}

// rotateToSource starts, in Stable, the rotation to the source's new key: accepted everywhere
// before it seals, as a rotation with nextKey AtRotation. A requested rotation while the source
// holds no new key has nothing to rotate to: refused with an event, and recorded as handled.
func rotateToSource(f facts, o outcome, kr *keyring.Keyring) outcome {
	in := f.in
	requested := mrtrv1alpha1.RotateRequested(in.RotateRequest, o.status.LastHandledRotateRequest, in.Secret.HandledRotateRequest)
	key, fresh := sourceKey(f, o.status, kr)
	if !fresh || in.Settings.Suspend {
		if requested && !in.Settings.Suspend {
			o.status.LastHandledRotateRequest = in.RotateRequest
			v := judgeSource(in, o.status, kr)
			why := "it holds the key in service, " + kr.Primary().ID()
			if v.refused() {
				why = v.message
			}
			o = o.event(corev1Warning, mrtrv1alpha1.EventRotateRequestIgnored, "Rotate", "%s=%q: no new key to rotate to: source Secret %s is where keys change (%s); rotate the key at the source",
				mrtrv1alpha1.RotateAnnotation, in.RotateRequest, in.Source.Name, why)
		}
		return o
	}
	next, err := kr.Add(key)
	if err != nil {
		if errors.Is(err, keyring.ErrFull) {
			return o.stalled(mrtrv1alpha1.ReasonKeyringFull, "the keyring holds %d keys, the most allowed: remove keys no replica seals with (Retiring) so the source's key can be added", kr.Len())
		}
		return o.cannotBuild(err)
	}
	o.status.LastHandledRotateRequest = in.RotateRequest
	// A rekey owed to namespaces that left (spec.onLeave Rekey) waits for the source's next key,
	// which the operator cannot make: this rotation is it (the keys they hold leave with it).
	o.rekeyed = f.rekey != ""
	o = o.event(corev1Normal, mrtrv1alpha1.EventRotationStarted, "Rotate", "rotation started (source Secret %s holds version %s): accepted everywhere before it seals; keyring %s (keys %s)",
		in.Source.Name, key.ID(), next.Fingerprint(), strings.Join(next.IDs(), ", "))
	return enter(f, o, change{phase: mrtrv1alpha1.PhaseAccepting, keyring: next, write: true})
}

// sourceDue is rotationDue for a keyring with a source: due when the source holds a new key the
// keyring takes; no time makes it due.
func sourceDue(in Input, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	if in.Settings.Suspend {
		return verdict{what: mrtrv1alpha1.WaitResume, message: "a resume: rotations are suspended (spec.suspend), and a new key in the source waits for it"}
	}
	var kr *keyring.Keyring
	if in.Secret.State == SecretValid {
		kr = in.Secret.Keyring
	}
	if v := judgeSource(in, st, kr); v.fresh {
		return verdict{pass: true, what: mrtrv1alpha1.WaitNextRotation, message: "source Secret " + in.Source.Name + " holds version " + in.Source.Version}
	}
	return verdict{what: mrtrv1alpha1.WaitNextRotation, message: "a new key in source Secret " + in.Source.Name}
}

// trackSource completes status.keySource once the move is made: the version the source holds now,
// the versions it held that were replaced before they entered the keyring (skipped), and the
// version in service, cleared once it no longer seals (revoked).
func trackSource(f facts, o outcome) outcome {
	if !f.in.Settings.Source {
		return o
	}
	kr := f.in.Secret.Keyring
	if o.write != nil {
		kr = o.write.keyring
	}
	if kr == nil && f.in.Secret.State != SecretValid {
		kr = nil
	}
	ks := keySourceStatusOf(o.status)
	v := judgeSource(f.in, o.status, kr)
	cur := ""
	if !v.refused() {
		cur = f.in.Source.Version
	}
	if v.held != "" {
		cur = v.held
	}
	prev := ks.ObservedVersion
	inKeyring := func(id string) bool { _, ok := lookup(kr, id); return ok }
	retired := func(id string) bool {
		return slices.ContainsFunc(ks.Retired, func(r mrtrv1alpha1.RetiredSourceKey) bool { return r.Version == id })
	}
	if prev != "" && cur != "" && prev != cur && !inKeyring(prev) && !retired(prev) && prev != ks.Version {
		ks.SkippedVersions = append(ks.SkippedVersions, prev)
		if n := len(ks.SkippedVersions) - mrtrv1alpha1.MaxSkippedSourceVersions; n > 0 {
			ks.SkippedVersions = slices.Clone(ks.SkippedVersions[n:])
		}
		o = o.event(corev1Normal, mrtrv1alpha1.EventSourceVersionSkipped, "Rotate", "source Secret %s changed from version %s to %s before %s entered the keyring: %s is skipped, never sealed with",
			f.in.Source.Name, prev, cur, prev, prev)
	}
	ks.ObservedVersion = cur
	switch {
	case kr != nil && ks.Version != "" && kr.Primary().ID() != ks.Version:
		ks.Version, ks.InServiceSince = "", nil
	case kr != nil && ks.Version == "" && v.held != "" && v.held == kr.Primary().ID():
		// The source's key seals, and status lost the update that said so (a resumed write).
		ks.Version, ks.InServiceSince = v.held, nowRef(f)
	}
	o.status.KeySource = ks
	return o
}

func lookup(kr *keyring.Keyring, id string) (keyring.Key, bool) {
	if kr == nil {
		return keyring.Key{}, false
	}
	return kr.Lookup(id)
}

// sourceCondition is KeySourceReady, and the Warning event of a refusal newly found: nil, nil
// without a source.
func sourceCondition(f facts, o outcome) (*metav1.Condition, *Event) {
	if !f.in.Settings.Source {
		return nil, nil
	}
	kr := f.in.Secret.Keyring
	if o.write != nil {
		kr = o.write.keyring
	}
	v := judgeSource(f.in, o.status, kr)
	if !v.refused() && o.write != nil && o.write.phase == mrtrv1alpha1.PhaseRevoking {
		v = judgeSource(f.in, o.status, nil) // the key the revocation just removed is refused as revoked
		if v.fresh {
			v = sourceVerdict{}
		}
	}
	var c metav1.Condition
	switch ks := o.status.KeySource; {
	case v.refused():
		c = condition(mrtrv1alpha1.ConditionKeySourceReady, false, v.reason, v.message+keptMessage(o))
	case v.fresh || o.status.Phase.UnderWay() && kr != nil && (ks == nil || ks.ObservedVersion != ks.Version):
		c = condition(mrtrv1alpha1.ConditionKeySourceReady, true, mrtrv1alpha1.ReasonSourceInService,
			fmt.Sprintf("source Secret %s holds version %s: a rotation to it is under way, or starts once the one under way ends", f.in.Source.Name, f.in.Source.Version))
	default:
		c = condition(mrtrv1alpha1.ConditionKeySourceReady, true, mrtrv1alpha1.ReasonSourceInService,
			fmt.Sprintf("source Secret %s holds version %s, which is in service", f.in.Source.Name, f.in.Source.Version))
	}
	var e *Event
	if old := meta.FindStatusCondition(f.in.Status.Conditions, mrtrv1alpha1.ConditionKeySourceReady); c.Status == metav1.ConditionFalse && (old == nil || old.Reason != c.Reason) {
		e = &Event{Type: corev1Warning, Reason: mrtrv1alpha1.EventSourceRefused, Action: "Reconcile", Note: c.Reason + ": " + c.Message}
	}
	return &c, e
}

// keptMessage says what serves meanwhile.
func keptMessage(o outcome) string {
	if len(o.status.Keys) == 0 {
		return "; no keyring yet: nothing seals"
	}
	return fmt.Sprintf("; the keyring in service (primary %s) stays as it is", o.status.Keys[0].ID)
}

// formatRetired is the RetiredKeysAnnotation of ks: "id:digest", comma separated; "" for none.
func formatRetired(ks *mrtrv1alpha1.KeySourceStatus) string {
	if ks == nil {
		return ""
	}
	items := make([]string, len(ks.Retired))
	for i, r := range ks.Retired {
		items[i] = r.Version + ":" + r.Digest
	}
	return mrtrv1alpha1.FormatIDs(items)
}

// parseRetired reads a RetiredKeysAnnotation; an item that is not "id:digest" is dropped (anyone
// who may write the Secret may write its annotations, and they record nothing the keyring trusts
// but a refusal).
func parseRetired(value string) []mrtrv1alpha1.RetiredSourceKey {
	var out []mrtrv1alpha1.RetiredSourceKey
	for _, item := range mrtrv1alpha1.ParseIDs(value) {
		id, digest, ok := strings.Cut(item, ":")
		if !ok || !keyring.ValidID(id) || !validDigest(digest) {
			continue
		}
		out = append(out, mrtrv1alpha1.RetiredSourceKey{Version: id, Digest: digest})
	}
	return out
}

func validDigest(d string) bool {
	if len(d) != 24 {
		return false
	}
	_, err := hex.DecodeString(d)
	return err == nil && strings.ToLower(d) == d
}

// restoreRetired takes into st the retired keys the Secret records and st lacks (a status update
// lost after the write that removed them).
func restoreRetired(st mrtrv1alpha1.MRTRKeyringStatus, sec SecretObservation, now metav1.Time) mrtrv1alpha1.MRTRKeyringStatus {
	var missing []mrtrv1alpha1.RetiredSourceKey
	for _, r := range sec.Retired {
		if st.KeySource == nil || !slices.ContainsFunc(st.KeySource.Retired, func(k mrtrv1alpha1.RetiredSourceKey) bool { return k.Digest == r.Digest }) {
			r.RetiredAt = now
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return st
	}
	ks := keySourceStatusOf(st)
	ks.Retired = append(ks.Retired, missing...)
	if n := len(ks.Retired) - mrtrv1alpha1.MaxRetiredSourceKeys; n > 0 {
		ks.Retired = slices.Clone(ks.Retired[n:])
	}
	st.KeySource = ks
	return st
}
