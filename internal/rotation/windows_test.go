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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// windows parses schedule/duration/zone triples, failing the test on a problem.
func windows(t testing.TB, entries ...string) *Windows {
	t.Helper()
	w := ParseWindows(windowSpec(t, entries...))
	if !w.Valid() {
		t.Fatal(w.Problem)
	}
	return w
}

// windowSpec is spec.rotationWindows from "schedule|duration|zone" entries.
func windowSpec(t testing.TB, entries ...string) []mrtrv1alpha1.RotationWindow {
	t.Helper()
	spec := make([]mrtrv1alpha1.RotationWindow, 0, len(entries))
	for _, e := range entries {
		p := strings.Split(e, "|")
		d, err := time.ParseDuration(p[1])
		if err != nil {
			t.Fatal(err)
		}
		spec = append(spec, mrtrv1alpha1.RotationWindow{Schedule: p[0], Duration: metav1.Duration{Duration: d}, TimeZone: p[2]})
	}
	return spec
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestWindowsOpenAndNext: when a window is open, and when the next one opens, around daylight
// saving changes too (Europe/Berlin moves from CET, UTC+1, to CEST, UTC+2, at 02:00 on 29 March
// 2026, and back at 03:00 on 25 October 2026).
func TestWindowsOpenAndNext(t *testing.T) {
	cases := map[string]struct {
		windows []string
		t       string
		open    bool
		next    string // the first moment at or after t inside a window
		closes  string // when that window closes
	}{
		"inside a window it is open until the window closes": {
			windows: []string{"0 2 * * *|2h|UTC"}, t: "2026-08-06T03:00:00Z", open: true,
			next: "2026-08-06T03:00:00Z", closes: "2026-08-06T04:00:00Z"},
		"a window is open from its opening, inclusive": {
			windows: []string{"0 2 * * *|2h|UTC"}, t: "2026-08-06T02:00:00Z", open: true,
			next: "2026-08-06T02:00:00Z", closes: "2026-08-06T04:00:00Z"},
		"and closed at its close": {
			windows: []string{"0 2 * * *|2h|UTC"}, t: "2026-08-06T04:00:00Z",
			next: "2026-08-07T02:00:00Z", closes: "2026-08-07T04:00:00Z"},
		"just before a window the next is its opening": {
			windows: []string{"0 2 * * *|2h|UTC"}, t: "2026-08-06T01:59:59Z",
			next: "2026-08-06T02:00:00Z", closes: "2026-08-06T04:00:00Z"},
		"weekday names and the zone: Sunday 02:00 in New York is 06:00 UTC in summer": {
			windows: []string{"0 2 * * SUN|3h|America/New_York"}, t: "2026-08-06T12:00:00Z",
			next: "2026-08-09T06:00:00Z", closes: "2026-08-09T09:00:00Z"},
		"the earliest of several windows": {
			windows: []string{"0 2 * * SUN|3h|UTC", "30 12 * * *|30m|UTC"}, t: "2026-08-06T12:00:00Z",
			next: "2026-08-06T12:30:00Z", closes: "2026-08-06T13:00:00Z"},
		"a window that spans midnight is open after it": {
			windows: []string{"0 22 * * *|4h|UTC"}, t: "2026-08-07T01:00:00Z", open: true,
			next: "2026-08-07T01:00:00Z", closes: "2026-08-07T02:00:00Z"},
		"across the change to summer time the same wall-clock opening is an hour earlier in UTC": {
			windows: []string{"0 9 * * *|1h|Europe/Berlin"}, t: "2026-03-28T10:00:00Z", // Saturday 11:00 CET
			next: "2026-03-29T07:00:00Z", closes: "2026-03-29T08:00:00Z"}, // Sunday 09:00 CEST
		"an opening in the hour the change to summer time skips opens no window that day": {
			windows: []string{"30 2 * * *|1h|Europe/Berlin"}, t: "2026-03-28T02:30:00Z", // Saturday 03:30 CET, after that day's window
			next: "2026-03-30T00:30:00Z", closes: "2026-03-30T01:30:00Z"}, // Monday 02:30 CEST
		"duration is elapsed time: a window over the change back to winter time closes an hour earlier by the clock": {
			windows: []string{"0 1 * * *|3h|Europe/Berlin"}, t: "2026-10-25T01:30:00Z", open: true, // opened 01:00 CEST = 23:00Z
			next: "2026-10-25T01:30:00Z", closes: "2026-10-25T02:00:00Z"}, // 03:00 CET, not 04:00
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			w := windows(t, c.windows...)
			at := utc(c.t)
			if _, _, open := w.OpenAt(at); open != c.open {
				t.Errorf("OpenAt(%s) = %v, want %v", c.t, open, c.open)
			}
			next, _, closes, ok := w.NextOpen(at)
			if !ok || !next.Equal(utc(c.next)) {
				t.Errorf("NextOpen(%s) = %s (%v), want %s", c.t, next.UTC().Format(time.RFC3339), ok, c.next)
			}
			if c.closes != "" && !closes.Equal(utc(c.closes)) {
				t.Errorf("closes = %s, want %s", closes.UTC().Format(time.RFC3339), c.closes)
			}
		})
	}
}

