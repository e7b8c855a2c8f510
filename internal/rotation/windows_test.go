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
		"an opening in the hour the change to summer time skips opens at the first instant after it": {
			windows: []string{"30 2 * * *|1h|Europe/Berlin"}, t: "2026-03-28T02:30:00Z", // Saturday 03:30 CET, after that day's window
			next: "2026-03-29T01:00:00Z", closes: "2026-03-29T02:00:00Z"}, // Sunday 03:00 CEST
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

// TestWindowsAtClockChanges: the openings of windows around every 2026 daylight saving change of
// zones whose clocks change at midnight (Asia/Beirut), by half an hour (Australia/Lord_Howe), by
// two hours (Antarctica/Troll), at a quarter to the hour (Pacific/Chatham), and of the common
// zones. The rule (window.next): each matching wall-clock time opens once; a time the clock
// repeats opens at its first occurrence; a time the clock skips opens at the first instant after
// the skip. Every window is 10m long, shorter than the time between two openings here, so that a
// window is open exactly from each listed opening for 10m, which is checked minute by minute.
func TestWindowsAtClockChanges(t *testing.T) {
	cases := []struct {
		zone, schedule, from string
		// openings are the successive openings after from, in UTC; the comments give local time.
		openings []string
	}{
		// Asia/Beirut: 00:00 +02 becomes 01:00 +03 on Sunday 29 March; 00:00 +03 becomes 23:00 +02
		// on Saturday 24 October (an hour of Saturday repeats).
		{"Asia/Beirut", "0 2 * * SUN", "2026-03-20T00:00:00Z", []string{
			"2026-03-22T00:00:00Z", // 22 March 02:00 +02
			"2026-03-28T23:00:00Z", // 29 March 02:00 +03: it exists, and opens
			"2026-04-04T23:00:00Z"}},
		{"Asia/Beirut", "0 0 * * *", "2026-03-27T00:00:00Z", []string{
			"2026-03-27T22:00:00Z",   // 28 March 00:00 +02
			"2026-03-28T22:00:00Z",   // 29 March 00:00 is skipped: 01:00 +03
			"2026-03-29T21:00:00Z"}}, // 30 March 00:00 +03
		{"Asia/Beirut", "30 23 * * *", "2026-10-23T00:00:00Z", []string{
			"2026-10-23T20:30:00Z",   // 23 October 23:30 +03
			"2026-10-24T20:30:00Z",   // 24 October 23:30, first of two: +03 (not 21:30Z)
			"2026-10-25T21:30:00Z"}}, // 25 October 23:30 +02
		{"Asia/Beirut", "0 0 * * SUN", "2026-10-17T00:00:00Z", []string{
			"2026-10-17T21:00:00Z", // 18 October 00:00 +03
			"2026-10-24T22:00:00Z", // 25 October 00:00 +02, once, after the repeated hour
			"2026-10-31T22:00:00Z"}},
		// Australia/Lord_Howe: 02:00 +11 becomes 01:30 +10:30 on 5 April; 02:00 +10:30 becomes
		// 02:30 +11 on 4 October.
		{"Australia/Lord_Howe", "0 2 * * *", "2026-04-03T00:00:00Z", []string{
			"2026-04-03T15:00:00Z", // 4 April 02:00 +11
			"2026-04-04T15:30:00Z", // 5 April 02:00 +10:30, once, right after the repeat
			"2026-04-05T15:30:00Z"}},
		{"Australia/Lord_Howe", "45 1 * * *", "2026-04-03T00:00:00Z", []string{
			"2026-04-03T14:45:00Z",   // 4 April 01:45 +11
			"2026-04-04T14:45:00Z",   // 5 April 01:45, first of two: +11
			"2026-04-05T15:15:00Z"}}, // 6 April 01:45 +10:30
		{"Australia/Lord_Howe", "15 2 * * *", "2026-10-02T00:00:00Z", []string{
			"2026-10-02T15:45:00Z",   // 3 October 02:15 +10:30
			"2026-10-03T15:30:00Z",   // 4 October 02:15 is skipped: 02:30 +11
			"2026-10-04T15:15:00Z"}}, // 5 October 02:15 +11
		{"Australia/Lord_Howe", "45 1 * * *", "2026-10-02T00:00:00Z", []string{
			"2026-10-02T15:15:00Z",   // 3 October 01:45 +10:30
			"2026-10-03T15:15:00Z",   // 4 October 01:45 +10:30, and nothing at 02:45
			"2026-10-04T14:45:00Z"}}, // 5 October 01:45 +11
		// Antarctica/Troll: 01:00 +00 becomes 03:00 +02 on 29 March; 03:00 +02 becomes 01:00 +00
		// on 25 October (two hours repeat).
		{"Antarctica/Troll", "0 2 * * *", "2026-03-27T12:00:00Z", []string{
			"2026-03-28T02:00:00Z",   // 28 March 02:00 +00
			"2026-03-29T01:00:00Z",   // 29 March 02:00 is skipped: 03:00 +02
			"2026-03-30T00:00:00Z"}}, // 30 March 02:00 +02
		{"Antarctica/Troll", "0 4 * * *", "2026-03-27T12:00:00Z", []string{
			"2026-03-28T04:00:00Z", "2026-03-29T02:00:00Z", "2026-03-30T02:00:00Z"}},
		{"Antarctica/Troll", "30 1 * * *", "2026-10-23T12:00:00Z", []string{
			"2026-10-23T23:30:00Z",   // 24 October 01:30 +02
			"2026-10-24T23:30:00Z",   // 25 October 01:30, first of two: +02 (not 01:30Z)
			"2026-10-26T01:30:00Z"}}, // 26 October 01:30 +00
		{"Antarctica/Troll", "0 3 * * *", "2026-10-23T12:00:00Z", []string{
			"2026-10-24T01:00:00Z", // 24 October 03:00 +02
			"2026-10-25T03:00:00Z", // 25 October 03:00 +00, once
			"2026-10-26T03:00:00Z"}},
		// Pacific/Chatham: 03:45 +13:45 becomes 02:45 +12:45 on 5 April; 02:45 +12:45 becomes
		// 03:45 +13:45 on 27 September.
		{"Pacific/Chatham", "0 3 * * *", "2026-04-03T00:00:00Z", []string{
			"2026-04-03T13:15:00Z",   // 4 April 03:00 +13:45
			"2026-04-04T13:15:00Z",   // 5 April 03:00, first of two: +13:45 (not 14:15Z)
			"2026-04-05T14:15:00Z"}}, // 6 April 03:00 +12:45
		{"Pacific/Chatham", "0 3 * * *", "2026-09-25T00:00:00Z", []string{
			"2026-09-25T14:15:00Z",   // 26 September 03:00 +12:45
			"2026-09-26T14:00:00Z",   // 27 September 03:00 is skipped: 03:45 +13:45
			"2026-09-27T13:15:00Z"}}, // 28 September 03:00 +13:45
		{"Pacific/Chatham", "0 4 * * *", "2026-09-25T00:00:00Z", []string{
			"2026-09-25T15:15:00Z", "2026-09-26T14:15:00Z", "2026-09-27T14:15:00Z"}},
		// Europe/Berlin: 02:00 +01 becomes 03:00 +02 on 29 March; 03:00 +02 becomes 02:00 +01 on 25
		// October.
		{"Europe/Berlin", "30 2 * * *", "2026-03-27T12:00:00Z", []string{
			"2026-03-28T01:30:00Z",   // 28 March 02:30 +01
			"2026-03-29T01:00:00Z",   // 29 March 02:30 is skipped: 03:00 +02
			"2026-03-30T00:30:00Z"}}, // 30 March 02:30 +02
		{"Europe/Berlin", "*/20 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:00, 02:20 and 02:40 are all skipped: one opening at 03:00 +02
			"2026-03-30T00:00:00Z", "2026-03-30T00:20:00Z", "2026-03-30T00:40:00Z"}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-23T12:00:00Z", []string{
			"2026-10-24T00:30:00Z",   // 24 October 02:30 +02
			"2026-10-25T00:30:00Z",   // 25 October 02:30, first of two: +02 (not 01:30Z)
			"2026-10-26T01:30:00Z"}}, // 26 October 02:30 +01
		// America/New_York: 02:00 -05 becomes 03:00 -04 on 8 March; 02:00 -04 becomes 01:00 -05 on
		// 1 November.
		{"America/New_York", "30 2 * * SUN", "2026-02-27T00:00:00Z", []string{
			"2026-03-01T07:30:00Z",   // 1 March 02:30 -05
			"2026-03-08T07:00:00Z",   // 8 March 02:30 is skipped: 03:00 -04
			"2026-03-15T06:30:00Z"}}, // 15 March 02:30 -04
		{"America/New_York", "30 1 * * *", "2026-10-30T12:00:00Z", []string{
			"2026-10-31T05:30:00Z",   // 31 October 01:30 -04
			"2026-11-01T05:30:00Z",   // 1 November 01:30, first of two: -04 (not 06:30Z)
			"2026-11-02T06:30:00Z"}}, // 2 November 01:30 -05
		// Australia/Sydney: 03:00 +11 becomes 02:00 +10 on 5 April; 02:00 +10 becomes 03:00 +11 on
		// 4 October.
		{"Australia/Sydney", "30 2 * * *", "2026-04-03T00:00:00Z", []string{
			"2026-04-03T15:30:00Z",   // 4 April 02:30 +11
			"2026-04-04T15:30:00Z",   // 5 April 02:30, first of two: +11 (not 16:30Z)
			"2026-04-05T16:30:00Z"}}, // 6 April 02:30 +10
		{"Australia/Sydney", "30 2 * * *", "2026-10-02T00:00:00Z", []string{
			"2026-10-02T16:30:00Z",   // 3 October 02:30 +10
			"2026-10-03T16:00:00Z",   // 4 October 02:30 is skipped: 03:00 +11
			"2026-10-04T15:30:00Z"}}, // 5 October 02:30 +11
	}
	const d = 10 * time.Minute
	for _, c := range cases {
		t.Run(c.zone+" "+c.schedule+" from "+c.from, func(t *testing.T) {
			w := windows(t, c.schedule+"|"+d.String()+"|"+c.zone)
			var openings []time.Time
			for at, i := utc(c.from), 0; i < len(c.openings); i++ {
				next, opened, closes, ok := w.NextOpen(at)
				want := utc(c.openings[i])
				if !ok || !next.Equal(want) || !opened.Equal(want) || !closes.Equal(want.Add(d)) {
					t.Fatalf("NextOpen(%s) = %s, opened %s, closes %s (%v); want opening %s", at.Format(time.RFC3339),
						next.UTC().Format(time.RFC3339), opened.UTC().Format(time.RFC3339), closes.UTC().Format(time.RFC3339), ok, c.openings[i])
				}
				openings = append(openings, want)
				at = closes
			}
			// Minute by minute, and half a minute past: a window is open exactly in the windows
			// listed, and the next opening is always after its argument.
			end := openings[len(openings)-1].Add(d)
			for at := utc(c.from); at.Before(end); at = at.Add(30 * time.Second) {
				var want *time.Time
				for i := range openings {
					if !at.Before(openings[i]) && at.Before(openings[i].Add(d)) {
						want = &openings[i]
					}
				}
				opened, _, open := w.OpenAt(at)
				if open != (want != nil) || (open && !opened.Equal(*want)) {
					t.Fatalf("OpenAt(%s) = %v (opened %s), want %v", at.Format(time.RFC3339), open, opened.UTC().Format(time.RFC3339), want != nil)
				}
				if n := w.list[0].next(at); !n.After(at) {
					t.Fatalf("next(%s) = %s, not after it", at.Format(time.RFC3339), n.UTC().Format(time.RFC3339))
				}
			}
		})
	}
}

