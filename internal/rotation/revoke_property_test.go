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
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// revokeLife is one keyring's life under revocations, as the API server, the operator and the
// people who revoke see it: the annotation and the status share one resourceVersion (version),
// which every write of either moves, and kubectl mrtr revoke appends on the condition that it did
// not move since its read (a conflict makes it read again), as the real command does.
type revokeLife struct {
	t     *testing.T
	rnd   *mathrand.Rand
	st    Settings
	clock time.Time

	annotation string
	status     mrtrv1alpha1.MRTRKeyringStatus
	version    int
	secret     *keyring.Keyring
	secretAnn  map[string]string // what the operator's last write recorded on the Secret

	// inflight are appends that read the keyring and have not written yet (concurrent writers).
	inflight []revokeAppend
	// seen are the requests (as written) the operator has seen in the annotation: the model of
	// "handled", which the operator must agree with.
	seen map[string]bool
	// appended are the numbered requests appended so far, unnumbered the hand-written ones.
	appended   []mrtrv1alpha1.RevokeRequest
	unnumbered []string
	// maxHeld is the most numbered requests the annotation ever held at once.
	maxHeld, conflicts, revokedAll int
	log                            []string
}

// revokeAppend is a kubectl mrtr revoke between its read and its write.
type revokeAppend struct {
	targets []string
	value   string
	handled int64
	version int
}

func (l *revokeLife) fail(format string, args ...any) {
	l.t.Helper()
	tail := l.log[max(0, len(l.log)-40):]
	l.t.Fatalf(format+"\nlast events:\n%s", append(args, strings.Join(tail, "\n"))...)
}

func (l *revokeLife) logf(format string, args ...any) {
	l.log = append(l.log, l.clock.Format(time.TimeOnly)+" "+fmt.Sprintf(format, args...))
}

// read starts an append of targets: the keyring as the command reads it.
func (l *revokeLife) read(targets ...string) {
	l.inflight = append(l.inflight, revokeAppend{targets: targets, value: l.annotation, handled: l.status.LastHandledRevokeSequence, version: l.version})
}

// write ends the i-th append in flight: on a conflict it reads again and writes (nothing can come
// in between, here), as retry.RetryOnConflict does.
func (l *revokeLife) write(i int) {
	a := l.inflight[i]
	l.inflight = slices.Delete(l.inflight, i, i+1)
	if a.version != l.version {
		l.conflicts++
		a.value, a.handled = l.annotation, l.status.LastHandledRevokeSequence
	}
	value, added := mrtrv1alpha1.AppendRevokeRequests(a.value, a.handled, a.targets...)
	// Pruned: every numbered request the annotation still holds is new (none handled is kept).
	held := 0
	for _, r := range mrtrv1alpha1.ParseRevokeRequests(value) {
		if r.Sequence != 0 {
			held++
			if r.Sequence <= a.handled {
				l.fail("append kept %s, handled (lastHandledRevokeSequence %d): %q", r, a.handled, value)
			}
		}
	}
	l.maxHeld = max(l.maxHeld, held)
	for _, r := range added {
		if r.Sequence <= mrtrv1alpha1.LastRevokeSequence(l.appended) {
			l.fail("request %s is not numbered after %d, the last appended", r, mrtrv1alpha1.LastRevokeSequence(l.appended))
		}
		l.appended = append(l.appended, r)
	}
	l.annotation = value
	l.version++
	l.logf("append %v -> %q", added, value)
}

