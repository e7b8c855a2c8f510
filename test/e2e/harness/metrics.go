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

package harness

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The orders in which one rotation must pass through the phases, ending Stable: RotationPhases
// when the new key is made at rotation (three rounds), StagedRotationPhases when it was staged
// (two rounds).
var (
	RotationPhases = []mrtrv1alpha1.Phase{
		mrtrv1alpha1.PhaseAccepting, mrtrv1alpha1.PhaseSealingWithNew, mrtrv1alpha1.PhaseWaitingTTL,
		mrtrv1alpha1.PhaseRemoving, mrtrv1alpha1.PhaseStable,
	}
	StagedRotationPhases = RotationPhases[1:]
)

// Rotation is one rotation as the Timeline saw it: from the phase Accepting (or SealingWithNew,
// when the key was staged) to the next Stable.
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
	// Secret write ([new, old]), both as this process saw them through watches; none when the key
	// was staged.
	RolloutToWrite []time.Duration
	// TTLToWrite is the delay between status.ttlWaitUntil and the Secret write that removes the old
	// key. metav1.Time has whole seconds, so this is accurate to a second only.
	TTLToWrite []time.Duration
	// AckWaits are, for each Secret write, the time from the write to the last acknowledgement of
	// its keyring that the next step waited for (Reload delivery).
	AckWaits []time.Duration
	// AckToWrite is the operator's delay between the last of those acknowledgements and its next
	// write: the next keyring in the Secret, or the next phase in status.
	AckToWrite []time.Duration
	// PodsAdded counts the pods that appeared during the rotation: restarts.
	PodsAdded int

	// steps are the writes of the rotation and the operator action that ended each one's wait.
	steps []step
}

// step is one Secret write of a rotation and what the operator did once it had reached every pod.
type step struct {
	write, next Event
	lastAck     *Event
}

// Rounds is how many keyrings the rotation delivered to every pod (rollouts, or rounds of
// acknowledgements): 3 when the key is made at rotation, 2 when it was staged.
func (r Rotation) Rounds() int { return len(r.Secrets) }

// Duration is how long the rotation took.
func (r Rotation) Duration() time.Duration { return r.End.Sub(r.Start) }

// Floor is the least a rotation can take: the TTL wait plus its rollouts (Restart delivery) or
// its acknowledgement waits (Reload delivery).
func (r Rotation) Floor() time.Duration {
	f := r.TTLWait
	waits := r.Rollouts
	if len(waits) == 0 {
		waits = r.AckWaits
	}
	for _, d := range waits {
		f += d
	}
	return f
}

func (r Rotation) String() string {
	if len(r.Rollouts) == 0 {
		return fmt.Sprintf("%v (floor %v: TTL wait %v + acknowledgement waits %v) (%d rounds)", r.Duration().Round(100*time.Millisecond),
			r.Floor().Round(100*time.Millisecond), r.TTLWait, roundAll(r.AckWaits), r.Rounds())
	}
	return fmt.Sprintf("%v (floor %v: rollouts %v + TTL wait %v) (%d rounds)", r.Duration().Round(100*time.Millisecond),
		r.Floor().Round(100*time.Millisecond), roundAll(r.Rollouts), r.TTLWait, r.Rounds())
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
// the Secret, then the phase Accepting, or SealingWithNew when the key was staged) and ends with
// the next Stable. A revocation (Revoking) is no rotation. A rotation still under way at
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
			switch e.Phase {
			case mrtrv1alpha1.PhaseSealingWithNew: // [new, old] follows the Accepting rollout, if any
				if len(cur.Secrets) > 1 && !lastRolledOut.IsZero() {
					cur.RolloutToWrite = append(cur.RolloutToWrite, e.At.Sub(lastRolledOut))
				}
			case mrtrv1alpha1.PhaseRemoving: // [new] or [new, next] follows the end of the TTL wait
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
		case EventPodAdded:
			cur.PodsAdded++
		}
	}
	for _, e := range events {
		if cur == nil || !cur.End.IsZero() {
			if e.Kind != EventPhase || (e.Phase != mrtrv1alpha1.PhaseAccepting && e.Phase != mrtrv1alpha1.PhaseSealingWithNew) {
				between = append(between, e)
				continue
			}
			// The write of the first phase precedes it: take the Secret writes and stamps that came
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
	for i := range out {
		out[i].measureAcks(events)
	}
	return out
}

// byRV returns the events that carry a resourceVersion, in etcd's order.
func byRV(events []Event) []Event {
	out := slices.DeleteFunc(slices.Clone(events), func(e Event) bool { return e.RV == 0 })
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.RV, b.RV) })
	return out
}

