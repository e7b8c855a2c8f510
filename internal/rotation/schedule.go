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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The schedule: when the next rotation falls due (rotationInterval from the last one), whether it
// is due now (a request, the interval, the rotation windows), and the warning of windows that hold
// a due rotation back. Part of the decide stage.

// scheduleRotation keeps status.nextRotationTime one rotationInterval after the last rotation or,
// before the first, after the primary key was created: an edited interval takes effect at once, in
// both directions, instead of at the time computed from the old one (up to a month away). With
// spec.rotationWindows it is the first moment at or after that in a window (windowed).
func scheduleRotation(f facts, o outcome) outcome {
	if f.in.Settings.Source {
		o.status.NextRotationTime, o.status.NextWindow = nil, nil
		return o
	}
	interval := f.in.Settings.RotationInterval
	base := o.status.LastRotationTime
	if len(o.status.Keys) > 0 && base == nil {
		if since := o.status.Keys[0].Sealing(); !since.IsZero() {
			base = &since
		}
	}
	var due time.Time
	if base == nil {
		if o.status.NextRotationTime == nil {
			o.status.NextRotationTime = later(f.now, interval)
		}
		due = o.status.NextRotationTime.Time
	} else {
		due = base.Add(interval)
	}
	// Whole seconds, as status stores them, so that the value survives the round trip unchanged.
	due = due.Truncate(time.Second)
	o.due = due
	o.firstDue, _, _ = windowed(f.in.Settings.Windows, due, due)
	now := f.in.Now
	if f.in.Settings.Suspend {
		now = due // suspended, nothing starts: no window is missed, and no event says one was
	}
	at, win, missed := windowed(f.in.Settings.Windows, due, now)
	o.status.NextWindow = win
	next := metav1.NewTime(at)
	if old := o.status.NextRotationTime; old == nil || !old.Equal(&next) {
		if old != nil && base != nil {
			switch when := next.UTC().Format(time.RFC3339); {
			case missed:
				o = o.event(corev1Normal, mrtrv1alpha1.EventRotationRescheduled, "Schedule", "the rotation due at %s did not start before its window closed: next rotation at %s, when a window opens again (was %s)",
					due.UTC().Format(time.RFC3339), when, old.UTC().Format(time.RFC3339))
			case !at.Equal(due):
				o = o.event(corev1Normal, mrtrv1alpha1.EventRotationRescheduled, "Schedule", "rotationInterval is %v: the next rotation falls due at %s, outside every rotation window (%s), and starts at %s, when one opens (was %s)",
					interval, due.UTC().Format(time.RFC3339), f.in.Settings.Windows, when, old.UTC().Format(time.RFC3339))
			default:
				o = o.event(corev1Normal, mrtrv1alpha1.EventRotationRescheduled, "Schedule", "rotationInterval is %v: next rotation at %s (was %s)",
					interval, when, old.UTC().Format(time.RFC3339))
			}
		}
		o.status.NextRotationTime = &next
	}
	return o
}

// scheduleFrom schedules the next rotation one rotationInterval after from (the rotation that
// ends, the key made), moved into a window (windowed) at once: no later pass may come before it.
func scheduleFrom(f facts, o outcome, from metav1.Time) outcome {
	if f.in.Settings.Source {
		o.status.NextRotationTime, o.status.NextWindow = nil, nil
		return o
	}
	due := from.Add(f.in.Settings.RotationInterval).Truncate(time.Second)
	at, win, _ := windowed(f.in.Settings.Windows, due, due)
	next := metav1.NewTime(at)
	o.status.NextRotationTime, o.status.NextWindow, o.due, o.firstDue = &next, win, due, at
	return o
}

// windowWarningOf decides RotationWindowWarning in Stable, from the time the next rotation falls
// due by the interval (o.due): whether the first window at or after it opens more than
// rotationInterval later (or never), and whether the rotation, once due, missed that window. Nil
// without windows, with windows that do not parse (the Stalled condition's), or when this pass
// did not schedule (o.due is zero).
func windowWarningOf(f facts, o outcome) *windowWarning {
	s := f.in.Settings
	if s.Windows == nil || !s.Windows.Valid() || o.due.IsZero() {
		return nil
	}
	w := &windowWarning{due: o.due, next: o.status.NextWindow}
	at, opened, closes, ok := s.Windows.NextOpen(o.due)
	if !ok {
		w.late = true
		return w
	}
	w.start, w.late = at, at.Sub(o.due) > s.RotationInterval
	// Still Stable after the move, past the close of the window it fell due in: the rotation did
	// not start there. Suspended, nothing is due, so nothing is missed.
	if !s.Suspend && !f.in.Now.Before(closes) {
		w.missed = &mrtrv1alpha1.RotationWindowStatus{OpensAt: metav1.NewTime(opened), ClosesAt: metav1.NewTime(closes)}
	}
	return w
}