// TestWindowsNextIsAfterItsArgument: across all of 2026, in the zones above, the next opening is
// after its argument and no later than the first opening found from a minute before it; an open
// window holds its argument.
func TestWindowsNextIsAfterItsArgument(t *testing.T) {
	zones := []string{"Asia/Beirut", "Australia/Lord_Howe", "Antarctica/Troll", "Pacific/Chatham", "Europe/Berlin", "America/New_York", "Australia/Sydney", "UTC"}
	schedules := []string{"0 2 * * SUN", "*/15 * * * *", "45 2,3 * * *", "0 0 1 * *"}
	for _, zone := range zones {
		for _, schedule := range schedules {
			w := windows(t, schedule+"|1h|"+zone)
			// A step that is no divisor of an hour or a day, so that the instants fall at every
			// minute of the day over the year.
			for at := utc("2026-01-01T00:00:00Z"); at.Year() == 2026; at = at.Add(97 * time.Minute) {
				n := w.list[0].next(at)
				if !n.After(at) {
					t.Fatalf("%s in %s: next(%s) = %s, not after it", schedule, zone, at.Format(time.RFC3339), n.UTC().Format(time.RFC3339))
				}
				if before := w.list[0].next(at.Add(-time.Minute)); before.After(n) {
					t.Fatalf("%s in %s: next(%s) = %s, later than next a minute before, %s", schedule, zone, at.Format(time.RFC3339),
						n.UTC().Format(time.RFC3339), before.UTC().Format(time.RFC3339))
				}
				if opened, closes, open := w.OpenAt(at); open && (opened.After(at) || !closes.After(at)) {
					t.Fatalf("%s in %s: OpenAt(%s) = %s to %s, which does not hold it", schedule, zone, at.Format(time.RFC3339),
						opened.UTC().Format(time.RFC3339), closes.UTC().Format(time.RFC3339))
				}
			}
		}
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

// TestMissedWindowsStall: a rotation due by the interval that a staged key not yet delivered holds
// back, with a daily window of 5 minutes at 02:00 UTC. Its stall counts from the time it first
// fell due, the opening of 4 August (due 01:00, interval elapsed), not from
// status.nextRotationTime, which each window it misses moves on; so it is Stalled from 02:10 on,
// between the windows as inside them, and RotationWindowWarning says from 02:05 on that it missed
// its window, quoting that window and the one it waits for now.
func TestMissedWindowsStall(t *testing.T) {
	a, n := "k20260101-000000", "k20260201-000000"
	const firstDue = "2026-08-04T02:00:00Z"
	blocked := func(now string, next string) Input {
		in := input(withRoles(status(t, mrtrv1alpha1.PhaseStable, 30*24*time.Hour, a, n), primary, stagedR),
			stagedSecret(t, mrtrv1alpha1.PhaseStable, n, a, n), deployment("api", fp(t, a, n), false))
		in.Settings = staging
		in.Settings.Windows = windows(t, "0 2 * * *|5m|UTC")
		in.Now = utc(now)
		// The primary key seals since an interval before 01:00 on 4 August: the rotation falls
		// due then, and first in a window at its 02:00 opening.
		in.Status.Keys[0].SealingSince = &metav1.Time{Time: utc("2026-08-04T01:00:00Z").Add(-in.Settings.RotationInterval)}
		in.Status.NextRotationTime = &metav1.Time{Time: utc(next)}
		in.Status.RolledOutAt = &metav1.Time{Time: utc("2026-07-20T00:00:00Z")}
		return in
	}
	window := func(c *metav1.Condition, status metav1.ConditionStatus, reason string, quotes ...string) error {
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("RotationWindowWarning = %+v, want %s %s", c, status, reason)
		}
		for _, q := range quotes {
			if !strings.Contains(c.Message, q) {
				return fmt.Errorf("RotationWindowWarning message %q does not quote %s", c.Message, q)
			}
		}
		return nil
	}
	cases := map[string]struct {
		in    Input
		want  want
		check func(*testing.T, Decision)
	}{
		"inside the window it fell due in, before rolloutDeadline: neither stalled nor missed": {
			in:   blocked("2026-08-04T02:03:00Z", firstDue),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 2 * time.Minute},
			check: func(t *testing.T, d Decision) {
				if err := window(meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows), metav1.ConditionFalse, mrtrv1alpha1.ReasonWindowsOpen); err != nil {
					t.Error(err)
				}
			},
		},
		"that window closed: the rotation moves to the next one, and the warning says it missed one": {
			in:   blocked("2026-08-04T02:07:00Z", firstDue),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 3 * time.Minute, events: []string{mrtrv1alpha1.EventRotationRescheduled}},
			check: func(t *testing.T, d Decision) {
				if err := window(meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows), metav1.ConditionTrue, mrtrv1alpha1.ReasonRotationWindowMissed,
					"due at "+firstDue, "from 2026-08-04T02:00:00Z to 2026-08-04T02:05:00Z", "from 2026-08-05T02:00:00Z to 2026-08-05T02:05:00Z"); err != nil {
					t.Error(err)
				}
			},
		},
		"rolloutDeadline after it first fell due, between two windows, it is Stalled, counted from the first due time": {
			in:   blocked("2026-08-04T02:10:00Z", "2026-08-05T02:00:00Z"),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 23*time.Hour + 50*time.Minute, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
			check: func(t *testing.T, d Decision) {
				c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
				if !strings.Contains(c.Message, "the rotation due at "+firstDue) || !strings.Contains(c.Message, "Deployment/api") {
					t.Errorf("Stalled message %q does not name the first due time and the workload", c.Message)
				}
				if r := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionReady); r.Status != metav1.ConditionFalse {
					t.Errorf("Ready = %s, want False", r.Status)
				}
			},
		},
		"days later, between windows, it is still Stalled from the first due time, and the warning quotes the next window, in the future": {
			in:   blocked("2026-08-06T12:00:00Z", "2026-08-07T02:00:00Z"),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 14 * time.Hour, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
			check: func(t *testing.T, d Decision) {
				if err := window(meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows), metav1.ConditionTrue, mrtrv1alpha1.ReasonRotationWindowMissed,
					"due at "+firstDue, "from 2026-08-04T02:00:00Z to 2026-08-04T02:05:00Z", "from 2026-08-07T02:00:00Z to 2026-08-07T02:05:00Z"); err != nil {
					t.Error(err)
				}
			},
		},
		"a restarted operator whose status still says an older window finds the same: the first due time is the status's facts, not memory": {
			in:   blocked("2026-08-06T12:00:00Z", "2026-08-05T02:00:00Z"),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 14 * time.Hour, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{mrtrv1alpha1.EventRotationRescheduled, mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
			check: func(t *testing.T, d Decision) {
				if got := d.Status.NextRotationTime; !got.Time.Equal(utc("2026-08-07T02:00:00Z")) {
					t.Errorf("nextRotationTime = %s, want the next opening", got)
				}
			},
		},
		"inside a later window, still held back: Stalled, and the warning names the window open now": {
			in:   blocked("2026-08-05T02:02:00Z", "2026-08-05T02:00:00Z"),
			want: want{phase: mrtrv1alpha1.PhaseStable, requeue: 3 * time.Minute, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded, events: []string{mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
			check: func(t *testing.T, d Decision) {
				if err := window(meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows), metav1.ConditionTrue, mrtrv1alpha1.ReasonRotationWindowMissed,
					"from 2026-08-04T02:00:00Z to 2026-08-04T02:05:00Z", "from 2026-08-05T02:00:00Z to 2026-08-05T02:05:00Z"); err != nil {
					t.Error(err)
				}
			},
		},
		"suspended, nothing is due: no window is missed, nothing stalls": {
			in: func() Input {
				in := blocked("2026-08-06T12:00:00Z", firstDue)
				in.Settings.Suspend = true
				return in
			}(),
			want: want{phase: mrtrv1alpha1.PhaseStable},
			check: func(t *testing.T, d Decision) {
				if c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionRotationWindows); c != nil && c.Reason == mrtrv1alpha1.ReasonRotationWindowMissed {
					t.Errorf("RotationWindowWarning = %+v while suspended", c)
				}
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := Step(c.in)
			checkDecision(t, c.in, d, c.want)
			if c.check != nil {
				c.check(t, d)
			}
		})
	}
}