// endsWait reports whether e is the operator's step that ends the wait of a write of a rotation
// for its keyring to reach every pod: the next write after [A,B] (Accepting); the phase WaitingTTL
// after [B,A] (SealingWithNew); the phase Stable after [B] or [B,M] (Removing).
func endsWait(write, e Event) bool {
	switch write.Phase {
	case mrtrv1alpha1.PhaseAccepting:
		return e.Kind == EventSecret
	case mrtrv1alpha1.PhaseSealingWithNew:
		return e.Kind == EventPhase && e.Phase == mrtrv1alpha1.PhaseWaitingTTL
	case mrtrv1alpha1.PhaseRemoving:
		return e.Kind == EventPhase && e.Phase == mrtrv1alpha1.PhaseStable
	}
	return false
}

// measureAcks finds, for each Secret write of r, the step that ended its wait (endsWait) and the
// last acknowledgement of its keyring before that step, and derives AckWaits and AckToWrite.
// A rotation that rolled out (Restart delivery) waited for its rollouts, not for acknowledgements
// (which pods that run the library still write): it has none of these.
func (r *Rotation) measureAcks(events []Event) {
	if len(r.Stamps) > 0 {
		return
	}
	ordered := byRV(events)
	var writes []Event
	for _, e := range ordered {
		if e.Kind == EventSecret && !e.At.Before(r.Start) && (r.End.IsZero() || !e.At.After(r.End)) {
			writes = append(writes, e)
		}
	}
	for _, w := range writes {
		s := step{write: w}
		for _, e := range ordered {
			if e.RV <= w.RV {
				continue
			}
			if endsWait(w, e) {
				s.next = e
				break
			}
			if e.Kind == EventAck && e.Fingerprint == w.Fingerprint {
				s.lastAck = &e
			}
		}
		r.steps = append(r.steps, s)
		if s.lastAck != nil && s.next.RV != 0 {
			r.AckWaits = append(r.AckWaits, s.lastAck.At.Sub(w.At))
			r.AckToWrite = append(r.AckToWrite, s.next.At.Sub(s.lastAck.At))
		}
	}
}

// GateViolations checks, from the watches alone, that the operator never moved on from a keyring
// before it had reached every pod: for each write of r, every pod that existed when the operator
// took the step that ended its wait (in etcd's order) had acknowledged that write's keyring before,
// or was created after the write (and so started with it). It returns what it found wrong, nothing
// when all held.
func (r Rotation) GateViolations(events []Event) []string {
	ordered := byRV(events)
	var out []string
	for _, s := range r.steps {
		if s.next.RV == 0 {
			continue
		}
		alive := map[string]uint64{} // pod -> the resourceVersion at which it appeared
		acked := map[string]bool{}
		for _, e := range ordered {
			if e.RV >= s.next.RV {
				break
			}
			switch e.Kind {
			case EventPodAdded:
				alive[e.Pod] = e.RV
			case EventPodDeleted:
				delete(alive, e.Pod)
			case EventAck:
				if e.Fingerprint == s.write.Fingerprint {
					acked[e.Pod] = true
				}
			}
		}
		for pod, added := range alive {
			if !acked[pod] && added <= s.write.RV {
				out = append(out, fmt.Sprintf("%s at %s, before pod %s acknowledged keyring %s",
					s.next, s.next.At.Format("15:04:05.000"), pod, s.write.Fingerprint))
			}
		}
	}
	return out
}

// Median of a set of durations (zero for none).
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
