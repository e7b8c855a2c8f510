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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// reloading is settings in Reload delivery.
var reloading = func() Settings { s := settings; s.Delivery = mrtrv1alpha1.DeliveryReload; return s }()

// writtenAt is when the Secret of the reload tables was written: the phase's start.
var writtenAt = now.Add(-time.Minute)

// reloadInput is input in Reload delivery, the Secret written (by the API server's clock) when the
// phase began a minute ago.
func reloadInput(st mrtrv1alpha1.MRTRKeyringStatus, sec SecretObservation, ws ...Workload) Input {
	in := input(st, sec, ws...)
	in.Settings = reloading
	in.Secret.WrittenAt = writtenAt
	return in
}

// acked is a pod that acknowledged fingerprint loaded, created long before the write.
func acked(name, loaded string) Pod {
	return Pod{Name: name, Loaded: loaded, AckWriter: reporter, CreatedAt: now.Add(-time.Hour)}
}

// withPods is the found Deployment "api" with pods, all of them counted by its controller.
func withPods(pods ...Pod) Workload {
	w := deployment("api", "", false) // stamp and rollout mean nothing in Reload delivery
	w.Pods, w.CountedPods = pods, int32(len(pods))
	return w
}

func TestReloadStep(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, ba := fp(t, a, b), fp(t, b, a)
	accepting := func() mrtrv1alpha1.MRTRKeyringStatus {
		return status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b)
	}
	secAB := ours(t, mrtrv1alpha1.PhaseAccepting, a, b)
	cases := map[string]struct {
		in   Input
		edit func(*Input)
		want want
		// evict are the pods Step asks to restart.
		evict []string
		// laggards are status.workloads[0].laggards.
		laggards []string
	}{
		"Accepting ends once every pod acknowledged the keyring; nothing is stamped and no grace is waited": {
			in:   reloadInput(accepting(), secAB, withPods(acked("p1", ab), acked("p2", ab))),
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, requeue: 2 * time.Minute, events: []string{"KeySealing"}},
			// Behind the keyring just written, until they acknowledge it.
			laggards: []string{"p1", "p2"},
		},
		"Accepting waits for a pod that still runs the old keyring until its reload deadline": {
			in:       reloadInput(accepting(), secAB, withPods(acked("p1", ab), acked("p2", fp(t, a)))),
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: time.Minute},
			laggards: []string{"p2"},
		},
		"a pod that acknowledges nothing runs the keyring when it was created after the write": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab),
				Pod{Name: "env-consumer", CreatedAt: writtenAt.Add(time.Second)})),
			want:     want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, requeue: 2 * time.Minute, events: []string{"KeySealing"}},
			laggards: []string{"p1", "env-consumer"},
		},
		"a pod created in the second of the write must acknowledge: whole seconds do not order them": {
			in:       reloadInput(accepting(), secAB, withPods(acked("p1", ab), Pod{Name: "p2", CreatedAt: writtenAt})),
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: time.Minute},
			laggards: []string{"p2"},
		},
		"without the write's time no pod passes unacknowledged": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab), Pod{Name: "p2", CreatedAt: now})),
			edit: func(in *Input) {
				in.Secret.WrittenAt = time.Time{}
			},
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 2 * time.Minute},
			laggards: []string{"p2"},
		},
		"a Secret changed behind our back is no write of ours: its pods must acknowledge it": {
			in: reloadInput(accepting(), foreign(t, "hand", "made"), withPods(Pod{Name: "p1", CreatedAt: now})),
			want: want{phase: mrtrv1alpha1.PhaseStable, write: []string{"hand", "made"}, requeue: 2 * time.Minute,
				events: []string{"SecretChanged"}},
			laggards: []string{"p1"},
		},
		"a partial view proves nothing: the controller counts a pod the cache has not shown": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab))),
			edit: func(in *Input) {
				in.Workloads[0].CountedPods = 2
			},
			want: want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 9 * time.Minute},
		},
		"a terminating pod counts until it is gone, and is not evicted again": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab),
				Pod{Name: "old", Loaded: fp(t, a), AckWriter: reporter, CreatedAt: now.Add(-time.Hour), Terminating: true})),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-5 * time.Minute)
			},
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 5 * time.Minute},
			laggards: []string{"old"},
		},
		"a pod past its reload deadline is restarted, alone, and named": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab), acked("stuck", fp(t, a)))),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-2 * time.Minute)
			},
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 8 * time.Minute, events: []string{mrtrv1alpha1.ReasonAcknowledgementMissing}},
			evict:    []string{"stuck"},
			laggards: []string{"stuck"},
		},
		"an eviction asked before (a PodDisruptionBudget refused it) is asked again without another event": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab), acked("stuck", fp(t, a)))),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-3 * time.Minute)
				in.Status.RestartedPods = []string{"stuck"}
			},
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 7 * time.Minute},
			evict:    []string{"stuck"},
			laggards: []string{"stuck"},
		},
		"a pod's reload deadline counts from its creation when it started after the phase": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab),
				Pod{Name: "late", Loaded: fp(t, a), AckWriter: reporter, CreatedAt: now.Add(-30 * time.Second)})),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-5 * time.Minute)
			},
			want:     want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 90 * time.Second},
			laggards: []string{"late"},
		},
		"selected pods are gated by their acknowledgement alone and never restarted": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab))),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-5 * time.Minute)
				in.SelectedPods = []Pod{acked("bare-1", ab), {Name: "bare-2", CreatedAt: now}}
			},
			want: want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 5 * time.Minute},
		},
		"selected pods alone gate the phase, without a propagation delay": {
			in: reloadInput(accepting(), secAB),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-time.Second)
				in.SelectedPods = []Pod{acked("bare-1", ab)}
			},
			want: want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, requeue: 10 * time.Minute, events: []string{"KeySealing"}},
		},
		"SealingWithNew ends once every pod acknowledged it: the TTL wait begins": {
			in:   reloadInput(status(t, mrtrv1alpha1.PhaseSealingWithNew, time.Minute, b, a), ours(t, mrtrv1alpha1.PhaseSealingWithNew, b, a), withPods(acked("p1", ba))),
			want: want{phase: mrtrv1alpha1.PhaseWaitingTTL, requeue: 6 * time.Minute},
		},
		"a workload whose stamp another keyring claimed is no conflict: nothing is stamped": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab))),
			edit: func(in *Input) {
				in.Workloads[0].ClaimedBy = "other"
			},
			want:     want{phase: mrtrv1alpha1.PhaseSealingWithNew, write: []string{b, a}, requeue: 2 * time.Minute, events: []string{"KeySealing"}},
			laggards: []string{"p1"},
		},
		"a missing target still holds Accepting": {
			in: reloadInput(accepting(), secAB, withPods(acked("p1", ab)), Workload{Kind: mrtrv1alpha1.KindDeployment, Name: "gone"}),
			want: want{phase: mrtrv1alpha1.PhaseAccepting, requeue: 9 * time.Minute, stalled: mrtrv1alpha1.ReasonWorkloadNotFound,
				events: []string{mrtrv1alpha1.ReasonWorkloadNotFound}},
		},
		"not every pod within rolloutDeadline stalls, naming the laggards": {
			in: reloadInput(accepting(), secAB, withPods(Pod{Name: "frozen", Loaded: fp(t, a), AckWriter: reporter, CreatedAt: now.Add(-time.Hour), Terminating: true})),
			edit: func(in *Input) {
				in.Status.PhaseStartedAt = at(-10 * time.Minute)
			},
			want: want{phase: mrtrv1alpha1.PhaseAccepting, stalled: mrtrv1alpha1.ReasonRolloutDeadlineExceeded,
				events: []string{mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
			laggards: []string{"frozen"},
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
			if !slices.Equal(d.Evict, c.evict) {
				t.Errorf("evict %v, want %v", d.Evict, c.evict)
			}
			if len(d.Status.Workloads) > 0 && !slices.Equal(d.Status.Workloads[0].Laggards, c.laggards) {
				t.Errorf("laggards %v, want %v", d.Status.Workloads[0].Laggards, c.laggards)
			}
			if d.Stamp != "" {
				t.Errorf("Reload delivery stamped %s", d.Stamp)
			}
		})
	}
}

