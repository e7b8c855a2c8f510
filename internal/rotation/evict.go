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
	"slices"
	"strings"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The Reload delivery's restarts: a pod of a target that has not run the phase's keyring
// reloadDeadline after the phase began (or it was created) is overdue, and is evicted, at the pace
// its workload can afford (restartBudget), unless its node is not Ready: then the node is what
// keeps it from acknowledging, and a restart would only take a pod out of service early (its
// replacement cannot start there either, and an eviction on an unreachable node does not complete).
// When most pods are overdue at once, the fault is more likely on their common path to the API
// server (a network policy, an API server they cannot reach, the consumer role) than in each pod:
// the condition AcknowledgementPathSuspect says so, in the status written before any eviction.

// reloadDeadline is when pod must run the target keyring, or be restarted: reloadDeadline after
// the phase began or the pod was created, whichever is later.
func reloadDeadline(in Input, st mrtrv1alpha1.MRTRKeyringStatus, pod Pod) time.Time {
	start := phaseStart(in, st)
	if pod.CreatedAt.After(start) {
		start = pod.CreatedAt
	}
	return start.Add(in.Settings.ReloadDeadline)
}

// restarts is what restartOverdue decided for the overdue pods of each target.
type restarts struct {
	// byWorkload holds, by target (Kind/name), the overdue pods it did not evict this pass.
	byWorkload map[string]held
	// overdue counts the overdue pods of every target, pods (not terminating) all their pods.
	overdue, pods int
	// unknownNodes counts the overdue pods evicted without knowing their node's readiness.
	unknownNodes int
}

// held are the overdue pods of one target that were not evicted, and why.
type held struct {
	// nodeNotReady are on a node that is not Ready.
	nodeNotReady []Pod
	// paced wait for the workload's budget (budget) to free up.
	paced  []Pod
	budget string
}

// suspectPath reports whether most pods are overdue at once: at least two pods, more than half.
func (r restarts) suspectPath() bool { return r.pods >= 2 && 2*r.overdue > r.pods }

// restartBudget is how many more of w's pods may be taken out of service now, and what sets that
// pace: a PodDisruptionBudget's disruptionsAllowed where one covers the pods (the eviction API
// enforces it as well), else the rollout strategy's maxUnavailable (at least one, so that a
// workload with maxUnavailable 0 still makes progress), less the pods already unavailable (not
// ready, or terminating); and never every pod of a workload of several at once.
func restartBudget(w Workload) (int, string) {
	if w.DisruptionBudget != nil {
		return max(int(*w.DisruptionBudget), 0), fmt.Sprintf("its PodDisruptionBudget allows %d disruptions now", max(*w.DisruptionBudget, 0))
	}
	serving, terminating := 0, 0
	for _, p := range w.Pods {
		if p.Terminating {
			terminating++
		} else {
			serving++
		}
	}
	limit := max(int(w.MaxUnavailable), 1)
	if serving+terminating > 1 {
		limit = min(limit, serving+terminating-1)
	}
	unavailable := max(int(w.Desired-w.Ready), terminating)
	return max(limit-unavailable, 0), fmt.Sprintf("at most %d of its pods out of service at once (maxUnavailable), %d now", limit, unavailable)
}

