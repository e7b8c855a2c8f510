/*
Copyright 2026.

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

package harness

import (
	"fmt"
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// RotationPhases is the order in which one rotation must pass through the phases, ending Stable.
var RotationPhases = []mrtrv1alpha1.Phase{
	mrtrv1alpha1.PhaseAccepting, mrtrv1alpha1.PhaseSealingWithNew, mrtrv1alpha1.PhaseWaitingTTL,
	mrtrv1alpha1.PhaseRemoving, mrtrv1alpha1.PhaseStable,
}

// Rotation is one rotation as the Timeline saw it: from the phase Accepting to the next Stable.
type Rotation struct {
	Start, End time.Time
	// Phases are the phases seen, in order.
	Phases []mrtrv1alpha1.Phase
	// Secrets are the key ids of each keyring written to the Secret during the rotation.
	Secrets [][]string
	// Stamps are the fingerprints the Deployment's template was stamped with, in order.
	Stamps []string
	// Rollouts are, for each stamp, the time from the stamp to the rollout's completion.
	Rollouts []time.Duration
	// TTLWait is the wait the keyring asks for (tokenTTL + clockSkew + terminationGracePeriod).
	TTLWait time.Duration
	// RolloutToWrite is the operator's delay between the Accepting rollout completing and its next
	// Secret write ([new, old]), both as this process saw them through watches.
	RolloutToWrite []time.Duration
	// TTLToWrite is the delay between status.ttlWaitUntil and the Secret write that removes the old
	// key. metav1.Time has whole seconds, so this is accurate to a second only.
	TTLToWrite []time.Duration
}

// Duration is how long the rotation took.
func (r Rotation) Duration() time.Duration { return r.End.Sub(r.Start) }

// Floor is the least a rotation can take: its rollouts plus the TTL wait.
func (r Rotation) Floor() time.Duration {
	f := r.TTLWait
	for _, d := range r.Rollouts {
		f += d
	}
	return f
}

func (r Rotation) String() string {
	return fmt.Sprintf("%v (floor %v: rollouts %v + TTL wait %v)", r.Duration().Round(100*time.Millisecond),
		r.Floor().Round(100*time.Millisecond), roundAll(r.Rollouts), r.TTLWait)
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond)
	}
	return out
}

// Rotations splits a timeline into the rotations it holds; ttlWaitUntils are the Timeline's
// status.ttlWaitUntil values. A rotation starts with the operator's first action for it (it writes
// the Secret, then the phase Accepting) and ends with the next Stable. A rotation still under way at
// the end is returned with a zero End.
func Rotations(events []Event, ttlWait time.Duration, ttlWaitUntils []time.Time) []Rotation {
	var out []Rotation
	var cur *Rotation
	var between []Event // events since the last rotation ended (or the start)
	stampAt := map[string]time.Time{}
	var lastRolledOut time.Time
	apply := func(e Event) {
		switch e.Kind {
		case EventPhase:
			cur.Phases = append(cur.Phases, e.Phase)
			if e.Phase == mrtrv1alpha1.PhaseStable {
				cur.End = e.At
			}
		case EventSecret:
			cur.Secrets = append(cur.Secrets, e.KeyIDs)
			switch len(cur.Secrets) {
			case 2: // [new, old] follows the Accepting rollout
				if !lastRolledOut.IsZero() {
					cur.RolloutToWrite = append(cur.RolloutToWrite, e.At.Sub(lastRolledOut))
				}
			case 3: // [new] follows the end of the TTL wait
				for _, u := range ttlWaitUntils {
					if u.After(cur.Start.Add(-time.Second)) && !u.After(e.At) {
						cur.TTLToWrite = append(cur.TTLToWrite, e.At.Sub(u))
					}
				}
			}
		case EventStamp:
			cur.Stamps = append(cur.Stamps, e.Fingerprint)
			stampAt[e.Fingerprint] = e.At
		case EventRolledOut:
			if at, ok := stampAt[e.Fingerprint]; ok {
				cur.Rollouts = append(cur.Rollouts, e.At.Sub(at))
				lastRolledOut = e.At
			}
		}
	}
	for _, e := range events {
		if cur == nil || !cur.End.IsZero() {
			if e.Kind != EventPhase || e.Phase != mrtrv1alpha1.PhaseAccepting {
				between = append(between, e)
				continue
			}
			// The Accepting write precedes the phase: take the Secret writes and stamps that came
			// after the last phase change into the new rotation.
			first := len(between)
			for first > 0 && between[first-1].Kind != EventPhase && between[first-1].Kind != EventRolledOut {
				first--
			}
			out = append(out, Rotation{Start: e.At, TTLWait: ttlWait})
			cur = &out[len(out)-1]
			lastRolledOut = time.Time{}
			if first < len(between) {
				cur.Start = between[first].At
			}
			for _, p := range between[first:] {
				apply(p)
			}
			between = nil
		}
		apply(e)
	}
	return out
}

// Median and Max of a set of durations (zero for none).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Max is the largest duration, zero for none.
func Max(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}
