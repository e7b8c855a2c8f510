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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// sourceWorld is a Secret-only keyring whose keys come from a source Secret: each pass is Step on
// what the world holds, and the world applies the decision.
type sourceWorld struct {
	t        *testing.T
	now      time.Time
	settings Settings
	secret   *keyring.Keyring
	phase    mrtrv1alpha1.Phase
	status   mrtrv1alpha1.MRTRKeyringStatus
	src      SourceObservation
	rotate   string
	revoke   string
	events   []Event
	writes   int
	// retired is what the last write recorded in the Secret's RetiredKeysAnnotation; loseStatus
	// drops the status update of the next pass that writes the Secret.
	retired    []mrtrv1alpha1.RetiredSourceKey
	loseStatus bool
}

func newSourceWorld(t *testing.T) *sourceWorld {
	s := Defaults
	s.Source, s.NextKey = true, mrtrv1alpha1.NextKeyAtRotation
	s.TokenTTL, s.ClockSkew, s.TerminationGracePeriod, s.PropagationDelay = time.Minute, 0, 0, 10*time.Second
	w := &sourceWorld{t: t, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), settings: s}
	w.src = ObserveSource(false, "src", "key", nil, nil)
	return w
}

// keyBytes are n bytes that name c: distinct keys for distinct c.
func keyBytes(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

func (w *sourceWorld) set(b []byte, version string) {
	ann := map[string]string{}
	if version != "" {
		ann[mrtrv1alpha1.KeyVersionAnnotation] = version
	}
	w.src = ObserveSource(true, "src", "key", map[string][]byte{"key": b}, ann)
}

func (w *sourceWorld) pass() Decision {
	sec := SecretObservation{State: SecretAbsent}
	if w.secret != nil {
		sec = SecretObservation{State: SecretValid, Keyring: w.secret, WrittenPhase: w.phase, WrittenFingerprint: w.secret.Fingerprint(),
			WrittenAt: w.now.Add(-time.Hour), TokenTTL: w.settings.TokenTTL, Retired: w.retired}
	}
	in := Input{Now: w.now, Generation: 1, Settings: w.settings, Status: w.status, SecretName: "kr", Secret: sec, Source: w.src,
		FreshKeys: freshKeys(), RotateRequest: w.rotate, RevokeRequest: w.revoke}
	d := Step(in)
	if d.Secret != nil {
		w.secret, w.phase = d.Secret, d.SecretPhase
		w.retired = parseRetired(d.SecretAnnotations()[mrtrv1alpha1.RetiredKeysAnnotation])
		w.writes++
		if w.loseStatus {
			w.loseStatus = false
			return d
		}
	}
	w.status = d.Status
	w.events = append(w.events, d.Events...)
	for _, e := range d.Events {
		if strings.Contains(e.Note, string(keyBytes('A', 4))) {
			w.t.Fatalf("an event holds key bytes: %s", e.Note)
		}
	}
	return d
}

// settle runs passes, moving the clock to each requeue, until the keyring is Stable with nothing
// timed left, or n passes.
func (w *sourceWorld) settle(n int) {
	for range n {
		d := w.pass()
		if w.status.Phase == mrtrv1alpha1.PhaseStable && d.Secret == nil {
			return
		}
		w.now = w.now.Add(max(d.RequeueAfter, time.Second))
	}
	w.t.Fatalf("not Stable after %d passes: %s", n, w.status.Phase)
}

func (w *sourceWorld) ids() []string {
	if w.secret == nil {
		return nil
	}
	return w.secret.IDs()
}

func (w *sourceWorld) condition() (string, string) {
	c := meta.FindStatusCondition(w.status.Conditions, mrtrv1alpha1.ConditionKeySourceReady)
	if c == nil {
		return "", ""
	}
	return string(c.Status) + "/" + c.Reason, c.Message
}

func (w *sourceWorld) eventReasons() []string {
	out := make([]string, 0, len(w.events))
	for _, e := range w.events {
		out = append(out, e.Reason)
	}
	return out
}

func idOf(b []byte) string { return SourceKeyID(SourceDigest(b)) }

func TestObserveSource(t *testing.T) {
	good := keyBytes('A', 32)
	for _, tc := range []struct {
		name    string
		exists  bool
		data    map[string][]byte
		version string
		state   SourceState
		id      string
	}{
		{"absent", false, nil, "", SourceNotFound, ""},
		{"no data key", true, map[string][]byte{"other": good}, "", SourceKeyMissing, ""},
		{"31 bytes", true, map[string][]byte{"key": keyBytes('A', 31)}, "", SourceTooShort, ""},
		{"a digest id", true, map[string][]byte{"key": good}, "", SourceValid, idOf(good)},
		{"a version", true, map[string][]byte{"key": good}, "v7", SourceValid, "v7"},
		{"a version too long", true, map[string][]byte{"key": good}, strings.Repeat("v", 33), SourceVersionInvalid, ""},
		{"a version with a dot", true, map[string][]byte{"key": good}, "v1.2", SourceVersionInvalid, ""},
		{"the key as its own version", true, map[string][]byte{"key": []byte("0123456789abcdef0123456789abcdef")}, "0123456789abcdef0123456789abcdef", SourceVersionInvalid, ""},
		{"a run of the key as its version", true, map[string][]byte{"key": []byte("0123456789abcdef0123456789abcdef")}, "456789abcdef", SourceVersionInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{}
			if tc.version != "" {
				ann[mrtrv1alpha1.KeyVersionAnnotation] = tc.version
			}
			o := ObserveSource(tc.exists, "src", "key", tc.data, ann)
			if o.State != tc.state || o.Version != tc.id {
				t.Fatalf("got state %v id %q, want %v %q", o.State, o.Version, tc.state, tc.id)
			}
			if tc.state == SourceValid && keyring.ValidateID(o.Version) != nil {
				t.Fatalf("id %q is not a key id", o.Version)
			}
		})
	}
	// The digest is stable, separates keys, and is not the plain SHA-256 of the bytes.
	if SourceDigest(good) != SourceDigest(keyBytes('A', 32)) || SourceDigest(good) == SourceDigest(keyBytes('B', 32)) {
		t.Fatal("the digest is not stable per key")
	}
	if len(idOf(good)) > keyring.MaxIDLength {
		t.Fatalf("digest id %q exceeds %d characters", idOf(good), keyring.MaxIDLength)
	}
}

