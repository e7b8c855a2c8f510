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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// describe derives the Decision from the facts and the outcome: status (workloads, pods,
// conditions, what the rotation waits for), the requeue, and the Warning event of a Ready that
// turns False. It changes neither input. Each part it renders is a function of the facts and the
// outcome alone, none reading what another one computed, so they may be derived in any order:
// describe only composes them.
func describe(f facts, o outcome) Decision {
	conds, warnings := conditions(f, o)
	d := Decision{Stamp: o.stamp, StampTargets: o.stampTargets, Evict: o.evict, Nudge: o.nudge, Status: statusOf(f, o, conds),
		RequeueAfter: nextDeadline(f.in, o.deadlines), Events: o.events, CopyTo: o.copyTo}
	if len(warnings) > 0 {
		d.Events = append(slices.Clip(o.events), warnings...)
	}
	if len(f.in.Places) > 0 || len(f.in.Left) > 0 || f.in.Namespaces.PendingRekey != "" {
		d.Namespaces = namespacesStatus(f, o)
	}
	if w := o.write; w != nil {
		d.Secret, d.SecretPhase, d.SecretStaged = w.keyring, w.phase, w.staged
	}
	return d
}

// statusOf is the outcome's status completed with what describe renders: the keys' python kids,
// the workloads, the pods and their counts, the conditions conds (conditions) and what the
// rotation waits for.
func statusOf(f facts, o outcome, conds []metav1.Condition) mrtrv1alpha1.MRTRKeyringStatus {
	st := o.status
	st.ObservedGeneration = f.in.Generation
	st.SecretName = f.in.SecretName
	kr := f.in.Secret.Keyring
	if o.write != nil {
		kr = o.write.keyring
	}
	st.Keys = withPythonKids(o.status.Keys, kr)
	st.SelectedPods = selectedStatus(o.progress.v)
	st.Workloads = workloadStatuses(o.progress)
	c := o.progress.counts()
	st.WorkloadCount, st.WorkloadsUpToDate, st.PodCount, st.PodsAcknowledged = c.workloads, c.upToDate, c.pods, c.acknowledged
	st.Conditions = conds
	st.WaitingFor = waitingFor(o)
	return st
}

