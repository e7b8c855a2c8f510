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
)

// agree checks that one status says one thing: a condition or status.waitingFor that quotes what
// a workload waits for ("Kind/name: ...") quotes the workload's own message, whole; Stalled is
// True exactly when waitingFor waits for a fix, and then Ready is False for the same reason. And
// that it says what the Decision does: a workload said to start its rollout is stamped, one held
// back by a stamp fight is not, StampReverted is True exactly while one is held, and the pass
// comes back by the end of each back-off and by the deadline waitingFor names.
func agree(t *testing.T, step int, in Input, d Decision) {
	t.Helper()
	st := d.Status
	reverted := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionStampReverted)
	held := 0
	for _, w := range st.Workloads {
		ref := string(w.Kind) + "/" + w.Name
		stamped := slices.Contains(d.StampTargets, ref)
		switch {
		case strings.HasSuffix(w.Message, " started") && !stamped:
			t.Fatalf("step %d: %s says %q, but the decision does not stamp it", step, ref, w.Message)
		case strings.Contains(w.Message, "put back the stamp"):
			held++
			if stamped {
				t.Fatalf("step %d: %s is stamped while it says %q", step, ref, w.Message)
			}
		}
	}
	if (reverted != nil) != (held > 0) {
		t.Fatalf("step %d: StampReverted is %v while %d workloads are held back: %+v", step, reverted, held, st.Workloads)
	}
	for _, f := range st.StampFights {
		i := slices.IndexFunc(st.Workloads, func(w mrtrv1alpha1.WorkloadStatus) bool { return w.Kind == f.Kind && w.Name == f.Name })
		if i < 0 || !strings.Contains(st.Workloads[i].Message, "put back the stamp") {
			continue // not held this pass
		}
		if wait := f.Until.Sub(in.Now); wait > 0 && (d.RequeueAfter == 0 || d.RequeueAfter > wait) {
			t.Fatalf("step %d: the back-off of %s/%s ends in %s, but the next pass is in %s", step, f.Kind, f.Name, wait, d.RequeueAfter)
		}
	}
	// The pass comes back by the deadline of the verdict that status.waitingFor renders.
	if w := st.WaitingFor; w != nil && w.Until != nil && w.Until.After(in.Now) {
		if wait := w.Until.Sub(in.Now); d.RequeueAfter == 0 || d.RequeueAfter > wait {
			t.Fatalf("step %d: waitingFor %s until %s (in %s), but the next pass is in %s", step, w.What, w.Until.UTC(), wait, d.RequeueAfter)
		}
	}
	// And by the until of every verdict decide found, rendered or not: the exit check that held the
	// phase (readyToSeal: delivery, the propagation delay, the replaced pods' grace), Stable's
	// rotationDue (the next rotation, the close of a window on a due one) and the one waited on.
	if in.Secret.State == SecretValid {
		o := decide(observe(in))
		for _, v := range []*verdict{o.exit, o.rotation, o.waiting} {
			if v == nil || !v.until.After(in.Now) {
				continue
			}
			if wait := v.until.Sub(in.Now); d.RequeueAfter == 0 || d.RequeueAfter > wait {
				t.Fatalf("step %d: a check (%s: %s) changes its answer in %s, but the next pass is in %s", step, v.what, v.message, wait, d.RequeueAfter)
			}
		}
	}
	for _, r := range st.RefusedAcknowledgements {
		if st.SelectedPods != nil && r.Pod == "bare-0" && !slices.Contains(st.SelectedPods.Laggards, r.Pod) {
			t.Fatalf("step %d: the acknowledgement of %s is refused (%s), yet it does not lag", step, r.Pod, r.Message)
		}
	}
	var texts []string
	for _, c := range st.Conditions {
		texts = append(texts, c.Type+": "+c.Message)
	}
	if st.WaitingFor != nil {
		texts = append(texts, "waitingFor: "+st.WaitingFor.Message)
	}
	for _, w := range st.Workloads {
		if w.Message == "" {
			continue
		}
		quote := string(w.Kind) + "/" + w.Name + ":"
		for _, text := range texts {
			if strings.Contains(text, quote) && !strings.Contains(text, w.Message) {
				t.Fatalf("step %d: %s quotes %s, whose status says %q", step, text, quote, w.Message)
			}
		}
	}
	stalled := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionStalled)
	ready := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionReady)
	fix := st.WaitingFor != nil && st.WaitingFor.What == mrtrv1alpha1.WaitFix
	if isTrue := stalled.Status == metav1.ConditionTrue; isTrue != fix {
		t.Fatalf("step %d: Stalled is %s (%s) but waitingFor is %+v", step, stalled.Status, stalled.Message, st.WaitingFor)
	} else if isTrue && (ready.Status != metav1.ConditionFalse || ready.Reason != stalled.Reason) {
		t.Fatalf("step %d: Stalled (%s) but Ready is %s (%s)", step, stalled.Reason, ready.Status, ready.Reason)
	}
}