// A change of the source is a rotation: the new key is accepted, then seals, and the old key stays
// in the keyring until the TTL wait ends; then it is retired and remembered.
func TestSourceChangeRotates(t *testing.T) {
	w := newSourceWorld(t)
	a, b := keyBytes('A', 32), keyBytes('B', 40)
	w.set(a, "")
	w.settle(10)
	if !slices.Equal(w.ids(), []string{idOf(a)}) || w.status.KeySource.Version != idOf(a) {
		t.Fatalf("created %v, in service %+v", w.ids(), w.status.KeySource)
	}
	if c, _ := w.condition(); c != "True/SourceInService" {
		t.Fatalf("KeySourceReady %s", c)
	}
	if w.status.NextRotationTime != nil {
		t.Fatalf("a source keyring has no schedule, got %v", w.status.NextRotationTime)
	}

	w.set(b, "")
	w.pass()
	if w.status.Phase != mrtrv1alpha1.PhaseAccepting || !slices.Equal(w.ids(), []string{idOf(a), idOf(b)}) {
		t.Fatalf("after the change: %s %v", w.status.Phase, w.ids())
	}
	var sawWait bool
	for range 20 {
		if w.status.Phase == mrtrv1alpha1.PhaseWaitingTTL {
			sawWait = true
			if !slices.Contains(w.ids(), idOf(a)) {
				t.Fatalf("the old key left before the TTL wait ended: %v", w.ids())
			}
			if w.status.TTLWaitUntil == nil || w.now.After(w.status.TTLWaitUntil.Time) {
				t.Fatalf("TTL wait %v at %v", w.status.TTLWaitUntil, w.now)
			}
		}
		if w.status.Phase == mrtrv1alpha1.PhaseStable {
			break
		}
		d := w.pass()
		w.now = w.now.Add(max(d.RequeueAfter, time.Second))
	}
	if !sawWait || !slices.Equal(w.ids(), []string{idOf(b)}) || w.status.KeySource.Version != idOf(b) {
		t.Fatalf("after the rotation: wait seen %v, keys %v, in service %+v", sawWait, w.ids(), w.status.KeySource)
	}
	if r := w.status.KeySource.Retired; len(r) != 1 || r[0].Version != idOf(a) || r[0].Digest != SourceDigest(a) {
		t.Fatalf("retired %+v", r)
	}
	if !slices.Contains(w.eventReasons(), mrtrv1alpha1.EventSourceVersionInService) {
		t.Fatalf("no SourceVersionInService event: %v", w.eventReasons())
	}
}

