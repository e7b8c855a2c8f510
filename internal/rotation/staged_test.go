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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// staging are the settings of TestStep with the next key staged, the default.
var staging = func() Settings { s := settings; s.NextKey = mrtrv1alpha1.NextKeyStaged; return s }()

// newID2 is the id Step gives a second key made at now.
const newID2 = "k20260806-120001"

// stagedSecret is a Secret Step wrote for phase, holding ids, with staged as its staged key.
func stagedSecret(t testing.TB, phase mrtrv1alpha1.Phase, staged string, ids ...string) SecretObservation {
	s := ours(t, phase, ids...)
	s.Staged = staged
	return s
}

// withRoles sets the roles of st's keys, in order.
func withRoles(st mrtrv1alpha1.MRTRKeyringStatus, roles ...mrtrv1alpha1.KeyRole) mrtrv1alpha1.MRTRKeyringStatus {
	for i, r := range roles {
		st.Keys[i].Role = r
	}
	return st
}

func roles(d Decision) []mrtrv1alpha1.KeyRole {
	out := make([]mrtrv1alpha1.KeyRole, len(d.Status.Keys))
	for i, k := range d.Status.Keys {
		out[i] = k.Role
	}
	return out
}

const (
	primary  = mrtrv1alpha1.KeyPrimary
	accepted = mrtrv1alpha1.KeyAccepted
	stagedR  = mrtrv1alpha1.KeyStaged
	retiring = mrtrv1alpha1.KeyRetiring
)

