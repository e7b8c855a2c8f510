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
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The Reload delivery's gate: which pods run the target keyring, which lag, which to restart.

// writtenAt is when the Secret received the target keyring, by the API server's clock, or zero
// when that is not known for sure: the Secret does not hold our write of it, or this pass writes.
func (p *pass) writtenAt() time.Time {
	sec := p.in.Secret
	if p.d.Secret != nil || !sec.writtenByUs() || sec.Keyring.Fingerprint() != p.st.TargetFingerprint {
		return time.Time{}
	}
	return sec.WrittenAt
}

// runs reports whether pod runs the target keyring. It does if it acknowledged it. A pod that
// acknowledged nothing and was created after the write started with what the write held: that is
// how pods that never run the library (and the ones restarted for not acknowledging) still pass.
// Both times are whole seconds of the API server's clock, so a pod created in the write's second
// must acknowledge. Selected pods (ackOnly) pass by their acknowledgement alone.
func (p *pass) runs(pod Pod, ackOnly bool) bool {
	fp := p.st.TargetFingerprint
	if pod.Loaded != "" || ackOnly {
		return pod.Loaded == fp
	}
	w := p.writtenAt()
	return !w.IsZero() && pod.CreatedAt.After(w)
}

// laggards are the pods that do not run the target keyring yet.
func (p *pass) laggards(pods []Pod, ackOnly bool) []Pod {
	var out []Pod
	for _, pod := range pods {
		if !p.runs(pod, ackOnly) {
			out = append(out, pod)
		}
	}
	return out
}

// seenAll reports whether the cache shows at least the pods w's controller counts: fewer means
// pods exist that this pass cannot see, and a partial view proves nothing.
func seenAll(w Workload) bool { return int32(len(w.Pods)) >= w.CountedPods }

// upToDate reports whether every pod of w runs the target keyring: in Reload delivery by their
// acknowledgements, in Restart delivery because w rolled out the template stamped with it.
func (p *pass) upToDate(w Workload) bool {
	if !w.Found {
		return false
	}
	if !p.in.Settings.Reload() {
		return w.Stamp == p.st.TargetFingerprint && w.RolledOut
	}
	return seenAll(w) && len(p.laggards(w.Pods, false)) == 0
}

// reloadDeadline is when pod must run the target keyring, or be restarted: reloadDeadline after
// the phase began or the pod was created, whichever is later.
func (p *pass) reloadDeadline(pod Pod) time.Time {
	start := p.phaseStart()
	if pod.CreatedAt.After(start) {
		start = pod.CreatedAt
	}
	return start.Add(p.in.Settings.ReloadDeadline)
}

// overdue lists the pods of targets to restart now: laggards past their reload deadline that are
// not already on their way out. Selected pods are never restarted (nothing would re-create a bare
// pod), nor pods while this pass writes (their deadline is for the keyring written before).
func (p *pass) overdue() []string {
	if !p.in.Settings.Reload() || p.d.Secret != nil || p.conflict {
		return nil
	}
	var out []string
	for _, w := range p.in.Workloads {
		for _, pod := range p.laggards(w.Pods, false) {
			if !pod.Terminating && !p.in.Now.Before(p.reloadDeadline(pod)) {
				out = append(out, pod.Name)
			}
		}
	}
	return out
}

// restartOverdue asks the reconciler to evict the overdue pods, records them in
// status.restartedPods and names the new ones in a Warning event. An eviction a
// PodDisruptionBudget refuses is asked again on the next pass, without another event.
func (p *pass) restartOverdue() {
	overdue := p.overdue()
	if len(overdue) == 0 {
		return
	}
	p.d.Evict = overdue
	var fresh []string
	for _, name := range overdue {
		if !slices.Contains(p.st.RestartedPods, name) {
			fresh = append(fresh, name)
			if len(p.st.RestartedPods) < MaxListedPods {
				p.st.RestartedPods = append(p.st.RestartedPods, name)
			}
		}
	}
	if len(fresh) > 0 {
		p.event(corev1Warning, mrtrv1alpha1.ReasonAcknowledgementMissing, "Restart",
			"%s did not acknowledge keyring %s within %s; restarting them through the eviction API",
			joinSome(fresh, ", ", len(fresh)), p.st.TargetFingerprint, p.in.Settings.ReloadDeadline)
	}
}

// MaxListedPods is the most pods status.restartedPods names.
const MaxListedPods = 100

// podNames names up to maxNamed of pods (the status lists of laggards).
func podNames(pods []Pod) []string {
	out := make([]string, min(len(pods), maxNamed))
	for i := range out {
		out[i] = pods[i].Name
	}
	return out
}

// describePods says what the pods of w wait for, "" when every one runs the target keyring.
func (p *pass) describePods(w Workload) string {
	if !seenAll(w) {
		return fmt.Sprintf("%s: %d pods seen of the %d it counts", w.ref(), len(w.Pods), w.CountedPods)
	}
	lag := p.laggards(w.Pods, false)
	if len(lag) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d pods run keyring %s; waiting for %s", w.ref(), len(w.Pods)-len(lag), len(w.Pods),
		p.st.TargetFingerprint, joinSome(podNames(lag), ", ", len(lag)))
}

// selectedStatus is status.selectedPods: nil when no pod is selected.
func (p *pass) selectedStatus() *mrtrv1alpha1.SelectedPodsStatus {
	if len(p.in.SelectedPods) == 0 {
		return nil
	}
	lag := p.laggards(p.in.SelectedPods, true)
	return &mrtrv1alpha1.SelectedPodsStatus{
		Pods:             int32(len(p.in.SelectedPods)),
		PodsAcknowledged: int32(len(p.in.SelectedPods) - len(lag)),
		Laggards:         podNames(lag),
	}
}

// describeSelected says which selected pods have not acknowledged the target keyring, "" when all have.
func (p *pass) describeSelected() string {
	lag := p.laggards(p.in.SelectedPods, true)
	if len(lag) == 0 {
		return ""
	}
	return fmt.Sprintf("selected pods: %d of %d acknowledged keyring %s; waiting for %s", len(p.in.SelectedPods)-len(lag),
		len(p.in.SelectedPods), p.st.TargetFingerprint, joinSome(podNames(lag), ", ", len(lag)))
}

// nextReloadDeadline is the earliest future reload deadline of a laggard of a target, zero for none.
func (p *pass) nextReloadDeadline() time.Time {
	if !p.in.Settings.Reload() {
		return time.Time{}
	}
	var next time.Time
	for _, w := range p.in.Workloads {
		for _, pod := range p.laggards(w.Pods, false) {
			if at := p.reloadDeadline(pod); !pod.Terminating && at.After(p.in.Now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next
}
