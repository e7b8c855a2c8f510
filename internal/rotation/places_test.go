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
	"bytes"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// The cluster keyring of the places tests, and the ownership facts of a copy it wrote.
const (
	clusterName = "shared"
	clusterUID  = "3f0c1d8e-0000-4000-8000-000000000001"
)

var ourCopy = Ownership{ClusterKeyring: clusterName, WriterUID: clusterUID}

// clustered makes in the Input of the cluster keyring clusterName.
func clustered(in Input) Input {
	in.Name, in.UID = clusterName, clusterUID
	return in
}

// copyOf is a place whose copy holds ids, as written by the operator at writtenAt.
func copyOf(t *testing.T, name string, phase mrtrv1alpha1.Phase, ids ...string) Place {
	c := ours(t, phase, ids...)
	c.WrittenAt = writtenAt
	return Place{Name: name, UID: "uid-" + name, Copy: c, Ownership: ourCopy}
}

// leftPlace is a namespace no longer selected that holds a copy of ids with ownership o.
func leftPlace(t *testing.T, name string, o Ownership, ids ...string) Place {
	p := copyOf(t, name, mrtrv1alpha1.PhaseStable, ids...)
	p.Ownership = o
	return p
}

func TestPlacesStep(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, ba := fp(t, a, b), fp(t, b, a)
	accepting := func() Input {
		in := clustered(reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
			placed("t1", ab, "p1"), placed("t2", ab, "p2")))
		in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseAccepting, a, b), copyOf(t, "t2", mrtrv1alpha1.PhaseAccepting, a, b)}
		return in
	}
	cases := map[string]struct {
		edit   func(*Input)
		phase  mrtrv1alpha1.Phase
		copyTo []string
		events []string
		// items are status.namespaces.items as "name=State", "cluster:name=State" in a member.
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
				in.Places = append(in.Places, Place{Name: "t3", UID: "uid-t3", Copy: SecretObservation{State: SecretAbsent}})
				in.Workloads = append(in.Workloads, placed("t3", "", "p3"))
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t3"}, events: []string{"NamespaceJoined"}, items: []string{"t3=Behind", "t1=UpToDate", "t2=UpToDate"},
		},
		"a Secret of another keyring is never written, its namespace is not rotated, and the conflict is reported": {
			edit: func(in *Input) {
				in.Places[1].Ownership = Ownership{Keyring: "web", KeyringClaim: Claim{Exists: true}}
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
				in.Left = []Place{leftPlace(t, "t0", ourCopy, a, b)}
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", State: mrtrv1alpha1.NamespaceUpToDate}}
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing", "NamespaceLeft"},
			items: []string{"t1=Behind", "t2=Behind", "t0=Left"},
		},
		"a copy update the API server refuses holds the phase, is retried, and is reported; its pods are not evicted": {
			edit: func(in *Input) {
				in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a)
				in.Places[1].WriteRefused = "Forbidden: denied by policy no-keyring-writes"
				in.Workloads[1].Pods[0] = Pod{Place: "t2", Name: "p2", Loaded: fp(t, a), AckWriter: reporter, CreatedAt: now.Add(-time.Hour)}
				in.Status.PhaseStartedAt = at(-5 * time.Minute) // past the reload deadline: p2 would be overdue
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t2"}, events: []string{"WriteRefused"},
			items: []string{"t2=WriteRefused", "t1=UpToDate"},
		},
		"an immutable copy is a conflict: never written, and the others rotate": {
			edit: func(in *Input) {
				in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a)
				in.Places[1].Ownership.Immutable = true
				in.Workloads[1].Pods[0].Loaded = ""
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1"}, events: []string{"KeySealing", "Conflict"},
			items: []string{"t1=Behind", "t2=Conflict"},
		},
		"a labelled Secret of another type is a conflict": {
			edit: func(in *Input) {
				in.Places[1].Copy = ObserveSecret(true, "Opaque", nil, nil)
				in.Workloads[1].Pods[0].Loaded = ""
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1"}, events: []string{"KeySealing", "Conflict"},
			items: []string{"t1=Behind", "t2=Conflict"},
		},
		"a copy whose creation is refused (a full quota) holds nothing back and is retried": {
			edit: func(in *Input) {
				in.Places = append(in.Places, Place{Name: "t3", UID: "uid-t3", Copy: SecretObservation{State: SecretAbsent},
					WriteRefused: `Forbidden: exceeded quota: q, requested: count/secrets=1`})
				in.Workloads = append(in.Workloads, placed("t3", "", "p3"))
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2", "t3"}, events: []string{"KeySealing", "WriteRefused"},
			items: []string{"t1=Behind", "t2=Behind", "t3=WriteRefused"},
		},
		"a Secret labelled as a copy in a namespace never selected, not written by this keyring, is no copy": {
			edit: func(in *Input) {
				in.Left = []Place{leftPlace(t, "tx", Ownership{ClusterKeyring: clusterName}, a), leftPlace(t, "ty", Ownership{ClusterKeyring: clusterName, WriterUID: "forged"}, a)}
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing"},
			items: []string{"t1=Behind", "t2=Behind"},
		},
		"a namespace created again under a selected name joins anew": {
			edit: func(in *Input) {
				in.Places[1] = Place{Name: "t2", UID: "uid-new", Copy: SecretObservation{State: SecretAbsent}}
				in.Workloads[1].Pods[0].Loaded = ""
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t2", UID: "uid-t2", State: mrtrv1alpha1.NamespaceUpToDate}}
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t2"}, events: []string{"NamespaceJoined"},
			items: []string{"t2=Behind", "t1=UpToDate"},
		},
		"a member that cannot be reached holds the phase, is never written, and is reported once": {
			edit: func(in *Input) {
				in.Places = append(in.Places, Place{Name: "west", Unreachable: "cache not synced within 30s: connection refused"})
			},
			phase: mrtrv1alpha1.PhaseAccepting, events: []string{mrtrv1alpha1.ReasonMemberUnreachable},
			items: []string{"west=Unreachable", "t1=UpToDate", "t2=UpToDate"},
		},
		"a namespace of a member no longer reached holds the phase though its copy held the keyring when last seen": {
			edit: func(in *Input) {
				in.Places[1].Unreachable = "Get https://west:6443/readyz: connection refused"
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t2", UID: "uid-t2", State: mrtrv1alpha1.NamespaceUnreachable}}
			},
			phase: mrtrv1alpha1.PhaseAccepting, items: []string{"t2=Unreachable", "t1=UpToDate"},
		},
		"a member reached again is written from the lead Secret, and the phase waits for its copies": {
			edit: func(in *Input) {
				in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a)
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t2", UID: "uid-t2", State: mrtrv1alpha1.NamespaceUnreachable}}
			},
			phase: mrtrv1alpha1.PhaseAccepting, copyTo: []string{"t2"}, items: []string{"t2=Behind", "t1=UpToDate"},
		},
		"a member's place is listed as its namespace in its cluster, and known by both: listed unreachable, it is not announced again": {
			edit: func(in *Input) {
				in.Places = append(in.Places, Place{Name: "west/t3", UID: "uid-t3", Unreachable: "Get https://west:6443/readyz: connection refused"})
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t3", Cluster: "west", UID: "uid-t3", State: mrtrv1alpha1.NamespaceUnreachable}}
			},
			phase: mrtrv1alpha1.PhaseAccepting, items: []string{"west:t3=Unreachable", "t1=UpToDate", "t2=UpToDate"},
		},
		"a member's place that left is listed in its cluster, and announced once": {
			edit: func(in *Input) {
				in.Left = []Place{leftPlace(t, "west/t0", ourCopy, a, b)}
				in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", Cluster: "west", State: mrtrv1alpha1.NamespaceUpToDate}}
			},
			phase: mrtrv1alpha1.PhaseSealingWithNew, copyTo: []string{"t1", "t2"}, events: []string{"KeySealing", mrtrv1alpha1.EventNamespaceLeft},
			items: []string{"t1=Behind", "t2=Behind", "west:t0=Left"},
		},
		"a namespace already reported as left is not announced again": {
			edit: func(in *Input) {
				in.Left = []Place{leftPlace(t, "t0", ourCopy, a, b)}
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
				name := n.Name
				if n.Cluster != "" {
					name = n.Cluster + ":" + n.Name
				}
				items = append(items, name+"="+string(n.State))
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
	in := clustered(reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b)))
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
	selected bool
	// refuse is how many of the next writes of its copy the API server refuses (an admission
	// policy, a full quota); refused is the refusal the shell remembers until a write succeeds.
	refuse    int
	refused   string
	copy      *keyring.Keyring // nil: no copy
	writtenAt time.Time
	pods      []*reloadPod
}

func (w *placesWorld) observe() Input {
	sec := SecretObservation{State: SecretValid, Keyring: w.secret, WrittenPhase: w.phase, WrittenFingerprint: w.secret.Fingerprint(),
		WrittenAt: w.writtenAt, TokenTTL: settings.TokenTTL, Staged: w.staged}
	in := clustered(Input{Now: w.now, Generation: 1, Settings: reloading, Status: w.status, Namespaces: w.namespaces, SecretName: "s", Secret: sec, FreshKeys: freshKeys()})
	for _, name := range w.names() {
		p := w.places[name]
		if !p.selected {
			if p.copy != nil {
				in.Left = append(in.Left, Place{Name: name, Copy: SecretObservation{State: SecretValid, Keyring: p.copy}, Ownership: ourCopy})
			}
			continue
		}
		c := SecretObservation{State: SecretAbsent}
		if p.copy != nil {
			c = SecretObservation{State: SecretValid, Keyring: p.copy, WrittenPhase: mrtrv1alpha1.PhaseStable, WrittenFingerprint: p.copy.Fingerprint(),
				WrittenAt: p.writtenAt, TokenTTL: settings.TokenTTL}
		}
		in.Places = append(in.Places, Place{Name: name, Copy: c, Ownership: ourCopy, WriteRefused: p.refused})
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
		switch {
		case p.refuse > 0:
			p.refuse--
			p.refused = "Forbidden: refused by a test policy"
			w.log = append(w.log, fmt.Sprintf("%s write of %s refused", w.now.Format(time.TimeOnly), name))
			continue
		case w.rnd.IntN(10) == 0: // lost a race: retried by the next pass
			w.log = append(w.log, fmt.Sprintf("%s write of %s conflicted", w.now.Format(time.TimeOnly), name))
			continue
		}
		p.refused = ""
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
		if p.copy.Fingerprint() != d.Status.TargetFingerprint {
			w.t.Fatalf("evicted %s while its copy does not hold keyring %s\n%s", q, d.Status.TargetFingerprint, strings.Join(w.log, "\n"))
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
	case r == 3 && w.rnd.IntN(4) == 0:
		p.refuse = 1 + w.rnd.IntN(4) // a policy refuses its next writes for a while
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

// TestRefusedCopyStalls: a copy the API server keeps refusing holds the phase until
// rolloutDeadline, then stalls it, naming the namespace and the refusal; PartiallyReady says so
// from the first pass.
func TestRefusedCopyStalls(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab := fp(t, a, b)
	in := clustered(reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, 11*time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
		placed("t1", ab, "p1"), placed("t2", fp(t, a), "p2")))
	in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseAccepting, a, b), copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a)}
	in.Places[1].WriteRefused = "Forbidden: denied by policy"
	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting || len(d.Evict) != 0 {
		t.Fatalf("phase %s, evict %v: want Accepting and no eviction", d.Status.Phase, d.Evict)
	}
	stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != mrtrv1alpha1.ReasonWriteRefused ||
		!strings.Contains(stalled.Message, "t2 (Forbidden: denied by policy)") {
		t.Fatalf("Stalled %+v: want True, WriteRefused, naming t2 and the refusal", stalled)
	}
	partial := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionPartiallyReady)
	if partial == nil || partial.Status != metav1.ConditionTrue || !strings.Contains(partial.Message, "t2") {
		t.Fatalf("PartiallyReady %+v: want True naming t2", partial)
	}
	in.Places[1].WriteRefused = ""
	in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseAccepting, a, b)
	in.Workloads[1].Pods[0].Loaded = ab
	d = Step(in)
	partial = meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionPartiallyReady)
	if d.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew || partial == nil || partial.Status != metav1.ConditionFalse {
		t.Fatalf("phase %s, PartiallyReady %+v: want SealingWithNew and False once the write succeeds", d.Status.Phase, partial)
	}
}