// perturbed is a source of the views a reconciler may have of a world: a cache that lags the
// operator's own stamp, a workload controller yet to observe its spec or past its progress
// deadline, a partial list of pods, bare pods that acknowledge late, and rotations requested at
// random moments.
type perturbed struct {
	rnd      *mathrand.Rand
	request  int
	previous map[string]string // a workload's stamp before the last one the operator saw
}

func (p *perturbed) input(in *Input) {
	in.Secret.TokenTTL = in.Settings.TokenTTL // as published: no pass rewrites the Secret only for that
	if p.rnd.IntN(30) == 0 {
		p.request++
	}
	if p.request > 0 {
		in.RotateRequest = fmt.Sprintf("request-%d", p.request)
	}
	for i := range in.Workloads {
		w := &in.Workloads[i]
		switch r := p.rnd.IntN(20); {
		case r == 0 && p.previous[w.Name] != "": // the cache has not seen the operator's stamp yet
			w.Stamp, w.RolledOut = p.previous[w.Name], true
		case r == 1:
			w.Unobserved, w.RolledOut = true, false
		case r == 2:
			w.RolledOut, w.Message = false, w.ref()+`: exceeded its progress deadline: ReplicaSet "x" has timed out`
		case r == 3 && len(w.Pods) > 0: // the cache lists one pod fewer than the controller counts
			w.Pods = w.Pods[1:]
		}
		if w.Stamp != "" && w.Stamp != p.previous[w.Name+"/now"] {
			p.previous[w.Name], p.previous[w.Name+"/now"] = p.previous[w.Name+"/now"], w.Stamp
		}
	}
	if in.Settings.Reload() {
		loaded := ""
		if p.rnd.IntN(3) > 0 {
			loaded = in.Status.TargetFingerprint
		}
		writer := reporter
		if p.rnd.IntN(10) == 0 { // forged, by another manager
			writer = Writer{Manager: "kubectl-annotate"}
		}
		in.SelectedPods = []Pod{{Name: "bare-0", Loaded: loaded, AckWriter: writer, CreatedAt: now}}
	}
}

// simulated is a world of sequence_test.go or reload_test.go, for drive.
type simulated interface {
	// act makes the world's own thing happen for r of a ten-sided die, and reports whether it did.
	act(r int) bool
	reconcile() time.Duration
	tick(d time.Duration)
	check(step int)
	progress() (rotations int64, phase mrtrv1alpha1.Phase, log string)
}

func (w *world) act(r int) bool {
	switch {
	case r < 4:
		if w.rnd.IntN(10) == 0 {
			w.revertOne()
		} else {
			w.replaceOne()
		}
	case r < 5:
		w.reloadOne()
	default:
		return false
	}
	return true
}

func (w *world) progress() (int64, mrtrv1alpha1.Phase, string) {
	return w.status.RotationsCompleted, w.status.Phase, strings.Join(w.log, "\n")
}

func (w *reloadWorld) act(r int) bool {
	if r < 5 {
		w.step()
		return true
	}
	return false
}

func (w *reloadWorld) progress() (int64, mrtrv1alpha1.Phase, string) {
	return w.status.RotationsCompleted, w.status.Phase, strings.Join(w.log, "\n")
}

// drive runs w until it completed rotations, checking the invariant after every step: on each
// roll of the die the world acts, or the operator makes a pass (idling until the next rotation
// when Stable), or the clock moves.
func drive(t *testing.T, w simulated, rnd *mathrand.Rand, rotations int64, steps *int) {
	t.Helper()
	for ; ; *steps++ {
		done, phase, log := w.progress()
		if done >= rotations {
			return
		}
		if *steps > 200000 {
			t.Fatalf("no progress: %d rotations after %d steps, phase %s\n%s", done, *steps, phase, log)
		}
		switch r := rnd.IntN(10); {
		case w.act(r):
		case r < 8:
			if after := w.reconcile(); after > time.Hour {
				if _, phase, _ := w.progress(); phase == mrtrv1alpha1.PhaseStable {
					w.tick(after)
				}
			}
		default:
			w.tick(time.Duration(1+rnd.IntN(20)) * time.Second)
		}
		w.check(*steps)
	}
}