// restartOverdue evicts the overdue laggards of targets, paced by restartBudget and sparing those
// on a node that is not Ready, records them in status.restartedPods and names the new ones in a
// Warning event. An eviction a PodDisruptionBudget refuses is asked again on the next pass, without
// another event. Selected pods are never restarted (nothing would re-create a bare pod), nor pods
// while this pass writes (their deadline is for the keyring written before).
func restartOverdue(f facts, o outcome) outcome {
	if !f.in.Settings.Reload() || o.write != nil || o.conflict {
		return o
	}
	r := restarts{byWorkload: map[string]held{}}
	for _, t := range f.delivery.targets {
		if !t.Found || !f.in.placeHolds(t.Place, o.status.TargetFingerprint) {
			// A place whose copy does not hold the keyring yet (its write failed or was refused):
			// a restart would start its pods on the old one.
			continue
		}
		for _, p := range t.Pods {
			if !p.Terminating {
				r.pods++
			}
		}
		var overdue []Pod
		for _, pod := range t.laggards {
			if !pod.Terminating && !f.in.Now.Before(reloadDeadline(f.in, o.status, pod)) {
				overdue = append(overdue, pod)
			}
		}
		r.overdue += len(overdue)
		// The longest overdue first, so that pacing never starves a pod.
		slices.SortStableFunc(overdue, func(a, b Pod) int {
			return reloadDeadline(f.in, o.status, a).Compare(reloadDeadline(f.in, o.status, b))
		})
		budget, why := restartBudget(t.Workload)
		var h held
		for _, pod := range overdue {
			switch {
			case pod.Node == NodeNotReady:
				h.nodeNotReady = append(h.nodeNotReady, pod)
			case budget > 0:
				budget--
				o.evict = append(o.evict, pod.ref())
				if pod.Node == NodeUnknown {
					r.unknownNodes++
				}
			default:
				h.paced, h.budget = append(h.paced, pod), why
			}
		}
		if len(h.nodeNotReady)+len(h.paced) > 0 {
			r.byWorkload[t.ref()] = h
		}
	}
	o.restarts = r
	var fresh []string
	for _, name := range o.evict {
		if !slices.Contains(o.status.RestartedPods, name) {
			fresh = append(fresh, name)
			if len(o.status.RestartedPods) < MaxListedPods {
				o.status.RestartedPods = append(slices.Clip(o.status.RestartedPods), name)
			}
		}
	}
	if len(fresh) > 0 {
		note := ""
		if r.suspectPath() {
			note = fmt.Sprintf("; %d of %d pods missed it at once: suspect their path to the API server (condition %s)",
				r.overdue, r.pods, mrtrv1alpha1.ConditionAcknowledgementPathSuspect)
		}
		if r.unknownNodes > 0 {
			note += "; the readiness of their nodes is unknown (" + nodesUnknown(f.in) + ")"
		}
		o = o.event(corev1Warning, mrtrv1alpha1.ReasonAcknowledgementMissing, "Restart",
			"%s did not acknowledge keyring %s within %s; restarting them through the eviction API%s",
			joinSome(fresh, ", ", len(fresh)), o.status.TargetFingerprint, f.in.Settings.ReloadDeadline, note)
	}
	return o
}

// nodesUnknown says why a pod's node readiness is unknown.
func nodesUnknown(in Input) string {
	if in.NodesUnreadable {
		return "the operator may not read Nodes, as in a namespace-scoped install"
	}
	return "a pod not yet scheduled, or a node not seen"
}

// heldMessage says which overdue pods of a target are not restarted, and why; "" when none.
func (h held) message() string {
	var parts []string
	if n := h.nodeNotReady; len(n) > 0 {
		names := make([]string, len(n))
		for i, p := range n {
			names[i] = p.ref() + " (node " + p.NodeName + ")"
		}
		parts = append(parts, "not restarted while their node is not Ready: "+joinSome(names[:min(len(names), maxNamed)], ", ", len(names)))
	}
	if p := h.paced; len(p) > 0 {
		parts = append(parts, "restarts paced, "+h.budget+": waiting to restart "+joinSome(podNames(p), ", ", len(p)))
	}
	return strings.Join(parts, "; ")
}

// HeldRestartRecheck is how soon a pass looks again at overdue pods it did not restart: a budget
// frees up as replaced pods become ready, a node comes back.
const HeldRestartRecheck = 5 * time.Second

// nextReloadDeadline is the earliest future reload deadline of a laggard of a target, zero for none.
func nextReloadDeadline(in Input, st mrtrv1alpha1.MRTRKeyringStatus, v delivery) time.Time {
	if !v.reload {
		return time.Time{}
	}
	var next time.Time
	for _, t := range v.targets {
		for _, pod := range t.laggards {
			if at := reloadDeadline(in, st, pod); !pod.Terminating && at.After(in.Now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next
}

// MaxListedPods is the most pods status.restartedPods names.
const MaxListedPods = 100