// TestRestartStampsFollowTheCopy is the Restart-delivery sequence of a copy update that fails:
// the place is not stamped while its copy is stale, a rollout stamped before its copy's write
// proves nothing, and the phase waits until a rollout begun after it completes.
func TestRestartStampsFollowTheCopy(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab := fp(t, a, b)
	stamped := func(place, stamp string, rolledOut bool, at time.Time) Workload {
		w := deployment("api", stamp, rolledOut)
		w.Place, w.OwnStamp = place, true
		w.StampWriter = Writer{Manager: mrtrv1alpha1.FieldManager, At: at}
		return w
	}
	in := clustered(input(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
		stamped("t1", ab, true, now.Add(-50*time.Second)), stamped("t2", fp(t, a), true, now.Add(-time.Hour))))
	in.Secret.WrittenAt = writtenAt
	in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseAccepting, a, b), copyOf(t, "t2", mrtrv1alpha1.PhaseStable, a)}

	// Pass 1: t2's copy is stale (its update lost a race): t2 is stamped only because its copy is
	// written in this same pass, first; the shell drops the stamp if that write fails.
	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting || !slices.Equal(d.CopyTo, []string{"t2"}) {
		t.Fatalf("pass 1: phase %s, copies %v; want Accepting, t2", d.Status.Phase, d.CopyTo)
	}
	// Pass 2: the write was refused: nothing of t2 is stamped.
	in.Places[1].WriteRefused = "Conflict: the object has been modified"
	in.Places[1].Copy.State = SecretValid
	d = Step(in)
	if slices.Contains(d.StampTargets, "t2/Deployment/api") {
		t.Fatalf("pass 2: stamps %v while t2's copy is stale", d.StampTargets)
	}
	// Pass 3: somebody stamped t2 with the new keyring before its copy held it, and the rollout
	// completed: those pods started with the old copy; the phase waits.
	in.Places[1].WriteRefused = ""
	in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseAccepting, a, b)
	in.Places[1].Copy.WrittenAt = now.Add(-10 * time.Second)
	in.Workloads[1] = stamped("t2", ab, true, now.Add(-20*time.Second))
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting {
		t.Fatalf("pass 3: phase %s: a rollout stamped before t2's copy write counted", d.Status.Phase)
	}
	// Pass 4: a rollout stamped after the copy write completes: the new key seals.
	in.Workloads[1] = stamped("t2", ab, true, now.Add(-5*time.Second))
	in.Status.RolledOutAt = at(-time.Minute) // the replaced pods' grace is over
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew {
		t.Fatalf("pass 4: phase %s, waiting for %+v: want SealingWithNew", d.Status.Phase, d.Status.WaitingFor)
	}
}