// A source that changes twice during a rotation: the rotation under way finishes, the value in
// between is skipped (and said so), the next rotation takes the newest value.
func TestSourceChangesMidRotation(t *testing.T) {
	w := newSourceWorld(t)
	a, b, c, d := keyBytes('A', 32), keyBytes('B', 32), keyBytes('C', 32), keyBytes('D', 32)
	w.set(a, "")
	w.settle(10)
	w.set(b, "")
	w.pass() // Accepting [A, B]
	w.set(c, "")
	w.pass()
	w.set(d, "")
	w.pass()
	if w.status.Phase == mrtrv1alpha1.PhaseStable || slices.Contains(w.ids(), idOf(c)) || slices.Contains(w.ids(), idOf(d)) {
		t.Fatalf("the rotation under way was disturbed: %s %v", w.status.Phase, w.ids())
	}
	if got := w.status.KeySource.SkippedVersions; !slices.Equal(got, []string{idOf(c)}) {
		t.Fatalf("skipped %v, want [%s]", got, idOf(c))
	}
	if cond, _ := w.condition(); cond != "True/SourceInService" {
		t.Fatalf("KeySourceReady %s mid-rotation", cond)
	}
	w.settle(40) // the rotation to B ends; the one to D starts from Stable
	w.settle(40)
	if !slices.Equal(w.ids(), []string{idOf(d)}) || w.status.RotationsCompleted != 2 || w.status.KeySource.Version != idOf(d) {
		t.Fatalf("keys %v, rotations %d, in service %+v", w.ids(), w.status.RotationsCompleted, w.status.KeySource)
	}
	if !slices.Contains(w.eventReasons(), mrtrv1alpha1.EventSourceVersionSkipped) {
		t.Fatalf("no SourceVersionSkipped event: %v", w.eventReasons())
	}
}

// Each bad source is a condition naming what is wrong, and the keyring in service stays.
func TestSourceRefusals(t *testing.T) {
	a, b := keyBytes('A', 32), keyBytes('B', 32)
	for _, tc := range []struct {
		name   string
		bad    func(w *sourceWorld)
		reason string
		names  string
	}{
		{"deleted", func(w *sourceWorld) { w.src = ObserveSource(false, "src", "key", nil, nil) }, mrtrv1alpha1.ReasonSourceNotFound, "does not exist"},
		{"no data key", func(w *sourceWorld) { w.src = ObserveSource(true, "src", "key", map[string][]byte{"k": a}, nil) }, mrtrv1alpha1.ReasonSourceKeyMissing, `no data key "key"`},
		{"too short", func(w *sourceWorld) { w.set(keyBytes('B', 16), "") }, mrtrv1alpha1.ReasonSourceKeyTooShort, "holds 16 bytes"},
		{"a bad version", func(w *sourceWorld) { w.set(b, "not/an/id") }, mrtrv1alpha1.ReasonSourceVersionInvalid, mrtrv1alpha1.KeyVersionAnnotation},
		{"a version reused for other bytes", func(w *sourceWorld) { w.set(b, "v1") }, mrtrv1alpha1.ReasonSourceVersionReused, "version v1 names other bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSourceWorld(t)
			w.set(a, "v1")
			w.settle(10)
			before, writes := w.secret.Fingerprint(), w.writes
			tc.bad(w)
			w.settle(10)
			cond, msg := w.condition()
			if cond != "False/"+tc.reason || !strings.Contains(msg, tc.names) || !strings.Contains(msg, "src") {
				t.Fatalf("KeySourceReady %s: %s", cond, msg)
			}
			if w.secret.Fingerprint() != before || w.writes != writes || w.status.Phase != mrtrv1alpha1.PhaseStable {
				t.Fatalf("the keyring in service changed: %v", w.ids())
			}
			if ready := meta.FindStatusCondition(w.status.Conditions, mrtrv1alpha1.ConditionReady); ready.Status != "True" {
				t.Fatalf("Ready %s: the last good keyring serves", ready.Status)
			}
			if !slices.Contains(w.eventReasons(), mrtrv1alpha1.EventSourceRefused) {
				t.Fatalf("no SourceRefused event: %v", w.eventReasons())
			}
			// Fixed, it rotates on.
			w.set(b, "v2")
			w.settle(40)
			if !slices.Equal(w.ids(), []string{"v2"}) {
				t.Fatalf("after the fix: %v", w.ids())
			}
		})
	}
}

