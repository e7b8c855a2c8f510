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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

var now = time.Date(2026, 8, 6, 12, 0, 0, 0, time.UTC)

// newID is the id Step gives a key made at now.
const newID = "k20260806-120000"

// settings are those of a keyring in Restart delivery with the next key made at rotation (three
// rounds): the tables of this file decide rollouts; reload_test.go has those of Reload delivery,
// staged_test.go those of a staged next key and of revocations.
var settings = Settings{
	RotationInterval: 720 * time.Hour, TokenTTL: 5 * time.Minute, ClockSkew: 30 * time.Second,
	TerminationGracePeriod: 30 * time.Second, RolloutDeadline: 10 * time.Minute, PropagationDelay: 2 * time.Minute,
	Delivery: mrtrv1alpha1.DeliveryRestart, ReloadDeadline: 2 * time.Minute, NextKey: mrtrv1alpha1.NextKeyAtRotation,
}

// ring builds a keyring whose key bytes derive from the ids, so equal ids give equal fingerprints.
func ring(t testing.TB, ids ...string) *keyring.Keyring {
	t.Helper()
	keys := make([]keyring.Key, len(ids))
	for i, id := range ids {
		keys[i] = keyring.NewKey(id, bytes.Repeat([]byte(id+"."), 32)[:32])
	}
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fp(t testing.TB, ids ...string) string { return ring(t, ids...).Fingerprint() }

// ours is a Secret holding ids, as Step wrote it for phase.
func ours(t testing.TB, phase mrtrv1alpha1.Phase, ids ...string) SecretObservation {
	r := ring(t, ids...)
	return SecretObservation{State: SecretValid, Keyring: r, WrittenPhase: phase, WrittenFingerprint: r.Fingerprint(), TokenTTL: settings.TokenTTL}
}

// foreign is a Secret holding ids that Step never wrote.
func foreign(t testing.TB, ids ...string) SecretObservation {
	return SecretObservation{State: SecretValid, Keyring: ring(t, ids...)}
}

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

// status is the status Step would have left in phase with the Secret holding ids, the phase begun
// started ago.
func status(t testing.TB, phase mrtrv1alpha1.Phase, started time.Duration, ids ...string) mrtrv1alpha1.MRTRKeyringStatus {
	keys := make([]mrtrv1alpha1.KeyStatus, len(ids))
	for i, id := range ids {
		keys[i] = mrtrv1alpha1.KeyStatus{ID: id, Role: mrtrv1alpha1.KeyRetiring}
	}
	keys[0].Role = mrtrv1alpha1.KeyPrimary
	return mrtrv1alpha1.MRTRKeyringStatus{
		Phase: phase, Keys: keys, SecretFingerprint: fp(t, ids...), TargetFingerprint: fp(t, ids...),
		PhaseStartedAt: at(-started), NextRotationTime: at(24 * time.Hour),
	}
}

func deployment(name, stamp string, rolledOut bool) Workload {
	return Workload{Kind: mrtrv1alpha1.KindDeployment, Name: name, Found: true, Stamp: stamp, RolledOut: rolledOut, Ready: 3, Desired: 3}
}

func input(st mrtrv1alpha1.MRTRKeyringStatus, sec SecretObservation, ws ...Workload) Input {
	return Input{
		Now: now, Generation: 1, Settings: settings, Status: st, SecretName: "payments", Secret: sec,
		FreshKeys: [2]keyring.Key{keyring.NewKey("ignored", bytes.Repeat([]byte{0xee}, 32)), keyring.NewKey("ignored", bytes.Repeat([]byte{0xdd}, 32))}, Workloads: ws,
	}
}

type want struct {
	phase   mrtrv1alpha1.Phase
	write   []string // ids written to the Secret; nil: no write
	stamp   []string // ids of the keyring stamped; nil: no stamp
	requeue time.Duration
	stalled string // Stalled reason; "" when not stalled
	events  []string
}

func TestStep(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	fresh := func(f func(*Input)) func(*Input) { return f }
	cases := map[string]struct {
		in   Input
		edit func(*Input)
		want want
	}{
		"a keyring without a Secret creates one with a fresh key and schedules the next rotation": {
			in:   input(mrtrv1alpha1.MRTRKeyringStatus{}, SecretObservation{State: SecretAbsent}),
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{newID}, stamp: []string{newID}, requeue: 720 * time.Hour, events: []string{"SecretCreated"}},
		},
		"a valid Secret nobody wrote through us is adopted as it is and rolled out": {
			in:   input(mrtrv1alpha1.MRTRKeyringStatus{}, foreign(t, "hand", "made"), deployment("api", "", true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{"hand", "made"}, stamp: []string{"hand", "made"}, requeue: 720 * time.Hour, events: []string{"SecretAdopted"}},
		},
		"a Secret of another type is refused, never written and never rolled out, and looked at again now and then (no event tells its deletion)": {
			in:   input(mrtrv1alpha1.MRTRKeyringStatus{}, SecretObservation{State: SecretWrongType, Problem: "type Opaque"}, deployment("api", "", true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, stalled: mrtrv1alpha1.ReasonSecretWrongType, requeue: WrongTypeRecheck, events: []string{"SecretWrongType"}},
		},
		"an invalid keyring.json mid-rotation is refused, and the phase and its timers stay": {
			in:   input(status(t, mrtrv1alpha1.PhaseSealingWithNew, time.Minute, b, a), SecretObservation{State: SecretInvalid, Problem: "keyring.json: keys[1]: ..."}, deployment("api", fp(t, b, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, stalled: mrtrv1alpha1.ReasonSecretInvalid, events: []string{"SecretInvalid"}},
		},
		"a Secret deleted behind our back is recreated with a fresh key and rolled out": {
			in:   input(status(t, mrtrv1alpha1.PhaseWaitingTTL, time.Minute, b, a), SecretObservation{State: SecretAbsent}, deployment("api", fp(t, b, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{"k20260806-120001"}, stamp: []string{"k20260806-120001"}, requeue: 720 * time.Hour, events: []string{"SecretRecreated"}},
		},
		"a Secret changed behind our back keeps every key it holds and restarts from Stable": {
			in:   input(status(t, mrtrv1alpha1.PhaseWaitingTTL, time.Minute, b, a), foreign(t, b, a, "extra"), deployment("api", fp(t, b, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{b, a, "extra"}, stamp: []string{b, a, "extra"}, requeue: 24 * time.Hour, events: []string{"SecretChanged"}},
		},
		"our own write whose status update was lost resumes in the phase it was written for": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"Resumed"}},
		},
		"Stable before the due time waits exactly until it": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 24 * time.Hour},
		},
		"Stable at the due time appends a new key, which is accepted but does not seal": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: fresh(func(in *Input) { in.Status.NextRotationTime = at(-time.Second) }),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"a shortened rotationInterval counts from the last rotation: 720h to 1h, two hours ago, is due now": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, 2*time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Settings.RotationInterval = time.Hour
				in.Status.LastRotationTime, in.Status.NextRotationTime = at(-2*time.Hour), at(718*time.Hour)
			},
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute,
				events: []string{"RotationRescheduled", "RotationStarted"}},
		},
		"before the first rotation a shortened interval counts from the primary key's creation": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Settings.RotationInterval = time.Hour
				in.Status.Keys[0].CreatedAt = *at(-30 * time.Minute)
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 30 * time.Minute, events: []string{"RotationRescheduled"}},
		},
		"a lengthened rotationInterval pushes the next rotation back": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Settings.RotationInterval = 48 * time.Hour
				in.Status.LastRotationTime, in.Status.NextRotationTime = at(-time.Hour), at(-time.Second)
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 47 * time.Hour, events: []string{"RotationRescheduled"}},
		},
		"an unchanged interval reschedules nothing": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Status.LastRotationTime, in.Status.NextRotationTime = at(-696*time.Hour), at(24*time.Hour)
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 24 * time.Hour},
		},
		"a new rotation request starts a rotation early": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) { in.RotateRequest = "now-please" },
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"a request already handled starts nothing": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.RotateRequest, in.Status.LastHandledRotateRequest = "r1", "r1"
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 24 * time.Hour},
		},
		"a request a re-created keyring's predecessor handled, as the Secret records, starts nothing": {
			in: input(mrtrv1alpha1.MRTRKeyringStatus{}, ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.RotateRequest, in.Secret.HandledRotateRequest = "r1", "r1"
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 720 * time.Hour, events: []string{"Resumed"}},
		},
		"a Secret that another existing keyring owns is left alone: no write, no stamp, a Conflict naming the owner": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Secret.ClaimedBy, in.RotateRequest = "payments-old", "now"
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 24 * time.Hour, stalled: mrtrv1alpha1.ReasonConflict, events: []string{"Conflict"}},
		},
		"a target whose stamp another keyring owns is not stamped, and the rotation does not leave Accepting": {
			in: input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
				deployment("api", fp(t, a, b), true), Workload{Kind: mrtrv1alpha1.KindDeployment, Name: "shared", Found: true, Stamp: "ffff", RolledOut: true, ClaimedBy: "other"}),
			edit: func(in *Input) { in.Status.RolledOutAt = at(-time.Minute) },
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 10*time.Minute - time.Minute, stalled: mrtrv1alpha1.ReasonConflict, events: []string{"Conflict"}},
		},
		"suspend holds a due rotation and a request": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Settings.Suspend, in.RotateRequest, in.Status.NextRotationTime = true, "r2", at(-time.Hour)
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}},
		},
		"suspend lets a rotation under way finish its phase": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true)),
			edit: func(in *Input) { in.Settings.Suspend, in.Status.RolledOutAt = true, at(-30*time.Second) },
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, stamp: []string{b, a}, requeue: 10 * time.Minute, events: []string{"KeySealing"}},
		},
		"a full adopted keyring cannot take a new key and stalls": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, "1", "2", "3", "4", "5", "6", "7", "8"), ours(t, mrtrv1alpha1.PhaseStable, "1", "2", "3", "4", "5", "6", "7", "8")),
			edit: func(in *Input) { in.Status.NextRotationTime = at(-time.Second) },
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{"1", "2", "3", "4", "5", "6", "7", "8"}, stalled: mrtrv1alpha1.ReasonKeyringFull, events: []string{"KeyringFull"}},
		},
		"Accepting waits while a target still runs pods of the old template": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), false), deployment("web", fp(t, a, b), true)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 9 * time.Minute},
		},
		"Accepting waits while a target is not stamped yet": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a), true)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 9 * time.Minute},
		},
		"Accepting does not advance while a named target is missing": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true), Workload{Kind: mrtrv1alpha1.KindStatefulSet, Name: "gone"}),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 9 * time.Minute, stalled: mrtrv1alpha1.ReasonWorkloadNotFound, events: []string{"WorkloadNotFound"}},
		},
		"Accepting past the rollout deadline stalls, naming the workload, and does not advance": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, 11*time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), false)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{"RolloutDeadlineExceeded"}},
		},
		"Accepting once rolled out waits terminationGracePeriod more for the replaced pods to stop": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: 30 * time.Second},
		},
		"Accepting past the deadline advances by itself once the rollout completes": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Hour, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true)),
			edit: func(in *Input) { in.Status.RolledOutAt = at(-time.Minute) },
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, stamp: []string{b, a}, requeue: 10 * time.Minute, events: []string{"KeySealing"}},
		},
		"SealingWithNew once rolled out starts the TTL wait of tokenTTL + clockSkew + grace": {
			in:   input(status(t, mrtrv1alpha1.PhaseSealingWithNew, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true), Workload{Kind: mrtrv1alpha1.KindDaemonSet, Name: "gone"}),
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, stamp: []string{b, a}, requeue: 6 * time.Minute, events: []string{"WorkloadNotFound"}},
		},
		"WaitingTTL after a restart keeps its end time and waits exactly until it": {
			in:   input(status(t, mrtrv1alpha1.PhaseWaitingTTL, 2*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) { in.Status.TTLWaitUntil = at(4 * time.Minute) },
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, stamp: []string{b, a}, requeue: 4 * time.Minute},
		},
		"tokenTTL raised during WaitingTTL extends the wait to the new lifetime, counted from its start": {
			in: input(status(t, mrtrv1alpha1.PhaseWaitingTTL, 6*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) {
				in.Settings.TokenTTL = 15 * time.Minute // 5m when the wait began: it ended now
				in.Status.TTLWaitUntil = at(0)
				in.Status.TTLWaits = &mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: 6 * time.Minute}, Retiring: &metav1.Duration{Duration: 6 * time.Minute}}
			},
			// The Secret is rewritten, same keys, to declare the new lifetime to the servers.
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, write: []string{b, a}, stamp: []string{b, a}, requeue: 10 * time.Minute, events: []string{"TTLWaitExtended"}},
		},
		"tokenTTL lowered during WaitingTTL never shortens the wait": {
			in: input(status(t, mrtrv1alpha1.PhaseWaitingTTL, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) {
				in.Settings.TokenTTL = time.Minute
				in.Status.TTLWaitUntil = at(5 * time.Minute)
				in.Status.TTLWaits = &mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: 6 * time.Minute}, Retiring: &metav1.Duration{Duration: 6 * time.Minute}}
			},
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, write: []string{b, a}, stamp: []string{b, a}, requeue: 5 * time.Minute},
		},
		"a Secret that does not declare spec.tokenTTL to its readers is rewritten, keys unchanged": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) { in.Secret.TokenTTL = 0 },
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{a}, stamp: []string{a}, requeue: 24 * time.Hour},
		},
		"a longer TTL declared while the old key sealed, lowered since, still sets the wait": {
			in: input(status(t, mrtrv1alpha1.PhaseSealingWithNew, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) {
				in.Status.TTLWaits = &mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: 6 * time.Minute}, Retiring: &metav1.Duration{Duration: 16 * time.Minute}}
			},
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, stamp: []string{b, a}, requeue: 16 * time.Minute},
		},
		"WaitingTTL at its end removes the old keys": {
			in:   input(status(t, mrtrv1alpha1.PhaseWaitingTTL, 6*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) { in.Status.TTLWaitUntil = at(0) },
			want: want{phase: mrtrv1alpha1.PhaseRemoving, write: []string{b}, stamp: []string{b}, requeue: 10 * time.Minute, events: []string{"KeyRemoved"}},
		},
		"Removing once rolled out completes the rotation and schedules the next": {
			in:   input(status(t, mrtrv1alpha1.PhaseRemoving, time.Minute, b), ours(t, mrtrv1alpha1.PhaseRemoving, b), deployment("api", fp(t, b), true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{b}, requeue: 720 * time.Hour, events: []string{"RotationCompleted"}},
		},
		"a Secret-only keyring waits propagationDelay instead of a rollout": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b)),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stamp: []string{a, b}, requeue: time.Minute},
		},
		"a Secret-only keyring advances once propagationDelay has passed": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, 2*time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b)),
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, stamp: []string{b, a}, requeue: 2 * time.Minute, events: []string{"KeySealing"}},
		},
		"Stable with a target not yet on the keyring rolls it out without stalling": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("new", "", true)),
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 24 * time.Hour},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := c.in
			if c.edit != nil {
				c.edit(&in)
			}
			d := Step(in)
			if d.Status.Phase != c.want.phase {
				t.Errorf("phase = %s, want %s", d.Status.Phase, c.want.phase)
			}
			var wrote []string
			if d.Secret != nil {
				wrote = d.Secret.IDs()
				if d.SecretPhase != c.want.phase {
					t.Errorf("Secret written for phase %s, want %s", d.SecretPhase, c.want.phase)
				}
			}
			if !slices.Equal(wrote, c.want.write) {
				t.Errorf("wrote %v, want %v", wrote, c.want.write)
			}
			wantStamp := ""
			if c.want.stamp != nil {
				wantStamp = fp(t, c.want.stamp...)
				if c.want.write != nil && d.Secret != nil {
					wantStamp = d.Secret.Fingerprint() // fresh key bytes are not derived from the id
				}
			}
			if d.Stamp != wantStamp {
				t.Errorf("stamp = %q, want %q (keys %v)", d.Stamp, wantStamp, c.want.stamp)
			}
			if d.RequeueAfter != c.want.requeue {
				t.Errorf("requeueAfter = %s, want %s", d.RequeueAfter, c.want.requeue)
			}
			stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
			gotStall := ""
			if stalled.Status == metav1.ConditionTrue {
				gotStall = stalled.Reason
			}
			if gotStall != c.want.stalled {
				t.Errorf("Stalled reason = %q, want %q (%s)", gotStall, c.want.stalled, stalled.Message)
			}
			reasons := make([]string, 0, len(d.Events))
			for _, e := range d.Events {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(reasons, c.want.events) {
				t.Errorf("events = %v, want %v", reasons, c.want.events)
			}
			if d.Status.ObservedGeneration != in.Generation {
				t.Errorf("observedGeneration = %d, want %d", d.Status.ObservedGeneration, in.Generation)
			}
		})
	}
}