// TestRekeyOnLeave: a namespace that leaves with spec.onLeave Rekey starts a rotation to a fresh
// key at once, without the staged key it holds; one that leaves mid-rotation is owed one, which
// starts once the keyring is Stable.
func TestRekeyOnLeave(t *testing.T) {
	a, s := "k20260101-000000", "k20260102-000000"
	as := fp(t, a, s)
	stable := func() Input {
		st := status(t, mrtrv1alpha1.PhaseStable, time.Hour, a, s)
		sec := ours(t, mrtrv1alpha1.PhaseStable, a, s)
		sec.Staged, sec.WrittenAt = s, writtenAt
		in := clustered(reloadInput(st, sec, placed("t1", as, "p1")))
		in.Secret = sec
		in.Settings.NextKey = mrtrv1alpha1.NextKeyStaged
		in.OnLeave = mrtrv1alpha1.OnLeaveRekey
		in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseStable, a, s)}
		in.Left = []Place{leftPlace(t, "t0", ourCopy, a, s)}
		in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", State: mrtrv1alpha1.NamespaceUpToDate}}
		return in
	}
	d := Step(stable())
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting || d.Secret == nil {
		t.Fatalf("phase %s, write %v: want a rotation started", d.Status.Phase, d.Secret)
	}
	ids := d.Secret.IDs()
	if len(ids) != 2 || ids[0] != a || slices.Contains(ids, s) || d.Namespaces.PendingRekey != "" {
		t.Fatalf("keys %v, pending %q: want %s and a fresh key, without the staged %s, nothing pending", ids, d.Namespaces.PendingRekey, a, s)
	}
	var left *Event
	for i, e := range d.Events {
		if e.Reason == mrtrv1alpha1.EventNamespaceLeft {
			left = &d.Events[i]
		}
	}
	if left == nil || left.Type != corev1Warning || !strings.Contains(left.Note, a+", "+s) || !strings.Contains(left.Note, "kubectl mrtr revoke cmkr/"+clusterName) {
		t.Fatalf("NamespaceLeft event %+v: want a Warning naming keys %s, %s and the command", left, a, s)
	}

	// Mid-rotation: owed, not started.
	in := stable()
	in.Status.Phase = mrtrv1alpha1.PhaseRemoving
	in.Secret.WrittenPhase = mrtrv1alpha1.PhaseRemoving
	in.Workloads[0].Pods[0].Loaded = ""
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseRemoving || !strings.Contains(d.Namespaces.PendingRekey, "t0") {
		t.Fatalf("phase %s, pending %q: want Removing, a rekey owed to t0", d.Status.Phase, d.Namespaces.PendingRekey)
	}
	// Once the rotation under way ends, the pass that enters Stable looks again within
	// NextRotationDelay, which starts the rekey: nothing else would wake the keyring.
	in = stable()
	in.Status.Phase = mrtrv1alpha1.PhaseRemoving
	in.Secret.WrittenPhase = mrtrv1alpha1.PhaseRemoving
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseStable || d.RequeueAfter <= 0 || d.RequeueAfter > NextRotationDelay {
		t.Fatalf("phase %s, next pass in %v: want Stable, and the owed rekey looked at within %v", d.Status.Phase, d.RequeueAfter, NextRotationDelay)
	}
	// Keep does nothing of the kind.
	in = stable()
	in.OnLeave = mrtrv1alpha1.OnLeaveKeep
	if d = Step(in); d.Status.Phase != mrtrv1alpha1.PhaseStable || d.Namespaces.PendingRekey != "" {
		t.Fatalf("Keep: phase %s, pending %q", d.Status.Phase, d.Namespaces.PendingRekey)
	}
}

