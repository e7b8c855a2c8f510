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
	"cmp"
	"fmt"
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// The acceptance rule for acknowledgements. The admission policy mrtr-keyring-acknowledgements
// refuses every write of an acknowledgement but the pod's own, through every door the API offers
// (pods, pods/status, bindings). The operator does not rely on it alone: a cluster without the
// policy, or an identity that gets past it, still cannot make a rotation advance. The Pod's
// managedFields record, for the annotation, the field manager that wrote it last, the subresource
// it came through and when, by the API server's clock (Pod.AckWriter), and the operator takes the
// acknowledgement as proof only when that record shows the pod's own reporter (pkg/ack, field
// manager ack.FieldManager, through the Pod itself) writing it no earlier than the Secret write
// that made the keyring it names (keyringWrite). A field manager is the writer's to choose, so
// this check alone would not stop a determined forger; with the policy, the forger must hold a
// token bound to the pod, which only the pod and its node have.
//
// A refused acknowledgement counts as none: the pod passes only if it was created after the Secret
// write (it started with what the write held, whatever it claims), and a pod that existed before
// lags until its reload deadline restarts it. So a forged acknowledgement proves nothing, and an
// honest server that acknowledges the wrong way costs a restart per phase, not a loop of them.
// Each refusal is listed in status.refusedAcknowledgements and reported by one Warning event when
// it first shows there.

// LegacyAckFieldManager is the field manager the API server derived, from its User-Agent (the
// part before the first "/"), for the acknowledgements of pkg/ack before it named
// ack.FieldManager: servers built with it keep acknowledging until they are rebuilt.
const LegacyAckFieldManager = "mrtr-ack (github.com"

// written is what the acceptance rule knows of the Secret write: the fingerprint it holds and
// when it came to hold it, zero when unknown.
type written struct {
	fingerprint string
	at          time.Time
}

// keyringWrite is when the Secret came to hold its keyring: the operator's last write of it (the
// API server's clock, Secret.WrittenAt), or the phase's start when that is earlier. A write that
// keeps the keyring (a new tokenTTL, a phase annotation) moves the first but not the second, and
// must not make the acknowledgements of that keyring, written before it, count no more. The
// phase's start is the operator's clock: a skew between it and the API server's can only make the
// rule more lenient, not refuse an acknowledgement written after the write, unless the operator's
// clock runs ahead and a write keeping the keyring came in the same phase.
func keyringWrite(in Input) written {
	sec := in.Secret
	if sec.Keyring == nil || sec.WrittenAt.IsZero() {
		return written{}
	}
	w := written{fingerprint: sec.Keyring.Fingerprint(), at: sec.WrittenAt}
	if s := in.Status.PhaseStartedAt; s != nil && s.Time.Before(w.at) {
		w.at = s.Truncate(time.Second)
	}
	return w
}

// acknowledgement returns the fingerprint pod acknowledged, "" when none; and, when AckWriter
// shows that what it carries is not proof, "" and why.
func acknowledgement(pod Pod, secret written) (loaded, refusal string) {
	if pod.Loaded == "" {
		return "", ""
	}
	m := pod.AckWriter
	switch {
	case m.Manager == "":
		return "", "no managedFields entry records who wrote it"
	case m.Subresource != "":
		return "", fmt.Sprintf("field manager %q wrote it through pods/%s, not through the Pod itself", m.Manager, m.Subresource)
	case m.Manager != ack.FieldManager && m.Manager != LegacyAckFieldManager:
		return "", fmt.Sprintf("field manager %q wrote it, not the pod's reporter (%s)", m.Manager, ack.FieldManager)
	case pod.Loaded == secret.fingerprint && !secret.at.IsZero() && !m.At.IsZero() && m.At.Before(secret.at):
		// Both times are whole seconds of the API server's clock: an acknowledgement in the write's
		// own second passes.
		return "", fmt.Sprintf("written at %s, before the Secret write at %s that it acknowledges",
			m.At.UTC().Format(time.RFC3339), secret.at.UTC().Format(time.RFC3339))
	}
	return pod.Loaded, ""
}

