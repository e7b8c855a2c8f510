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
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// facts are what one pass knows before it decides anything, each derived once from the Input.
type facts struct {
	in  Input
	now metav1.Time // in.Now truncated to the second, as status stores it
	// status is the status as last written, its phase defaulted, completed from what the Secret
	// records (a status update lost after a Secret write) and with the TTL waits of the current
	// settings.
	status mrtrv1alpha1.MRTRKeyringStatus
	// resume is the phase the Secret was written for when it holds our write whose status update
	// was lost (a restart, a conflict, a re-created keyring), "" otherwise.
	resume mrtrv1alpha1.Phase
	// staged is the staged key of the Secret's keyring, "" when none (stagedKey).
	staged string
	// delivery is how far the target keyring (status's, or the one resumed) has reached the pods.
	delivery delivery
	// refused are the acknowledgements not taken as proof, by pod name (acceptAcknowledgements);
	// consumers the pods that may be nudged.
	refused   []mrtrv1alpha1.RefusedAcknowledgement
	consumers map[string]bool
	// rekey is status.namespaces.pendingRekey as this pass finds it (pendingRekey): a rotation to a
	// fresh key is owed to the namespaces that left.
	rekey string
}

// observe derives the facts of one pass. Its facts.in holds each pod's acknowledgement as the
// acceptance rule takes it: no later stage sees one that is not proof.
func observe(in Input) facts {
	var refused []mrtrv1alpha1.RefusedAcknowledgement
	var consumers map[string]bool
	in, refused, consumers = acceptAcknowledgements(rotatedPlaces(in))
	f := facts{in: in, refused: refused, consumers: consumers, now: metav1.NewTime(in.Now.Truncate(time.Second)), status: *in.Status.DeepCopy()}
	if f.status.Phase == "" {
		f.status.Phase = mrtrv1alpha1.PhaseStable
	}
	f.status.TTLWaits = trackTTLWaits(f.status.TTLWaits, in.Settings.TTLWait())
	f.status = restoreRecords(f.status, in.Secret, f.now)
	if in.Settings.Source {
		f.status = restoreRetired(f.status, in.Secret, f.now)
	}
	target := f.status.TargetFingerprint
	if sec := in.Secret; sec.State == SecretValid {
		f.staged = stagedKey(sec)
		if fp := sec.Keyring.Fingerprint(); fp != f.status.SecretFingerprint && sec.writtenByUs() {
			f.resume, target = sec.WrittenPhase, fp
		}
	}
	f.delivery = observeDelivery(in, target, false)
	f.rekey = pendingRekey(in)
	return f
}

// trackTTLWaits keeps status.ttlWaits at the longest TTL waits declared while the keys sealed: the
// current settings' wait raises them, nothing lowers them until the keys they cover leave sealing.
func trackTTLWaits(old *mrtrv1alpha1.TTLWaits, cur time.Duration) *mrtrv1alpha1.TTLWaits {
	w := mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: cur}}
	if old != nil {
		w.Primary.Duration = max(old.Primary.Duration, cur)
		if r := old.Retiring; r != nil {
			w.Retiring = &metav1.Duration{Duration: max(r.Duration, cur)}
		}
	}
	return &w
}

// restoreRecords takes into st what the Secret records and st lacks (a status update lost after
// the Secret write, a keyring re-created for the Secret): the revoked keys, so that none is ever
// added again, and the requests handled, so that the next write records them still.
func restoreRecords(st mrtrv1alpha1.MRTRKeyringStatus, sec SecretObservation, now metav1.Time) mrtrv1alpha1.MRTRKeyringStatus {
	if st.LastHandledRotateRequest == "" {
		st.LastHandledRotateRequest = sec.HandledRotateRequest
	}
	if st.LastHandledRevokeRequest == "" {
		st.LastHandledRevokeRequest = sec.HandledRevokeRequest
	}
	st.LastHandledRevokeSequence = max(st.LastHandledRevokeSequence, sec.HandledRevokeSequence) // it only grows
	for _, id := range sec.Revoked {
		if !slices.ContainsFunc(st.RevokedKeys, func(k mrtrv1alpha1.RevokedKey) bool { return k.ID == id }) {
			st.RevokedKeys = recordRevoked(st.RevokedKeys, id, "", now)
		}
	}
	return st
}

// stagedKey is the id of the staged key of the Secret's keyring, "" when it has none: the one our
// write of the Secret staged (StagedKeyAnnotation), if the Secret still holds that write and the
// key does not seal.
func stagedKey(sec SecretObservation) string {
	kr := sec.Keyring
	if !sec.writtenByUs() || sec.Staged == kr.Primary().ID() {
		return ""
	}
	if _, ok := kr.Lookup(sec.Staged); ok {
		return sec.Staged
	}
	return ""
}

// delivery is how far a target keyring has reached the pods: the exit checks of the phases that
// wait for a keyring, and what status says of each target, read the same values.
type delivery struct {
	// target is the keyring's fingerprint.
	target string
	// writtenAt is when the Secret received target, by the API server's clock, zero when that is
	// not known for sure: the Secret does not hold our write of it, or this pass writes. A place's
	// pods count by the write of its own copy instead (placeWrittenAt, by place).
	writtenAt      time.Time
	placeWrittenAt map[string]time.Time
	// behind are the rotated places whose copy does not hold target, in order.
	behind []string
	reload bool
	// secretOnly: no target workload and no selected pod, so nothing can prove that a keyring
	// arrived.
	secretOnly bool
	// targets are Input.Workloads, in order, with what each lacks.
	targets []target
	// missing are the targets that do not exist; pending the found ones not yet up to date.
	missing, pending []target
	// selected are Input.SelectedPods; selectedLaggards those that did not acknowledge target.
	selected, selectedLaggards []Pod
}