// TestRejoinedPlaceRestartsTheTTLWait: a place that joins again in WaitingTTL holding an older
// keyring may seal with the old primary until its pods run the phase's keyring, so the wait
// starts again once they do.
func TestRejoinedPlaceRestartsTheTTLWait(t *testing.T) {
	n, o := "k20260806-120000", "k20260101-000000"
	no := fp(t, n, o)
	st := status(t, mrtrv1alpha1.PhaseWaitingTTL, 10*time.Minute, n, o)
	st.TTLWaitUntil = at(-time.Second) // over, but for the place that came back
	in := clustered(reloadInput(st, ours(t, mrtrv1alpha1.PhaseSealingWithNew, n, o), placed("t1", no, "p1"), placed("t2", fp(t, o), "p2")))
	in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseSealingWithNew, n, o), copyOf(t, "t2", mrtrv1alpha1.PhaseStable, o)}
	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseWaitingTTL || d.Secret != nil {
		t.Fatalf("phase %s, write %v: the old key went while t2 may still seal with it", d.Status.Phase, d.Secret)
	}
	in.Status = d.Status
	in.Places[1] = copyOf(t, "t2", mrtrv1alpha1.PhaseSealingWithNew, n, o)
	in.Workloads[1].Pods[0].Loaded = no
	d = Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseWaitingTTL || d.Status.TTLWaitUntil == nil || d.Status.TTLWaitUntil.Time.Before(now.Add(in.Settings.TTLWait())) {
		t.Fatalf("phase %s, wait until %v: want the whole TTL wait again from now", d.Status.Phase, d.Status.TTLWaitUntil)
	}
}