// nextDeadline is how soon the earliest future deadline of decide's falls (outcome.deadlines), 0
// for none.
func nextDeadline(in Input, deadlines []time.Time) time.Duration {
	switch in.Secret.State {
	case SecretInvalid:
		return 0 // nothing timed can help: only a fix of the Secret (a watch event) can
	case SecretWrongType:
		// The reconciler watches keyring Secrets only: the deletion of this one, which is the fix,
		// brings no event, so look again now and then.
		return WrongTypeRecheck
	}
	var next time.Time
	for _, at := range deadlines {
		if at.After(in.Now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if next.IsZero() {
		return 0
	}
	return next.Sub(in.Now)
}

// WrongTypeRecheck is how often a keyring whose Secret has another type looks again.
const WrongTypeRecheck = 10 * time.Second

// WaitsForRollout reports whether phase ph ends when its keyring has reached every pod (a rollout,
// or every acknowledgement).
func WaitsForRollout(ph mrtrv1alpha1.Phase) bool {
	return ph == mrtrv1alpha1.PhaseAccepting || ph == mrtrv1alpha1.PhaseSealingWithNew || ph == mrtrv1alpha1.PhaseRemoving ||
		ph == mrtrv1alpha1.PhaseRevoking
}

// MaxListedWorkloads is the most target workloads status.workloads lists. A keyring may have any
// number of targets; status, one object of bounded size, names the ones that matter most (those
// not yet up to date) and counts the rest.
const MaxListedWorkloads = 100

// counts are status's counts of the targets and of the pods gated by acknowledgement.
type counts struct {
	workloads, upToDate, pods, acknowledged int32
}

// counts counts every target, and the pods of each (Reload delivery) and the selected ones.
func (p progress) counts() counts {
	c := counts{workloads: int32(len(p.targets))}
	c.pods = int32(len(p.v.selected))
	c.acknowledged = c.pods - int32(len(p.v.selectedLaggards))
	for _, t := range p.targets {
		if t.upToDate {
			c.upToDate++
		}
		if p.v.reload {
			c.pods += int32(len(t.Pods))
			c.acknowledged += int32(len(t.Pods) - len(t.laggards))
		}
	}
	return c
}

// workloadStatuses lists the targets, at most MaxListedWorkloads of them: those not up to date
// first.
func workloadStatuses(p progress) []mrtrv1alpha1.WorkloadStatus {
	if len(p.targets) == 0 {
		return nil
	}
	var behind, upToDate []mrtrv1alpha1.WorkloadStatus
	for _, t := range p.targets {
		ws := mrtrv1alpha1.WorkloadStatus{
			Namespace: t.Place, Kind: t.Kind, Name: t.Name, Found: t.Found, UpToDate: t.upToDate,
			ReadyReplicas: t.Ready, DesiredReplicas: t.Desired, Message: t.message,
		}
		if p.v.reload {
			ws.Pods, ws.PodsAcknowledged, ws.Laggards = int32(len(t.Pods)), int32(len(t.Pods)-len(t.laggards)), podNames(t.laggards)
		}
		if ws.UpToDate {
			if len(behind)+len(upToDate) < MaxListedWorkloads {
				upToDate = append(upToDate, ws)
			}
		} else if len(behind) < MaxListedWorkloads {
			behind = append(behind, ws)
		}
	}
	out := append(behind, upToDate...)
	return out[:min(len(out), MaxListedWorkloads)]
}

// selectedStatus is status.selectedPods, from the delivery v: nil when no pod is selected.
func selectedStatus(v delivery) *mrtrv1alpha1.SelectedPodsStatus {
	if len(v.selected) == 0 {
		return nil
	}
	lag := v.selectedLaggards
	return &mrtrv1alpha1.SelectedPodsStatus{
		Pods:             int32(len(v.selected)),
		PodsAcknowledged: int32(len(v.selected) - len(lag)),
		Laggards:         podNames(lag),
	}
}

// conditions are status.conditions: Ready, Reconciling and Stalled (kstatus), KeyRevoked and the
// warnings, merged into the conditions the outcome's status holds; with the Warning event to emit
// when Ready turns to a new problem.
func conditions(f facts, o outcome) ([]metav1.Condition, []Event) {
	in := f.in
	ready, reconciling, stalled := kstatus(f, o)
	var e []Event
	if old := meta.FindStatusCondition(in.Status.Conditions, mrtrv1alpha1.ConditionReady); ready.Status == metav1.ConditionFalse && (old == nil || old.Reason != ready.Reason) {
		e = append(e, Event{Type: corev1Warning, Reason: ready.Reason, Action: "Reconcile", Note: ready.Message})
	}
	out := slices.Clone(o.status.Conditions) // the facts' copy stays as observed
	conds := []metav1.Condition{ready, reconciling, stalled, revokedCondition(o.status.RevokedKeys)}
	if suspect := pathSuspect(f, o); suspect != nil {
		conds = append(conds, *suspect)
	} else {
		meta.RemoveStatusCondition(&out, mrtrv1alpha1.ConditionAcknowledgementPathSuspect)
	}
	if c := o.stampCondition(); c != nil {
		conds = append(conds, *c)
	} else {
		meta.RemoveStatusCondition(&out, mrtrv1alpha1.ConditionStampReverted)
	}
	if c := partiallyReady(f); c != nil {
		conds = append(conds, *c)
	}
	if c, ev := sourceCondition(f, o); c != nil {
		conds = append(conds, *c)
		if ev != nil {
			e = append(e, *ev)
		}
	} else {
		meta.RemoveStatusCondition(&out, mrtrv1alpha1.ConditionKeySourceReady)
	}
	switch w := windowCondition(f, o); {
	case in.Settings.Windows == nil:
		meta.RemoveStatusCondition(&out, mrtrv1alpha1.ConditionRotationWindows)
	case w != nil:
		conds = append(conds, *w)
	}
	for _, c := range conds {
		c.ObservedGeneration = in.Generation
		c.LastTransitionTime = f.now // kept by SetStatusCondition unless the status flips
		meta.SetStatusCondition(&out, c)
	}
	return out, e
}

// kstatus are the Ready, Reconciling and Stalled conditions the kstatus way (see the API's
// Condition* constants).
func kstatus(f facts, o outcome) (ready, reconciling, stalled metav1.Condition) {
	st, in, p, s := o.status, f.in, o.progress, o.stall
	ready = condition(mrtrv1alpha1.ConditionReady, true, mrtrv1alpha1.ReasonReady,
		fmt.Sprintf("keyring %s in Secret %s, phase %s", st.SecretFingerprint, in.SecretName, st.Phase))
	reconciling = condition(mrtrv1alpha1.ConditionReconciling, false, mrtrv1alpha1.ReasonIdle, "no rotation under way; every target runs the current keyring")
	stalled = condition(mrtrv1alpha1.ConditionStalled, false, mrtrv1alpha1.ReasonNotStalled, "nothing blocks progress")
	switch {
	case s != nil:
		ready = condition(mrtrv1alpha1.ConditionReady, false, s.reason, s.message)
		stalled = condition(mrtrv1alpha1.ConditionStalled, true, s.reason, s.message)
		// kstatus reads Reconciling before Stalled: leave it False so tools see the failure.
		reconciling = condition(mrtrv1alpha1.ConditionReconciling, false, s.reason, "blocked: see the Stalled condition")
	case slices.ContainsFunc(p.missing, func(t shown) bool { return t.NotServed != "" }):
		ready = condition(mrtrv1alpha1.ConditionReady, false, mrtrv1alpha1.ReasonKindNotServed, "targets of a kind the cluster does not serve: "+messages(p.missing))
	case len(p.missing) > 0:
		ready = condition(mrtrv1alpha1.ConditionReady, false, mrtrv1alpha1.ReasonWorkloadNotFound, "targets not found: "+refs(p.missing))
	}
	if s == nil {
		switch {
		case st.Phase != mrtrv1alpha1.PhaseStable:
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRotating, phaseWaitsFor(o))
		case len(p.pending) > 0:
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRolloutInProgress, "rolling out keyring "+st.TargetFingerprint+": "+messages(p.pending))
		case p.selected != "":
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRolloutInProgress, p.selected)
		}
	}
	if u := unreferenced(in); u != "" {
		ready.Message += "; " + u
	}
	if out := outages(in); out != "" {
		ready.Message += "; " + out
		if reconciling.Status == metav1.ConditionTrue {
			reconciling.Message += "; " + out
		}
	}
	return ready, reconciling, stalled
}