// TestParseWindowsNamesTheField: what the API's pattern lets through but the parser refuses is
// reported naming the entry's field.
func TestParseWindowsNamesTheField(t *testing.T) {
	cases := map[string]struct {
		entries []string
		field   string
	}{
		"a range that runs backwards":         {[]string{"0 2 * * *|1h|UTC", "5-1 * * * *|1h|UTC"}, "spec.rotationWindows[1].schedule"},
		"six fields":                          {[]string{"0 0 2 * * *|1h|UTC"}, "spec.rotationWindows[0].schedule"},
		"an @ macro":                          {[]string{"@daily|1h|UTC"}, "spec.rotationWindows[0].schedule"},
		"a zone in the schedule":              {[]string{"TZ=Europe/Berlin 0 2 * * *|1h|UTC"}, "spec.rotationWindows[0].schedule"},
		"a schedule that never fires":         {[]string{"0 0 30 2 *|1h|UTC"}, "spec.rotationWindows[0].schedule"},
		"an unknown zone":                     {[]string{"0 2 * * *|1h|Mars/Olympus"}, "spec.rotationWindows[0].timeZone"},
		"the operator's own zone, not a name": {[]string{"0 2 * * *|1h|Local"}, "spec.rotationWindows[0].timeZone"},
		"a window shorter than a minute":      {[]string{"0 2 * * *|30s|UTC"}, "spec.rotationWindows[0].duration"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			w := ParseWindows(windowSpec(t, c.entries...))
			if w.Valid() || !strings.HasPrefix(w.Problem, c.field+": ") {
				t.Fatalf("Problem = %q, want it to start with %s", w.Problem, c.field)
			}
		})
	}
	if w := ParseWindows(windowSpec(t, "0 2 * * *|1h|")); !w.Valid() {
		t.Fatalf("an empty timeZone is UTC: %s", w.Problem)
	}
	if ParseWindows(nil) != nil {
		t.Fatal("no windows parse to nil, which is always open")
	}
}