// With a key source the operator makes no key: a rekey owed to a namespace that left waits for the
// source's next key, and the rotation to it is the rekey.
func TestRekeyOnLeaveWithAKeySource(t *testing.T) {
	a := "k20260101-000000"
	src := bytes.Repeat([]byte{'N'}, 32)
	stable := func(source SourceObservation) Input {
		st := status(t, mrtrv1alpha1.PhaseStable, time.Hour, a)
		sec := ours(t, mrtrv1alpha1.PhaseStable, a)
		sec.WrittenAt = writtenAt
		in := clustered(reloadInput(st, sec, placed("t1", fp(t, a), "p1")))
		in.Secret = sec
		in.Settings.Source, in.Settings.NextKey = true, mrtrv1alpha1.NextKeyAtRotation
		in.Source = source
		in.OnLeave = mrtrv1alpha1.OnLeaveRekey
		in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseStable, a)}
		in.Left = []Place{leftPlace(t, "t0", ourCopy, a)}
		in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t0", State: mrtrv1alpha1.NamespaceUpToDate}}
		return in
	}
	// The source Secret is missing: owed, nothing starts.
	d := Step(stable(ObserveSource(false, "src", "key", nil, nil)))
	if d.Status.Phase != mrtrv1alpha1.PhaseStable || d.Secret != nil || !strings.Contains(d.Namespaces.PendingRekey, "t0") {
		t.Fatalf("no source key: phase %s, write %v, pending %q", d.Status.Phase, d.Secret, d.Namespaces.PendingRekey)
	}
	// A new source key: the rotation to it starts, and settles what was owed.
	d = Step(stable(ObserveSource(true, "src", "key", map[string][]byte{"key": src}, nil)))
	if d.Status.Phase != mrtrv1alpha1.PhaseAccepting || d.Secret == nil || d.Namespaces.PendingRekey != "" {
		t.Fatalf("new source key: phase %s, write %v, pending %q", d.Status.Phase, d.Secret, d.Namespaces.PendingRekey)
	}
	if ids := d.Secret.IDs(); len(ids) != 2 || ids[1] != SourceKeyID(SourceDigest(src)) {
		t.Fatalf("keys %v: want %s then the source's key", ids, a)
	}
}

