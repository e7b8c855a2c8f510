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
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// placed is a Reload-delivery workload "api" of place with pods that acknowledged loaded.
func placed(place string, loaded string, pods ...string) Workload {
	ps := make([]Pod, 0, len(pods))
	for _, p := range pods {
		pod := acked(p, loaded)
		pod.Place = place
		ps = append(ps, pod)
	}
	w := withPods(ps...)
	w.Place = place
	return w
}

// copyOf is a place whose copy holds ids, as written by the operator at writtenAt.
func copyOf(t *testing.T, name string, phase mrtrv1alpha1.Phase, ids ...string) Place {
	c := ours(t, phase, ids...)
	c.WrittenAt = writtenAt
	return Place{Name: name, Copy: c}
}

func TestPlacesStep(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, ba := fp(t, a, b), fp(t, b, a)
	accepting := func() Input {
		in := reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
			placed("t1", ab, "p1"), placed("t2", ab, "p2"))
		in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseAccepting, a, b), copyOf(t, "t2", mrtrv1alpha1.PhaseAccepting, a, b)}
		return in
	}
	cases := map[string]struct {
		edit   func(*Input)
		phase  mrtrv1alpha1.Phase
		copyTo []string
		events []string
		// items are status.namespaces.items as "name=State".
		items []string
	}{
		"every copy holds the keyring and every pod acknowledged it: the phase ends, and every copy is written after the Secret": {
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing"},
			items: []string{"t1=Behind", "t2=Behind"}, // behind the keyring just decided
		},
		"a copy behind holds the phase, though its pods acknowledged (a pass killed between copy writes)": {
			edit:  func(in *Input) { in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a) },
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t2"}, items: []string{"t2=Behind", "t1=UpToDate"},
		},
		"a copy edited by its namespace's tenant is written again, and proves nothing meanwhile": {
			edit: func(in *Input) {
				in.Places[0].Copy = foreign(t, a) // the old keyring back, not annotated as our write
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t1"}, items: []string{"t1=Behind", "t2=UpToDate"},
		},
		"a pod counts by its own place's copy: created after the lead Secret's write but before its copy's, it proves nothing": {
			edit: func(in *Input) {
				in.Places[1].Copy.WrittenAt = now.Add(-time.Second)
				p := Pod{Place: "t2", Name: "p2", CreatedAt: now.Add(-30 * time.Second)} // no acknowledgement
				in.Workloads[1].Pods = []Pod{p}
			},
			phase: mrtrv1alpha1.PhaseAccepting, items: []string{"t2=Behind", "t1=UpToDate"},
		},
		"a namespace that joins mid-rotation gets the phase's keyring, and its pods count only once it has it": {
			edit: func(in *Input) {
				in.Places = append(in.Places, Place{Name: "t3", Copy: SecretObservation{State: SecretAbsent}})
				in.Workloads = append(in.Workloads, placed("t3", "", "p3"))
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t3"}, items: []string{"t3=Behind", "t1=UpToDate", "t2=UpToDate"},
		},
		"a Secret of another keyring is never written, its namespace is not rotated, and the conflict is reported": {
			edit: func(in *Input) {
				in.Places[1].Owner = "MRTRKeyring web"
				in.Places[1].Copy = foreign(t, "other")
				in.Workloads[1].Pods[0].Loaded = "" // its pods run the other keyring: they do not count
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1"}, events: []string{"KeySealing", "Conflict"},
			items: []string{"t1=Behind", "t2=Conflict"},
		},
		"a namespace being deleted never blocks a phase": {
			edit: func(in *Input) {
				in.Places[1].Terminating = true
				in.Places[1].Copy = SecretObservation{State: SecretAbsent}
				in.Workloads[1].Pods[0].Loaded = ""
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1"}, events: []string{"KeySealing"}, items: []string{"t1=Behind"},
		},
		"a namespace that left is not rotated; its Secret stays, and the event says so once": {
			edit: func(in *Input) {
				in.Left = []string{"t0"}
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", State: mrtrv1alpha1.NamespaceUpToDate}}
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing", "NamespaceLeft"},
			items: []string{"t1=Behind", "t2=Behind", "t0=Left"},
		},
		"a namespace already reported as left is not announced again": {
			edit: func(in *Input) {
				in.Left = []string{"t0"}
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", State: mrtrv1alpha1.NamespaceLeft}}
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing"},
			items: []string{"t1=Behind", "t2=Behind", "t0=Left"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := accepting()
			if c.edit != nil {
				c.edit(&in)
			}
			d := Step(in)
			if d.Status.Phase != c.phase {
				t.Errorf("phase %s, want %s (waiting for: %+v)", d.Status.Phase, c.phase, d.Status.WaitingFor)
			}
			if !slices.Equal(d.CopyTo, c.copyTo) {
				t.Errorf("CopyTo %v, want %v", d.CopyTo, c.copyTo)
			}
			reasons := make([]string, 0, len(d.Events))
			for _, e := range d.Events {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(reasons, c.events) {
				t.Errorf("events %v, want %v", reasons, c.events)
			}
			items := make([]string, 0, len(d.Namespaces.Items))
			for _, n := range d.Namespaces.Items {
				items = append(items, n.Name+"="+string(n.State))
			}
			if !slices.Equal(items, c.items) {
				t.Errorf("namespaces %v, want %v", items, c.items)
			}
			for _, e := range d.Events {
				if strings.Contains(e.Note, ba) && d.Status.Phase == mrtrv1alpha1.PhaseAccepting {
					t.Errorf("event %q names the keyring of the next phase", e.Note)
				}
			}
		})
	}
}

// TestManyNamespacesStayWithinStatusLimits: over 150 namespaces, status lists 100, those behind
// first, counts them all, and the condition names at most ten.
func TestManyNamespacesStayWithinStatusLimits(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	in := reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b))
	for i := range 150 {
		name := fmt.Sprintf("tenant-%03d", i)
		p := copyOf(t, name, mrtrv1alpha1.PhaseAccepting, a, b)
		if i%10 == 9 { // 15 behind, spread through the list
			p = copyOf(t, name, mrtrv1alpha1.PhaseStable, a)
		}
		in.Places = append(in.Places, p)
		in.Workloads = append(in.Workloads, placed(name, fp(t, a, b), "p-"+name))
	}
	d := Step(in)
	ns := d.Namespaces
	if ns.Selected != 150 || ns.UpToDate != 135 || len(ns.Items) != mrtrv1alpha1.MaxNamespacesListed {
		t.Fatalf("selected %d, up to date %d, listed %d; want 150, 135, 100", ns.Selected, ns.UpToDate, len(ns.Items))
	}
	for i, n := range ns.Items[:15] {
		if n.State != mrtrv1alpha1.NamespaceBehind {
			t.Fatalf("item %d is %s %s: those behind come first", i, n.Name, n.State)
		}
	}
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting || len(d.CopyTo) != 15 {
		t.Fatalf("phase %s, %d copies to write; want Accepting and 15", d.Status.Phase, len(d.CopyTo))
	}
	w := d.Status.WaitingFor
	if w == nil || len(w.For) > 10 || !strings.Contains(w.Message, "and 5 more") {
		t.Fatalf("waiting for %+v: want at most ten namespaces named and the rest counted", w)
	}
}

// placesWorld is a fleet of places, each with a copy of the Secret and its pods, driven by Step
// the way the shell executes it: the lead Secret, then the status, then the copies, the pass
// killed at random between two copy writes. Namespaces join and leave at random.
type placesWorld struct {
	t          *testing.T
	rnd        *mathrand.Rand
	now        time.Time
	secret     *keyring.Keyring
	phase      mrtrv1alpha1.Phase
	staged     string
	writtenAt  time.Time
	status     mrtrv1alpha1.MRTRKeyringStatus
	namespaces mrtrv1alpha1.NamespacesStatus
	places     map[string]*simPlace
	serial     int
	lastSealed map[string]time.Time
	// copyWrites counts the copy writes; wasted those that changed nothing.
	copyWrites, wasted int
	log                []string
}

type simPlace struct {
	selected  bool
	copy      *keyring.Keyring // nil: no copy
	writtenAt time.Time
	pods      []*reloadPod
}

func (w *placesWorld) observe() Input {
	sec := SecretObservation{State: SecretValid, Keyring: w.secret, WrittenPhase: w.phase, WrittenFingerprint: w.secret.Fingerprint(),
		WrittenAt: w.writtenAt, TokenTTL: settings.TokenTTL, Staged: w.staged}
	in := Input{Now: w.now, Generation: 1, Settings: reloading, Status: w.status, Namespaces: w.namespaces, SecretName: "s", Secret: sec, FreshKeys: freshKeys()}
	for _, name := range w.names() {
		p := w.places[name]
		if !p.selected {
			if p.copy != nil {
				in.Left = append(in.Left, name)
			}
			continue
		}
		c := SecretObservation{State: SecretAbsent}
		if p.copy != nil {
			c = SecretObservation{State: SecretValid, Keyring: p.copy, WrittenPhase: mrtrv1alpha1.PhaseStable, WrittenFingerprint: p.copy.Fingerprint(),
				WrittenAt: p.writtenAt, TokenTTL: settings.TokenTTL}
		}
		in.Places = append(in.Places, Place{Name: name, Copy: c})
		wl := Workload{Place: name, Kind: mrtrv1alpha1.KindDeployment, Name: "api", Found: true}
		for _, pod := range p.pods {
			wl.Pods = append(wl.Pods, Pod{Place: name, Name: pod.name, Loaded: pod.ack, AckWriter: reporter, CreatedAt: pod.created, Terminating: !pod.stopAt.IsZero()})
			if pod.stopAt.IsZero() {
				wl.CountedPods++
			}
		}
		in.Workloads = append(in.Workloads, wl)
	}
	return in
}

func (w *placesWorld) names() []string {
	out := make([]string, 0, len(w.places))
	for n := range w.places {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// reconcile runs one pass; it returns the requeue.
func (w *placesWorld) reconcile() time.Duration {
	in := w.observe()
	d := Step(in)
	for _, name := range d.CopyTo {
		if !slices.ContainsFunc(in.Places, func(p Place) bool { return p.Name == name }) {
			w.t.Fatalf("copy written to %s, which is not a selected place", name)
		}
	}
	if d.Secret != nil {
		w.secret, w.phase, w.staged = d.Secret, d.SecretPhase, d.SecretStaged
		w.writtenAt = w.now.Truncate(time.Second)
		w.log = append(w.log, fmt.Sprintf("%s write %v for %s", w.now.Format(time.TimeOnly), d.Secret.IDs(), d.SecretPhase))
	}
	if w.rnd.IntN(8) == 0 {
		w.log = append(w.log, w.now.Format(time.TimeOnly)+" killed before the status write")
		return time.Second
	}
	w.status, w.namespaces = d.Status, d.Namespaces
	copies := d.CopyTo
	if len(copies) > 1 && w.rnd.IntN(4) == 0 { // killed between two copy writes
		copies = copies[:w.rnd.IntN(len(copies))]
		w.log = append(w.log, fmt.Sprintf("%s killed after %d of %d copies", w.now.Format(time.TimeOnly), len(copies), len(d.CopyTo)))
	}
	for _, name := range copies {
		p := w.places[name]
		w.copyWrites++
		if p.copy != nil && p.copy.Fingerprint() == w.secret.Fingerprint() {
			w.wasted++
		}
		p.copy, p.writtenAt = w.secret, w.now.Truncate(time.Second)
	}
	for _, q := range d.Evict { // the ReplicaSet replaces it with a pod that reads its copy as it is now
		place, name := PlacedPod(q)
		p := w.places[place]
		i := slices.IndexFunc(p.pods, func(pod *reloadPod) bool { return pod.name == name })
		if i < 0 || p.copy == nil {
			w.t.Fatalf("evicted %s, which does not exist", q)
		}
		w.serial++
		p.pods[i] = &reloadPod{name: fmt.Sprintf("p%d", w.serial), created: w.now.Truncate(time.Second), keys: p.copy.IDs()}
		w.log = append(w.log, fmt.Sprintf("%s evict %s", w.now.Format(time.TimeOnly), q))
	}
	return d.RequeueAfter
}

// act makes one random thing happen: a pod loads its copy or acknowledges, a pod starts, a
// namespace joins or leaves.
func (w *placesWorld) act() {
	names := w.names()
	p := w.places[names[w.rnd.IntN(len(names))]]
	switch r := w.rnd.IntN(40); {
	case r == 0 && p.selected && len(w.selectedNames()) > 1:
		p.selected = false // unlabelled: its servers keep the keyring they have
	case r == 1 && w.rnd.IntN(8) == 0:
		w.serial++
		w.places[fmt.Sprintf("late-%d", w.serial)] = &simPlace{selected: true} // a namespace labelled in; its pods start once its Secret exists
	case r == 2 && p.copy != nil:
		w.serial++
		p.pods = append(p.pods, &reloadPod{name: fmt.Sprintf("p%d", w.serial), created: w.now.Truncate(time.Second), keys: p.copy.IDs()})
	case len(p.pods) > 0 && p.copy != nil:
		pod := p.pods[w.rnd.IntN(len(p.pods))]
		if r%2 == 0 {
			pod.keys = p.copy.IDs() // the kubelet projected the copy and the file source reloaded it
		} else if slices.Equal(pod.keys, p.copy.IDs()) {
			pod.ack = p.copy.Fingerprint()
		}
	}
}

func (w *placesWorld) selectedNames() []string {
	var out []string
	for _, n := range w.names() {
		if w.places[n].selected {
			out = append(out, n)
		}
	}
	return out
}

// check asserts the invariant across the selected places: no pod rejects a token that a pod of
// any of them sealed within the token lifetime.
func (w *placesWorld) check(step int) {
	var pods []*reloadPod
	for _, n := range w.selectedNames() {
		pods = append(pods, w.places[n].pods...)
	}
	for _, p := range pods {
		w.lastSealed[p.keys[0]] = w.now
	}
	for k, sealed := range w.lastSealed {
		if !w.now.Before(sealed.Add(settings.TokenTTL)) {
			continue
		}
		for _, p := range pods {
			if !slices.Contains(p.keys, k) {
				w.t.Fatalf("step %d at %s: pod %s (keys %v) rejects key %s, sealed at %s\n%s",
					step, w.now.Format(time.TimeOnly), p.name, p.keys, k, sealed.Format(time.TimeOnly), strings.Join(w.log, "\n"))
			}
		}
	}
}

// TestPlacesSequences rotates a keyring over places for many seeds, killing the operator between
// copy writes and before status writes, with namespaces joining and leaving, and asserts the
// invariant after every step, that every rotation completes, and that no copy is written for
// nothing.
func TestPlacesSequences(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			a := "k20260101-000000"
			w := &placesWorld{t: t, rnd: mathrand.New(mathrand.NewPCG(seed, 11)), now: now, secret: ring(t, a), phase: mrtrv1alpha1.PhaseStable,
				writtenAt: now.Add(-time.Hour), status: status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), places: map[string]*simPlace{}, lastSealed: map[string]time.Time{}}
			for i := range 4 {
				sp := &simPlace{selected: true, copy: w.secret, writtenAt: w.writtenAt}
				for j := range 2 {
					sp.pods = append(sp.pods, &reloadPod{name: fmt.Sprintf("t%d-p%d", i, j), created: now.Add(-time.Hour), keys: []string{a}, ack: w.secret.Fingerprint()})
				}
				w.places[fmt.Sprintf("t%d", i)] = sp
			}
			w.status.NextRotationTime = at(time.Minute)
			rotations := 0
			for step := 0; step < 4000 && rotations < 3; step++ {
				before := w.status.Phase
				requeue := w.reconcile()
				if before != mrtrv1alpha1.PhaseStable && w.status.Phase == mrtrv1alpha1.PhaseStable {
					rotations++
				}
				w.act()
				w.check(step)
				d := time.Second
				if requeue > 0 && requeue < d {
					d = requeue
				}
				if w.rnd.IntN(3) == 0 && requeue > 0 {
					d = requeue
				}
				w.now = w.now.Add(d)
			}
			if rotations < 3 {
				t.Fatalf("%d rotations completed, want 3; phase %s, waiting for %+v\n%s", rotations, w.status.Phase, w.status.WaitingFor, strings.Join(w.log, "\n"))
			}
			if w.wasted > 0 {
				t.Fatalf("%d of %d copy writes changed nothing", w.wasted, w.copyWrites)
			}
		})
	}
}