// Status counts the pods and their acknowledgements per workload, in total, and for selected pods.
func TestReloadStatusCountsPods(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab := fp(t, a, b)
	in := reloadInput(status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b),
		withPods(acked("p1", ab), acked("p2", fp(t, a)), acked("p3", ab)))
	in.SelectedPods = []Pod{acked("bare", "")}
	st := Step(in).Status
	w := st.Workloads[0]
	if w.Pods != 3 || w.PodsAcknowledged != 2 || !slices.Equal(w.Laggards, []string{"p2"}) || w.UpToDate {
		t.Errorf("workload status %+v, want 2 of 3 acknowledged, p2 lagging", w)
	}
	if st.PodCount != 4 || st.PodsAcknowledged != 2 {
		t.Errorf("podCount %d, podsAcknowledged %d; want 4, 2", st.PodCount, st.PodsAcknowledged)
	}
	if s := st.SelectedPods; s == nil || s.Pods != 1 || s.PodsAcknowledged != 0 || !slices.Equal(s.Laggards, []string{"bare"}) {
		t.Errorf("selectedPods %+v, want 1 pod, bare lagging", s)
	}
	r := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionReconciling)
	if !strings.Contains(r.Message, "waiting for every pod to acknowledge keyring "+ab) || !strings.Contains(r.Message, "p2") {
		t.Errorf("Reconciling message %q does not say what it waits for", r.Message)
	}
}