// TestUnreachableMemberHoldsEveryPhase: in each phase that waits for the copies, a member the
// operator cannot reach holds the phase however far the rest has come, removes no key, is never
// written, and stalls the phase after rolloutDeadline naming the member and why; without it the
// same input moves on, so the hold is the member's.
func TestUnreachableMemberHoldsEveryPhase(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	const why = "cache not synced within 30s: dial tcp 10.0.0.9:6443: connection refused"
	for _, c := range []struct {
		phase mrtrv1alpha1.Phase
		ids   []string
	}{
		{mrtrv1alpha1.PhaseAccepting, []string{a, b}},
		{mrtrv1alpha1.PhaseSealingWithNew, []string{b, a}},
		{mrtrv1alpha1.PhaseWaitingTTL, []string{b, a}},
	} {
		t.Run(string(c.phase), func(t *testing.T) {
			held := fp(t, c.ids...)
			in := clustered(reloadInput(status(t, c.phase, 11*time.Minute, c.ids...), ours(t, c.phase, c.ids...),
				placed("t1", held, "p1"), placed("west/t2", held, "p2")))
			in.Places = []Place{copyOf(t, "t1", c.phase, c.ids...), copyOf(t, "west/t2", c.phase, c.ids...)}
			if c.phase == mrtrv1alpha1.PhaseWaitingTTL {
				in.Status.TTLWaitUntil = &metav1.Time{Time: now.Add(-time.Minute)} // the wait is over
			}
			if d := Step(in); d.Status.Phase == c.phase {
				t.Fatalf("with every member reached the phase stays %s (waiting for %+v): the test proves nothing", c.phase, d.Status.WaitingFor)
			}
			in.Places[1].Unreachable = why
			d := Step(in)
			if d.Status.Phase != c.phase {
				t.Fatalf("phase %s, want %s held by the unreachable member", d.Status.Phase, c.phase)
			}
			if slices.Contains(d.CopyTo, "west/t2") || len(d.Evict) != 0 || len(d.StampTargets) != 0 {
				t.Fatalf("CopyTo %v, Evict %v, StampTargets %v: nothing may be written to or done in an unreachable member", d.CopyTo, d.Evict, d.StampTargets)
			}
			ids := make([]string, 0, len(d.Status.Keys))
			for _, k := range d.Status.Keys {
				ids = append(ids, k.ID)
			}
			for _, id := range c.ids {
				if !slices.Contains(ids, id) {
					t.Fatalf("keys %v: key %s was removed while a member could not be reached", ids, id)
				}
			}
			stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
			if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != mrtrv1alpha1.ReasonMemberUnreachable ||
				!strings.Contains(stalled.Message, "west/t2 (unreachable: "+why+")") {
				t.Fatalf("Stalled %+v: want True, MemberUnreachable, naming west/t2 and why", stalled)
			}
		})
	}
}