// acceptAcknowledgements returns in with each pod's Loaded as the acceptance rule takes it, the
// refusals by pod name, sorted, and the pods that consume the keyring Secret: they mount it as a
// volume (the only pods a nudge refreshes) and carry an acknowledgement of it, proof or not (the
// pods the admission policy lets the operator nudge; a nudge of any other would be refused). A pod
// that acknowledged nothing yet started after the Secret existed, and gets later keyrings at the
// kubelet's pace until its first acknowledgement. in's own slices are left as they are.
func acceptAcknowledgements(in Input) (Input, []mrtrv1alpha1.RefusedAcknowledgement, map[string]bool) {
	secret := keyringWrite(in)
	places := map[string]written{} // a place's pods acknowledge its copy's write (placeWrite)
	for _, p := range in.Places {
		places[p.Name] = placeWrite(in, p.Name)
	}
	var refused []mrtrv1alpha1.RefusedAcknowledgement
	consumers := map[string]bool{}
	accept := func(pods []Pod) []Pod {
		if len(pods) == 0 {
			return pods
		}
		out := slices.Clone(pods)
		for i, p := range out {
			if p.Mounts && p.Loaded != "" {
				consumers[p.ref()] = true
			}
			var why string
			w := secret
			if p.Place != "" {
				w = places[p.Place]
			}
			if out[i].Loaded, why = acknowledgement(p, w); why != "" {
				refused = append(refused, mrtrv1alpha1.RefusedAcknowledgement{Pod: p.ref(), Message: why})
			}
		}
		return out
	}
	in.Workloads = slices.Clone(in.Workloads)
	for i := range in.Workloads {
		in.Workloads[i].Pods = accept(in.Workloads[i].Pods)
	}
	in.SelectedPods = accept(in.SelectedPods)
	slices.SortFunc(refused, func(a, b mrtrv1alpha1.RefusedAcknowledgement) int { return cmp.Compare(a.Pod, b.Pod) })
	return in, refused, consumers
}

// reportRefusals lists the refusals in status (the first MaxListedPods) and reports each one not
// listed before by a Warning event: one event per refusal, not one per pass. A new write of the
// acknowledgement that is refused for another reason (a new time) is a new refusal.
func reportRefusals(f facts, o outcome) outcome {
	o.status.RefusedAcknowledgements = nil
	for _, r := range f.refused {
		if !slices.Contains(f.in.Status.RefusedAcknowledgements, r) {
			o = o.event(corev1Warning, mrtrv1alpha1.EventAcknowledgementRefused, "Refuse",
				"pod %s: its acknowledgement of keyring Secret %s is not taken as proof: %s", r.Pod, f.in.SecretName, r.Message)
		}
		if len(o.status.RefusedAcknowledgements) < MaxListedPods {
			o.status.RefusedAcknowledgements = append(o.status.RefusedAcknowledgements, r)
		}
	}
	return o
}

// nudgePods names the pods to nudge after this pass's Secret write: in Reload delivery with the
// PodAnnotation trigger, the consumer pods of every target and the selected ones that have not
// acknowledged the keyring written and are not terminating (a pod on its way out is not synced
// for a new volume).
func nudgePods(f facts, o outcome) outcome {
	s := f.in.Settings
	if (o.write == nil && len(o.copyTo) == 0) || !s.Reload() || s.ReloadTrigger == mrtrv1alpha1.ReloadTriggerNone {
		return o
	}
	// A place's pods read its copy: they are nudged after the pass that writes it.
	var fp string
	copied := map[string]bool{}
	if o.write != nil {
		fp = o.write.keyring.Fingerprint()
	} else {
		fp = f.in.Secret.Keyring.Fingerprint() // copyTo copies only a valid Secret of ours
	}
	for _, name := range o.copyTo {
		copied[name] = true
	}
	add := func(pods []Pod) {
		for _, p := range pods {
			if !p.Terminating && p.Loaded != fp && f.consumers[p.ref()] && (p.Place == "" && o.write != nil || copied[p.Place]) {
				o.nudge = append(o.nudge, p.ref())
			}
		}
	}
	for _, w := range f.in.Workloads {
		add(w.Pods)
	}
	add(f.in.SelectedPods)
	return o
}
