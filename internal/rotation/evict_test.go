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

func TestRestartBudget(t *testing.T) {
	pods := func(serving, terminating int) []Pod {
		out := make([]Pod, 0, serving+terminating)
		for i := range serving + terminating {
			out = append(out, Pod{Name: fmt.Sprintf("p%d", i), Terminating: i >= serving})
		}
		return out
	}
	cases := []struct {
		name string
		w    Workload
		want int
		why  string
	}{
		{"maxUnavailable 1 of 4, all ready", Workload{Pods: pods(4, 0), Desired: 4, Ready: 4, MaxUnavailable: 1}, 1, "at most 1"},
		{"maxUnavailable 0 still restarts one at a time", Workload{Pods: pods(4, 0), Desired: 4, Ready: 4}, 1, "at most 1"},
		{"maxUnavailable 2, one not ready", Workload{Pods: pods(4, 0), Desired: 4, Ready: 3, MaxUnavailable: 2}, 1, "at most 2 of its pods out of service at once (maxUnavailable), 1 now"},
		{"one terminating uses the budget up", Workload{Pods: pods(3, 1), Desired: 3, Ready: 3, MaxUnavailable: 1}, 0, "1 now"},
		{"a status behind: the terminating pods count", Workload{Pods: pods(2, 2), Desired: 4, Ready: 4, MaxUnavailable: 3}, 1, "2 now"},
		{"maxUnavailable 100% never takes every pod", Workload{Pods: pods(3, 0), Desired: 3, Ready: 3, MaxUnavailable: 3}, 2, "at most 2"},
		{"a single pod may be restarted", Workload{Pods: pods(1, 0), Desired: 1, Ready: 1, MaxUnavailable: 0}, 1, "at most 1"},
		{"a PodDisruptionBudget paces instead", Workload{Pods: pods(4, 0), Desired: 4, Ready: 4, MaxUnavailable: 1, DisruptionBudget: new(int32(3))}, 3, "PodDisruptionBudget allows 3"},
		{"a PodDisruptionBudget that allows nothing", Workload{Pods: pods(4, 0), Desired: 4, Ready: 2, DisruptionBudget: new(int32(0))}, 0, "allows 0"},
	}
	for _, c := range cases {
		got, why := restartBudget(c.w)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: budget %d (%s), want %d (%q)", c.name, got, why, c.want, c.why)
		}
	}
}

func TestRestartsArePaced(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, old := fp(t, a, b), fp(t, a)
	overdueIn := func(ws ...Workload) Input {
		st := status(t, mrtrv1alpha1.PhaseAccepting, 3*time.Minute, a, b) // past the 2m reload deadline
		return reloadInput(st, ours(t, mrtrv1alpha1.PhaseAccepting, a, b), ws...)
	}
	lagging := func(name string, age time.Duration, node NodeState) Pod {
		return Pod{Name: name, Loaded: old, AckWriter: reporter, CreatedAt: now.Add(-age), NodeName: "node-" + name, Node: node}
	}
	sized := func(w Workload, maxUnavailable int32) Workload {
		w.Desired, w.Ready, w.MaxUnavailable = int32(len(w.Pods)), int32(len(w.Pods)), maxUnavailable
		return w
	}
	cases := map[string]struct {
		in      Input
		edit    func(*Input)
		evict   []string
		suspect bool
		// message is a part of status.workloads[0].message; note of the restart event.
		message, note string
		requeue       time.Duration
	}{
		"when no pod acknowledges, one is restarted at a time (maxUnavailable 1), and the path is suspected": {
			in: overdueIn(sized(withPods(lagging("p1", time.Hour, NodeReady), lagging("p2", time.Hour, NodeReady),
				lagging("p3", time.Hour, NodeReady), lagging("p4", time.Hour, NodeReady)), 1)),
			evict: []string{"p1"}, suspect: true, requeue: HeldRestartRecheck,
			message: "restarts paced, at most 1 of its pods out of service at once (maxUnavailable), 0 now: waiting to restart p2, p3, p4",
			note:    "4 of 4 pods missed it at once: suspect their path to the API server (condition AcknowledgementPathSuspect)",
		},
		"a PodDisruptionBudget paces them instead": {
			in: overdueIn(sized(withPods(lagging("p1", time.Hour, NodeReady), lagging("p2", time.Hour, NodeReady),
				lagging("p3", time.Hour, NodeReady), lagging("p4", time.Hour, NodeReady)), 1)),
			edit:  func(in *Input) { in.Workloads[0].DisruptionBudget = new(int32(2)) },
			evict: []string{"p1", "p2"}, suspect: true, requeue: HeldRestartRecheck,
			message: "its PodDisruptionBudget allows 2 disruptions now: waiting to restart p3, p4",
		},
		"a pod on a node that is not Ready is not restarted, and the status names the node": {
			in:      overdueIn(sized(withPods(acked("p1", ab), acked("p2", ab), lagging("p3", time.Hour, NodeNotReady)), 1)),
			requeue: HeldRestartRecheck,
			message: "not restarted while their node is not Ready: p3 (node node-p3)",
		},
		"the longest overdue goes first": {
			in: overdueIn(sized(withPods(acked("p1", ab), lagging("p2", time.Hour, NodeReady),
				Pod{Name: "p3", Loaded: old, AckWriter: reporter, CreatedAt: writtenAt.Add(-2 * time.Minute)}, acked("p4", ab), acked("p5", ab)), 1)),
			edit: func(in *Input) {
				// p3 was created during the phase: its deadline is later than p2's.
				in.Workloads[0].Pods[2].CreatedAt = now.Add(-150 * time.Second)
				in.Status.PhaseStartedAt = at(-170 * time.Second)
			},
			evict: []string{"p2"}, requeue: HeldRestartRecheck, message: "waiting to restart p3",
		},
		"a node whose readiness cannot be read is not taken for NotReady, and the event says so": {
			in:    overdueIn(sized(withPods(acked("p1", ab), acked("p2", ab), lagging("p3", time.Hour, NodeUnknown)), 1)),
			edit:  func(in *Input) { in.NodesUnreadable = true },
			evict: []string{"p3"}, requeue: 7 * time.Minute,
			note: "the readiness of their nodes is unknown (the operator may not read Nodes, as in a namespace-scoped install)",
		},
		"a workload of one pod still gets it restarted": {
			in:    overdueIn(sized(withPods(lagging("p1", time.Hour, NodeReady)), 0)),
			evict: []string{"p1"}, requeue: 7 * time.Minute,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := c.in
			if c.edit != nil {
				c.edit(&in)
			}
			d := Step(in)
			if !slices.Equal(d.Evict, c.evict) {
				t.Errorf("evict %v, want %v", d.Evict, c.evict)
			}
			cond := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionAcknowledgementPathSuspect)
			if (cond != nil) != c.suspect {
				t.Errorf("AcknowledgementPathSuspect %+v, want it: %v", cond, c.suspect)
			}
			if cond != nil && (cond.Status != metav1.ConditionTrue || cond.Reason != mrtrv1alpha1.ReasonAcknowledgementPathSuspect ||
				!strings.Contains(cond.Message, fmt.Sprintf("%d of %d pods", len(in.Workloads[0].Pods), len(in.Workloads[0].Pods)))) {
				t.Errorf("AcknowledgementPathSuspect %+v", cond)
			}
			if msg := d.Status.Workloads[0].Message; !strings.Contains(msg, c.message) {
				t.Errorf("workload message %q does not say %q", msg, c.message)
			}
			if c.note != "" && !slices.ContainsFunc(d.Events, func(e Event) bool { return strings.Contains(e.Note, c.note) }) {
				t.Errorf("events %+v do not say %q", d.Events, c.note)
			}
			if d.RequeueAfter != c.requeue {
				t.Errorf("requeueAfter %s, want %s", d.RequeueAfter, c.requeue)
			}
			agree(t, 0, c.in, d)
		})
	}
}

