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
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// pod is one simulated replica: the template it was created from and the key ids it holds (the
// first seals). A replaced pod keeps serving, and sealing, until stopAt.
type pod struct {
	template string
	keys     []string
	stopAt   time.Time // zero while running
}

type simWorkload struct {
	name     string
	template string
	replicas int
	pods     []*pod
	// writer is the field manager that wrote template last; previous the template before it.
	writer, previous string
}

// world is the cluster as the operator's Step sees it, with replicas rolling in a seeded random
// order, hot-reloading the mounted Secret at random, and stopping at random within the grace.
type world struct {
	t          *testing.T
	rnd        *mathrand.Rand
	now        time.Time
	secret     *keyring.Keyring
	phase      mrtrv1alpha1.Phase // annotation of the last write
	staged     string             // annotation of the last write
	settings   Settings
	status     mrtrv1alpha1.MRTRKeyringStatus
	workloads  []*simWorkload
	lastSealed map[string]time.Time
	log        []string
	// perturb, when set, changes what a pass observes (property_test.go); onStep sees each pass.
	perturb func(*Input)
	onStep  func(Input, Decision)
	// reverts is how many times a GitOps tool may still put back a stamp the operator wrote
	// (revertOne) before it is fixed.
	reverts int
}

func (w *world) observe() Input {
	sec := SecretObservation{State: SecretAbsent}
	if w.secret != nil {
		sec = SecretObservation{State: SecretValid, Keyring: w.secret, WrittenPhase: w.phase, WrittenFingerprint: w.secret.Fingerprint(), Staged: w.staged}
	}
	ws := make([]Workload, 0, len(w.workloads))
	for _, sw := range w.workloads {
		running, current := 0, 0
		for _, p := range sw.pods {
			if p.stopAt.IsZero() {
				running++
				if p.template == sw.template {
					current++
				}
			}
		}
		ws = append(ws, Workload{Kind: mrtrv1alpha1.KindDeployment, Name: sw.name, Found: true, Stamp: sw.template,
			StampWriter: Writer{Manager: sw.writer}, OwnStamp: sw.writer != "",
			RolledOut: current == sw.replicas && running == sw.replicas, Ready: int32(current), Desired: int32(sw.replicas)})
	}
	return Input{Now: w.now, Generation: 1, Settings: w.settings, Status: w.status, SecretName: "s", Secret: sec,
		FreshKeys: freshKeys(), Workloads: ws}
}

func (w *world) reconcile() time.Duration {
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
		w.log = append(w.log, fmt.Sprintf("%s write %v for %s", w.now.Format(time.TimeOnly), d.Secret.IDs(), d.SecretPhase))
	}
	w.status = d.Status
	if d.Stamp != "" {
		for _, sw := range w.workloads {
			if slices.Contains(d.StampTargets, string(mrtrv1alpha1.KindDeployment)+"/"+sw.name) && sw.template != d.Stamp {
				sw.previous, sw.template, sw.writer = sw.template, d.Stamp, mrtrv1alpha1.FieldManager
			}
		}
	}
	return d.RequeueAfter
}

// revertOne has a GitOps tool with the stamp in its source put back the stamp before the
// operator's last one, on one workload, while it may (reverts).
func (w *world) revertOne() {
	sw := w.workloads[w.rnd.IntN(len(w.workloads))]
	if w.reverts == 0 || sw.writer != mrtrv1alpha1.FieldManager || sw.previous == "" {
		return
	}
	w.reverts--
	sw.template, sw.writer = sw.previous, "argocd-controller"
	w.log = append(w.log, fmt.Sprintf("%s argocd reverts %s", w.now.Format(time.TimeOnly), sw.name))
}

// replaceOne replaces one pod of an old template, if any: the new pod starts with the Secret as it
// is now; the old one stops within the grace period.
func (w *world) replaceOne() {
	sw := w.workloads[w.rnd.IntN(len(w.workloads))]
	for _, p := range sw.pods {
		if p.stopAt.IsZero() && p.template != sw.template {
			p.stopAt = w.now.Add(time.Duration(w.rnd.Int64N(int64(settings.TerminationGracePeriod) + 1)))
			sw.pods = append(sw.pods, &pod{template: sw.template, keys: w.secret.IDs()})
			return
		}
	}
}