// windowed is when a rotation that falls due at due may start: due itself when a window is open
// then (or there are none), else the next opening; with the window it starts in (nil without
// windows). A rotation that fell due in a window and had not started when the window closed (its
// delivery held it back, or the operator was away) moves to the next opening after now, or to the
// opening of the window open now: missed.
// Unparsed windows change nothing here; rotationDue holds every scheduled rotation back instead.
func windowed(w *Windows, due, now time.Time) (at time.Time, win *mrtrv1alpha1.RotationWindowStatus, missed bool) {
	if w == nil || !w.Valid() {
		return due, nil, false
	}
	at, opened, closes, ok := w.NextOpen(due)
	if ok && !now.Before(at) {
		if o, c, open := w.OpenAt(now); open {
			// In a later window than the one it fell due in (still held back, or the operator
			// was away): it may start in this one, as the pass that saw the last one close
			// said.
			if o.After(at) {
				at, missed = o, true
			}
			opened, closes = o, c
		} else {
			missed = true
			at, opened, closes, ok = w.NextOpen(now)
		}
	}
	if !ok {
		// No window opens within the parser's five years: the due time stays, and rotationDue
		// never finds a window open (the RotationWindowWarning condition says so).
		return due, nil, missed
	}
	return ceilSecond(at), &mrtrv1alpha1.RotationWindowStatus{OpensAt: metav1.NewTime(opened), ClosesAt: metav1.NewTime(closes)}, missed
}

// rotationDue is the exit check of Stable: a rotation must start now, requested or by schedule,
// and its message says why. A request never waits for a rotation window: whoever asks has decided
// that now is the time (an incident, a key they fear has leaked), and the windows only spare the
// fleet the restarts of rotations nobody asked for. A request keeps the schedule's until: the
// rotation may be held back (sealWithStaged), and its stall counts from the due time (dueBlocked).
func rotationDue(in Input, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	if in.Settings.Source {
		return sourceDue(in, st)
	}
	request := in.RotateRequest
	// Handled once for this Secret, by this keyring (status) or by an earlier one of the same name
	// (the Secret's annotation): never again.
	requested := mrtrv1alpha1.RotateRequested(request, st.LastHandledRotateRequest, in.Secret.HandledRotateRequest)
	if in.Settings.Suspend {
		v := verdict{what: mrtrv1alpha1.WaitResume, message: "a resume: rotations are suspended (spec.suspend)"}
		if requested {
			v.message += fmt.Sprintf(", and the rotation requested by %s=%s starts once they are resumed", mrtrv1alpha1.RotateAnnotation, request)
		}
		return v
	}
	v := scheduled(in, st)
	if requested {
		v.pass, v.message = true, fmt.Sprintf("requested by %s=%q", mrtrv1alpha1.RotateAnnotation, request)
	}
	return v
}

// scheduled is whether the next rotation is due by status.nextRotationTime, in a rotation window
// when there are any: until then, or, once it is, until the window closes on it (windowed then
// moves it to the next one).
func scheduled(in Input, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	t, w := st.NextRotationTime, in.Settings.Windows
	if t == nil {
		return verdict{what: mrtrv1alpha1.WaitNextRotation}
	}
	if !in.Now.Before(t.Time) && inWindow(in) {
		if w == nil {
			return verdict{pass: true, what: mrtrv1alpha1.WaitNextRotation, message: "interval elapsed"}
		}
		_, closes, _ := w.OpenAt(in.Now)
		return verdict{pass: true, what: mrtrv1alpha1.WaitNextRotation, until: closes, message: "interval elapsed, inside a rotation window"}
	}
	msg := "the next rotation, due at " + t.UTC().Format(time.RFC3339)
	if nw := st.NextWindow; nw != nil {
		msg += fmt.Sprintf(", in the rotation window open from %s to %s", nw.OpensAt.UTC().Format(time.RFC3339), nw.ClosesAt.UTC().Format(time.RFC3339))
	} else if !w.Valid() {
		msg += ", once spec.rotationWindows parses"
	}
	return verdict{what: mrtrv1alpha1.WaitNextRotation, until: t.Time, message: msg}
}

// inWindow reports whether a scheduled rotation may start now: a window is open, or there are
// none. Windows that do not parse hold every scheduled rotation back (stalled, naming the field):
// starting outside the windows someone meant to set would restart the fleet when they said not to.
func inWindow(in Input) bool {
	w := in.Settings.Windows
	if !w.Valid() {
		return false
	}
	_, _, open := w.OpenAt(in.Now)
	return open
}