// TestMissedWindowsStallAcrossPasses runs the operator's passes every 7 minutes for three days over
// the rotation above, the status of each pass fed to the next: Stalled turns True 10 minutes after
// the rotation first fell due and stays True (so Ready stays False) between windows as inside them,
// long enough for MRTRKeyringStalled (for: 15m) to fire; once the staged keyring is delivered the
// rotation starts in the next window.
func TestMissedWindowsStallAcrossPasses(t *testing.T) {
	a, n := "k20260101-000000", "k20260201-000000"
	in := input(withRoles(status(t, mrtrv1alpha1.PhaseStable, 30*24*time.Hour, a, n), primary, stagedR),
		stagedSecret(t, mrtrv1alpha1.PhaseStable, n, a, n), deployment("api", fp(t, a, n), false))
	in.Settings = staging
	in.Settings.Windows = windows(t, "0 2 * * *|5m|UTC")
	in.Status.Keys[0].SealingSince = &metav1.Time{Time: utc("2026-08-04T01:00:00Z").Add(-in.Settings.RotationInterval)}
	in.Status.NextRotationTime = nil
	in.Status.RolledOutAt = &metav1.Time{Time: utc("2026-07-20T00:00:00Z")}
	stuck := utc("2026-08-04T02:10:00Z")
	for in.Now = utc("2026-08-04T00:00:00Z"); in.Now.Before(utc("2026-08-07T00:00:00Z")); in.Now = in.Now.Add(7 * time.Minute) {
		d := Step(in)
		if d.Status.Phase != mrtrv1alpha1.PhaseStable {
			t.Fatalf("%s: phase %s, want Stable: nothing delivered the staged keyring", in.Now.Format(time.RFC3339), d.Status.Phase)
		}
		stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled).Status == metav1.ConditionTrue
		ready := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionReady).Status == metav1.ConditionTrue
		if want := !in.Now.Before(stuck); stalled != want || ready == want {
			t.Fatalf("%s: Stalled %v, Ready %v; want Stalled %v from %s on", in.Now.Format(time.RFC3339), stalled, ready, want, stuck.Format(time.RFC3339))
		}
		in.Status = d.Status
	}
	// Delivered at last: the rotation starts when the next window opens, not before.
	in.Workloads[0].RolledOut = true
	for ; in.Now.Before(utc("2026-08-07T02:00:00Z")); in.Now = in.Now.Add(7 * time.Minute) {
		d := Step(in)
		if d.Status.Phase != mrtrv1alpha1.PhaseStable {
			t.Fatalf("%s: phase %s outside every window", in.Now.Format(time.RFC3339), d.Status.Phase)
		}
		in.Status = d.Status
	}
	// At its opening the rollout is seen complete; the rotation starts once the pods it replaced
	// are gone (terminationGracePeriod, 30s), inside the window.
	in.Now = utc("2026-08-07T02:00:00Z")
	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseStable || d.RequeueAfter != 30*time.Second {
		t.Fatalf("at the window's opening: phase %s, requeue %s; want Stable for the replaced pods' grace, 30s", d.Status.Phase, d.RequeueAfter)
	}
	in.Status, in.Now = d.Status, in.Now.Add(30*time.Second)
	if d := Step(in); d.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew {
		t.Fatalf("inside the window: phase %s, want SealingWithNew", d.Status.Phase)
	}
}