// A retired key coming back is refused: flapping when it is the one the last rotation retired,
// retired otherwise, whatever version it comes back under.
func TestSourceRetiredKeyComesBack(t *testing.T) {
	a, b, c := keyBytes('A', 32), keyBytes('B', 32), keyBytes('C', 32)
	w := newSourceWorld(t)
	w.set(a, "")
	w.settle(10)
	w.set(b, "")
	w.settle(40)
	w.set(a, "")
	w.settle(10)
	if cond, msg := w.condition(); cond != "False/"+mrtrv1alpha1.ReasonSourceFlapping || !strings.Contains(msg, idOf(a)) {
		t.Fatalf("flapping back: %s: %s", cond, msg)
	}
	if !slices.Equal(w.ids(), []string{idOf(b)}) {
		t.Fatalf("keys %v", w.ids())
	}
	w.set(c, "")
	w.settle(40)
	w.set(a, "under-another-name")
	w.settle(10)
	if cond, msg := w.condition(); cond != "False/"+mrtrv1alpha1.ReasonSourceKeyRetired || !strings.Contains(msg, "never comes back") {
		t.Fatalf("an older key back: %s: %s", cond, msg)
	}
	if !slices.Equal(w.ids(), []string{idOf(c)}) {
		t.Fatalf("keys %v", w.ids())
	}
}

// Without any key the keyring can take, nothing is written and nothing seals: NoKey.
func TestSourceNoKeyAtAll(t *testing.T) {
	w := newSourceWorld(t)
	w.pass()
	if w.secret != nil {
		t.Fatalf("wrote %v without a source key", w.ids())
	}
	stalled := meta.FindStatusCondition(w.status.Conditions, mrtrv1alpha1.ConditionStalled)
	if stalled == nil || stalled.Reason != mrtrv1alpha1.ReasonNoKey || !strings.Contains(stalled.Message, "nothing seals") {
		t.Fatalf("Stalled %+v", stalled)
	}
	w.set(keyBytes('A', 32), "")
	w.settle(10)
	if w.secret == nil || w.secret.Len() != 1 {
		t.Fatalf("not created once the source holds a key")
	}
}

// A requested rotation has nothing new to rotate to while the source holds the key in service:
// refused with an event, handled once; with a new key in the source it rotates as usual.
func TestSourceRotateRequest(t *testing.T) {
	w := newSourceWorld(t)
	w.set(keyBytes('A', 32), "")
	w.settle(10)
	w.rotate = "now"
	w.settle(10)
	if w.status.LastHandledRotateRequest != "now" || w.writes != 1 || !slices.Contains(w.eventReasons(), mrtrv1alpha1.EventRotateRequestIgnored) {
		t.Fatalf("handled %q, writes %d, events %v", w.status.LastHandledRotateRequest, w.writes, w.eventReasons())
	}
	n := len(w.events)
	w.settle(10)
	if slices.Contains(w.eventReasons()[n:], mrtrv1alpha1.EventRotateRequestIgnored) {
		t.Fatal("the request was refused twice")
	}
}

// A revoked source key is removed at once; the keyring serves with what remains (a stand-in when
// nothing does), and the condition says the source must move on, until it does.
func TestSourceKeyRevoked(t *testing.T) {
	a, b := keyBytes('A', 32), keyBytes('B', 32)
	w := newSourceWorld(t)
	w.set(a, "")
	w.settle(10)
	w.revoke = "1:" + idOf(a)
	w.pass()
	if slices.Contains(w.ids(), idOf(a)) || w.status.Phase != mrtrv1alpha1.PhaseRevoking {
		t.Fatalf("the revoked key stayed: %s %v", w.status.Phase, w.ids())
	}
	w.settle(10)
	if cond, msg := w.condition(); cond != "False/"+mrtrv1alpha1.ReasonSourceKeyRevoked || !strings.Contains(msg, "put a new key in the source") {
		t.Fatalf("KeySourceReady %s: %s", cond, msg)
	}
	if w.status.KeySource.Version != "" {
		t.Fatalf("version in service %q after its revocation", w.status.KeySource.Version)
	}
	w.set(b, "")
	w.settle(40)
	if !slices.Equal(w.ids(), []string{idOf(b)}) || w.status.KeySource.Version != idOf(b) {
		t.Fatalf("after the source moved on: %v %+v", w.ids(), w.status.KeySource)
	}
	// The revoked key never comes back, under any version.
	w.set(a, "again")
	w.settle(10)
	if cond, _ := w.condition(); cond != "False/"+mrtrv1alpha1.ReasonSourceKeyRevoked {
		t.Fatalf("revoked key back: %s", cond)
	}
}