// TestPlacedPodSplitsAtTheLastSlash: a place of a member is MEMBER/NAMESPACE; the pod's name is
// what follows the last "/", a workload's reference the last two segments.
func TestPlacedPodSplitsAtTheLastSlash(t *testing.T) {
	for q, want := range map[string][2]string{"p": {"", "p"}, "ns/p": {"ns", "p"}, "west/ns/p": {"west/ns", "p"}} {
		if place, name := PlacedPod(q); place != want[0] || name != want[1] {
			t.Errorf("PlacedPod(%q) = %q, %q; want %q, %q", q, place, name, want[0], want[1])
		}
	}
	for ref, want := range map[string]string{"Deployment/web": "", "ns/Deployment/web": "ns", "west/ns/Deployment/web": "west/ns"} {
		if got := refPlace(ref); got != want || PlacedRef(want, "Deployment/web") != ref {
			t.Errorf("refPlace(%q) = %q, want %q (the inverse of PlacedRef)", ref, got, want)
		}
	}
}

// Truncate keeps a message within the API's bound, ending in "...", and never splits a rune.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{"abcdefghij", "abcdefghij"},
		{"abcdefghijk", "abcdefg..."},
		{"abcdefé-rest", "abcdef..."}, // é is bytes 6 and 7: cut at 7, it would be split
	} {
		got := Truncate(tc.in, 10)
		if got != tc.want || len(got) > 10 || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, 10) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUnreachableMemberStallsADueRotation: in Stable, a rotation that falls due (requested, or on
// schedule) while a member cannot be reached waits for it: its staged key seals only once every
// pod runs the keyring that staged it. The wait stalls, naming the member, once the member has
// been lost for rolloutDeadline (a request has no time of its own to count from), and the
// operator looks again at that moment; while nothing is due, a lost member stalls nothing.
func TestUnreachableMemberStallsADueRotation(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	const why = "Get https://west:6443/readyz: connection refused"
	stable := func(requested bool, lost time.Duration) Input {
		st := status(t, mrtrv1alpha1.PhaseStable, 3*time.Hour, a, b)
		st.Keys[1].Role = mrtrv1alpha1.KeyStaged
		sec := ours(t, mrtrv1alpha1.PhaseStable, a, b)
		sec.Staged = b
		held := fp(t, a, b)
		in := clustered(reloadInput(st, sec, placed("t1", held, "p1"), placed("west/t2", held, "p2")))
		in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseStable, a, b), copyOf(t, "west/t2", mrtrv1alpha1.PhaseStable, a, b)}
		for i := range in.Places {
			in.Places[i].Copy.Staged = b
		}
		if requested {
			in.RotateRequest = "now"
		}
		if lost > 0 {
			in.Places[1].Unreachable, in.Places[1].UnreachableSince = why, now.Add(-lost)
		}
		return in
	}
	if d := Step(stable(true, 0)); d.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew {
		t.Fatalf("requested, every member reached: phase %s, want SealingWithNew (the test proves nothing)", d.Status.Phase)
	}
	deadline := settings.RolloutDeadline
	for name, c := range map[string]struct {
		in      Input
		stalled bool
		// recheck, when not zero, is the latest RequeueAfter allowed: the moment the stall is due.
		recheck time.Duration
	}{
		"requested, the member lost for longer than rolloutDeadline: stalled":    {in: stable(true, deadline+time.Minute), stalled: true},
		"requested, the member lost a minute ago: waits, and looks again then":   {in: stable(true, time.Minute), recheck: deadline - time.Minute},
		"nothing due, the member lost for longer than rolloutDeadline: no stall": {in: stable(false, deadline+time.Minute)},
		"due on schedule for longer than rolloutDeadline, the member lost a minute ago: stalled, the rotation waited since it fell due": {
			in: func() Input {
				in := stable(false, time.Minute)
				in.Status.NextRotationTime = at(-2 * time.Hour)
				return in
			}(), stalled: true},
	} {
		t.Run(name, func(t *testing.T) {
			d := Step(c.in)
			if d.Status.Phase != mrtrv1alpha1.PhaseStable || d.Secret != nil {
				t.Fatalf("phase %s, write %v: the unreachable member must hold the rotation in Stable", d.Status.Phase, d.Secret)
			}
			stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
			if got := stalled != nil && stalled.Status == metav1.ConditionTrue; got != c.stalled {
				t.Fatalf("Stalled %+v, want stalled %v", stalled, c.stalled)
			}
			if c.stalled && (stalled.Reason != mrtrv1alpha1.ReasonMemberUnreachable || !strings.Contains(stalled.Message, "west/t2 (unreachable: "+why+")")) {
				t.Fatalf("Stalled %+v: want MemberUnreachable naming west/t2 and why", stalled)
			}
			if c.recheck > 0 && (d.RequeueAfter <= 0 || d.RequeueAfter > c.recheck) {
				t.Fatalf("RequeueAfter %s: want at most %s, when the stall is due", d.RequeueAfter, c.recheck)
			}
		})
	}
}