// TestStepProperties drives Step through random sequences of views (seeded, so a failure names
// the seed that reproduces it) in both deliveries and both next-key modes, with a rollout
// deadline short enough to stall often, and checks after every pass that no pod ever rejects a
// token it may receive (the invariant) and that the status agrees with itself (agree).
func TestStepProperties(t *testing.T) {
	for _, m := range nextKeyModes {
		for seed := uint64(1); seed <= 15; seed++ {
			t.Run(fmt.Sprintf("Restart %s seed %d", m.mode, seed), func(t *testing.T) {
				st := settings
				st.NextKey, st.RolloutDeadline = m.mode, 5*time.Second
				rnd := mathrand.New(mathrand.NewPCG(seed, 23))
				w := &world{t: t, rnd: rnd, now: now, lastSealed: map[string]time.Time{}, settings: st, reverts: 4}
				p := &perturbed{rnd: rnd, previous: map[string]string{}}
				steps := 0
				w.perturb, w.onStep = p.input, func(in Input, d Decision) { agree(t, steps, in, d) }
				for i, n := range []int{2, 1} {
					w.workloads = append(w.workloads, &simWorkload{name: fmt.Sprintf("w%d", i), replicas: n})
				}
				w.reconcile()
				for _, sw := range w.workloads {
					for range sw.replicas {
						sw.pods = append(sw.pods, &pod{template: sw.template, keys: w.secret.IDs()})
					}
				}
				drive(t, w, rnd, 3, &steps)
			})
			t.Run(fmt.Sprintf("Reload %s seed %d", m.mode, seed), func(t *testing.T) {
				st := reloading
				st.NextKey, st.RolloutDeadline = m.mode, 5*time.Second
				rnd := mathrand.New(mathrand.NewPCG(seed, 29))
				w := &reloadWorld{t: t, rnd: rnd, now: now, lastSealed: map[string]time.Time{}, settings: st}
				p := &perturbed{rnd: rnd, previous: map[string]string{}}
				steps := 0
				w.perturb, w.onStep = p.input, func(in Input, d Decision) { agree(t, steps, in, d) }
				w.reconcile()
				w.tick(time.Second)
				for i := range 3 {
					w.start(i == 0 && seed%2 == 0)
				}
				drive(t, w, rnd, 3, &steps)
			})
		}
	}
}

// TestSecretOnlyProperties drives a keyring without targets, whose phases wait out
// spec.propagationDelay, through rotations at random moments, checking agree (the requeue falls by
// the verdict's deadline) after every pass, and that the passes the requeues ask for are enough to
// finish each rotation.
func TestSecretOnlyProperties(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rnd := mathrand.New(mathrand.NewPCG(seed, 41))
		st := settings
		st.NextKey = []mrtrv1alpha1.NextKey{mrtrv1alpha1.NextKeyStaged, mrtrv1alpha1.NextKeyAtRotation}[seed%2]
		in := Input{Now: now, Generation: 1, Settings: st, SecretName: "s", Secret: SecretObservation{State: SecretAbsent}, FreshKeys: freshKeys()}
		for step := 0; in.Status.RotationsCompleted < 3; step++ {
			if step > 2000 {
				t.Fatalf("seed %d: no progress after %d passes: phase %s", seed, step, in.Status.Phase)
			}
			if rnd.IntN(10) == 0 {
				in.RotateRequest = fmt.Sprintf("request-%d", step)
			}
			d := Step(in)
			agree(t, step, in, d)
			if d.Secret != nil {
				in.Secret = SecretObservation{State: SecretValid, Keyring: d.Secret, WrittenPhase: d.SecretPhase,
					WrittenFingerprint: d.Secret.Fingerprint(), Staged: d.SecretStaged, TokenTTL: st.TokenTTL}
				in.Secret.WrittenAt = in.Now.Truncate(time.Second)
			}
			in.Status, in.FreshKeys = d.Status, freshKeys()
			// The next pass: when the requeue asks, or earlier (a watch event), never later.
			switch wait := d.RequeueAfter; {
			case d.Secret != nil:
				in.Now = in.Now.Add(time.Second) // the write's own watch event
			case wait > 0 && rnd.IntN(2) == 0:
				in.Now = in.Now.Add(wait)
			case wait > 0:
				in.Now = in.Now.Add(time.Duration(rnd.Int64N(int64(wait))))
			default:
				in.Now = in.Now.Add(time.Duration(1+rnd.IntN(30)) * time.Second)
			}
		}
	}
}
