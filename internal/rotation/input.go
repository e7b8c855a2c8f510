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
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Settings is the spec with its defaults applied.
type Settings struct {
	RotationInterval       time.Duration
	TokenTTL               time.Duration
	ClockSkew              time.Duration
	TerminationGracePeriod time.Duration
	RolloutDeadline        time.Duration
	PropagationDelay       time.Duration
	// Delivery is how a keyring reaches the pods (Reload or Restart); ReloadDeadline is how long a
	// pod has to acknowledge one in Reload delivery before it is restarted.
	Delivery       mrtrv1alpha1.Delivery
	ReloadDeadline time.Duration
	// ReloadTrigger is how the kubelet learns of a new keyring in Reload delivery: PodAnnotation
	// has the operator nudge the pods that must load it (Decision.Nudge).
	ReloadTrigger mrtrv1alpha1.ReloadTrigger
	Suspend       bool
	// NextKey is when the next key is made (Staged or AtRotation).
	NextKey mrtrv1alpha1.NextKey
	// KeyBytes is how many random bytes each new key has.
	KeyBytes int
	// Windows are spec.rotationWindows, parsed; nil when there are none (always open).
	Windows *Windows
	// Source: the keys come from a source Secret (spec.keySource type Secret), Input.Source; a
	// rotation starts when it holds a new key, never by the interval, and nothing is staged.
	Source bool
}

// Staged reports whether each rotation ends by staging the next key: never with a key source,
// whose next key nobody knows before the source holds it.
func (s Settings) Staged() bool { return s.NextKey != mrtrv1alpha1.NextKeyAtRotation && !s.Source }

// Reload reports whether the keyring's pods reload and acknowledge (rather than restart).
func (s Settings) Reload() bool { return s.Delivery != mrtrv1alpha1.DeliveryRestart }

// TTLWait is how long a key stays after the last pod that sealed with it was seen gone.
func (s Settings) TTLWait() time.Duration {
	return s.TokenTTL + s.ClockSkew + s.TerminationGracePeriod
}

// Defaults are the spec's defaults, the same as the CRD's (+kubebuilder:default in
// api/v1alpha1; a test reads the generated CRD and ties the two).
var Defaults = Settings{
	RotationInterval:       720 * time.Hour,
	TokenTTL:               5 * time.Minute,
	ClockSkew:              30 * time.Second,
	TerminationGracePeriod: 30 * time.Second,
	RolloutDeadline:        10 * time.Minute,
	PropagationDelay:       2 * time.Minute,
	Delivery:               mrtrv1alpha1.DeliveryReload,
	ReloadDeadline:         2 * time.Minute,
	ReloadTrigger:          mrtrv1alpha1.ReloadTriggerPodAnnotation,
	NextKey:                mrtrv1alpha1.NextKeyStaged,
	KeyBytes:               keyring.MinSecretBytes,
}

