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

// window is one entry: it opens at every matching wall-clock time of schedule, read in loc (see
// next for the rule at daylight saving changes), and stays open for duration, elapsed time.
type window struct {
	// fields are the schedule's parsed fields. Only the parser of robfig/cron is used, so that the
	// API accepts and means what a CronJob's schedule does; its Next is not (next says why).
	fields   *cron.SpecSchedule
	loc      *time.Location
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
		if e.Duration.Duration < time.Minute {
			w.Problem = fmt.Sprintf("%s.duration: %v is shorter than 1m", field, e.Duration.Duration)
			return w
		}
		entry := window{fields: spec, loc: loc, duration: e.Duration.Duration,
			text: fmt.Sprintf("%s (%s) for %v", text, zone, e.Duration.Duration)}
		// A schedule that never fires (February 30) would hold every scheduled rotation forever.
		// next looks five years ahead; from the epoch that finds even a February 29.
		if entry.next(time.Unix(0, 0)).IsZero() {
			w.Problem = fmt.Sprintf("%s.schedule: %q never opens a window", field, e.Schedule)
			return w
		}
		w.list = append(w.list, entry)
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
		s := e.next(t.Add(-e.duration))
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
// no window opens within five years (horizon).
func (w *Windows) NextOpen(t time.Time) (at, opened, closes time.Time, ok bool) {
	if opened, closes, open := w.OpenAt(t); open {
		return t, opened, closes, true
	}
	for _, e := range w.list {
		s := e.next(t)
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

// horizon is how far ahead next looks for an opening, as robfig/cron's Next does: a schedule that
// matches no day within it (February 30) never opens.
const horizon = 5 // years

// starBit marks a day-of-month or day-of-week field that was * or ? in robfig/cron's parsed
// fields: then a day must match both fields, else either (the CronJob and Vixie cron rule).
const starBit = 1 << 63

// next is the first opening strictly after t, zero when none comes within the horizon.
//
// Openings are computed by the local calendar, not by robfig/cron's Next: that one steps an
// instant through the zone and loses its way where a daylight saving change falls at midnight or
// on a half hour (Asia/Beirut's 02:00 of 29 March 2026, which exists, never came; Lord Howe's
// and Troll's windows were skipped or doubled; on Pacific/Chatham it could return a time before
// its argument, so an expired window read as open). Here every calendar day of loc whose
// month, day of month and weekday match is taken in turn, and each matching hour and minute of it
// is one opening, its wall-clock time resolved by wallTime: a time the clock skips opens at the
// first instant after the skip, a time the clock passes twice opens at its first occurrence.
func (e window) next(t time.Time) time.Time {
	f := e.fields
	local := t.In(e.loc)
	// From the day before t's date: the first occurrence of a repeated hour may lie on the
	// calendar day before the one t reads as.
	day := time.Date(local.Year(), local.Month(), local.Day()-1, 12, 0, 0, 0, time.UTC)
	end := day.AddDate(horizon, 0, 2)
	for ; day.Before(end); day = day.AddDate(0, 0, 1) {
		y, mo, d := day.Date()
		if !dayMatches(f, mo, d, day.Weekday()) || !e.wallTime(y, mo, d, 23, 59).After(t) {
			// Openings keep the order of their wall-clock times: a day whose last minute opens
			// by t has no opening after it.
			continue
		}
		for h := range 24 {
			if f.Hour&(1<<h) == 0 || !e.wallTime(y, mo, d, h, 59).After(t) {
				continue
			}
			for m := range 60 {
				if f.Minute&(1<<m) == 0 {
					continue
				}
				if s := e.wallTime(y, mo, d, h, m); s.After(t) {
					return s
				}
			}
		}
	}
	return time.Time{}
}

// dayMatches reports whether the schedule opens on a day: its month, and its day of month or
// weekday, by the cron rule (starBit).
func dayMatches(f *cron.SpecSchedule, mo time.Month, d int, wd time.Weekday) bool {
	if f.Month&(1<<uint(mo)) == 0 {
		return false
	}
	dom, dow := f.Dom&(1<<uint(d)) != 0, f.Dow&(1<<uint(wd)) != 0
	if f.Dom&starBit != 0 || f.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// wallTime is the instant at which the wall-clock time h:m of the date opens a window in loc.
// time.Date leaves open which instant it picks where the clock skips or repeats, so the zone's
// periods around the time are walked in order (ZoneBounds), and the rule is explicit:
//   - a time the clock shows once is that instant;
//   - a time the clock shows twice (the hour it goes back) is its first occurrence;
//   - a time the clock skips (the hour it goes forward) is the first instant after the skip,
//     where the new offset begins: every skipped time of a day opens there, once.
func (e window) wallTime(y int, mo time.Month, d, h, m int) time.Time {
	// The instant the wall time names at offset off is wall-off; offsets lie within ±16h, so
	// every period that may hold it starts or ends within 30h of wall.
	wall := time.Date(y, mo, d, h, m, 0, 0, time.UTC)
	probe, last := wall.Add(-30*time.Hour), wall.Add(30*time.Hour)
	after := false // wall lies after the last instant of the period walked before
	for {
		at := probe.In(e.loc)
		_, off := at.Zone()
		start, end := at.ZoneBounds() // zero for a period without a start or an end
		s := wall.Add(-time.Duration(off) * time.Second)
		if (start.IsZero() || !s.Before(start)) && (end.IsZero() || s.Before(end)) {
			return s // shown in this period: the first that shows it, when two do
		}
		if after && s.Before(start) {
			return start // skipped: after the period before, before this one
		}
		after = !end.IsZero() && !s.Before(end)
		if end.IsZero() || end.After(last) {
			return s // unreachable with consistent zone data: a wall time is shown or skipped
		}
		probe = end
	}
}