// The longest TTL wait declared while a key is primary follows it into retirement when a new key
// takes over sealing, and leaves with it.
func TestTTLWaitsFollowTheKeys(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	in := input(status(t, mrtrv1alpha1.PhaseAccepting, time.Hour, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true))
	in.Status.RolledOutAt = at(-time.Minute)
	in.Status.TTLWaits = &mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: 16 * time.Minute}} // once 15m while a sealed
	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew {
		t.Fatalf("phase %s", d.Status.Phase)
	}
	w := d.Status.TTLWaits
	if w == nil || w.Retiring == nil || w.Retiring.Duration != 16*time.Minute || w.Primary.Duration != settings.TTLWait() {
		t.Fatalf("entering SealingWithNew: ttlWaits %+v, want retiring 16m and primary %v", w, settings.TTLWait())
	}
	in = input(status(t, mrtrv1alpha1.PhaseWaitingTTL, 20*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true))
	in.Status.TTLWaitUntil, in.Status.TTLWaits = at(-4*time.Minute), d.Status.TTLWaits
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseRemoving || d.Status.TTLWaits.Retiring != nil {
		t.Fatalf("entering Removing: phase %s, ttlWaits %+v; want Removing without retiring", d.Status.Phase, d.Status.TTLWaits)
	}
}