// TestStagedStep is TestStep for a keyring whose next key is staged, and for revocations, which
// work in every phase.
func TestStagedStep(t *testing.T) {
	a, n, b, m := "k20260101-000000", "k20260201-000000", "k20260301-000000", "k20260401-000000"
	stable := func() Input {
		in := input(withRoles(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a, n), primary, stagedR),
			stagedSecret(t, mrtrv1alpha1.PhaseStable, n, a, n), deployment("api", fp(t, a, n), true))
		in.Settings = staging
		in.Status.RolledOutAt = at(-time.Hour)
		return in
	}
	due := func(in *Input) { in.Status.NextRotationTime = at(-time.Second) }
	in := func(phase mrtrv1alpha1.Phase, staged string, rs []mrtrv1alpha1.KeyRole, ids ...string) Input {
		in := input(withRoles(status(t, phase, time.Minute, ids...), rs...), stagedSecret(t, phase, staged, ids...),
			deployment("api", fp(t, ids...), true))
		in.Settings = staging
		return in
	}
	cases := map[string]struct {
		in     Input
		edit   func(*Input)
		want   want
		staged string                 // want Decision.SecretStaged, when it writes
		roles  []mrtrv1alpha1.KeyRole // want, when set
		check  func(*testing.T, Decision)
	}{
		"a new keyring holds a primary and a staged key": {
			in: func() Input {
				in := input(mrtrv1alpha1.MRTRKeyringStatus{}, SecretObservation{State: SecretAbsent})
				in.Settings = staging
				return in
			}(),
			want:   want{phase: mrtrv1alpha1.PhaseStable, write: []string{newID, newID2}, requeue: 720 * time.Hour, events: []string{"SecretCreated"}},
			staged: newID2, roles: []mrtrv1alpha1.KeyRole{primary, stagedR},
		},
		"Stable before the due time waits for it": {
			in:   stable(),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 24 * time.Hour},
		},
		"Stable at the due time seals with the staged key at once: no Accepting round": {
			in: stable(), edit: due,
			want:  want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{n, a}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
			roles: []mrtrv1alpha1.KeyRole{primary, retiring},
			check: func(t *testing.T, d Decision) {
				if s := d.Status.Keys[0].SealingSince; s == nil || !s.Time.Equal(now) {
					t.Errorf("sealingSince of the staged key now primary = %v, want now (it was created a rotation ago)", s)
				}
			},
		},
		"a requested rotation seals with the staged key too, and records the request": {
			in: stable(), edit: func(in *Input) { in.RotateRequest = "now" },
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{n, a}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
			check: func(t *testing.T, d Decision) {
				if d.Status.LastHandledRotateRequest != "now" {
					t.Errorf("lastHandledRotateRequest = %q", d.Status.LastHandledRotateRequest)
				}
			},
		},
		"within terminationGracePeriod of the rollout that staged the key, the pods it replaced (which lack it) may still serve: wait": {
			in: stable(), edit: func(in *Input) { due(in); in.Status.RolledOutAt = at(-10 * time.Second) },
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 20 * time.Second},
		},
		"a target that has not rolled out the staged keyring holds the rotation back": {
			in: stable(), edit: func(in *Input) { due(in); in.Workloads[0].RolledOut = false },
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 10*time.Minute - time.Second},
		},
		"a due rotation a target holds back (it does not roll out the staged keyring) waits up to rolloutDeadline from the due time": {
			in: stable(), edit: func(in *Input) { in.Status.NextRotationTime = at(-time.Minute); in.Workloads[0].RolledOut = false },
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 9 * time.Minute},
		},
		"past rolloutDeadline from the due time it is Stalled, naming the workload": {
			in: stable(), edit: func(in *Input) { in.Status.NextRotationTime = at(-11 * time.Minute); in.Workloads[0].RolledOut = false },
			want: want{phase: mrtrv1alpha1.PhaseStable, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{"RolloutDeadlineExceeded"}},
			check: func(t *testing.T, d Decision) {
				c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
				if !strings.Contains(c.Message, "Deployment/api") || !strings.Contains(c.Message, "the rotation due at") {
					t.Errorf("Stalled message %q does not say what holds the rotation", c.Message)
				}
			},
		},
		"in Reload delivery the staged key seals as soon as every pod acknowledged it": {
			in: stable(), edit: func(in *Input) {
				due(in)
				in.Settings.Delivery, in.Status.RolledOutAt = mrtrv1alpha1.DeliveryReload, nil
				in.Workloads = []Workload{withPods(acked("p1", fp(t, a, n)))}
			},
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{n, a}, requeue: 2 * time.Minute, events: []string{"RotationStarted"}},
		},
		"WaitingTTL elapsed: the old key leaves and the next key is staged in the same write": {
			in:     in(mrtrv1alpha1.PhaseWaitingTTL, "", []mrtrv1alpha1.KeyRole{primary, retiring}, n, a),
			edit:   func(in *Input) { in.Status.TTLWaitUntil, in.Status.PhaseStartedAt = at(-time.Second), at(-time.Hour) },
			want:   want{phase: mrtrv1alpha1.PhaseRemoving, write: []string{n, newID}, requeue: 10 * time.Minute, events: []string{"KeyRemoved"}},
			staged: newID, roles: []mrtrv1alpha1.KeyRole{primary, accepted},
			check: func(t *testing.T, d Decision) {
				if note := d.Events[0].Note; !strings.HasPrefix(note, "removed key(s) "+a+":") {
					t.Errorf("KeyRemoved event %q does not name the old key %s", note, a)
				}
			},
		},
		"Removing rolled out completes the rotation: the staged key is now accepted everywhere": {
			in:    in(mrtrv1alpha1.PhaseRemoving, m, []mrtrv1alpha1.KeyRole{primary, accepted}, n, m),
			want:  want{phase: mrtrv1alpha1.PhaseStable, requeue: 720 * time.Hour, events: []string{"RotationCompleted"}},
			roles: []mrtrv1alpha1.KeyRole{primary, stagedR},
			check: func(t *testing.T, d Decision) {
				if d.Status.RotationsCompleted != 1 || d.Status.RolledOutAt == nil || !d.Status.RolledOutAt.Time.Equal(now) {
					t.Errorf("rotationsCompleted = %d, rolledOutAt = %v; want 1, now", d.Status.RotationsCompleted, d.Status.RolledOutAt)
				}
			},
		},
		"a keyring without a staged key (from before Staged, or adopted) rotates in three rounds once": {
			in: func() Input {
				in := input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true))
				in.Settings = staging
				return in
			}(), edit: due,
			want:  want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
			roles: []mrtrv1alpha1.KeyRole{primary, accepted},
		},
		"an adopted keyring's second key is retiring, not staged: it never seals": {
			in: func() Input {
				in := input(withRoles(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a, n), primary, retiring), foreign(t, a, n), deployment("api", fp(t, a, n), true))
				in.Settings = staging
				in.Status.SecretFingerprint = "" // never seen
				return in
			}(),
			want:  want{phase: mrtrv1alpha1.PhaseStable, write: []string{a, n}, requeue: 24 * time.Hour, events: []string{"SecretAdopted"}},
			roles: []mrtrv1alpha1.KeyRole{primary, retiring},
		},
		"nextKey AtRotation still seals with a key staged before, and stages none after": {
			in: stable(), edit: func(in *Input) { due(in); in.Settings.NextKey = mrtrv1alpha1.NextKeyAtRotation },
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{n, a}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},

		// Revocations.
		"revoking the primary removes it at once, and the staged key seals in the same write": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = a },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{n, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID, roles: []mrtrv1alpha1.KeyRole{primary, accepted},
			check: func(t *testing.T, d Decision) {
				if got := d.Status.RevokedKeys; len(got) != 1 || got[0].ID != a || got[0].Role != primary || !got[0].RevokedAt.Time.Equal(now) {
					t.Errorf("revokedKeys = %+v, want %s (Primary) at now", got, a)
				}
				if d.Status.LastHandledRevokeRequest != a || d.Status.LastRotationTime != nil {
					t.Errorf("lastHandledRevokeRequest = %q, lastRotationTime = %v: a revocation is not a rotation", d.Status.LastHandledRevokeRequest, d.Status.LastRotationTime)
				}
				if s := d.Status.Keys[0].SealingSince; s == nil || !s.Time.Equal(now) {
					t.Errorf("the new primary's sealingSince = %v, want now", s)
				}
				c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionKeyRevoked)
				if c.Status != metav1.ConditionTrue || c.Reason != mrtrv1alpha1.ReasonKeyRevoked || !strings.Contains(c.Message, a+" (Primary)") ||
					!strings.Contains(c.Message, now.Format(time.RFC3339)) {
					t.Errorf("KeyRevoked condition = %+v", c)
				}
				if e := d.Events[0]; e.Type != "Warning" || !strings.Contains(e.Note, n+" seals") {
					t.Errorf("event = %+v, want a Warning naming the new primary", e)
				}
			},
		},
		"revoking the staged key replaces it, the primary untouched": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = n },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
		},
		"revoking every key (the whole Secret leaked) writes fresh keys at once, and says tokens in flight fail": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = "*incident-42" },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{newID, newID2}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID2,
			check: func(t *testing.T, d Decision) {
				if len(d.Status.RevokedKeys) != 2 || !strings.Contains(d.Events[0].Note, "every token in flight fails") {
					t.Errorf("revokedKeys = %+v, event %q", d.Status.RevokedKeys, d.Events[0].Note)
				}
			},
		},
		"revoking the primary in Accepting (no staged key) makes the accepted key primary and abandons the rotation": {
			in: in(mrtrv1alpha1.PhaseAccepting, "", []mrtrv1alpha1.KeyRole{primary, accepted}, a, b), edit: func(in *Input) { in.RevokeRequest = a },
			want: want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{b, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			check: func(t *testing.T, d Decision) {
				if !strings.Contains(d.Events[0].Note, "rotation under way (Accepting) is abandoned") {
					t.Errorf("event %q does not say the rotation was abandoned", d.Events[0].Note)
				}
			},
		},
		"revoking the new primary in SealingWithNew hands sealing back to the old key, which every pod accepts": {
			in: in(mrtrv1alpha1.PhaseSealingWithNew, "", []mrtrv1alpha1.KeyRole{primary, retiring}, b, a), edit: func(in *Input) { in.RevokeRequest = b },
			want: want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
		},
		"revoking the old key in WaitingTTL removes it without the wait": {
			in:   in(mrtrv1alpha1.PhaseWaitingTTL, "", []mrtrv1alpha1.KeyRole{primary, retiring}, b, a),
			edit: func(in *Input) { in.RevokeRequest = a; in.Status.TTLWaitUntil = at(time.Hour) },
			want: want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{b, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			check: func(t *testing.T, d Decision) {
				if d.Status.TTLWaitUntil != nil {
					t.Errorf("ttlWaitUntil = %v; want none", d.Status.TTLWaitUntil)
				}
			},
		},
		"revoking the key being staged in Removing stages another": {
			in: in(mrtrv1alpha1.PhaseRemoving, m, []mrtrv1alpha1.KeyRole{primary, accepted}, b, m), edit: func(in *Input) { in.RevokeRequest = m },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{b, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
		},
		"a second revocation during Revoking: the primary goes, the key on its way takes over": {
			in: in(mrtrv1alpha1.PhaseRevoking, m, []mrtrv1alpha1.KeyRole{primary, accepted}, n, m), edit: func(in *Input) { in.RevokeRequest = n },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{m, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
		},
		"revocation works while suspended and while stalled": {
			in: stable(), edit: func(in *Input) {
				in.Settings.Suspend = true
				in.RevokeRequest = a
				in.Status.Phase, in.Status.PhaseStartedAt = mrtrv1alpha1.PhaseSealingWithNew, at(-time.Hour)
				in.Secret.WrittenPhase = mrtrv1alpha1.PhaseSealingWithNew
				in.Workloads[0].RolledOut = false
			},
			want: want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{n, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
		},
		"Revoking rolled out: Stable again, the new staged key staged": {
			in:    in(mrtrv1alpha1.PhaseRevoking, m, []mrtrv1alpha1.KeyRole{primary, accepted}, n, m),
			want:  want{phase: mrtrv1alpha1.PhaseStable, requeue: 24 * time.Hour, events: []string{"RevocationCompleted"}},
			roles: []mrtrv1alpha1.KeyRole{primary, stagedR},
		},
		"a revocation already handled does nothing; neither does one the Secret records as handled": {
			in: stable(), edit: func(in *Input) {
				in.RevokeRequest, in.Status.LastHandledRevokeRequest = a, a
				in.Secret.HandledRevokeRequest = "b"
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 24 * time.Hour},
		},
		"a revocation naming no key of the keyring is refused, loudly, once": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = "k20990101-000000" },
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 24 * time.Hour, events: []string{"RevokeIgnored"}},
			check: func(t *testing.T, d Decision) {
				if d.Status.LastHandledRevokeRequest != "k20990101-000000" {
					t.Errorf("lastHandledRevokeRequest = %q: a refused value must be handled once", d.Status.LastHandledRevokeRequest)
				}
			},
		},
		"a revoked key the Secret holds again (an edit behind our back) is removed again": {
			in: stable(), edit: func(in *Input) {
				in.Status.RevokedKeys = []mrtrv1alpha1.RevokedKey{{ID: n, RevokedAt: *at(-time.Hour)}}
			},
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
		},
		"a revocation whose status update was lost resumes from the Secret's record, and is not repeated": {
			in: stable(), edit: func(in *Input) {
				in.RevokeRequest = a
				in.Secret = stagedSecret(t, mrtrv1alpha1.PhaseRevoking, m, n, m)
				in.Secret.HandledRevokeRequest, in.Secret.Revoked = a, []string{a}
				in.Workloads[0].RolledOut = false
			},
			want: want{phase: mrtrv1alpha1.PhaseRevoking, requeue: 10 * time.Minute, events: []string{"Resumed"}},
			check: func(t *testing.T, d Decision) {
				if got := d.Status.RevokedKeys; len(got) != 1 || got[0].ID != a {
					t.Errorf("revokedKeys = %+v, want %s from the Secret", got, a)
				}
			},
		},
		"a keyring re-created for a Secret it staged resumes Stable, its revocations restored from the Secret": {
			in: func() Input {
				in := input(mrtrv1alpha1.MRTRKeyringStatus{}, stagedSecret(t, mrtrv1alpha1.PhaseStable, n, a, n), deployment("api", fp(t, a, n), true))
				in.Settings = staging
				in.Secret.Revoked, in.Secret.HandledRevokeRequest = []string{b}, b
				in.RevokeRequest = b
				return in
			}(),
			want:  want{phase: mrtrv1alpha1.PhaseStable, requeue: 720 * time.Hour, events: []string{"Resumed"}},
			roles: []mrtrv1alpha1.KeyRole{primary, stagedR},
			check: func(t *testing.T, d Decision) {
				if got := d.Status.RevokedKeys; len(got) != 1 || got[0].ID != b {
					t.Errorf("revokedKeys = %+v, want %s from the Secret", got, b)
				}
			},
		},
		"revocations accumulate: every request written while the operator was away is handled, the first too": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = n + ",k20990101-000000" },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"RevokeIgnored", "KeyRevoked"}},
			staged: newID,
			check: func(t *testing.T, d Decision) {
				if got := d.Status.LastHandledRevokeRequest; got != n+",k20990101-000000" {
					t.Errorf("lastHandledRevokeRequest = %q, want both requests", got)
				}
			},
		},
		"a request handled before stays handled when more are appended; only the new one is acted on": {
			in: stable(), edit: func(in *Input) {
				in.Status.LastHandledRevokeRequest = "k20990101-000000"
				in.RevokeRequest = "k20990101-000000," + n
			},
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
		},
		"a key a request names never seals, not even one made later: a fresh key skips the named id": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = n + "," + newID },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{a, newID2}, requeue: 10 * time.Minute, events: []string{"RevokeIgnored", "KeyRevoked"}},
			staged: newID2,
		},
		"a keyring taken as it is with a request pending: the named key is never written to seal": {
			in: func() Input {
				in := input(mrtrv1alpha1.MRTRKeyringStatus{}, foreign(t, a, n), deployment("api", "", true))
				in.Settings = staging
				return in
			}(),
			edit:   func(in *Input) { in.RevokeRequest = a },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{n, newID}, requeue: 10 * time.Minute, events: []string{"SecretAdopted", "KeyRevoked"}},
			staged: newID,
		},
		"revoking the primary when the staged key is on every pod: the staged key seals, with no window": {
			in: stable(), edit: func(in *Input) { in.RevokeRequest = a },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{n, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
			check: func(t *testing.T, d Decision) {
				if strings.Contains(d.Events[0].Note, "not on every pod") {
					t.Errorf("event %q names a window, but the staged key is on every pod", d.Events[0].Note)
				}
			},
		},
		"revoking the primary in Removing: its successor is on its way, and the KeyRevoked event names the window": {
			in: in(mrtrv1alpha1.PhaseRemoving, m, []mrtrv1alpha1.KeyRole{primary, accepted}, b, m), edit: func(in *Input) { in.RevokeRequest = b },
			want:   want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{m, newID}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
			staged: newID,
			check: func(t *testing.T, d Decision) {
				want := m + " is not on every pod yet: until every pod runs keyring " + d.Secret.Fingerprint() + " (Revoking ends), a pod that does not hold it refuses the tokens sealed with it"
				if !strings.Contains(d.Events[0].Note, want) {
					t.Errorf("event %q does not name the window: %q", d.Events[0].Note, want)
				}
			},
		},
		"publishing another tokenTTL rewrites the same keyring with its staged key still staged": {
			in: stable(), edit: func(in *Input) { in.Secret.TokenTTL = time.Minute },
			want:   want{phase: mrtrv1alpha1.PhaseStable, write: []string{a, n}, requeue: 24 * time.Hour},
			staged: n, roles: []mrtrv1alpha1.KeyRole{primary, stagedR},
		},
		"a new keyring takes a pending revocation as handled: it has nothing the value could name": {
			in: func() Input {
				in := input(mrtrv1alpha1.MRTRKeyringStatus{}, SecretObservation{State: SecretAbsent})
				in.Settings = staging
				return in
			}(),
			edit: func(in *Input) { in.RevokeRequest = "*" },
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{newID, newID2}, requeue: 720 * time.Hour, events: []string{"SecretCreated"}},
		},
		"a fresh key never takes the id of a revoked one": {
			in: func() Input {
				in := input(mrtrv1alpha1.MRTRKeyringStatus{}, SecretObservation{State: SecretAbsent})
				in.Settings = staging
				return in
			}(),
			edit: func(in *Input) {
				in.Status.RevokedKeys = []mrtrv1alpha1.RevokedKey{{ID: newID}}
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{newID2, "k20260806-120002"}, requeue: 720 * time.Hour, events: []string{"SecretCreated"}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := c.in
			if c.edit != nil {
				c.edit(&in)
			}
			d := Step(in)
			checkDecision(t, in, d, c.want)
			if c.staged != "" && d.SecretStaged != c.staged {
				t.Errorf("staged key written = %q, want %q", d.SecretStaged, c.staged)
			}
			if c.roles != nil && !slices.Equal(roles(d), c.roles) {
				t.Errorf("roles = %v, want %v", roles(d), c.roles)
			}
			if c.check != nil {
				c.check(t, d)
			}
		})
	}
}