// pass is one reconcile. lost: the Secret write went through but the status update did not.
// recreated: the keyring was deleted and re-created with the same annotation (GitOps); its status
// is empty and only the Secret remembers.
func (l *revokeLife) pass(lost, recreated bool) {
	l.t.Helper()
	if recreated {
		l.status = mrtrv1alpha1.MRTRKeyringStatus{}
		l.version++
		l.logf("keyring re-created")
	}
	sec := SecretObservation{State: SecretAbsent}
	if l.secret != nil {
		b, err := keyring.Marshal(l.secret)
		if err != nil {
			l.t.Fatal(err)
		}
		sec = ObserveSecret(true, keyring.SecretType, map[string][]byte{keyring.SecretDataKey: b}, l.secretAnn)
		sec.TokenTTL = l.st.TokenTTL
	}
	requests := mrtrv1alpha1.ParseRevokeRequests(l.annotation)
	var fresh []string
	all := false
	for _, r := range requests {
		if !l.seen[r.String()] {
			fresh = append(fresh, r.String())
			all = all || r.RevokesAll()
		}
	}
	before := l.secret
	d := Step(Input{Now: l.clock, Generation: 1, Settings: l.st, Status: l.status, SecretName: "s", Secret: sec,
		FreshKeys: freshKeys(), RevokeRequest: l.annotation})
	revokedEvent := slices.ContainsFunc(d.Events, func(e Event) bool { return e.Reason == mrtrv1alpha1.EventKeyRevoked })
	if d.Secret != nil {
		l.secret, l.secretAnn = d.Secret, d.SecretAnnotations()
		l.logf("write %v for %s (new requests %v)", l.secret.IDs(), d.SecretPhase, fresh)
	}
	if lost && d.Secret != nil {
		l.logf("status update lost")
	} else if !equalStatus(l.status, d.Status) {
		l.status = d.Status
		l.version++
	}

	// The property: a pass revokes only for requests it sees for the first time.
	if revokedEvent && len(fresh) == 0 {
		l.fail("a pass with no new request revoked keys: a request was handled again (annotation %q)", l.annotation)
	}
	if revokedEvent && !all && before != nil {
		// Only the keys the new requests name are revoked: an old request handled again along
		// with a new one would drop more.
		for _, id := range before.IDs() {
			if _, kept := l.secret.Lookup(id); !kept && !slices.ContainsFunc(fresh, func(r string) bool {
				return mrtrv1alpha1.ParseRevokeRequest(r).Target == id
			}) {
				l.fail("the pass revoked %s, which none of the new requests %v names: an old request was handled again", id, fresh)
			}
		}
	}
	if all {
		l.revokedAll++
		if before != nil {
			for _, id := range before.IDs() {
				if _, ok := l.secret.Lookup(id); ok {
					l.fail("requests %v revoke every key, but %s is still in the Secret %v", fresh, id, l.secret.IDs())
				}
			}
		}
	}
	for _, r := range fresh {
		l.seen[r] = true
	}
	// No request is dropped: each one seen is handled, and no key it names is in the Secret.
	for _, r := range requests {
		if _, ok := l.secret.Lookup(r.Target); ok {
			l.fail("the Secret holds %s, which request %s names: keys %v", r.Target, r, l.secret.IDs())
		}
	}
	if last := mrtrv1alpha1.LastRevokeSequence(requests); !lost && l.status.LastHandledRevokeSequence < last {
		l.fail("lastHandledRevokeSequence = %d, but the pass saw request %d (recreated %v, lost %v, observed %d, decided %d)", l.status.LastHandledRevokeSequence, last, recreated, lost, sec.HandledRevokeSequence, d.Status.LastHandledRevokeSequence)
	}
}

// equalStatus: the status update is a write (it moves the resourceVersion) only when it changes.
func equalStatus(a, b mrtrv1alpha1.MRTRKeyringStatus) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// target is what a request names: a key of the Secret mostly, an id no key has yet, or every key.
func (l *revokeLife) target(n int) string {
	switch k := l.rnd.IntN(10); {
	case k < 7 && l.secret != nil:
		ids := l.secret.IDs()
		return ids[l.rnd.IntN(len(ids))]
	case k < 8:
		return NewKeyID(l.clock.Add(time.Duration(l.rnd.IntN(3600)) * time.Second)) // an id a fresh key may get
	default:
		return fmt.Sprintf("%sincident-%d", mrtrv1alpha1.RevokeAll, n)
	}
}