// A target whose every restart is an outage (a Deployment with strategy Recreate) is named in a
// Warning event whenever a keyring is written for it to roll out, and in the Ready message always.
func TestOutageStrategiesAreWarned(t *testing.T) {
	a := "k20260101-000000"
	recreate := deployment("api", fp(t, a), true)
	recreate.Outage = "strategy Recreate stops every pod before it starts new ones"
	in := input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), recreate)
	d := Step(in)
	ready := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionReady)
	if ready == nil || !strings.Contains(ready.Message, "every restart is an outage for Deployment/api (strategy Recreate") {
		t.Fatalf("Ready message %q does not name the outage", ready.Message)
	}
	for _, e := range d.Events {
		if e.Reason == "RestartIsOutage" {
			t.Fatalf("a pass that writes nothing warned: %v", e)
		}
	}
	in.RotateRequest = "go"
	d = Step(in)
	var warned bool
	for _, e := range d.Events {
		warned = warned || e.Reason == "RestartIsOutage" && e.Type == corev1Warning && strings.Contains(e.Note, "Deployment/api")
	}
	if d.Secret == nil || !warned {
		t.Fatalf("the rotation's first write (%v) did not warn of the outage: %+v", d.Secret, d.Events)
	}
}

// Any number of targets: status lists at most MaxListedWorkloads, those not up to date first, and
// counts them all; condition messages name ten and count the rest, so that the status of a keyring
// with thousands of targets stays well inside what the API server accepts.
func TestManyWorkloadsStayWithinStatusLimits(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ws := make([]Workload, 0, 1000)
	for i := range 1000 {
		stamp := fp(t, a, b)
		if i%10 == 3 { // 100 of them have not rolled out the keyring yet
			stamp = fp(t, a)
		}
		ws = append(ws, deployment(fmt.Sprintf("mcp-%04d", i), stamp, true))
	}
	d := Step(input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), ws...))
	st := d.Status
	if st.WorkloadCount != 1000 || st.WorkloadsUpToDate != 900 {
		t.Fatalf("counts %d, %d up to date; want 1000, 900", st.WorkloadCount, st.WorkloadsUpToDate)
	}
	if len(st.Workloads) != MaxListedWorkloads {
		t.Fatalf("%d workloads listed, want %d", len(st.Workloads), MaxListedWorkloads)
	}
	for i, w := range st.Workloads {
		if w.UpToDate {
			t.Fatalf("workloads[%d] %s is up to date, listed before %d that are not", i, w.Name, 100-i)
		}
	}
	for _, c := range st.Conditions {
		if len(c.Message) > 4096 {
			t.Errorf("%s message is %d bytes", c.Type, len(c.Message))
		}
	}
	if r := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionReconciling); !strings.Contains(r.Message, "and 90 more") {
		t.Errorf("Reconciling message does not count the workloads it leaves out: %s", r.Message)
	}
}

