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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// verdict is what one timed exit check found, as cert-manager's policy checks return their reason
// and message: whether the phase may leave, what it waits for, until when, and that in a
// sentence. decide acts on pass; describe renders the rest (status.waitingFor) and takes the
// requeue from until. Each timed rule (the termination grace after a rollout, the propagation
// delay, the TTL wait) is written once, in its check: no stage computes a deadline of its own.
type verdict struct {
	pass bool
	what mrtrv1alpha1.Wait
	// until is when the check passes by itself.
	until time.Time
	// message says what the phase waits for, with absolute times only.
	message string
}

// waitingFor renders v as status.waitingFor; purpose says why the phase waits (purposes).
func (v verdict) waitingFor(purpose string) *mrtrv1alpha1.WaitingFor {
	until := metav1.NewTime(v.until)
	return &mrtrv1alpha1.WaitingFor{What: v.what, Until: &until, Message: v.message + purpose}
}

// propagated is the exit check of a Secret-only keyring's phases: nothing proves that the Secret
// arrived, so the phase waits spec.propagationDelay from its start.
func propagated(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	d := f.in.Settings.PropagationDelay
	until := phaseStart(f.in, st).Add(d)
	return verdict{pass: !f.in.Now.Before(until), what: mrtrv1alpha1.WaitPropagation, until: until,
		message: fmt.Sprintf("the Secret to reach every mounted copy: no workload or pod proves it, so the phase waits spec.propagationDelay (%s), until %s",
			d, until.UTC().Format(time.RFC3339))}
}

// replacedGone is the check that the pods a rollout replaced have stopped (replacedPodsGone):
// terminationGracePeriod after status.rolledOutAt, which must be set. Reload delivery, or a
// keyring without targets, replaces no pod and passes at once.
func replacedGone(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	grace := f.in.Settings.TerminationGracePeriod
	until := st.RolledOutAt.Add(grace)
	pass := len(f.in.Workloads) == 0 || f.in.Settings.Reload() || !f.in.Now.Before(until)
	return verdict{pass: pass, what: mrtrv1alpha1.WaitReplacedPods, until: until,
		message: fmt.Sprintf("the pods the rollout replaced to stop: terminationGracePeriod (%s) after the rollout, until %s, so that no pod that knew only the old key still serves when the new key seals",
			grace, until.UTC().Format(time.RFC3339))}
}

// tokensExpired is the exit check of WaitingTTL (rule 2): every token sealed with the old keys
// has expired by status.ttlWaitUntil, which must be set.
func tokensExpired(f facts, st mrtrv1alpha1.MRTRKeyringStatus) verdict {
	until := st.TTLWaitUntil.Time
	return verdict{pass: !f.in.Now.Before(until), what: mrtrv1alpha1.WaitTokenExpiry, until: until,
		message: fmt.Sprintf("the tokens sealed with the old keys to expire: the TTL wait ends at %s; then the old keys are removed", until.UTC().Format(time.RFC3339))}
}
