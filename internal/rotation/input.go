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
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Annotations the reconciler writes on the Secret with every keyring it writes (see Decision.Secret).
const (
	// PhaseAnnotation is the phase a write of the Secret entered.
	PhaseAnnotation = "mrtr.dev/phase"
	// FingerprintAnnotation is the fingerprint of the keyring that write held. When it no longer
	// matches the data, someone else changed the Secret.
	FingerprintAnnotation = "mrtr.dev/keyring-hash"
	// HandledRotateAnnotation is the last value of the keyring's mrtr.dev/rotate annotation that
	// started a rotation of this Secret. It lives on the Secret, as the phase does, so that it
	// survives the keyring: a keyring deleted and re-created with the same annotation value does
	// not rotate again.
	HandledRotateAnnotation = "mrtr.dev/rotate-handled"
)

// Settings is the spec with its defaults applied.
type Settings struct {
	RotationInterval       time.Duration
	TokenTTL               time.Duration
	ClockSkew              time.Duration
	TerminationGracePeriod time.Duration
	RolloutDeadline        time.Duration
	PropagationDelay       time.Duration
	Suspend                bool
}

// TTLWait is how long a key stays after the last pod that sealed with it was seen gone.
func (s Settings) TTLWait() time.Duration {
	return s.TokenTTL + s.ClockSkew + s.TerminationGracePeriod
}

// SettingsFrom applies the API defaults to spec; the API server normally has done so already.
func SettingsFrom(spec mrtrv1alpha1.MRTRKeyringSpec) Settings {
	or := func(d metav1.Duration, def time.Duration) time.Duration {
		if d.Duration > 0 {
			return d.Duration
		}
		return def
	}
	return Settings{
		RotationInterval:       or(spec.RotationInterval, 720*time.Hour),
		TokenTTL:               or(spec.TokenTTL, 5*time.Minute),
		ClockSkew:              spec.ClockSkew.Duration,
		TerminationGracePeriod: spec.TerminationGracePeriod.Duration,
		RolloutDeadline:        or(spec.RolloutDeadline, 10*time.Minute),
		PropagationDelay:       spec.PropagationDelay.Duration,
		Suspend:                spec.Suspend,
	}
}

// SecretState is what the keyring Secret turned out to be.
type SecretState int

const (
	// SecretAbsent: no Secret of that name.
	SecretAbsent SecretState = iota
	// SecretValid: type mrtr.dev/keyring holding a valid keyring.json.
	SecretValid
	// SecretInvalid: type mrtr.dev/keyring, but keyring.json is missing or invalid.
	SecretInvalid
	// SecretWrongType: a Secret of another type.
	SecretWrongType
)

// SecretObservation is the keyring Secret as read. Build it with ObserveSecret.
type SecretObservation struct {
	State SecretState
	// Keyring is the parsed keyring when State is SecretValid.
	Keyring *keyring.Keyring
	// Problem says what is wrong when State is SecretInvalid or SecretWrongType. It never holds
	// key bytes (keyring.Parse errors do not).
	Problem string
	// ClaimedBy names another MRTRKeyring, one that exists, that owns the Secret (the reconciler's
	// mrtr.dev/keyring label on it): this keyring must not touch it.
	ClaimedBy string
	// WrittenPhase and WrittenFingerprint are the PhaseAnnotation and FingerprintAnnotation.
	WrittenPhase       mrtrv1alpha1.Phase
	WrittenFingerprint string
	// HandledRotateRequest is the HandledRotateAnnotation.
	HandledRotateRequest string
	// TokenTTL is the token lifetime the Secret declares to its readers (data key
	// keyring.TokenTTLDataKey), 0 when it declares none or an invalid one.
	TokenTTL time.Duration
}

// ObserveSecret classifies a Secret from its parts; exists is false when it was not found.
func ObserveSecret(exists bool, secretType string, data map[string][]byte, annotations map[string]string) SecretObservation {
	if !exists {
		return SecretObservation{State: SecretAbsent}
	}
	if secretType != keyring.SecretType {
		return SecretObservation{State: SecretWrongType,
			Problem: "the Secret has type " + strconv.Quote(secretType) + ", not " + keyring.SecretType}
	}
	raw, ok := data[keyring.SecretDataKey]
	if !ok {
		return SecretObservation{State: SecretInvalid, Problem: "the Secret has no " + keyring.SecretDataKey}
	}
	r, err := keyring.Parse(raw)
	if err != nil {
		return SecretObservation{State: SecretInvalid, Problem: err.Error()}
	}
	return SecretObservation{
		State:                SecretValid,
		Keyring:              r,
		WrittenPhase:         mrtrv1alpha1.Phase(annotations[PhaseAnnotation]),
		WrittenFingerprint:   annotations[FingerprintAnnotation],
		HandledRotateRequest: annotations[HandledRotateAnnotation],
		TokenTTL:             declaredTTL(data[keyring.TokenTTLDataKey]),
	}
}