// target is one target workload and how far target has reached it.
type target struct {
	Workload
	// upToDate: every pod of it runs the target keyring, in Reload delivery by their
	// acknowledgements, in Restart delivery because it rolled out the template stamped with it.
	upToDate bool
	// laggards are its pods that do not run the target keyring (Reload delivery).
	laggards []Pod
}

// observeDelivery derives the delivery of keyring fingerprint fp; writes: this pass writes the
// Secret, so no pod can have started with what it held.
func observeDelivery(in Input, fp string, writes bool) delivery {
	v := delivery{target: fp, reload: in.Settings.Reload(), selected: in.SelectedPods,
		secretOnly: len(in.Workloads) == 0 && len(in.SelectedPods) == 0}
	if sec := in.Secret; !writes && sec.writtenByUs() && sec.Keyring.Fingerprint() == fp {
		v.writtenAt = sec.WrittenAt
	}
	for _, p := range in.Places {
		switch {
		case !p.rotated(in.Name):
		case !p.holds(fp):
			v.behind = append(v.behind, p.Name)
		case !writes && p.Copy.writtenByUs():
			if v.placeWrittenAt == nil {
				v.placeWrittenAt = map[string]time.Time{}
			}
			v.placeWrittenAt[p.Name] = p.Copy.WrittenAt
		}
	}
	v.selectedLaggards = v.laggards(in.SelectedPods, true)
	v.targets = make([]target, len(in.Workloads))
	for i, w := range in.Workloads {
		t := target{Workload: w}
		switch {
		case !w.Found:
		case v.reload:
			t.laggards = v.laggards(w.Pods, false)
			t.upToDate = seenAll(w) && len(t.laggards) == 0
		default:
			t.upToDate = w.Stamp == fp && w.RolledOut && v.stampedAfterCopy(w)
		}
		v.targets[i] = t
		switch {
		case !w.Found:
			v.missing = append(v.missing, t)
		case !t.upToDate:
			v.pending = append(v.pending, t)
		}
	}
	return v
}

// runs reports whether pod runs the target keyring. It does if it acknowledged it. A pod that
// acknowledged nothing and was created after the write started with what the write held: that is
// how pods that never run the library (and the ones restarted for not acknowledging) still pass.
// Both times are whole seconds of the API server's clock, so a pod created in the write's second
// must acknowledge. Selected pods (ackOnly) pass by their acknowledgement alone.
func (v delivery) runs(pod Pod, ackOnly bool) bool {
	if pod.Loaded != "" || ackOnly {
		return pod.Loaded == v.target
	}
	at := v.writtenAt
	if pod.Place != "" {
		at = v.placeWrittenAt[pod.Place]
	}
	return !at.IsZero() && pod.CreatedAt.After(at)
}

// stampedAfterCopy reports whether a Restart rollout of w proves that its pods started with its
// place's copy of the target keyring: the stamp that began it was written no earlier than that copy
// (both whole seconds of the API server's clock; the shell stamps a place only after its copy is
// written, so the same second is that order). A stamp from before, written while the copy was
// stale or its write failed, restarted the pods onto the old keyring. An MRTRKeyring's targets read
// the Secret itself, whose write precedes every stamp of its keyring.
func (v delivery) stampedAfterCopy(w Workload) bool {
	if w.Place == "" {
		return true
	}
	at := v.placeWrittenAt[w.Place]
	return !at.IsZero() && !w.StampWriter.At.IsZero() && !w.StampWriter.At.Before(at)
}

// laggards are the pods that do not run the target keyring yet.
func (v delivery) laggards(pods []Pod, ackOnly bool) []Pod {
	var out []Pod
	for _, pod := range pods {
		if !v.runs(pod, ackOnly) {
			out = append(out, pod)
		}
	}
	return out
}

// reached reports whether the keyring has reached every pod that can serve: every copy holds it,
// every target is up to date, and so is every selected pod. A missing target blocks only when blockOnMissing (Accepting:
// it could come back with an old keyring); later, a missing target has no pods that could seal.
// It says nothing of a Secret-only keyring, which has nothing to prove it (see delivered).
func (v delivery) reached(blockOnMissing bool) bool {
	if blockOnMissing && len(v.missing) > 0 {
		return false
	}
	return len(v.behind) == 0 && len(v.pending) == 0 && len(v.selectedLaggards) == 0
}

// seenAll reports whether the cache shows at least the pods w's controller counts: fewer means
// pods exist that this pass cannot see, and a partial view proves nothing.
func seenAll(w Workload) bool { return int32(len(w.Pods)) >= w.CountedPods }

func validPhase(p mrtrv1alpha1.Phase) bool {
	switch p {
	case mrtrv1alpha1.PhaseStable, mrtrv1alpha1.PhaseAccepting, mrtrv1alpha1.PhaseSealingWithNew,
		mrtrv1alpha1.PhaseWaitingTTL, mrtrv1alpha1.PhaseRemoving, mrtrv1alpha1.PhaseRevoking:
		return true
	}
	return false
}