// checkDecision compares d with want, as TestStep does.
func checkDecision(t *testing.T, in Input, d Decision, w want) {
	t.Helper()
	if d.Status.Phase != w.phase {
		t.Errorf("phase = %s, want %s", d.Status.Phase, w.phase)
	}
	var wrote []string
	if d.Secret != nil {
		wrote = d.Secret.IDs()
	}
	if !slices.Equal(wrote, w.write) {
		t.Errorf("wrote %v, want %v", wrote, w.write)
	}
	if d.RequeueAfter != w.requeue {
		t.Errorf("requeueAfter = %s, want %s", d.RequeueAfter, w.requeue)
	}
	stalled := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStalled)
	gotStall := ""
	if stalled.Status == metav1.ConditionTrue {
		gotStall = stalled.Reason
	}
	if gotStall != w.stalled {
		t.Errorf("Stalled reason = %q, want %q (%s)", gotStall, w.stalled, stalled.Message)
	}
	reasons := make([]string, 0, len(d.Events))
	for _, e := range d.Events {
		reasons = append(reasons, e.Reason)
	}
	if !slices.Equal(reasons, w.events) {
		t.Errorf("events = %v, want %v", reasons, w.events)
	}
	if d.Status.ObservedGeneration != in.Generation {
		t.Errorf("observedGeneration = %d, want %d", d.Status.ObservedGeneration, in.Generation)
	}
}

// reloadPod is one simulated replica in Reload delivery: the keys it seals and opens with, what
// it acknowledged, and whether it ever acknowledges (a consumer of the MRTR_KEYRING variable
// does not; nor does a pod whose reload is stuck).
type reloadPod struct {
	name    string
	created time.Time
	keys    []string
	ack     string
	silent  bool      // never acknowledges, never reloads
	stopAt  time.Time // zero while running; set when evicted
}

// reloadWorld is TestRotationSequences's world in Reload delivery: pods reload the Secret at
// random, acknowledge at random some time after, crash and come back with the Secret as it is,
// some never acknowledge and are evicted (a replacement then starts), and evicted pods serve on
// within the grace period.
type reloadWorld struct {
	t          *testing.T
	rnd        *mathrand.Rand
	now        time.Time
	secret     *keyring.Keyring
	phase      mrtrv1alpha1.Phase
	staged     string
	settings   Settings
	writtenAt  time.Time
	status     mrtrv1alpha1.MRTRKeyringStatus
	pods       []*reloadPod
	serial     int
	lastSealed map[string]time.Time
	log        []string
	// perturb, when set, changes what a pass observes (property_test.go); onStep sees each pass.
	perturb func(*Input)
	onStep  func(Input, Decision)
}

func (w *reloadWorld) observe() Input {
	sec := SecretObservation{State: SecretAbsent}
	if w.secret != nil {
		sec = SecretObservation{State: SecretValid, Keyring: w.secret, WrittenPhase: w.phase, WrittenFingerprint: w.secret.Fingerprint(),
			WrittenAt: w.writtenAt, TokenTTL: settings.TokenTTL, Staged: w.staged}
	}
	wl := Workload{Kind: mrtrv1alpha1.KindDeployment, Name: "api", Found: true}
	for _, p := range w.pods {
		wl.Pods = append(wl.Pods, Pod{Name: p.name, Loaded: p.ack, AckWriter: reporter, CreatedAt: p.created, Terminating: !p.stopAt.IsZero()})
		if p.stopAt.IsZero() {
			wl.CountedPods++
		}
	}
	return Input{Now: w.now, Generation: 1, Settings: w.settings, Status: w.status, SecretName: "s", Secret: sec,
		FreshKeys: freshKeys(), Workloads: []Workload{wl}}
}