// A pass that stamps a target says so in the target's status, and a pass that finds the stamp
// before the workload's controller has seen it says the same: a pass in between (woken by the
// operator's own writes) then has nothing to write, which with thousands of keyrings is thousands
// of status updates.
func TestStampedTargetsReportTheirRollout(t *testing.T) {
	a := "k20260101-000000"
	in := input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true))
	in.RotateRequest = "go"
	d := Step(in)
	if d.Stamp == "" || len(d.Status.Workloads) != 1 {
		t.Fatalf("the rotation's first pass stamps nothing (stamp %q, workloads %+v)", d.Stamp, d.Status.Workloads)
	}
	if w := d.Status.Workloads[0]; w.UpToDate || w.Message != "Deployment/api: rollout of keyring "+d.Stamp+" started" {
		t.Errorf("the stamped target reads %+v; want not up to date, its rollout started", w)
	}

	// Stable on keyring a: a target not yet stamped with it is stamped by this pass, and one stamped
	// whose controller has not seen the stamp yet reads the same.
	stable := func(w Workload) mrtrv1alpha1.WorkloadStatus {
		d := Step(input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), w))
		return d.Status.Workloads[0]
	}
	unstamped := deployment("api", "0000000000000000", true)
	observing := deployment("api", fp(t, a), false)
	observing.Unobserved = true
	if got, want := stable(observing), stable(unstamped); got.Message != want.Message || got.Message != "Deployment/api: rollout of keyring "+fp(t, a)+" started" {
		t.Errorf("stamped, not yet observed: %q; being stamped: %q; want both to say the rollout started", got.Message, want.Message)
	}

	// One claimed by another keyring is not stamped, and says it is not.
	in.Workloads[0].ClaimedBy = "other"
	d = Step(in)
	if w := d.Status.Workloads[0]; !strings.Contains(w.Message, "not yet stamped") {
		t.Errorf("a target claimed by another keyring reads %q", w.Message)
	}
}