// The same bytes under a version added later are the key in service, not a new one.
func TestSourceSameBytesNewVersion(t *testing.T) {
	w := newSourceWorld(t)
	a := keyBytes('A', 32)
	w.set(a, "")
	w.settle(10)
	w.set(a, "v1")
	w.settle(10)
	if w.writes != 1 || w.status.Phase != mrtrv1alpha1.PhaseStable {
		t.Fatalf("rotated to the same bytes: writes %d", w.writes)
	}
	if cond, _ := w.condition(); cond != "True/SourceInService" {
		t.Fatalf("KeySourceReady %s", cond)
	}
	_ = fmt.Sprint()
}

// The write that removes the old key records it in the Secret: a status update lost after it
// (a conflict, a restart) still leaves the keyring refusing it when it comes back.
func TestSourceRetiredSurvivesALostStatus(t *testing.T) {
	a, b := keyBytes('A', 32), keyBytes('B', 32)
	w := newSourceWorld(t)
	w.set(a, "")
	w.settle(10)
	w.set(b, "")
	for range 40 {
		if w.status.Phase == mrtrv1alpha1.PhaseWaitingTTL {
			break
		}
		d := w.pass()
		w.now = w.now.Add(max(d.RequeueAfter, time.Second))
	}
	w.now = w.status.TTLWaitUntil.Add(time.Second)
	w.loseStatus = true
	w.pass() // writes [B] for Removing; its status update is lost
	if w.status.Phase != mrtrv1alpha1.PhaseWaitingTTL || !slices.Equal(w.ids(), []string{idOf(b)}) {
		t.Fatalf("setup: %s %v", w.status.Phase, w.ids())
	}
	w.settle(40)
	w.set(a, "")
	w.settle(10)
	if cond, _ := w.condition(); cond != "False/"+mrtrv1alpha1.ReasonSourceFlapping {
		t.Fatalf("the retired key came back after a lost status: %s, keys %v", cond, w.ids())
	}
}

func TestRetiredAnnotationRoundTrip(t *testing.T) {
	ks := &mrtrv1alpha1.KeySourceStatus{Retired: []mrtrv1alpha1.RetiredSourceKey{
		{Version: "v1", Digest: SourceDigest([]byte("one"))}, {Version: idOf([]byte("two")), Digest: SourceDigest([]byte("two"))}}}
	got := parseRetired(formatRetired(ks))
	if len(got) != 2 || got[0].Version != "v1" || got[1].Digest != SourceDigest([]byte("two")) {
		t.Fatalf("round trip: %+v", got)
	}
	if got := parseRetired("v1:nothex, :abc, ok:" + strings.Repeat("A", 24) + ",bad id:" + SourceDigest(nil)); len(got) != 0 {
		t.Fatalf("malformed items kept: %+v", got)
	}
}

// The pass that ends the rotation under way, with a newer source key waiting, looks again soon:
// nothing else wakes the keyring (its own status write does not, and the source sent its event
// long before), so without the requeue the next rotation would wait for an unrelated event.
func TestSourceNextRotationStartsByItself(t *testing.T) {
	w := newSourceWorld(t)
	a, b, d := keyBytes('A', 32), keyBytes('B', 32), keyBytes('D', 32)
	w.set(a, "")
	w.settle(10)
	w.set(b, "")
	w.pass() // Accepting [A, B]
	w.set(d, "")
	for range 40 {
		dec := w.pass()
		if w.status.Phase == mrtrv1alpha1.PhaseStable {
			if dec.RequeueAfter <= 0 || dec.RequeueAfter > NextRotationDelay {
				t.Fatalf("the rotation to B ended with D waiting, and the next pass is due in %v, want within %v", dec.RequeueAfter, NextRotationDelay)
			}
			w.now = w.now.Add(dec.RequeueAfter)
			w.pass()
			if w.status.Phase != mrtrv1alpha1.PhaseAccepting || !slices.Contains(w.ids(), idOf(d)) {
				t.Fatalf("the requeued pass did not start the rotation to D: %s %v", w.status.Phase, w.ids())
			}
			// Stable with nothing due asks for no such pass.
			w.settle(40)
			if dec := w.pass(); dec.RequeueAfter != 0 {
				t.Fatalf("a settled keyring with a source looks again in %v", dec.RequeueAfter)
			}
			return
		}
		w.now = w.now.Add(max(dec.RequeueAfter, time.Second))
	}
	t.Fatalf("the rotation to B never ended: %s", w.status.Phase)
}