// TestPendingPlaceHoldsQuietly: a place not seen yet (its member connecting after the operator
// started, or its namespace's cache syncing) holds the phase as an unreachable one does, while
// the other places go on: a revocation is written to them at once. It is not reported as lost: no
// MemberUnreachable event, no PartiallyReady, and status keeps what it said of it.
func TestPendingPlaceHoldsQuietly(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	held := fp(t, a, b)
	in := clustered(reloadInput(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a, b), ours(t, mrtrv1alpha1.PhaseStable, a, b),
		placed("t1", held, "p1"), placed("west/t2", held, "p2")))
	in.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseStable, a, b), {Name: "west/t2", UID: "uid-west/t2",
		Unreachable: "connecting", Pending: true}}
	in.Namespaces.Items = []mrtrv1alpha1.NamespaceStatus{{Name: "t1", UID: "uid-t1", State: mrtrv1alpha1.NamespaceUpToDate},
		{Name: "t2", Cluster: "west", UID: "uid-west/t2", State: mrtrv1alpha1.NamespaceUpToDate}}
	in.RevokeRequest = b

	d := Step(in)
	if d.Status.Phase != mrtrv1alpha1.PhaseRevoking || d.Secret == nil || slices.Contains(d.Secret.IDs(), b) {
		t.Fatalf("phase %s, write %v: the revocation must not wait for a member not seen yet", d.Status.Phase, d.Secret)
	}
	if !slices.Contains(d.CopyTo, "t1") || slices.Contains(d.CopyTo, "west/t2") {
		t.Fatalf("CopyTo %v: the revocation is written where the operator reaches, never where it has not looked yet", d.CopyTo)
	}
	for _, e := range d.Events {
		if e.Reason == mrtrv1alpha1.ReasonMemberUnreachable {
			t.Fatalf("event %+v: a member not seen yet is not reported as lost", e)
		}
	}
	if c := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionPartiallyReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("PartiallyReady %+v: want False", c)
	}
	items := make([]string, 0, len(d.Namespaces.Items))
	for _, it := range d.Namespaces.Items {
		items = append(items, it.Cluster+":"+it.Name+"="+string(it.State))
	}
	if !slices.Contains(items, "west:t2=UpToDate") {
		t.Fatalf("status.namespaces %v: the pending place keeps what status said of it", items)
	}

	// Once its member is seen, what it held counts: the revocation is written there too, and
	// Revoking ends only once its pods run the new keyring.
	d = Step(func() Input {
		next := in
		next.Status, next.Secret, next.RevokeRequest = d.Status, ours(t, mrtrv1alpha1.PhaseRevoking, d.Secret.IDs()...), ""
		next.Places = []Place{copyOf(t, "t1", mrtrv1alpha1.PhaseRevoking, d.Secret.IDs()...), copyOf(t, "west/t2", mrtrv1alpha1.PhaseStable, a, b)}
		return next
	}())
	if !slices.Contains(d.CopyTo, "west/t2") {
		t.Fatalf("CopyTo %v: the member seen now gets the revocation", d.CopyTo)
	}
}