// SettingsFrom applies the API defaults to spec; the API server normally has done so already.
// A field is defaulted here only where the API refuses its zero value: a zero clockSkew,
// terminationGracePeriod or propagationDelay is one the user chose (the API server defaults an
// absent one), so it stays zero.
func SettingsFrom(spec mrtrv1alpha1.MRTRKeyringSpec) Settings {
	or := func(d metav1.Duration, def time.Duration) time.Duration {
		if d.Duration > 0 {
			return d.Duration
		}
		return def
	}
	s := Settings{
		RotationInterval:       or(spec.RotationInterval, Defaults.RotationInterval),
		TokenTTL:               or(spec.TokenTTL, Defaults.TokenTTL),
		ClockSkew:              spec.ClockSkew.Duration,
		TerminationGracePeriod: spec.TerminationGracePeriod.Duration,
		RolloutDeadline:        or(spec.RolloutDeadline, Defaults.RolloutDeadline),
		PropagationDelay:       spec.PropagationDelay.Duration,
		Delivery:               cmp.Or(spec.Delivery, Defaults.Delivery),
		ReloadDeadline:         or(spec.ReloadDeadline, Defaults.ReloadDeadline),
		ReloadTrigger:          cmp.Or(spec.ReloadTrigger, Defaults.ReloadTrigger),
		Suspend:                spec.Suspend,
		NextKey:                cmp.Or(spec.NextKey, Defaults.NextKey),
		KeyBytes:               max(int(spec.KeyBytes), Defaults.KeyBytes),
		Windows:                ParseWindows(spec.RotationWindows),
		Source:                 spec.KeySource.IsSecret(),
	}
	return s
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
	// WrittenPhase and WrittenFingerprint are the mrtrv1alpha1.PhaseAnnotation and FingerprintAnnotation.
	WrittenPhase       mrtrv1alpha1.Phase
	WrittenFingerprint string
	// HandledRotateRequest is the mrtrv1alpha1.HandledRotateAnnotation, HandledRevokeRequest the
	// HandledRevokeAnnotation, HandledRevokeSequence the HandledRevokeSequenceAnnotation (0 when
	// absent or not a number).
	HandledRotateRequest, HandledRevokeRequest string
	HandledRevokeSequence                      int64
	// Staged is the id the StagedKeyAnnotation names, "" when none.
	Staged string
	// Revoked are the ids the RevokedKeysAnnotation lists.
	Revoked []string
	// Retired are the source keys the RetiredKeysAnnotation lists (RetiredAt zero).
	Retired []mrtrv1alpha1.RetiredSourceKey
	// TokenTTL is the token lifetime the Secret declares to its readers (data key
	// keyring.TokenTTLDataKey), 0 when it declares none or an invalid one.
	TokenTTL time.Duration
	// WrittenAt is when the operator last wrote the Secret, by the API server's clock (the
	// managedFields time of its field manager), zero when unknown. A pod created after it, by the
	// same clock, started with what that write held.
	WrittenAt time.Time
}

// ObserveSecret classifies a Secret from its parts; exists is false when it was not found.
// WrittenAt is left to the caller.
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
		State:                 SecretValid,
		Keyring:               r,
		WrittenPhase:          mrtrv1alpha1.Phase(annotations[mrtrv1alpha1.PhaseAnnotation]),
		WrittenFingerprint:    annotations[mrtrv1alpha1.FingerprintAnnotation],
		HandledRotateRequest:  annotations[mrtrv1alpha1.HandledRotateAnnotation],
		HandledRevokeRequest:  annotations[mrtrv1alpha1.HandledRevokeAnnotation],
		HandledRevokeSequence: handledSequence(annotations[mrtrv1alpha1.HandledRevokeSequenceAnnotation]),
		Staged:                annotations[mrtrv1alpha1.StagedKeyAnnotation],
		Revoked:               mrtrv1alpha1.ParseIDs(annotations[mrtrv1alpha1.RevokedKeysAnnotation]),
		Retired:               parseRetired(annotations[mrtrv1alpha1.RetiredKeysAnnotation]),
		TokenTTL:              declaredTTL(data[keyring.TokenTTLDataKey]),
	}
}

// SecretAnnotations are the annotations a write of d.Secret carries, ObserveSecret's inverse:
// what a restarted operator, or a keyring re-created for the same Secret, resumes from. An empty
// value means the annotation must be removed.
func (d Decision) SecretAnnotations() map[string]string {
	revoked := make([]string, len(d.Status.RevokedKeys))
	for i, k := range d.Status.RevokedKeys {
		revoked[i] = k.ID
	}
	return map[string]string{
		mrtrv1alpha1.PhaseAnnotation:                 string(d.SecretPhase),
		mrtrv1alpha1.FingerprintAnnotation:           d.Secret.Fingerprint(),
		mrtrv1alpha1.HandledRotateAnnotation:         d.Status.LastHandledRotateRequest,
		mrtrv1alpha1.HandledRevokeAnnotation:         d.Status.LastHandledRevokeRequest,
		mrtrv1alpha1.HandledRevokeSequenceAnnotation: handledSequenceValue(d.Status.LastHandledRevokeSequence),
		mrtrv1alpha1.RevokedKeysAnnotation:           mrtrv1alpha1.FormatIDs(revoked),
		mrtrv1alpha1.StagedKeyAnnotation:             d.SecretStaged,
		mrtrv1alpha1.RetiredKeysAnnotation:           formatRetired(d.Status.KeySource),
	}
}