// TestRevocationsHandledOnce drives Step through seeded random lives of 500 requests each,
// appended to mrtr.dev/revoke as kubectl mrtr revoke does (numbered, pruning the handled ones),
// several at once (concurrent appends that conflict and read again) and several while the
// operator is away, mixed with unnumbered requests written by hand (the format before numbers),
// GitOps re-applying requests long handled, status updates lost after a Secret write and the
// keyring re-created from its manifest, in whatever phase the rotations are. After every pass: a
// request is handled once, on the first pass that sees it, and never again (a pass that sees no
// new request revokes nothing), none is dropped, no key one names is in the Secret, and the
// annotation holds no numbered request already handled once appended to.
func TestRevocationsHandledOnce(t *testing.T) {
	const requests = 500
	for _, m := range nextKeyModes {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("%s seed %d", m.mode, seed), func(t *testing.T) {
				st := settings
				st.NextKey, st.PropagationDelay = m.mode, 0
				l := &revokeLife{t: t, rnd: mathrand.New(mathrand.NewPCG(seed, 31)), st: st, clock: now, seen: map[string]bool{}}
				l.pass(false, false)
				for n := 0; len(l.appended)+len(l.unnumbered) < requests; n++ {
					switch r := l.rnd.IntN(20); {
					case r < 3 && len(l.inflight) < 3: // kubectl mrtr revoke reads the keyring (three at once at most)
						targets := []string{l.target(n)}
						if l.rnd.IntN(5) == 0 {
							targets = append(targets, l.target(n+1))
						}
						l.read(targets...)
					case r < 7 && len(l.inflight) > 0: // and writes
						l.write(l.rnd.IntN(len(l.inflight)))
					case r < 8 && l.rnd.IntN(4) == 0: // a request written by hand, unnumbered
						item := l.target(n)
						if !slices.Contains(l.unnumbered, item) && !slices.Contains(mrtrv1alpha1.ParseRevokeRequests(l.annotation), mrtrv1alpha1.RevokeRequest{Target: item}) {
							l.unnumbered = append(l.unnumbered, item)
							l.annotation = strings.Trim(l.annotation+","+item, ",")
							l.version++
							l.logf("by hand %s", item)
						}
					case r < 9 && len(l.appended) > 0: // GitOps re-applies a request handled long ago
						old := l.appended[l.rnd.IntN(len(l.appended))]
						if old.Sequence <= l.status.LastHandledRevokeSequence && !strings.Contains(","+l.annotation+",", ","+old.String()+",") {
							l.annotation = strings.Trim(l.annotation+","+old.String(), ",")
							l.version++
							l.logf("re-applied %s", old)
						}
					case r < 16:
						l.pass(l.rnd.IntN(10) == 0, l.rnd.IntN(50) == 0)
					default:
						l.clock = l.clock.Add(time.Duration(1+l.rnd.IntN(600)) * time.Second)
						if l.rnd.IntN(4) == 0 {
							l.status.NextRotationTime = nil // due at once, so that rotations run between the revocations
							l.clock = l.clock.Add(st.RotationInterval)
						}
					}
				}
				for len(l.inflight) > 0 {
					l.write(0)
				}
				l.pass(false, false)
				l.pass(false, false)
				if last := mrtrv1alpha1.LastRevokeSequence(l.appended); l.status.LastHandledRevokeSequence != last {
					t.Fatalf("lastHandledRevokeSequence = %d after the last pass, want %d, the last appended", l.status.LastHandledRevokeSequence, last)
				}
				for _, item := range l.unnumbered {
					if !slices.Contains(mrtrv1alpha1.ParseIDs(l.status.LastHandledRevokeRequest), item) {
						t.Fatalf("unnumbered request %s is not recorded as handled: %q", item, l.status.LastHandledRevokeRequest)
					}
				}
				t.Logf("%d numbered and %d unnumbered requests, %d revoking every key, %d conflicts; the annotation held at most %d numbered requests",
					len(l.appended), len(l.unnumbered), l.revokedAll, l.conflicts, l.maxHeld)
			})
		}
	}
}

// TestOldRevokeAllNotHandledAgain is the case of the review: a request to revoke every key, then
// more than 64 newer requests, each handled on a pass of its own. Whether the old request is
// unnumbered among unnumbered ones (the format before sequences) or numbered and pruned by the
// appends that followed, and whether GitOps puts it back, every key is revoked once, not again after the 64th.
func TestOldRevokeAllNotHandledAgain(t *testing.T) {
	for _, numbered := range []bool{false, true} {
		t.Run(fmt.Sprintf("numbered %v", numbered), func(t *testing.T) {
			st := settings
			st.NextKey, st.PropagationDelay = mrtrv1alpha1.NextKeyStaged, 0 // two keys: revoking one is not revoking every key
			l := &revokeLife{t: t, rnd: mathrand.New(mathrand.NewPCG(1, 2)), st: st, clock: now, seen: map[string]bool{}}
			l.pass(false, false)
			if numbered {
				l.read("*incident-1")
				l.write(0)
			} else {
				l.annotation = "*incident-1"
			}
			l.pass(false, false)
			if l.revokedAll != 1 {
				t.Fatalf("*incident-1 was not handled: %q", l.annotation)
			}
			for i := range 200 {
				if numbered {
					l.read(l.secret.Primary().ID())
					l.write(0)
				} else {
					l.annotation += "," + l.secret.Primary().ID() // as before sequences: appended by hand
				}
				if numbered && i == 100 {
					l.annotation += ",1:*incident-1" // GitOps re-applies it
				}
				l.clock = l.clock.Add(time.Minute)
				l.pass(false, false) // fails if *incident-1 is handled again
			}
			if len(l.status.RevokedKeys) != mrtrv1alpha1.MaxRevokedKeys || numbered && l.status.LastHandledRevokeSequence != 201 ||
				!numbered && len(mrtrv1alpha1.ParseIDs(l.status.LastHandledRevokeRequest)) != 201 {
				t.Fatalf("revoked %d keys, lastHandledRevokeSequence %d", len(l.status.RevokedKeys), l.status.LastHandledRevokeSequence)
			}
		})
	}
}
