/*
Copyright 2026.

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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// finish completes the status (workloads, conditions, observedGeneration), the stamp and the
// requeue of the Decision.
func (p *pass) finish() {
	p.publishTokenTTL()
	p.restartOverdue()
	p.checkBlocked()
	p.warnOutages()
	p.st.ObservedGeneration = p.in.Generation
	p.st.SecretName = p.in.SecretName
	if !p.conflict && !p.in.Settings.Reload() && (p.in.Secret.State == SecretValid || p.d.Secret != nil) {
		// Only a keyring that is valid and ours is ever rolled out.
		p.d.Stamp = p.st.TargetFingerprint
	}
	p.st.SelectedPods = p.selectedStatus()
	p.st.Workloads = p.workloadStatuses()
	p.setConditions()
	p.d.RequeueAfter = p.nextDeadline()
	p.d.Status = p.st
}

// MaxListedWorkloads is the most target workloads status.workloads lists. A keyring may have any
// number of targets; status, one object of bounded size, names the ones that matter most (those
// not yet up to date) and counts the rest.
const MaxListedWorkloads = 100

// workloadStatuses lists the targets, at most MaxListedWorkloads of them, and counts them all and
// their pods.
func (p *pass) workloadStatuses() []mrtrv1alpha1.WorkloadStatus {
	p.st.WorkloadCount, p.st.WorkloadsUpToDate = int32(len(p.in.Workloads)), 0
	p.st.PodCount, p.st.PodsAcknowledged = 0, 0
	if sel := p.st.SelectedPods; sel != nil { // set first, by selectedStatus
		p.st.PodCount, p.st.PodsAcknowledged = sel.Pods, sel.PodsAcknowledged
	}
	if len(p.in.Workloads) == 0 {
		return nil
	}
	var behind, upToDate []mrtrv1alpha1.WorkloadStatus
	for _, w := range p.in.Workloads {
		ws := mrtrv1alpha1.WorkloadStatus{
			Kind: w.Kind, Name: w.Name, Found: w.Found,
			UpToDate:      p.upToDate(w),
			ReadyReplicas: w.Ready, DesiredReplicas: w.Desired,
			Message: p.describe(w),
		}
		if p.in.Settings.Reload() {
			lag := p.laggards(w.Pods, false)
			ws.Pods, ws.PodsAcknowledged, ws.Laggards = int32(len(w.Pods)), int32(len(w.Pods)-len(lag)), podNames(lag)
			p.st.PodCount += ws.Pods
			p.st.PodsAcknowledged += ws.PodsAcknowledged
		}
		if ws.UpToDate {
			p.st.WorkloadsUpToDate++
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

// setConditions sets Ready, Reconciling and Stalled the kstatus way (see the API's Condition*
// constants), and emits a Warning event when Ready turns to a new problem.
func (p *pass) setConditions() {
	missing, pending := p.lagging()
	ready := condition(mrtrv1alpha1.ConditionReady, true, mrtrv1alpha1.ReasonReady,
		fmt.Sprintf("keyring %s in Secret %s, phase %s", p.st.SecretFingerprint, p.in.SecretName, p.st.Phase))
	reconciling := condition(mrtrv1alpha1.ConditionReconciling, false, mrtrv1alpha1.ReasonIdle, "no rotation under way; every target runs the current keyring")
	stalled := condition(mrtrv1alpha1.ConditionStalled, false, mrtrv1alpha1.ReasonNotStalled, "nothing blocks progress")
	switch {
	case p.stallReason != "":
		ready = condition(mrtrv1alpha1.ConditionReady, false, p.stallReason, p.stallMessage)
		stalled = condition(mrtrv1alpha1.ConditionStalled, true, p.stallReason, p.stallMessage)
		// kstatus reads Reconciling before Stalled: leave it False so tools see the failure.
		reconciling = condition(mrtrv1alpha1.ConditionReconciling, false, p.stallReason, "blocked: see the Stalled condition")
	case len(missing) > 0:
		ready = condition(mrtrv1alpha1.ConditionReady, false, mrtrv1alpha1.ReasonWorkloadNotFound, "targets not found: "+refs(missing))
	}
	if p.stallReason == "" {
		switch {
		case p.st.Phase != mrtrv1alpha1.PhaseStable:
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRotating, p.waitingFor(pending))
		case len(pending) > 0:
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRolloutInProgress, "rolling out keyring "+p.st.TargetFingerprint+": "+p.messages(pending))
		case p.describeSelected() != "":
			reconciling = condition(mrtrv1alpha1.ConditionReconciling, true, mrtrv1alpha1.ReasonRolloutInProgress, p.describeSelected())
		}
	}
	if u := p.unreferenced(); u != "" {
		ready.Message += "; " + u
	}
	if o := p.outages(); o != "" {
		ready.Message += "; " + o
		if reconciling.Status == metav1.ConditionTrue {
			reconciling.Message += "; " + o
		}
	}
	if old := meta.FindStatusCondition(p.in.Status.Conditions, mrtrv1alpha1.ConditionReady); ready.Status == metav1.ConditionFalse && (old == nil || old.Reason != ready.Reason) {
		p.event(corev1Warning, ready.Reason, "Reconcile", "%s", ready.Message)
	}
	for _, c := range []metav1.Condition{ready, reconciling, stalled, p.revokedCondition()} {
		c.ObservedGeneration = p.in.Generation
		c.LastTransitionTime = p.now // kept by SetStatusCondition unless the status flips
		meta.SetStatusCondition(&p.st.Conditions, c)
	}
}

// publishTokenTTL rewrites the Secret, keys unchanged, when the token lifetime it declares to the
// servers (keyring.TokenTTLDataKey, written with every keyring) is not spec.tokenTTL: the servers
// then refuse to seal longer tokens than the rotation waits for. The fingerprint does not change,
// so nothing restarts.
func (p *pass) publishTokenTTL() {
	sec := p.in.Secret
	if p.conflict || p.d.Secret != nil || sec.State != SecretValid || sec.Keyring.Fingerprint() != p.st.SecretFingerprint ||
		sec.TokenTTL == p.in.Settings.TokenTTL {
		return
	}
	p.d.Secret, p.d.SecretPhase = sec.Keyring, p.st.Phase
}

// unreferenced names the targets whose pod template does not reference the keyring Secret.
func (p *pass) unreferenced() string {
	var out []string
	for _, w := range p.in.Workloads {
		if w.Found && w.Unreferenced {
			out = append(out, w.ref())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("targets that do not reference Secret %s (their pods get no keys from it): %s", p.in.SecretName, joinSome(out, ", ", len(out)))
}

// outages names the targets whose every restart is an outage, "" when there are none or nothing
// restarts them (Reload delivery restarts only the pods that do not acknowledge, through the
// eviction API, as their PodDisruptionBudget allows).
func (p *pass) outages() string {
	if p.in.Settings.Reload() {
		return ""
	}
	var out []string
	for _, w := range p.in.Workloads {
		if w.Found && w.Outage != "" {
			out = append(out, w.ref()+" ("+w.Outage+")")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "every restart is an outage for " + joinSome(out, ", ", len(out))
}

// warnOutages emits a Warning event when this pass writes a keyring that targets whose restart is
// an outage will roll out: a rotation restarts them three times.
func (p *pass) warnOutages() {
	if o := p.outages(); o != "" && p.d.Secret != nil && len(p.in.Workloads) > 0 {
		p.event(corev1Warning, mrtrv1alpha1.EventRestartIsOutage, "Rotate", "rolling out keyring %s: %s", p.d.Secret.Fingerprint(), o)
	}
}

// waitingFor says what the current phase waits for.
func (p *pass) waitingFor(pending []Workload) string {
	ph := p.st.Phase
	switch {
	case ph == mrtrv1alpha1.PhaseWaitingTTL && p.st.TTLWaitUntil != nil:
		return fmt.Sprintf("WaitingTTL: tokens sealed with the old keys expire by %s", p.st.TTLWaitUntil.UTC().Format(time.RFC3339))
	case p.secretOnly():
		return fmt.Sprintf("%s: waiting %s for the Secret to reach every mounted copy", ph, p.in.Settings.PropagationDelay)
	case len(pending) > 0 && p.in.Settings.Reload():
		return fmt.Sprintf("%s: waiting for every pod to acknowledge keyring %s: %s", ph, p.st.TargetFingerprint, p.messages(pending))
	case len(pending) > 0:
		return fmt.Sprintf("%s: rolling out keyring %s: %s", ph, p.st.TargetFingerprint, p.messages(pending))
	case p.describeSelected() != "":
		return fmt.Sprintf("%s: %s", ph, p.describeSelected())
	}
	return fmt.Sprintf("%s: keyring %s", ph, p.st.TargetFingerprint)
}

func condition(typ string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message}
}