// handledSequence reads a HandledRevokeSequenceAnnotation: 0, nothing handled, unless it is a
// non-negative number.
func handledSequence(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// handledSequenceValue is the HandledRevokeSequenceAnnotation of n: none for 0.
func handledSequenceValue(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
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
	// Place is the place (namespace) of a ClusterMRTRKeyring's workload, "" for an MRTRKeyring's.
	Place string
	Kind  mrtrv1alpha1.WorkloadKind
	Name  string
	// Found is false when the workload does not exist; the other fields are then zero.
	Found bool
	// NotServed, for a workload not found, names its kind's apiVersion and kind when the API server
	// does not serve the kind at all ("argoproj.io/v1alpha1 Rollout": its CRD is not installed).
	NotServed string
	// Stamp is the fingerprint on its pod template (mrtr.dev/keyring-hash), "" when none.
	Stamp string
	// RolledOut: the current pod template has rolled out, as kubectl rollout status means it.
	RolledOut bool
	// Ready and Desired count the pods of the current template that are available, and wanted.
	Ready, Desired int32
	// Message says what the rollout waits for.
	Message string
	// Unobserved: its controller has not yet seen its latest spec; the rollout has not begun.
	Unobserved bool
	// Degraded: its controller gave up on the rollout (an Argo Rollout aborted or degraded; Message
	// says why): the keyring is Stalled at once, not after rolloutDeadline.
	Degraded bool
	// Outage, when not empty, says why each restart of the workload takes all its pods down.
	Outage string
	// Unreferenced: a listed or selected target whose pod template does not reference the keyring
	// Secret, so its pods get no keys from it; reported, still rolled out.
	Unreferenced bool
	// ClaimedBy names another MRTRKeyring, one that exists, whose stamp the workload carries
	// (mrtrv1alpha1.StampedByAnnotation): the reconciler does not stamp it, and Step reports the conflict.
	ClaimedBy string
	// StampWriter is who last wrote the stamp, by the workload's managedFields.
	StampWriter Writer
	// OwnStamp: the workload shows that this keyring stamps it: its claim
	// (mrtrv1alpha1.StampedByAnnotation) names it, or the stamp is this keyring's own annotation on
	// a workload it shares (only its operator writes that one). Another manager writing such a
	// stamp puts back what the operator wrote (a stamp fight).
	OwnStamp bool
	// Pods are the pods its selector selects that can serve (not Succeeded or Failed),
	// terminating ones included; gathered in Reload delivery only.
	Pods []Pod
	// CountedPods is how many pods, not terminating, the workload's controller counts as its own
	// (status.replicas): a view of Pods with fewer is partial (the cache has not seen them all
	// yet) and proves nothing.
	CountedPods int32
	// MaxUnavailable is how many of its pods its rollout strategy lets be unavailable at once
	// (maxUnavailable, resolved against its replicas); 0 means none or unknown. It paces the
	// restarts of pods that do not acknowledge, when no PodDisruptionBudget covers them.
	MaxUnavailable int32
	// DisruptionBudget, when not nil, is the disruptionsAllowed of the PodDisruptionBudget that
	// covers its pods: that paces the restarts instead.
	DisruptionBudget *int32
}

// Writer is who last wrote a field, by the object's managedFields: the field manager, the
// subresource it came through ("" for the object itself, "status" for pods/status) and when, by
// the API server's clock in whole seconds (zero when not recorded). Manager is "" when no entry
// records the field.
type Writer struct {
	Manager, Subresource string
	At                   time.Time
}

// Pod is one consumer pod as observed.
type Pod struct {
	// Place is the place (namespace) of a ClusterMRTRKeyring's pod, "" for an MRTRKeyring's.
	Place string
	Name  string
	// Loaded is the fingerprint the pod carries as its acknowledgement of the keyring Secret
	// (annotation ack.AnnotationKey(secret)), "" when it carries none. It counts only as AckWriter
	// shows it is proof (acknowledgement).
	Loaded string
	// AckWriter is who last wrote that annotation, by the Pod's managedFields.
	AckWriter Writer
	// Mounts: the pod mounts the keyring Secret as a volume, the only kind the kubelet refreshes
	// in a running pod, so that a nudge (Decision.Nudge) reaches it.
	Mounts bool
	// CreatedAt is its creationTimestamp (the API server's clock).
	CreatedAt time.Time
	// Terminating: deletionTimestamp is set. It may serve until it is gone, so it still counts.
	Terminating bool
	// NodeName is the node it is scheduled on, "" when none yet.
	NodeName string
	// Node is what is known of that node's readiness. A pod on a node that is not Ready is not
	// restarted for a missing acknowledgement.
	Node NodeState
}

// NodeState is what is known of the readiness of a pod's node.
type NodeState int

const (
	// NodeUnknown: the pod is not scheduled, its node was not seen, or the operator may not read
	// Nodes (Input.NodesUnreadable).
	NodeUnknown NodeState = iota
	// NodeReady: its node's Ready condition is True.
	NodeReady
	// NodeNotReady: its node's Ready condition is False or Unknown (the node stopped reporting).
	NodeNotReady
)

// ref is "Kind/name", as in messages and Decision.StampTargets, after its place and a "/" when
// it has one.
func (w Workload) ref() string { return placeName(w.Place, string(w.Kind)+"/"+w.Name) }

// ref is the pod's name, after its place and a "/" when it has one.
func (p Pod) ref() string { return placeName(p.Place, p.Name) }

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
	// Source is the source Secret as read (ObserveSource), with Settings.Source; State
	// SourceUnused otherwise.
	Source SourceObservation
	// FreshKeys are newly generated keys of spec.keyBytes random bytes each; Step uses their bytes
	// only when it adds keys (two at most: a new primary and a new staged key, when every key is
	// revoked), under ids of its own choosing (NewKeyID). Their ids are ignored.
	FreshKeys [2]keyring.Key
	// Workloads are the targets, sorted; named ones that do not exist have Found false. With none
	// (no names, and a selector that matches nothing or no selector) the keyring is Secret-only, and
	// each phase waits Settings.PropagationDelay instead of a rollout.
	Workloads []Workload
	// SelectedPods are the pods spec.podSelector selects that are not Pods of a target, sorted by
	// name; gated by acknowledgement alone.
	SelectedPods []Pod
	// RotateRequest and RevokeRequest are the current values of the mrtr.dev/rotate and
	// mrtr.dev/revoke annotations.
	RotateRequest, RevokeRequest string
	// Name and UID are a ClusterMRTRKeyring's name and uid: what its copies carry
	// (ClusterKeyringLabel, ClusterKeyringUIDAnnotation). OnLeave is its spec.onLeave.
	Name, UID string
	OnLeave   mrtrv1alpha1.OnLeave
	// Places are the places of a ClusterMRTRKeyring (the namespaces it selects, see Place), sorted
	// by name; none for an MRTRKeyring. Left are the namespaces, sorted, that hold a Secret labelled
	// as its copy but are no longer selected (leftPlaces keeps those it wrote); Namespaces is
	// status.namespaces as last written.
	Places     []Place
	Left       []Place
	Namespaces mrtrv1alpha1.NamespacesStatus
	// NodesUnreadable: the operator may not read Nodes (a namespace-scoped install), so every pod's
	// Node is NodeUnknown, and the status says so when that matters.
	NodesUnreadable bool
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
	// SecretStaged is the id of the staged key in Secret, "" when none.
	SecretStaged string
	// Stamp is the fingerprint the pod templates of StampTargets must carry; "" means touch none
	// (always, in Reload delivery).
	Stamp string
	// StampTargets are the found targets to stamp with Stamp ("Kind/name"): not those another
	// keyring claims, nor those whose stamp another field manager fights over (status.stampFights)
	// until their back-off ends.
	StampTargets []string
	// Evict names the pods of targets to restart through the eviction API: they did not
	// acknowledge the phase's keyring within the reload deadline.
	Evict []string
	// Nudge names the pods to nudge once Secret is written (podsync: the kubelet then syncs their
	// Secret volume at once), in Reload delivery with ReloadTrigger PodAnnotation.
	Nudge []string
	// Status is the new status; write it only if it differs from Input.Status.
	Status mrtrv1alpha1.MRTRKeyringStatus
	// CopyTo are the places whose copy of the Secret must be made to hold what the Secret holds
	// once Secret is written (Secret, or the keyring already there): after the Secret and the
	// status. Namespaces is the new status.namespaces of a ClusterMRTRKeyring.
	CopyTo     []string
	Namespaces mrtrv1alpha1.NamespacesStatus
	// RequeueAfter is when the next timed check is due; 0 means only a watch event can change
	// anything.
	RequeueAfter time.Duration
	Events       []Event
}