// reloadOne makes a running pod reload the mounted Secret, as a file-watching consumer does.
func (w *world) reloadOne() {
	sw := w.workloads[w.rnd.IntN(len(w.workloads))]
	if p := sw.pods[w.rnd.IntN(len(sw.pods))]; p.stopAt.IsZero() {
		p.keys = w.secret.IDs()
	}
}

// tick advances the clock: every pod that exists seals until then; stopped pods go away.
func (w *world) tick(d time.Duration) {
	w.seal()
	w.now = w.now.Add(d)
	w.seal()
	for _, sw := range w.workloads {
		sw.pods = slices.DeleteFunc(sw.pods, func(p *pod) bool { return !p.stopAt.IsZero() && !w.now.Before(p.stopAt) })
	}
}

func (w *world) seal() {
	for _, sw := range w.workloads {
		for _, p := range sw.pods {
			w.lastSealed[p.keys[0]] = w.now
		}
	}
}

// check asserts the invariant: every key a token may still be sealed with (sealed by any pod
// within tokenTTL) is accepted by every pod that may receive it.
func (w *world) check(step int) {
	w.seal()
	for k, sealed := range w.lastSealed {
		if !w.now.Before(sealed.Add(settings.TokenTTL)) {
			continue
		}
		for _, sw := range w.workloads {
			for i, p := range sw.pods {
				if !slices.Contains(p.keys, k) {
					w.t.Fatalf("step %d at %s: %s pod %d (keys %v) rejects key %s, sealed at %s\n%v",
						step, w.now.Format(time.TimeOnly), sw.name, i, p.keys, k, sealed.Format(time.TimeOnly), w.log)
				}
			}
		}
	}
}

// freshKeys are random candidate keys, as the reconciler generates them.
func freshKeys() [2]keyring.Key {
	var keys [2]keyring.Key
	for i := range keys {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		keys[i] = keyring.NewKey("x", secret)
	}
	return keys
}

// nextKeyModes are the ways a rotation gets its next key, each with the keys a keyring holds
// between rotations.
var nextKeyModes = []nextKeyMode{{mrtrv1alpha1.NextKeyAtRotation, 1}, {mrtrv1alpha1.NextKeyStaged, 2}}

type nextKeyMode struct {
	mode mrtrv1alpha1.NextKey
	keys int
}

// eachSeed runs f for 40 seeds in each next-key mode.
func eachSeed(t *testing.T, f func(t *testing.T, seed uint64, m nextKeyMode)) {
	for _, m := range nextKeyModes {
		for seed := uint64(1); seed <= 40; seed++ {
			t.Run(fmt.Sprintf("%s seed %d", m.mode, seed), func(t *testing.T) { f(t, seed, m) })
		}
	}
}

// TestRotationSequences runs several rotations over three workloads for many seeds, with the next
// key made at rotation and staged, and asserts the invariant after every step (cluster-api's
// Test_RollingUpdateSequences style).
func TestRotationSequences(t *testing.T) {
	eachSeed(t, func(t *testing.T, seed uint64, m nextKeyMode) {
		st := settings
		st.NextKey = m.mode
		w := &world{t: t, rnd: mathrand.New(mathrand.NewPCG(seed, 7)), now: now, lastSealed: map[string]time.Time{}, settings: st}
		for i, n := range []int{3, 2, 1} {
			w.workloads = append(w.workloads, &simWorkload{name: fmt.Sprintf("w%d", i), replicas: n})
		}
		w.reconcile() // creates the Secret and stamps the templates
		for _, sw := range w.workloads {
			for range sw.replicas {
				sw.pods = append(sw.pods, &pod{template: sw.template, keys: w.secret.IDs()})
			}
		}
		const rotations = 4
		for step := 0; w.status.RotationsCompleted < rotations; step++ {
			if step > 200000 {
				t.Fatalf("no progress: %d rotations after %d steps, phase %s\n%v", w.status.RotationsCompleted, step, w.status.Phase, w.log)
			}
			switch r := w.rnd.IntN(10); {
			case r < 4:
				w.replaceOne()
			case r < 5:
				w.reloadOne()
			case r < 8:
				if after := w.reconcile(); after > time.Hour && w.status.Phase == mrtrv1alpha1.PhaseStable {
					w.tick(after) // idle until the next rotation is due
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
