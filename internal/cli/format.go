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

package cli

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// The outputs give every time twice: as an RFC 3339 UTC timestamp, which can be compared across
// tools and time zones, and relative to the clock of the command, which a human reads at a glance.
// Relative times are kubectl's short form (2m, 33h, 29d).

// stamp is t and how far it is from now: "2026-12-01T11:11:18Z (2m ago)", "... (in 29d)".
func stamp(t, now time.Time) string {
	return t.UTC().Format(time.RFC3339) + " (" + relative(t, now) + ")"
}

// relative is "2m ago", "in 29d" or "now" (under a second either way).
func relative(t, now time.Time) string {
	switch d := t.Sub(now); {
	case d >= time.Second:
		return "in " + duration.HumanDuration(d)
	case d <= -time.Second:
		return duration.HumanDuration(-d) + " ago"
	}
	return "now"
}

// age is how long ago t was, kubectl's AGE column: "2m"; "-" for a zero time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := now.Sub(t); d > 0 {
		return duration.HumanDuration(d)
	}
	return "0s"
}

// oneLine keeps a table cell on one line: condition messages may hold line breaks.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// list joins names for a sentence, "a, b and c", naming at most most of them.
func list(names []string, most int) string {
	if len(names) > most {
		return strings.Join(names[:most], ", ") + " and " + strconv.Itoa(len(names)-most) + " more"
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
