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
	"time"

	// The zone database in the binary: the operator's image has no /usr/share/zoneinfo, and the
	// same timeZone must mean the same instants to the operator and to kubectl mrtr.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Windows are spec.rotationWindows, parsed: the windows in which a rotation may start on schedule.
// A nil *Windows (no windows) is always open. Only the start of a scheduled rotation waits for a
// window: a rotation under way finishes after its window closes (stopping halfway would leave an
// extra key in place and gain nothing), and a requested rotation or a revocation starts at once.
type Windows struct {
	list []window
	// Problem, when not empty, names the first entry that does not parse and why (the API's checks
	// let most mistakes through to no one, not all: a range such as 5-1, an unknown zone). No
	// rotation starts on schedule while it is set.
	Problem string
}

// window is one entry: it opens at every activation of schedule (read in its zone) and stays open
// for duration, elapsed time.
type window struct {
	schedule cron.Schedule
	duration time.Duration
	// text is the entry as messages quote it: "0 2 * * SUN (Europe/Berlin) for 2h0m0s".
	text string
}

// cronParser reads the standard 5 fields, without the @ macros: spec.rotationWindows says five
// fields, and the API's pattern accepts no more.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// ParseWindows parses spec.rotationWindows; nil when there are none. An entry that does not parse
// is named in Problem by its field (spec.rotationWindows[i].schedule or .timeZone).
func ParseWindows(spec []mrtrv1alpha1.RotationWindow) *Windows {
	if len(spec) == 0 {
		return nil
	}
	w := &Windows{}
	for i, e := range spec {
		field := fmt.Sprintf("spec.rotationWindows[%d]", i)
		zone := e.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		// "Local" would be the operator's own zone, which no one who writes the spec knows.
		loc, err := time.LoadLocation(zone)
		if err != nil || zone == "Local" {
			w.Problem = fmt.Sprintf("%s.timeZone: %q is not an IANA time zone the operator knows", field, e.TimeZone)
			return w
		}
		// The zone is timeZone's alone: the parser's own TZ= prefix would override it.
		text := strings.TrimSpace(e.Schedule)
		if strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=") {
			w.Problem = fmt.Sprintf("%s.schedule: %q: give the zone in timeZone, not in the schedule", field, e.Schedule)
			return w
		}
		s, err := cronParser.Parse(text)
		if err != nil {
			w.Problem = fmt.Sprintf("%s.schedule: %q does not parse as a 5-field cron schedule: %v", field, e.Schedule, err)
			return w
		}
		spec, ok := s.(*cron.SpecSchedule)
		if !ok {
			w.Problem = fmt.Sprintf("%s.schedule: %q is not a 5-field cron schedule", field, e.Schedule)
			return w
		}
		spec.Location = loc
		if e.Duration.Duration < time.Minute {
			w.Problem = fmt.Sprintf("%s.duration: %v is shorter than 1m", field, e.Duration.Duration)
			return w
		}
		// A schedule that never fires (February 30) would hold every scheduled rotation forever.
		if spec.Next(time.Unix(0, 0)).IsZero() {
			// The parser looks five years ahead at most; the epoch is as good a start as any.
			w.Problem = fmt.Sprintf("%s.schedule: %q never opens a window", field, e.Schedule)
			return w
		}
		w.list = append(w.list, window{schedule: spec, duration: e.Duration.Duration,
			text: fmt.Sprintf("%s (%s) for %v", text, zone, e.Duration.Duration)})
	}
	return w
}

// Valid reports whether every entry parsed.
func (w *Windows) Valid() bool { return w == nil || w.Problem == "" }

// OpenAt reports whether a window is open at t, and, if so, the opening of the earliest open
// window and when that one closes (another may open before it does).
func (w *Windows) OpenAt(t time.Time) (opened, closes time.Time, open bool) {
	if w == nil {
		return t, time.Time{}, true
	}
	for _, e := range w.list {
		// The first opening after t-duration is the earliest whose window may still be open at t:
		// a window is open on [opening, opening+duration).
		s := e.schedule.Next(t.Add(-e.duration))
		if s.IsZero() || s.After(t) {
			continue
		}
		if !open || s.Before(opened) {
			opened, closes, open = s, s.Add(e.duration), true
		}
	}
	return opened, closes, open
}

// NextOpen is the first moment at or after t at which a window is open: t itself when one is open
// then, else the earliest opening after t; with that window's opening and close. ok is false when
// no window opens within the cron parser's horizon (five years).
func (w *Windows) NextOpen(t time.Time) (at, opened, closes time.Time, ok bool) {
	if opened, closes, open := w.OpenAt(t); open {
		return t, opened, closes, true
	}
	for _, e := range w.list {
		s := e.schedule.Next(t)
		if s.IsZero() {
			continue
		}
		if !ok || s.Before(at) {
			at, closes, ok = s, s.Add(e.duration), true
		}
	}
	return at, at, closes, ok
}

// String lists the windows, for messages.
func (w *Windows) String() string {
	if w == nil {
		return "none"
	}
	s := make([]string, len(w.list))
	for i, e := range w.list {
		s[i] = e.text
	}
	return strings.Join(s, ", ")
}