// TestWindowedStep: the rotation windows through Step, in Restart delivery (settings) with the
// next key made at rotation, so that the start of a rotation is its Accepting write.
func TestWindowedStep(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	// now is Thursday 2026-08-06 12:00 UTC.
	stable := func(win ...string) Input {
		in := input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true))
		in.Status.NextRotationTime = at(-time.Second) // due
		in.Settings.Windows = windows(t, win...)
		return in
	}
	opens := func(s string) func(*testing.T, Decision) {
		return func(t *testing.T, d Decision) {
			t.Helper()
			if got := d.Status.NextRotationTime; got == nil || !got.Equal(&metav1.Time{Time: utc(s)}) {
				t.Errorf("nextRotationTime = %v, want %s", got, s)
			}
			if w := d.Status.NextWindow; w == nil || !w.OpensAt.Time.Equal(utc(s)) {
				t.Errorf("nextWindow = %+v, want it to open at %s", w, s)
			}
		}
	}
	cases := map[string]struct {
		in    Input
		edit  func(*Input)
		want  want
		check func(*testing.T, Decision)
	}{
		"due just before a window: nothing starts, and the next rotation is the window's opening": {
			in:    stable("0 13 * * *|1h|UTC"),
			want:  want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: time.Hour},
			check: opens("2026-08-06T13:00:00Z"),
		},
		"at the window's opening the rotation starts": {
			in: stable("0 13 * * *|1h|UTC"),
			edit: func(in *Input) {
				in.Now, in.Status.NextRotationTime = utc("2026-08-06T13:00:00Z"), &metav1.Time{Time: utc("2026-08-06T13:00:00Z")}
			},
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, "k20260806-130000"}, stamp: []string{a, "k20260806-130000"}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"due inside a window: the rotation starts at once": {
			in:   stable("0 11 * * *|2h|UTC"),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"due across the change to summer time: the window opens at 09:00 Berlin time, 07:00 UTC instead of 08:00": {
			in: stable("0 9 * * *|1h|Europe/Berlin"),
			edit: func(in *Input) {
				in.Now, in.Status.NextRotationTime = utc("2026-03-28T10:00:00Z"), &metav1.Time{Time: utc("2026-03-28T09:30:00Z")}
			},
			want:  want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 21 * time.Hour},
			check: opens("2026-03-29T07:00:00Z"),
		},
		"a window shorter than one rotation: the rotation that started in it goes on after it closes": {
			in: func() Input {
				in := input(status(t, mrtrv1alpha1.PhaseSealingWithNew, 20*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true))
				in.Settings.Windows = windows(t, "45 11 * * *|10m|UTC") // 11:45 to 11:55; the phase began at 11:40
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, stamp: []string{b, a}, requeue: 6 * time.Minute},
		},
		"and its TTL wait ends, and the old key leaves, outside every window": {
			in: func() Input {
				in := input(status(t, mrtrv1alpha1.PhaseWaitingTTL, 20*time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), deployment("api", fp(t, b, a), true))
				in.Status.TTLWaitUntil = at(-time.Second)
				in.Settings.Windows = windows(t, "45 11 * * *|10m|UTC")
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseRemoving, write: []string{b}, stamp: []string{b}, requeue: 10 * time.Minute, events: []string{"KeyRemoved"}},
		},
		"a rotation that completes schedules the next one at the opening of the first window after the interval": {
			in: func() Input {
				in := input(status(t, mrtrv1alpha1.PhaseRemoving, time.Minute, b), ours(t, mrtrv1alpha1.PhaseRemoving, b), deployment("api", fp(t, b), true))
				in.Settings.Windows = windows(t, "0 2 * * SUN|2h|UTC")
				return in
			}(),
			want:  want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{b}, requeue: 734 * time.Hour, events: []string{"RotationCompleted"}},
			check: opens("2026-09-06T02:00:00Z"), // due Saturday 2026-09-05 12:00
		},
		"a manual request outside every window starts at once": {
			in:   stable("0 2 * * SUN|2h|UTC"),
			edit: func(in *Input) { in.RotateRequest = "incident-7" },
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"a revocation outside every window takes effect at once": {
			in: func() Input {
				in := stable("0 2 * * SUN|2h|UTC")
				in.RevokeRequest = a
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseRevoking, write: []string{b}, stamp: []string{b}, requeue: 10 * time.Minute, events: []string{"KeyRevoked"}},
		},
		"a rotation due in a window that closed before it started moves to the next opening": {
			in: stable("0 10 * * *|1h|UTC"),
			edit: func(in *Input) {
				in.Status.Keys[0].SealingSince = &metav1.Time{Time: utc("2026-07-07T10:30:00Z")} // due 2026-08-06T10:30, in the window
				in.Status.NextRotationTime = &metav1.Time{Time: utc("2026-08-06T10:30:00Z")}
			},
			want:  want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 22 * time.Hour, events: []string{"RotationRescheduled"}},
			check: opens("2026-08-07T10:00:00Z"),
		},
		"a schedule the API let through but the parser refuses holds scheduled rotations, naming the field": {
			in: func() Input {
				in := stable()
				in.Settings.Windows = ParseWindows(windowSpec(t, "5-1 * * * *|1h|UTC"))
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, stalled: mrtrv1alpha1.ReasonRotationWindowInvalid, events: []string{mrtrv1alpha1.ReasonRotationWindowInvalid}},
			check: func(t *testing.T, d Decision) {
				if c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled); !strings.HasPrefix(c.Message, "spec.rotationWindows[0].schedule: ") {
					t.Errorf("Stalled message = %q, want it to name spec.rotationWindows[0].schedule", c.Message)
				}
			},
		},
		"and a request still starts a rotation": {
			in: func() Input {
				in := stable()
				in.Settings.Windows = ParseWindows(windowSpec(t, "5-1 * * * *|1h|UTC"))
				in.RotateRequest = "now"
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, write: []string{a, b}, stamp: []string{a, b}, requeue: 10 * time.Minute, events: []string{"RotationStarted"}},
		},
		"no window within rotationInterval of the due time: a Warning condition says so": {
			in: stable("0 3 1 1 *|2h|UTC"),
			edit: func(in *Input) {
				in.Settings.RotationInterval = 24 * time.Hour
				in.Status.NextRotationTime = at(time.Hour)
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: 3543 * time.Hour},
			check: func(t *testing.T, d Decision) {
				c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows)
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != mrtrv1alpha1.ReasonNoWindowWithinInterval {
					t.Fatalf("RotationWindowWarning = %+v, want True %s", c, mrtrv1alpha1.ReasonNoWindowWithinInterval)
				}
				if !strings.Contains(c.Message, "2027-01-01T03:00:00Z") {
					t.Errorf("message %q does not say when the window opens", c.Message)
				}
			},
		},
		"a window within the interval: the condition is False": {
			in:   stable("0 13 * * *|1h|UTC"),
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: time.Hour},
			check: func(t *testing.T, d Decision) {
				if c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows); c == nil || c.Status != metav1.ConditionFalse {
					t.Fatalf("RotationWindowWarning = %+v, want False", c)
				}
			},
		},
		"without windows the condition goes": {
			in: stable(),
			edit: func(in *Input) {
				in.Settings.Windows = nil
				in.Status.NextRotationTime = at(time.Hour)
				in.Status.Conditions = []metav1.Condition{{Type: mrtrv1alpha1.ConditionRotationWindows, Status: metav1.ConditionTrue, Reason: mrtrv1alpha1.ReasonNoWindowWithinInterval}}
			},
			want: want{phase: mrtrv1alpha1.PhaseStable, stamp: []string{a}, requeue: time.Hour},
			check: func(t *testing.T, d Decision) {
				if c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows); c != nil || d.Status.NextWindow != nil {
					t.Fatalf("RotationWindowWarning = %+v, nextWindow = %+v, want neither", c, d.Status.NextWindow)
				}
			},
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
			checkStamp(t, d, c.want.stamp)
			if c.check != nil {
				c.check(t, d)
			}
		})
	}
}

// checkStamp is TestStep's check of Decision.Stamp: the fingerprint of the ids, or of the keyring
// written (fresh key bytes are not derived from the id).
func checkStamp(t *testing.T, d Decision, ids []string) {
	t.Helper()
	want := ""
	if ids != nil {
		want = fp(t, ids...)
		if d.Secret != nil {
			want = d.Secret.Fingerprint()
		}
	}
	if d.Stamp != want {
		t.Errorf("stamp = %q, want %q (keys %v)", d.Stamp, want, ids)
	}
}