// pathSuspect is the AcknowledgementPathSuspect condition when most pods of the targets are
// overdue at once (restarts.suspectPath), nil otherwise.
func pathSuspect(f facts, o outcome) *metav1.Condition {
	rs := o.restarts
	if !rs.suspectPath() {
		return nil
	}
	c := condition(mrtrv1alpha1.ConditionAcknowledgementPathSuspect, true, mrtrv1alpha1.ReasonAcknowledgementPathSuspect,
		fmt.Sprintf("%d of %d pods did not acknowledge keyring %s within %s: suspect what they share, their path to the API server "+
			"(a network policy, the API server's reachability, the consumer role binding) or the kubelets' pace, before the pods; "+
			"they are restarted at the pace each workload allows, and pods on nodes that are not Ready are not",
			rs.overdue, rs.pods, o.status.TargetFingerprint, f.in.Settings.ReloadDeadline))
	return &c
}

// windowCondition words RotationWindowWarning as decide settled it (windowWarning), nil when it
// did not (in the phases after Stable the condition stays as it was). True once the rotation
// due missed the window it fell due in (quoting that window and the one it now waits for), or
// when the first window at or after the due time opens more than rotationInterval later, or
// never: the primary key then outlives the interval, and the alert on its age
// (MRTRKeyringPrimaryKeyTooOld) fires as it should.
func windowCondition(f facts, o outcome) *metav1.Condition {
	w, s := o.windows, f.in.Settings
	if w == nil {
		return nil
	}
	due := w.due.UTC().Format(time.RFC3339)
	var c metav1.Condition
	switch {
	case w.missed != nil:
		next := "no window opens within five years: no rotation starts on schedule (request one through " + mrtrv1alpha1.RotateAnnotation + ")"
		if n := w.next; n != nil {
			next = fmt.Sprintf("it may start in the window open from %s to %s", n.OpensAt.UTC().Format(time.RFC3339), n.ClosesAt.UTC().Format(time.RFC3339))
		}
		c = condition(mrtrv1alpha1.ConditionRotationWindows, true, mrtrv1alpha1.ReasonRotationWindowMissed,
			fmt.Sprintf("the rotation due at %s did not start in the rotation window open from %s to %s (%s): %s, once nothing holds it back (see Reconciling and Stalled)",
				w.start.UTC().Format(time.RFC3339), w.missed.OpensAt.UTC().Format(time.RFC3339), w.missed.ClosesAt.UTC().Format(time.RFC3339), s.Windows, next))
	case w.start.IsZero():
		c = condition(mrtrv1alpha1.ConditionRotationWindows, true, mrtrv1alpha1.ReasonNoWindowWithinInterval,
			fmt.Sprintf("no rotation window (%s) opens within five years of %s, when the next rotation falls due: no rotation starts on schedule (request one through %s)",
				s.Windows, due, mrtrv1alpha1.RotateAnnotation))
	case w.late:
		c = condition(mrtrv1alpha1.ConditionRotationWindows, true, mrtrv1alpha1.ReasonNoWindowWithinInterval,
			fmt.Sprintf("no rotation window (%s) opens within rotationInterval (%v) of %s, when the next rotation falls due: it starts at %s, %v late, and the primary key outlives the interval",
				s.Windows, s.RotationInterval, due, w.start.UTC().Format(time.RFC3339), w.start.Sub(w.due)))
	default:
		c = condition(mrtrv1alpha1.ConditionRotationWindows, false, mrtrv1alpha1.ReasonWindowsOpen,
			fmt.Sprintf("the next rotation falls due at %s and starts at %s, in a rotation window (%s)", due, w.start.UTC().Format(time.RFC3339), s.Windows))
	}
	return &c
}

