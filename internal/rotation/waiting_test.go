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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// status.waitingFor says what the rotation waits for, for whom and until when, in each situation;
// kubectl mrtr shows it as it is.
func TestWaitingFor(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ttlEnd := now.Add(5 * time.Minute) // phase start + the TTL wait of 6m
	cases := map[string]struct {
		in      Input
		edit    func(*Input)
		what    mrtrv1alpha1.Wait
		forWhom []string
		until   *time.Time
		message string
	}{
		"between rotations: the next one, due at nextRotationTime": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			what: mrtrv1alpha1.WaitNextRotation, until: new(now.Add(24 * time.Hour)), message: "the next rotation, due at 2026-08-07T12:00:00Z",
		},
		"suspended with a rotation requested: a resume, naming the request": {
			in: input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
			edit: func(in *Input) {
				in.Settings.Suspend, in.RotateRequest = true, "2026-12-01T11:59:00Z"
			},
			what:    mrtrv1alpha1.WaitResume,
			message: "a resume: rotations are suspended (spec.suspend), and the rotation requested by mrtr.dev/rotate=2026-12-01T11:59:00Z starts once they are resumed",
		},
		"a rollout under way: the workloads not up to date, with what each waits for": {
			in:   input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), false), deployment("web", fp(t, a, b), true)),
			what: mrtrv1alpha1.WaitDelivery, forWhom: []string{"Deployment/api"},
			message: "1 of 2 workloads to roll out keyring " + fp(t, a, b) + " (Deployment/api: 3 of 3 pods ready), so that every pod accepts the new key before any pod seals with it",
		},
		"rolled out in Restart delivery: the replaced pods, until terminationGracePeriod after the rollout": {
			in: input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true)),
			edit: func(in *Input) {
				in.Status.RolledOutAt = at(-10 * time.Second)
			},
			what: mrtrv1alpha1.WaitReplacedPods, until: new(now.Add(20 * time.Second)),
			message: "the pods the rollout replaced to stop: terminationGracePeriod (30s) after the rollout, until 2026-08-06T12:00:20Z, so that no pod that knew only the old key still serves when the new key seals",
		},
		"the TTL wait: until ttlWaitUntil": {
			in: input(status(t, mrtrv1alpha1.PhaseWaitingTTL, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true)),
			edit: func(in *Input) {
				in.Status.TTLWaitUntil = &metav1.Time{Time: ttlEnd}
			},
			what: mrtrv1alpha1.WaitTokenExpiry, until: &ttlEnd,
			message: "the tokens sealed with the old keys to expire: the TTL wait ends at 2026-08-06T12:05:00Z; then the old keys are removed",
		},
		"a Secret-only keyring: the propagation delay": {
			in:   input(status(t, mrtrv1alpha1.PhaseRemoving, time.Minute, b), ours(t, mrtrv1alpha1.PhaseRemoving, b)),
			what: mrtrv1alpha1.WaitPropagation, until: new(now.Add(time.Minute)),
			message: "the Secret to reach every mounted copy: no workload or pod proves it, so the phase waits spec.propagationDelay (2m0s), until 2026-08-06T12:01:00Z, so that no pod holds the removed keys any more",
		},
		"a rotation requested of a Secret-only keyring whose next key is staged: the propagation delay of the write that staged it": {
			in: input(withRoles(status(t, mrtrv1alpha1.PhaseStable, time.Minute, a, b), primary, stagedR), stagedSecret(t, mrtrv1alpha1.PhaseStable, b, a, b)),
			edit: func(in *Input) {
				in.Settings, in.RotateRequest = staging, "2026-08-06T11:59:00Z"
			},
			what: mrtrv1alpha1.WaitPropagation, until: new(now.Add(time.Minute)),
			message: "the Secret to reach every mounted copy: no workload or pod proves it, so the phase waits spec.propagationDelay (2m0s), until 2026-08-06T12:01:00Z",
		},
		"stalled: a fix, with the Stalled condition's reason and message": {
			in:   input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), SecretObservation{State: SecretInvalid, Problem: "keyring.json: no keys"}),
			what: mrtrv1alpha1.WaitFix,
			message: "a fix: the rotation is stalled (SecretInvalid): Secret payments: keyring.json: no keys; it is never overwritten: fix or delete it; " +
				"it resumes by itself once that is resolved",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			if tc.edit != nil {
				tc.edit(&in)
			}
			d := Step(in)
			w := d.Status.WaitingFor
			if w == nil {
				t.Fatal("status.waitingFor is nil")
			}
			if w.What != tc.what || w.Message != tc.message || strings.Join(w.For, ",") != strings.Join(tc.forWhom, ",") {
				t.Errorf("waitingFor = %s for %v: %q\nwant %s for %v: %q", w.What, w.For, w.Message, tc.what, tc.forWhom, tc.message)
			}
			switch {
			case tc.until == nil && w.Until != nil:
				t.Errorf("until %s, want none", w.Until)
			case tc.until != nil && (w.Until == nil || !w.Until.Time.Equal(*tc.until)):
				t.Errorf("until %v, want %s", w.Until, tc.until)
			case tc.until != nil && d.RequeueAfter != tc.until.Sub(now):
				// The deadline rendered is the one the pass comes back by.
				t.Errorf("requeue after %s, want %s, when waitingFor ends", d.RequeueAfter, tc.until.Sub(now))
			}
		})
	}
}