func (w *reloadWorld) reconcile() time.Duration {
	in := w.observe()
	if w.perturb != nil {
		w.perturb(&in)
	}
	d := Step(in)
	if w.onStep != nil {
		w.onStep(in, d)
	}
	if d.Secret != nil {
		w.secret, w.phase, w.staged = d.Secret, d.SecretPhase, d.SecretStaged
		w.writtenAt = w.now.Truncate(time.Second) // the API server's clock, whole seconds
		w.log = append(w.log, fmt.Sprintf("%s write %v for %s", w.now.Format(time.TimeOnly), d.Secret.IDs(), d.SecretPhase))
	}
	if d.Stamp != "" {
		w.t.Fatalf("Reload delivery stamped %s", d.Stamp)
	}
	w.status = d.Status
	for _, name := range d.Evict {
		for _, p := range w.pods {
			if p.name == name && p.stopAt.IsZero() {
				p.stopAt = w.now.Add(time.Duration(w.rnd.Int64N(int64(settings.TerminationGracePeriod) + 1)))
				w.log = append(w.log, fmt.Sprintf("%s evict %s", w.now.Format(time.TimeOnly), name))
				w.start(w.rnd.IntN(4) == 0) // the ReplicaSet replaces it
			}
		}
	}
	return d.RequeueAfter
}

// start creates a pod with the Secret as it is now (the API server's clock in whole seconds).
func (w *reloadWorld) start(silent bool) {
	w.serial++
	w.pods = append(w.pods, &reloadPod{name: fmt.Sprintf("p%d", w.serial), created: w.now.Truncate(time.Second), keys: w.secret.IDs(), silent: silent})
}

// step makes one random thing happen to a running pod.
func (w *reloadWorld) step() {
	p := w.pods[w.rnd.IntN(len(w.pods))]
	if !p.stopAt.IsZero() || p.silent {
		return
	}
	switch r := w.rnd.IntN(10); {
	case r < 5: // the kubelet projected the Secret and the file source reloaded it
		p.keys = w.secret.IDs()
	case r < 9: // the reporter's PATCH of what it loaded went through
		p.ack = w.fingerprintOf(p.keys)
	default: // the container crashed and restarted: same pod, the keyring as mounted now
		p.keys = w.secret.IDs()
	}
}

func (w *reloadWorld) fingerprintOf(ids []string) string {
	if slices.Equal(ids, w.secret.IDs()) {
		return w.secret.Fingerprint()
	}
	return "stale-" + strings.Join(ids, ",")
}

func (w *reloadWorld) tick(d time.Duration) {
	w.seal()
	w.now = w.now.Add(d)
	w.seal()
	w.pods = slices.DeleteFunc(w.pods, func(p *reloadPod) bool { return !p.stopAt.IsZero() && !w.now.Before(p.stopAt) })
}

func (w *reloadWorld) seal() {
	for _, p := range w.pods {
		w.lastSealed[p.keys[0]] = w.now
	}
}

// check asserts the invariant over every pod that exists, terminating ones included.
func (w *reloadWorld) check(step int) {
	w.seal()
	for k, sealed := range w.lastSealed {
		if !w.now.Before(sealed.Add(settings.TokenTTL)) {
			continue
		}
		for _, p := range w.pods {
			if !slices.Contains(p.keys, k) {
				w.t.Fatalf("step %d at %s: pod %s (keys %v) rejects key %s, sealed at %s\n%v",
					step, w.now.Format(time.TimeOnly), p.name, p.keys, k, sealed.Format(time.TimeOnly), strings.Join(w.log, "\n"))
			}
		}
	}
}

// TestReloadSequences runs rotations in Reload delivery for many seeds, with the next key made at
// rotation and staged, and asserts the invariant after every step.
func TestReloadSequences(t *testing.T) {
	eachSeed(t, func(t *testing.T, seed uint64, m nextKeyMode) {
		st := reloading
		st.NextKey = m.mode
		w := &reloadWorld{t: t, rnd: mathrand.New(mathrand.NewPCG(seed, 11)), now: now, lastSealed: map[string]time.Time{}, settings: st}
		w.reconcile() // creates the Secret
		w.tick(time.Second)
		for i := range 4 {
			w.start(i == 0 && seed%2 == 0) // on even seeds one pod never acknowledges
		}
		const rotations = 4
		for step := 0; w.status.RotationsCompleted < rotations; step++ {
			if step > 200000 {
				t.Fatalf("no progress: %d rotations after %d steps, phase %s\n%v", w.status.RotationsCompleted, step, w.status.Phase, strings.Join(w.log, "\n"))
			}
			switch r := w.rnd.IntN(10); {
			case r < 5:
				w.step()
			case r < 8:
				if after := w.reconcile(); after > time.Hour && w.status.Phase == mrtrv1alpha1.PhaseStable {
					w.tick(after)
				}
			default:
				w.tick(time.Duration(1+w.rnd.IntN(20)) * time.Second)
			}
			w.check(step)
		}
		if got := len(w.secret.IDs()); got != m.keys {
			t.Errorf("after %d rotations the Secret holds %d keys, want %d", rotations, got, m.keys)
		}
	})
}
