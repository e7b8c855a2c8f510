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

package controller

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// The acceptance rule for acknowledgements. The admission policy mrtr-keyring-acknowledgements
// refuses every write of an acknowledgement but the pod's own, through every door the API offers
// (pods, pods/status, bindings). The operator does not rely on it alone: a cluster without the
// policy, or an identity that gets past it, still cannot make a rotation advance. The Pod's
// managedFields record, for the annotation, the field manager that wrote it last, the subresource
// it came through and when, by the API server's clock, and the operator takes the acknowledgement
// as proof only when that record shows the pod's own reporter (pkg/ack, field manager
// ack.FieldManager, through the Pod itself) writing it no earlier than the Secret write that made
// the keyring it names (keyringWrite). A field manager is the writer's to choose, so this check alone would not
// stop a determined forger; with the policy, the forger must hold a token bound to the pod, which
// only the pod and its node have.

// A refused acknowledgement counts as none: the pod passes only if it was created after the Secret
// write (it started with what the write held, whatever it claims), and a pod that existed before
// lags until its reload deadline restarts it. So a forged acknowledgement proves nothing, and an
// honest server that acknowledges the wrong way costs a restart per phase, not a loop of them.

// legacyFieldManager is the field manager the API server derived, from its User-Agent (the part
// before the first "/"), for the acknowledgements of pkg/ack before it named ack.FieldManager:
// servers built with it keep acknowledging until they are rebuilt.
const legacyFieldManager = "mrtr-ack (github.com"

// secretWrite is what the acceptance rule knows of the Secret: the fingerprint it holds and when
// it came to hold it, zero when unknown.
type secretWrite struct {
	fingerprint string
	at          time.Time
}

// keyringWrite is when the Secret came to hold its keyring: the operator's last write of it (the
// API server's clock, sec.WrittenAt), or the phase's start when that is earlier. A write that keeps
// the keyring (a new tokenTTL, a phase annotation) moves the first but not the second, and must not
// make the acknowledgements of that keyring, written before it, count no more. The phase's start is
// the operator's clock: a skew between it and the API server's can only make the rule more lenient,
// not refuse an acknowledgement written after the write, unless the operator's clock runs ahead and
// a write keeping the keyring came in the same phase.
func keyringWrite(sec rotation.SecretObservation, phaseStartedAt *metav1.Time) secretWrite {
	if sec.Keyring == nil || sec.WrittenAt.IsZero() {
		return secretWrite{}
	}
	w := secretWrite{fingerprint: sec.Keyring.Fingerprint(), at: sec.WrittenAt}
	if phaseStartedAt != nil && phaseStartedAt.Time.Before(w.at) {
		w.at = phaseStartedAt.Truncate(time.Second)
	}
	return w
}

// acknowledgement returns the fingerprint pod acknowledged under key, "" when none; and, when its
// managedFields show that what it carries is not proof, "" and why.
func acknowledgement(pod *corev1.Pod, key string, secret secretWrite) (loaded, refusal string) {
	value, ok := pod.Annotations[key]
	if !ok {
		return "", ""
	}
	m, ok := workload.AcknowledgementWriter(pod, key)
	switch {
	case !ok:
		return "", "no managedFields entry records who wrote it"
	case m.Subresource != "":
		return "", fmt.Sprintf("field manager %q wrote it through pods/%s, not through the Pod itself", m.Manager, m.Subresource)
	case m.Manager != ack.FieldManager && m.Manager != legacyFieldManager:
		return "", fmt.Sprintf("field manager %q wrote it, not the pod's reporter (%s)", m.Manager, ack.FieldManager)
	case value == secret.fingerprint && !secret.at.IsZero() && m.Time != nil && m.Time.Time.Before(secret.at):
		// Both times are whole seconds of the API server's clock: an acknowledgement in the write's
		// own second passes.
		return "", fmt.Sprintf("written at %s, before the Secret write at %s that it acknowledges",
			m.Time.UTC().Format(time.RFC3339), secret.at.UTC().Format(time.RFC3339))
	}
	return value, ""
}

// refusalReports remembers the refusals already reported, so that a refused acknowledgement makes
// one Warning event rather than one per pass. A new write of it (a new time) is a new refusal.
type refusalReports struct {
	once sync.Once
	seen *cache.LRUExpireCache // pod key -> refusal
}

// maxRefusalReports bounds what refusalReports remembers; the oldest is forgotten first, and at
// worst reported again.
const maxRefusalReports = 4096

// fresh reports whether refusal of the pod named key was not reported yet, and remembers it.
func (r *refusalReports) fresh(key, refusal string) bool {
	r.once.Do(func() { r.seen = cache.NewLRUExpireCache(maxRefusalReports) })
	if v, ok := r.seen.Get(key); ok && v.(string) == refusal {
		return false
	}
	r.seen.Add(key, refusal, time.Hour)
	return true
}

// reportRefusals emits a Warning event on kr for each refusal not reported yet.
func (r *MRTRKeyringReconciler) reportRefusals(kr *mrtrv1alpha1.MRTRKeyring, refused map[string]string) {
	for _, pod := range slices.Sorted(maps.Keys(refused)) {
		if r.refusals.fresh(kr.Namespace+"/"+pod, refused[pod]) {
			r.Recorder.Eventf(kr, nil, corev1.EventTypeWarning, mrtrv1alpha1.EventAcknowledgementRefused, "Refuse",
				"pod %s: its acknowledgement of keyring Secret %s is not taken as proof: %s", pod, kr.EffectiveSecretName(), refused[pod])
		}
	}
}