// phaseWaitsFor says what the current phase waits for (the Reconciling message).
func phaseWaitsFor(o outcome) string {
	st, ph, w, p := o.status, o.status.Phase, o.waiting, o.progress
	switch {
	case w != nil && w.what == mrtrv1alpha1.WaitTokenExpiry:
		return fmt.Sprintf("WaitingTTL: tokens sealed with the old keys expire by %s", w.until.UTC().Format(time.RFC3339))
	case w != nil && w.what == mrtrv1alpha1.WaitPropagation:
		return fmt.Sprintf("%s: waiting until %s for the Secret to reach every mounted copy", ph, w.until.UTC().Format(time.RFC3339))
	case len(p.pending) > 0 && p.v.reload:
		return fmt.Sprintf("%s: waiting for every pod to acknowledge keyring %s: %s", ph, st.TargetFingerprint, messages(p.pending))
	case len(p.pending) > 0:
		return fmt.Sprintf("%s: rolling out keyring %s: %s", ph, st.TargetFingerprint, messages(p.pending))
	case p.selected != "":
		return fmt.Sprintf("%s: %s", ph, p.selected)
	}
	return fmt.Sprintf("%s: keyring %s", ph, st.TargetFingerprint)
}

// unreferenced names the targets whose pod template does not reference the keyring Secret.
func unreferenced(in Input) string {
	var out []string
	for _, w := range in.Workloads {
		if w.Found && w.Unreferenced {
			out = append(out, w.ref())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("targets that do not reference Secret %s (their pods get no keys from it): %s", in.SecretName, joinSome(out, ", ", len(out)))
}

// outages names the targets whose every restart is an outage, "" when there are none or nothing
// restarts them (Reload delivery restarts only the pods that do not acknowledge, through the
// eviction API, as their PodDisruptionBudget allows).
func outages(in Input) string {
	if in.Settings.Reload() {
		return ""
	}
	var out []string
	for _, w := range in.Workloads {
		if w.Found && w.Outage != "" {
			out = append(out, w.ref()+" ("+w.Outage+")")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "every restart is an outage for " + joinSome(out, ", ", len(out))
}

// maxNamed is how many workloads a condition message or event names; the rest are counted, so
// that a keyring with thousands of targets keeps its messages within the API's 32 KiB.
const maxNamed = 10

// waitingFor is status.waitingFor: a fix when stalled, else the verdict the phase waits on
// (waitsOn), rendered as it is.
func waitingFor(o outcome) *mrtrv1alpha1.WaitingFor {
	switch {
	case o.stall != nil:
		return &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitFix,
			Message: fmt.Sprintf("a fix: the rotation is stalled (%s): %s; it resumes by itself once that is resolved", o.stall.reason, o.stall.message)}
	case o.waiting == nil:
		return nil
	}
	return o.waiting.status()
}

// withPythonKids returns keys with each one's pythonKid derived from the key of that id in kr, the
// keyring the Secret holds or is about to: a status written before the field existed gets it on
// the next pass, not at the next rotation. keys is copied, never changed: it may be the Input's.
func withPythonKids(keys []mrtrv1alpha1.KeyStatus, kr *keyring.Keyring) []mrtrv1alpha1.KeyStatus {
	if kr == nil || len(keys) == 0 {
		return keys
	}
	out := slices.Clone(keys)
	for i := range out {
		if k, ok := kr.Lookup(out[i].ID); ok {
			out[i].PythonKid = k.PythonKid()
		}
	}
	return out
}