// TestRestartPacingProperty draws random workloads of overdue and acknowledging pods, on nodes
// Ready, NotReady or unknown, with random strategies, budgets and pods already out of service,
// and checks every pass: no pod on a NotReady node is evicted; no workload loses more than its
// budget; without a PodDisruptionBudget no workload of several pods is left without a serving
// pod; AcknowledgementPathSuspect is set exactly when most pods are overdue.
func TestRestartPacingProperty(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, old := fp(t, a, b), fp(t, a)
	rnd := mathrand.New(mathrand.NewPCG(33, 9))
	for iter := range 2000 {
		ws := make([]Workload, 0, 3)
		total, overdue := 0, 0
		for wi := range 1 + rnd.IntN(3) {
			w := withPods()
			w.Name = fmt.Sprintf("w%d", wi)
			n := 1 + rnd.IntN(6)
			for pi := range n {
				p := Pod{Name: fmt.Sprintf("w%d-p%d", wi, pi), AckWriter: reporter, CreatedAt: now.Add(-time.Hour), NodeName: "n", Node: NodeState(rnd.IntN(3))}
				switch rnd.IntN(4) {
				case 0:
					p.Loaded = ab
				case 1:
					p.Terminating = true
					p.Loaded = old
				default:
					p.Loaded = old
				}
				if !p.Terminating {
					total++
					if p.Loaded == old {
						overdue++
					}
				}
				w.Pods = append(w.Pods, p)
			}
			w.CountedPods = int32(len(w.Pods))
			w.Desired = int32(n)
			w.Ready = int32(rnd.IntN(n + 1))
			w.MaxUnavailable = int32(rnd.IntN(n + 2))
			if rnd.IntN(3) == 0 {
				w.DisruptionBudget = new(int32(rnd.IntN(n + 1)))
			}
			ws = append(ws, w)
		}
		st := status(t, mrtrv1alpha1.PhaseAccepting, 3*time.Minute, a, b)
		in := reloadInput(st, ours(t, mrtrv1alpha1.PhaseAccepting, a, b), ws...)
		d := Step(in)
		for _, w := range ws {
			budget, _ := restartBudget(w)
			evicted, serving := 0, 0
			for _, p := range w.Pods {
				if !slices.Contains(d.Evict, p.Name) {
					if !p.Terminating {
						serving++
					}
					continue
				}
				evicted++
				if p.Node == NodeNotReady {
					t.Fatalf("iteration %d: evicted %s on a node that is not Ready", iter, p.Name)
				}
				if p.Terminating || p.Loaded == ab {
					t.Fatalf("iteration %d: evicted %s, terminating or acknowledging", iter, p.Name)
				}
			}
			if evicted > budget {
				t.Fatalf("iteration %d: %s lost %d pods, over its budget of %d", iter, w.Name, evicted, budget)
			}
			if w.DisruptionBudget == nil && len(w.Pods) > 1 && evicted > 0 && serving == 0 {
				t.Fatalf("iteration %d: every pod of %s out of service at once, without a PodDisruptionBudget: %+v", iter, w.Name, w.Pods)
			}
		}
		suspect := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionAcknowledgementPathSuspect) != nil
		if want := total >= 2 && 2*overdue > total; suspect != want {
			t.Fatalf("iteration %d: AcknowledgementPathSuspect %v with %d of %d pods overdue", iter, suspect, overdue, total)
		}
		agree(t, iter, in, d)
	}
}