// What a write records on the Secret reads back as it was written.
func TestSecretAnnotationsRoundTrip(t *testing.T) {
	kr := ring(t, "k1", "k2")
	d := Decision{Secret: kr, SecretPhase: mrtrv1alpha1.PhaseRevoking, SecretStaged: "k2", Status: mrtrv1alpha1.MRTRKeyringStatus{
		LastHandledRotateRequest: "r", LastHandledRevokeRequest: "k0,k9", LastHandledRevokeSequence: 65,
		RevokedKeys: []mrtrv1alpha1.RevokedKey{{ID: "k0"}, {ID: "k9"}},
	}}
	data := map[string][]byte{keyring.SecretDataKey: mustMarshal(t, kr)}
	got := ObserveSecret(true, keyring.SecretType, data, d.SecretAnnotations())
	if !got.writtenByUs() || got.WrittenPhase != mrtrv1alpha1.PhaseRevoking || got.Staged != "k2" || got.HandledRotateRequest != "r" ||
		got.HandledRevokeRequest != "k0,k9" || got.HandledRevokeSequence != 65 || !slices.Equal(got.Revoked, []string{"k0", "k9"}) {
		t.Errorf("read back %+v", got)
	}
}

func mustMarshal(t *testing.T, kr *keyring.Keyring) []byte {
	t.Helper()
	b, err := keyring.Marshal(kr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
