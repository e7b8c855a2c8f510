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
	"reflect"
	"slices"
	"testing"
	"time"
)

// parts are what describe renders of one outcome, each derived on its own.
type parts struct {
	waiting   any
	conds     any
	event     []Event
	requeue   time.Duration
	counts    counts
	workloads any
	selected  any
}

// reversed derives describe's parts in the reverse of the order describe composes them.
func reversed(f facts, o outcome) parts {
	var p parts
	p.waiting = waitingFor(o)
	p.requeue = nextDeadline(f.in, o.deadlines)
	conds, e := conditions(f, o)
	p.conds, p.event = conds, e
	p.counts = o.progress.counts()
	p.workloads = workloadStatuses(o.progress)
	p.selected = selectedStatus(o.progress.v)
	return p
}

// checkParts checks that describe's parts, derived in another order, before and after describe
// ran on the same outcome, are what describe's Decision holds: no part reads what another wrote,
// and describe changes neither the status observed nor the one decided.
func checkParts(t *testing.T, step int, in Input) {
	t.Helper()
	f := observe(in)
	o := decide(f)
	observed, decided := f.in.Status.DeepCopy(), o.status.DeepCopy()
	before := reversed(f, o)
	d := describe(f, o)
	if !reflect.DeepEqual(&f.in.Status, observed) || !reflect.DeepEqual(&o.status, decided) {
		t.Fatalf("step %d: describe's parts changed the status observed or the one decided", step)
	}
	st := d.Status
	var event []Event
	if len(d.Events) > len(o.events) {
		event = d.Events[len(o.events):]
	}
	got := parts{waiting: st.WaitingFor, conds: st.Conditions, event: event, requeue: d.RequeueAfter,
		counts:    counts{workloads: st.WorkloadCount, upToDate: st.WorkloadsUpToDate, pods: st.PodCount, acknowledged: st.PodsAcknowledged},
		workloads: st.Workloads, selected: st.SelectedPods}
	for name, p := range map[string]parts{"before describe": before, "after describe": reversed(f, o)} {
		if !reflect.DeepEqual(p, got) {
			t.Fatalf("step %d: the parts derived in reverse order %s differ from describe's:\n%+v\n%+v", step, name, p, got)
		}
	}
	if !slices.Equal(d.Events[:len(o.events)], o.events) {
		t.Fatalf("step %d: describe's events %v do not start with the outcome's %v", step, d.Events, o.events)
	}
}

// TestDescribePartsInAnyOrder drives Step through the random views of TestStepProperties, in both
// deliveries, and checks after every pass that describe's parts do not depend on the order they
// are derived in (checkParts).
func TestDescribePartsInAnyOrder(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("Restart seed %d", seed), func(t *testing.T) {
			st := settings
			st.RolloutDeadline = 5 * time.Second
			rnd := mathrand.New(mathrand.NewPCG(seed, 23))
			w := &world{t: t, rnd: rnd, now: now, lastSealed: map[string]time.Time{}, settings: st, reverts: 4}
			p := &perturbed{rnd: rnd, previous: map[string]string{}}
			steps := 0
			w.perturb, w.onStep = p.input, func(in Input, _ Decision) { checkParts(t, steps, in) }
			for i, n := range []int{2, 1} {
				w.workloads = append(w.workloads, &simWorkload{name: fmt.Sprintf("w%d", i), replicas: n})
			}
			w.reconcile()
			for _, sw := range w.workloads {
				for range sw.replicas {
					sw.pods = append(sw.pods, &pod{template: sw.template, keys: w.secret.IDs()})
				}
			}
			drive(t, w, rnd, 2, &steps)
		})
		t.Run(fmt.Sprintf("Reload seed %d", seed), func(t *testing.T) {
			st := reloading
			st.RolloutDeadline = 5 * time.Second
			rnd := mathrand.New(mathrand.NewPCG(seed, 29))
			w := &reloadWorld{t: t, rnd: rnd, now: now, lastSealed: map[string]time.Time{}, settings: st}
			p := &perturbed{rnd: rnd, previous: map[string]string{}}
			steps := 0
			w.perturb, w.onStep = p.input, func(in Input, _ Decision) { checkParts(t, steps, in) }
			w.reconcile()
			w.tick(time.Second)
			for i := range 3 {
				w.start(i == 0)
			}
			drive(t, w, rnd, 2, &steps)
		})
	}
}