// declaredTTL is the token-ttl data, 0 when absent or invalid (then rewritten like a stale one).
func declaredTTL(data []byte) time.Duration {
	if data == nil {
		return 0
	}
	d, err := keyring.ParseTokenTTL(data)
	if err != nil {
		return 0
	}
	return d
}

// writtenByUs reports whether the Secret's data is exactly what our last write to it held.
func (s SecretObservation) writtenByUs() bool {
	return s.State == SecretValid && s.WrittenFingerprint == s.Keyring.Fingerprint() && validPhase(s.WrittenPhase)
}

// Workload is one target workload as observed.
type Workload struct {
	Kind mrtrv1alpha1.WorkloadKind
	Name string
	// Found is false when the workload does not exist; the other fields are then zero.
	Found bool
	// Stamp is the fingerprint on its pod template (mrtr.dev/keyring-hash), "" when none.
	Stamp string
	// RolledOut: the current pod template has rolled out, as kubectl rollout status means it.
	RolledOut bool
	// Ready and Desired count the pods of the current template that are available, and wanted.
	Ready, Desired int32
	// Message says what the rollout waits for.
	Message string
	// Outage, when not empty, says why each restart of the workload takes all its pods down.
	Outage string
	// Unreferenced: a listed or selected target whose pod template does not reference the keyring
	// Secret, so its pods get no keys from it; reported, still rolled out.
	Unreferenced bool
	// ClaimedBy names another MRTRKeyring, one that exists, whose stamp the workload carries
	// (workload.StampedByAnnotation): the reconciler does not stamp it, and Step reports the conflict.
	ClaimedBy string
}

// ref is "Kind/name", as in messages.
func (w Workload) ref() string { return string(w.Kind) + "/" + w.Name }

// upToDate: every pod of w runs the keyring with fingerprint fp.
func (w Workload) upToDate(fp string) bool { return w.Found && w.Stamp == fp && w.RolledOut }

// Input is everything Step needs. The reconciler gathers it; Step never reads anything else.
type Input struct {
	// Now is the time of this pass.
	Now time.Time
	// Generation is the keyring's metadata.generation.
	Generation int64
	Settings   Settings
	// Status is the status as last written.
	Status mrtrv1alpha1.MRTRKeyringStatus
	// SecretName is the effective name of the keyring Secret.
	SecretName string
	Secret     SecretObservation
	// FreshKey is a newly generated key of spec.keyBytes random bytes; Step uses its bytes only
	// when it adds a key, under an id of its own choosing (NewKeyID). Its id is ignored.
	FreshKey keyring.Key
	// Workloads are the targets, sorted; named ones that do not exist have Found false. With none
	// (no names, and a selector that matches nothing or no selector) the keyring is Secret-only, and
	// each phase waits Settings.PropagationDelay instead of a rollout.
	Workloads []Workload
	// RotateRequest is the current value of the mrtr.dev/rotate annotation.
	RotateRequest string
}

// Event is a Kubernetes Event to emit (events.k8s.io/v1: type, reason, action, note).
type Event struct {
	Type   string // "Normal" or "Warning"
	Reason string
	Action string
	Note   string
}

// Decision is what Step wants done, in this order: write the Secret, write status, emit events,
// stamp the workloads.
type Decision struct {
	// Secret, when not nil, is the keyring the Secret must hold, annotated with SecretPhase and its
	// fingerprint. Nil means: leave the Secret alone.
	Secret      *keyring.Keyring
	SecretPhase mrtrv1alpha1.Phase
	// Stamp is the fingerprint every found target's pod template must carry; "" means touch none.
	Stamp string
	// Status is the new status; write it only if it differs from Input.Status.
	Status mrtrv1alpha1.MRTRKeyringStatus
	// RequeueAfter is when the next timed check is due; 0 means only a watch event can change
	// anything.
	RequeueAfter time.Duration
	Events       []Event
}
