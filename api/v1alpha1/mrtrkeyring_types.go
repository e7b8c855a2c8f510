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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MRTRKeyringSpec is the desired state: how often to rotate, how long tokens live, and which
// workloads consume the keyring Secret.
//
// A keyring with no target workloads and no selected pods is a Secret-only rotation: consumers read
// the mounted Secret and reload it themselves, and nobody proves it, so each phase waits
// propagationDelay (the time the kubelet takes to update a mounted Secret).
//
// +kubebuilder:validation:XValidation:rule="!has(self.rotationInterval) || duration(self.rotationInterval) > duration(self.tokenTTL) + duration(self.clockSkew) + duration(self.terminationGracePeriod)",message="spec.rotationInterval must be longer than one rotation's TTL wait: tokenTTL + clockSkew + terminationGracePeriod",fieldPath=".rotationInterval"
// +kubebuilder:validation:XValidation:rule="!has(self.keySource) || self.keySource.type != 'Secret' || !has(self.rotationInterval)",message="spec.rotationInterval does not apply with spec.keySource.type Secret: a rotation starts when the source Secret's key changes; remove spec.rotationInterval",fieldPath=".rotationInterval"
// +kubebuilder:validation:XValidation:rule="!has(self.keySource) || self.keySource.type != 'Secret' || !has(self.nextKey) || self.nextKey != 'Staged'",message="spec.nextKey Staged does not apply with spec.keySource.type Secret: the operator cannot make the next key, the source brings it; remove spec.nextKey or set AtRotation",fieldPath=".nextKey"
// +kubebuilder:validation:XValidation:rule="!has(self.keySource) || self.keySource.type != 'Secret' || !has(self.rotationWindows) || size(self.rotationWindows) == 0",message="spec.rotationWindows does not apply with spec.keySource.type Secret: a rotation starts when the source Secret's key changes, which the secret manager schedules; remove spec.rotationWindows",fieldPath=".rotationWindows"
type MRTRKeyringSpec struct {
	// secretName is the name of the keyring Secret in the keyring's namespace. It defaults to the
	// keyring's name and cannot change once the keyring exists (the workloads mount it by name).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`

	// keySource is where the keys come from. Generated (the default): the operator makes each key
	// from random bytes. Secret: a Secret that someone else maintains (the External Secrets
	// Operator, the Vault Secrets Operator, a person) holds the current key, and each change of it
	// starts a rotation to it; see KeySource.
	// +optional
	KeySource *KeySource `json:"keySource,omitempty"`

	// rotationInterval is the time from the end of one rotation to the start of the next: 720h when
	// unset. It does not apply, and is refused, with keySource type Secret, whose rotations start
	// when the source changes.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="spec.rotationInterval must be at least 1m"
	RotationInterval metav1.Duration `json:"rotationInterval,omitzero"`

	// tokenTTL is the longest lifetime of any token a consumer seals; MRTR caps it at 15m
	// (keyring.MaxTokenTTL, which the codecs enforce).
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('15m')",message="spec.tokenTTL must be more than 0s and at most 15m"
	TokenTTL metav1.Duration `json:"tokenTTL,omitzero"`

	// clockSkew is the largest difference between the clocks of any two replicas.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('5m')",message="spec.clockSkew must be between 0s and 5m"
	ClockSkew metav1.Duration `json:"clockSkew,omitzero"`

	// terminationGracePeriod is how long a replaced pod may keep serving (and sealing) while it stops:
	// the pods' terminationGracePeriodSeconds. It is added to the TTL wait.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="spec.terminationGracePeriod must be between 0s and 1h"
	TerminationGracePeriod metav1.Duration `json:"terminationGracePeriod,omitzero"`

	// rolloutDeadline is how long one phase's rollout may take before the keyring is reported
	// Stalled. The rotation never skips a rollout: it resumes by itself once the rollout completes.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.rolloutDeadline must be at least 10s"
	RolloutDeadline metav1.Duration `json:"rolloutDeadline,omitzero"`

	// propagationDelay is how long a changed Secret takes to reach every mounted copy (kubelet sync
	// period plus cache). It is waited for in each phase only when the keyring has no target
	// workloads and selects no pods, since acknowledgements or rollouts otherwise prove that every
	// pod runs with the new keyring.
	// +optional
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="spec.propagationDelay must be between 0s and 1h"
	PropagationDelay metav1.Duration `json:"propagationDelay,omitzero"`

	// keyBytes is the size of each generated key, in bytes. With keySource type Secret the source
	// decides the size (32 bytes at least), and keyBytes is not used.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=32
	// +kubebuilder:validation:Maximum=64
	KeyBytes int32 `json:"keyBytes,omitempty"`

	// workloads names the Deployments, StatefulSets, DaemonSets and Argo Rollouts in this namespace
	// that consume the keyring: each phase waits until every one of their pods runs its keyring
	// (see delivery). A kind the cluster does not serve (the Rollout CRD not installed) is reported
	// in Ready=False and waited for.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Workloads []WorkloadReference `json:"workloads,omitempty"`

	// workloadSelector adds every Deployment, StatefulSet, DaemonSet and Argo Rollout (where the
	// cluster serves it) in this namespace whose labels match. An empty selector ({}) matches all
	// of them.
	// +optional
	WorkloadSelector *metav1.LabelSelector `json:"workloadSelector,omitempty"`

	// delivery is how each keyring the rotation writes reaches the consumers' pods.
	//
	// Reload (the default): nothing restarts. The pods reload the mounted Secret themselves and
	// each one acknowledges, on its own Pod, the keyring it loaded (annotation
	// loaded.mrtr.dev/<secretName>, written by the library's ack package); a phase ends when every
	// pod of every target has acknowledged its keyring. A pod that has not within reloadDeadline
	// is restarted, alone, through the eviction API (which respects PodDisruptionBudgets), so
	// pods that never run the library still rotate safely, with restarts.
	//
	// Restart: the keyring's fingerprint is stamped on every target's pod template (annotation
	// mrtr.dev/keyring-hash), which restarts every pod once per round (two rounds per rotation
	// with a staged next key, three without); a phase ends when
	// the rollout does. For consumers that read the keyring only at start (the MRTR_KEYRING
	// environment variable).
	// +optional
	// +kubebuilder:default=Reload
	Delivery Delivery `json:"delivery,omitempty"`
	// reloadDeadline is how long a pod has to acknowledge a keyring in Reload delivery before it
	// is restarted: the kubelet's Secret sync period plus its cache TTL (about a minute by
	// default) plus the time the server takes to reload.
	// +optional
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('1h')",message="spec.reloadDeadline must be between 5s and 1h"
	ReloadDeadline metav1.Duration `json:"reloadDeadline,omitzero"`
	// reloadTrigger is how, in Reload delivery, the kubelet learns that the Secret changed.
	//
	// PodAnnotation (the default): right after each Secret write, the operator writes the
	// fingerprint it wrote and the nudge's number ("<fingerprint>/<n>", a new value each time) in
	// the annotation mrtr.dev/keyring-written of each pod that must load it and mounts the Secret
	// as a volume. A change to its Pod makes the kubelet sync the pod at once, and the sync
	// refreshes its Secret volumes: the new keyring reaches the pods in about a second. An
	// admission policy that ships with the operator lets it change nothing else on a pod.
	//
	// None: the pods get the new keyring when the kubelet syncs them on its own, every
	// syncFrequency (1m by default) plus its Secret cache's TTL: up to about two minutes per
	// round, which reloadDeadline must exceed.
	// +optional
	// +kubebuilder:default=PodAnnotation
	ReloadTrigger ReloadTrigger `json:"reloadTrigger,omitempty"`
	// podSelector adds the pods of this namespace whose labels match as consumers, whatever runs
	// them (bare pods, other controllers' pods). They are gated by their acknowledgement alone, in
	// either delivery: never restarted, a phase waits until each has acknowledged. Pods of the
	// target workloads are counted with their workload.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// suspend stops new rotations from starting (on schedule or on request). A rotation already
	// under way finishes, because stopping halfway would leave an extra key in place for no reason.
	// Revocations (mrtr.dev/revoke) still take effect.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// nextKey is when the next key is made.
	//
	// Staged (the default): at the end of every rotation, so that in the steady state the keyring
	// is [A, N]: A seals, N is already accepted by every pod. A rotation is then two rounds of
	// delivery: [N, A] (N seals), the TTL wait, [N, M] (A removed, M staged). A revoked primary is
	// replaced by the staged key in the same write, so new tokens keep working at once.
	//
	// AtRotation: when a rotation starts, as three rounds: [A, B] (accepted everywhere), [B, A]
	// (seals), the TTL wait, [B]. One key in the steady state. A keyring switched to it keeps a
	// key staged before and seals with it at the next rotation.
	//
	// A keyring without a staged key (created before Staged existed, or adopted) rotates in three
	// rounds once and is staged from then on.
	//
	// Unset, it is Staged, except with keySource type Secret, which always rotates as AtRotation:
	// the next key is whatever the source holds next, which the operator cannot know before. Staged
	// is refused with a secret source.
	// +optional
	NextKey NextKey `json:"nextKey,omitempty"`

	// rotationWindows are the maintenance windows in which a rotation may start on schedule. A
	// rotation that falls due outside every window starts when the next one opens
	// (status.nextRotationTime says when); one that started inside a window finishes even after the
	// window closes, since stopping halfway would leave an extra key in place for no reason. A
	// rotation requested through mrtr.dev/rotate and a revocation never wait for a window: the
	// person who asks has decided that now is the time, and a leaked key must go at once. Empty
	// (the default): a rotation starts whenever it falls due.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	RotationWindows []RotationWindow `json:"rotationWindows,omitempty"`
}

// KeySourceType is where a keyring's keys come from: see KeySource.
// +kubebuilder:validation:Enum=Generated;Secret
type KeySourceType string

const (
	// KeySourceGenerated: the operator makes each key from random bytes (spec.keyBytes of them).
	KeySourceGenerated KeySourceType = "Generated"
	// KeySourceSecret: a Secret that someone else maintains holds the current key.
	KeySourceSecret KeySourceType = "Secret"
)

// KeySource is where the keys of a keyring come from.
//
// With type Secret, the source Secret holds the current key's bytes, as the External Secrets
// Operator's ExternalSecret or the Vault Secrets Operator writes a secret manager's current
// version. The operator reads it and never writes it. When its bytes change, that is a new key,
// and a rotation to it starts at once, as a rotation with nextKey AtRotation: the new key is
// accepted by every pod, then seals, then the old key is removed once every token sealed with it
// has expired (tokenTTL + clockSkew + terminationGracePeriod after no pod seals with it). The
// keyring Secret the operator writes keeps the old key meanwhile; the source need not.
//
// A source key's id is the source Secret's annotation mrtr.dev/key-version when it is set (1 to
// 32 characters of A-Za-z0-9_-, a key id as tokens carry it), else "s-" and 24 hex digits of a
// SHA-256 digest of a fixed label and the key bytes. Either is stable for the same bytes, so an
// operator restart or a re-read never makes a new key of an old one, and neither reveals the
// bytes: the digest is one-way and domain-separated, so it matches no other hash of the key.
// A version makes the id say which secret manager version it is ("v7", "2026-12"); the digest
// needs nobody to set anything.
//
// The source is untrusted input. A source Secret or data key that is missing, a key shorter than
// 32 bytes, a version that is not a valid id or that names other bytes than before, a key that
// was revoked, or a key that a rotation already retired coming back, is refused: condition
// KeySourceReady says why, and the keyring in service stays as it is. A source that changes
// again during a rotation does not disturb it: the rotation finishes, and the next one starts
// with the newest value; the values in between, never sealed with, are skipped
// (status.keySource.skippedVersions). A rotation requested through mrtr.dev/rotate has nothing
// to rotate to while the source holds the key in service: it is refused with an event
// (RotateRequestIgnored); rotate at the source instead. Revocations work as with generated keys.
//
// spec.rotationInterval, spec.rotationWindows and spec.nextKey Staged do not apply, and are
// refused, with type Secret; spec.keyBytes is not used.
// +kubebuilder:validation:XValidation:rule="self.type == 'Secret' ? has(self.secret) : !has(self.secret)",message="spec.keySource.secret is required when spec.keySource.type is Secret, and forbidden otherwise",fieldPath=".secret"
type KeySource struct {
	// type is Generated (the default) or Secret.
	// +optional
	// +kubebuilder:default=Generated
	Type KeySourceType `json:"type,omitempty"`

	// secret names the source Secret, for type Secret.
	// +optional
	Secret *SecretKeySource `json:"secret,omitempty"`
}

// SecretKeySource names the Secret, and its data key, that holds a keyring's current key.
type SecretKeySource struct {
	// name is the source Secret's name: in the keyring's namespace for an MRTRKeyring, in the
	// operator's namespace (where the lead Secrets of cluster keyrings live) for a
	// ClusterMRTRKeyring. It must not be the keyring Secret itself.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the data key that holds the current key's bytes (raw bytes, 32 at least, as
	// stringData or a secret manager's value writes them).
	// +optional
	// +kubebuilder:default=key
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// IsSecret reports whether the keys come from a source Secret.
func (s *KeySource) IsSecret() bool { return s != nil && s.Type == KeySourceSecret && s.Secret != nil }

// MaxRetiredSourceKeys is how many retired source keys status.keySource.retired keeps, and
// MaxSkippedSourceVersions how many skipped versions status.keySource.skippedVersions keeps.
const (
	MaxRetiredSourceKeys     = 32
	MaxSkippedSourceVersions = 16
)

// KeySourceStatus is what a keyring with keySource type Secret knows of its source.
type KeySourceStatus struct {
	// version is the source version in service: the id of the source key that seals now, "" while
	// none does (a keyring whose key in service was generated, or revoked).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Version string `json:"version,omitempty"`
	// inServiceSince is when version began to seal. The alert on the age of the source key in
	// service reads it: a source that stops changing shows here.
	// +optional
	InServiceSince *metav1.Time `json:"inServiceSince,omitempty"`
	// observedVersion is the version the source held when last read, "" when it holds no usable
	// key (condition KeySourceReady says why).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ObservedVersion string `json:"observedVersion,omitempty"`
	// skippedVersions are versions the source held during a rotation and replaced before their
	// turn came: never sealed with, never in the keyring (the last 16, oldest first).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	SkippedVersions []string `json:"skippedVersions,omitempty"`
	// retired are the source keys that rotations removed, oldest first (the last 32): one coming
	// back is refused, by its id or its digest.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Retired []RetiredSourceKey `json:"retired,omitempty"`
}

// RetiredSourceKey is a source key that a rotation removed.
type RetiredSourceKey struct {
	// version is its id.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Version string `json:"version"`
	// digest is the domain-separated digest of its bytes (24 hex digits), the same that names a
	// source key without a version: it recognises the key coming back under another version.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{24}$`
	Digest string `json:"digest"`
	// retiredAt is when it was removed.
	// +required
	RetiredAt metav1.Time `json:"retiredAt"`
}

// RotationWindow is a window in which scheduled rotations may start: it opens at each time of
// schedule, in timeZone, and stays open for duration.
type RotationWindow struct {
	// schedule is when the window opens: a standard 5-field cron expression (minute, hour,
	// day of month, month, day of week; lists, ranges, steps, * and month or weekday names), as a
	// Kubernetes CronJob's schedule without the @ macros and TZ= prefix (timeZone says that).
	// A time that the clock skips at a daylight saving change opens the window at the first instant
	// after the skip, and a time that it shows twice opens it at its first occurrence.
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('(?i)^ *([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/[1-9][0-9]*)?(,([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/[1-9][0-9]*)?)* +([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)* +([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(0?[1-9]|1[0-2]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/[1-9][0-9]*)?)* +([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|sun|mon|tue|wed|thu|fri|sat)(-([0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/[1-9][0-9]*)?)* *$')",message="must be a 5-field cron schedule: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or JAN-DEC) day-of-week (0-6 or SUN-SAT), for example \"0 2 * * SUN\""
	Schedule string `json:"schedule"`

	// duration is how long the window stays open from each opening (elapsed time: across a
	// daylight saving change it closes at another wall-clock time). A rotation that started
	// inside it finishes after it closes.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be at least 1m"
	Duration metav1.Duration `json:"duration"`

	// timeZone is the IANA time zone the schedule is read in (Europe/Berlin, America/New_York).
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$')",message="must be an IANA time zone name, such as UTC or Europe/Berlin"
	TimeZone string `json:"timeZone,omitempty"`
}

// RotationWindowStatus is the window a rotation waits for: when it opens and closes.
type RotationWindowStatus struct {
	// opensAt is when the window opens (it may have opened already).
	// +required
	OpensAt metav1.Time `json:"opensAt"`
	// closesAt is when it closes.
	// +required
	ClosesAt metav1.Time `json:"closesAt"`
}

// ReloadTrigger is how the kubelet learns of a new keyring: see MRTRKeyringSpec.reloadTrigger.
// +kubebuilder:validation:Enum=PodAnnotation;None
type ReloadTrigger string

const (
	// ReloadTriggerPodAnnotation: the operator annotates each pod that must load a new keyring
	// (WrittenAnnotation), so that the kubelet syncs it, and its Secret volume, at once.
	ReloadTriggerPodAnnotation ReloadTrigger = "PodAnnotation"
	// ReloadTriggerNone: the kubelet's own periodic sync brings the new keyring.
	ReloadTriggerNone ReloadTrigger = "None"
)

// NextKey is when the next key is made: see MRTRKeyringSpec.nextKey.
// +kubebuilder:validation:Enum=Staged;AtRotation
type NextKey string

const (
	// NextKeyStaged: the next key is staged (accepted everywhere) at the end of each rotation.
	NextKeyStaged NextKey = "Staged"
	// NextKeyAtRotation: the next key is made, and accepted in a phase of its own, when a
	// rotation starts.
	NextKeyAtRotation NextKey = "AtRotation"
)

// WorkloadKind is a kind of workload a keyring can restart.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;Rollout
type WorkloadKind string

// The workload kinds: three of apps/v1, and the Argo Rollout (argoproj.io/v1alpha1), which a
// cluster serves only once its CRD is installed.
const (
	KindDeployment  WorkloadKind = "Deployment"
	KindStatefulSet WorkloadKind = "StatefulSet"
	KindDaemonSet   WorkloadKind = "DaemonSet"
	KindRollout     WorkloadKind = "Rollout"
)

// The API versions of the workload kinds (WorkloadReference.apiVersion).
const (
	// APIVersionApps is the group and version of Deployments, StatefulSets and DaemonSets, and the
	// default of WorkloadReference.apiVersion.
	APIVersionApps = "apps/v1"
	// APIVersionArgoRollouts is the group and version of the Argo Rollout.
	APIVersionArgoRollouts = "argoproj.io/v1alpha1"
)

// Delivery is how a new keyring reaches the consumers' pods: see MRTRKeyringSpec.delivery.
// +kubebuilder:validation:Enum=Reload;Restart
type Delivery string

const (
	// DeliveryReload: the pods reload the Secret and acknowledge each keyring; nothing restarts.
	DeliveryReload Delivery = "Reload"
	// DeliveryRestart: the pods are restarted (a rollout of each target) for each keyring.
	DeliveryRestart Delivery = "Restart"
)

// WorkloadReference names one target workload in the keyring's namespace, as Kubernetes object
// references do (scaleTargetRef): {apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: web}.
// +kubebuilder:validation:XValidation:rule="self.kind == 'Rollout' ? self.apiVersion == 'argoproj.io/v1alpha1' : self.apiVersion == 'apps/v1'",message="apiVersion must be the kind's: apps/v1 for Deployment, StatefulSet and DaemonSet, argoproj.io/v1alpha1 for Rollout",fieldPath=".apiVersion"
type WorkloadReference struct {
	// apiVersion is the kind's group and version: apps/v1 (the default) or argoproj.io/v1alpha1.
	// +optional
	// +kubebuilder:default="apps/v1"
	// +kubebuilder:validation:Enum="apps/v1";"argoproj.io/v1alpha1"
	APIVersion string `json:"apiVersion,omitempty"`

	// kind is Deployment, StatefulSet, DaemonSet (apps/v1) or Rollout (argoproj.io/v1alpha1).
	// +required
	Kind WorkloadKind `json:"kind"`

	// name is the workload's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Phase is where a keyring is in its rotation. Each phase ends when its exit check passes; see
// internal/rotation for the checks and the invariant they keep.
// +kubebuilder:validation:Enum=Stable;Accepting;SealingWithNew;WaitingTTL;Removing;Revoking
type Phase string

const (
	// PhaseStable: the primary key and the staged one ([A, N]; [A] with nextKey AtRotation, plus
	// any keys of an adopted keyring); waiting for the next rotation to be due.
	PhaseStable Phase = "Stable"
	// PhaseAccepting: a new key was appended ([A, B]); waiting until every target runs with it, so
	// that every replica accepts B before any replica seals with it.
	PhaseAccepting Phase = "Accepting"
	// PhaseSealingWithNew: the new key was moved first ([B, A]); waiting until no pod that seals
	// with A is left.
	PhaseSealingWithNew Phase = "SealingWithNew"
	// PhaseWaitingTTL: every pod seals with B; waiting tokenTTL + clockSkew + terminationGracePeriod
	// so that every token sealed with A has expired.
	PhaseWaitingTTL Phase = "WaitingTTL"
	// PhaseRemoving: the old keys were dropped and the next key staged ([B, M]; [B] with nextKey
	// AtRotation); waiting until every target runs with that.
	PhaseRemoving Phase = "Removing"
	// PhaseRevoking: keys were revoked (mrtr.dev/revoke) and removed at once, without the TTL
	// wait; waiting until every target runs without them. Any rotation under way was abandoned.
	PhaseRevoking Phase = "Revoking"
)

// UnderWay reports whether a rotation, or the rollout of a revocation, is under way: any phase but
// Stable, once the operator has set one.
func (p Phase) UnderWay() bool { return p != "" && p != PhaseStable }

// KeyRole is what a key is used for right now.
// +kubebuilder:validation:Enum=Primary;Accepted;Staged;Retiring
type KeyRole string

const (
	// KeyPrimary seals and opens.
	KeyPrimary KeyRole = "Primary"
	// KeyAccepted opens only, and is on its way to every replica: it becomes primary (Accepting)
	// or staged (Removing, Revoking) once every replica accepts it.
	KeyAccepted KeyRole = "Accepted"
	// KeyStaged opens only, and every replica accepts it: the next rotation seals with it, and it
	// takes over at once if the primary is revoked.
	KeyStaged KeyRole = "Staged"
	// KeyRetiring opens only; it is removed once no token sealed with it can still be valid.
	KeyRetiring KeyRole = "Retiring"
)

// TTLWaits are the longest TTL waits declared while keys sealed (see MRTRKeyringStatus.ttlWaits).
type TTLWaits struct {
	// primary is the longest TTL wait declared since the primary key began to seal.
	// +required
	Primary metav1.Duration `json:"primary"`

	// retiring is the longest TTL wait declared since the keys now retiring began to seal, until
	// they are removed: the TTL wait lasts at least this long. Set when a new key takes over sealing.
	// +optional
	Retiring *metav1.Duration `json:"retiring,omitempty"`
}

// MaxRevokedKeys is how many revoked keys status.revokedKeys (and the Secret's record) keep.
const MaxRevokedKeys = 32

// RevokedKey is a key revoked through mrtr.dev/revoke.
type RevokedKey struct {
	// id is the revoked key's id.
	// +required
	ID string `json:"id"`
	// revokedAt is when the operator removed it from the Secret.
	// +required
	RevokedAt metav1.Time `json:"revokedAt"`
	// role is the role it had then (Primary: tokens sealed with it fail from then on).
	// +optional
	Role KeyRole `json:"role,omitempty"`
}

// StampFight is a target workload whose pod-template stamp another field manager put back after
// the operator wrote it (Restart delivery): the operator leaves it alone until the back-off ends.
type StampFight struct {
	// namespace is the workload's namespace, for a ClusterMRTRKeyring's; empty for an
	// MRTRKeyring's, whose workloads are in its namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// kind is Deployment, StatefulSet or DaemonSet.
	// +required
	Kind WorkloadKind `json:"kind"`
	// name is the workload's name.
	// +required
	Name string `json:"name"`
	// manager is the field manager that put the stamp back last.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Manager string `json:"manager"`
	// reverts counts the stamps it put back.
	// +required
	// +kubebuilder:validation:Minimum=1
	Reverts int32 `json:"reverts"`
	// until is when the back-off ends: no stamp before it.
	// +required
	Until metav1.Time `json:"until"`
	// retried is true once the stamp was written again after the back-off: a revert of that write
	// is the next revert, with a back-off twice as long.
	// +optional
	Retried bool `json:"retried,omitempty"`
}

// RefusedAcknowledgement is a pod's acknowledgement that its managedFields show is not proof.
type RefusedAcknowledgement struct {
	// pod is the pod's name.
	// +required
	Pod string `json:"pod"`
	// message says why it is not taken as proof.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message"`
}

// KeyStatus describes one key of the keyring Secret: its id and role, never its bytes.
type KeyStatus struct {
	// id is the key id, as written into tokens.
	// +required
	ID string `json:"id"`
	// role is Primary, Accepted, Staged or Retiring.
	// +required
	Role KeyRole `json:"role"`
	// createdAt is when the operator generated (or adopted) the key.
	// +optional
	CreatedAt metav1.Time `json:"createdAt,omitzero"`
	// sealingSince is, for the primary, when it began to seal: a staged key is created one
	// rotation before it seals, so its age is not how long it has sealed.
	// +optional
	SealingSince *metav1.Time `json:"sealingSince,omitempty"`
	// pythonKid is the kid that python-sdk (mcp 2.3.0) writes into every token it seals with this
	// key, as 8 lowercase hex digits. python-sdk derives it from the key bytes and takes no id, so
	// this is how a Python token is traced to its key (kubectl mrtr inspect). It is a hash of a hash
	// of the key, as safe to show as the fingerprint.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{8}$`
	PythonKid string `json:"pythonKid,omitempty"`
}

// Sealing is when k began to seal: sealingSince, or createdAt in a status from before it.
func (k KeyStatus) Sealing() metav1.Time {
	if k.SealingSince != nil {
		return *k.SealingSince
	}
	return k.CreatedAt
}

// WorkloadStatus is the rollout state of one target workload.
type WorkloadStatus struct {
	// namespace is the workload's namespace, for a ClusterMRTRKeyring's; empty for an
	// MRTRKeyring's, whose workloads are in its namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// kind is Deployment, StatefulSet, DaemonSet or Rollout.
	// +required
	Kind WorkloadKind `json:"kind"`
	// name is the workload's name.
	// +required
	Name string `json:"name"`
	// found is false when the workload does not exist.
	// +optional
	Found bool `json:"found,omitempty"`
	// upToDate is true when the workload's pod template carries status.targetFingerprint and has
	// fully rolled out (in the sense of kubectl rollout status).
	// +optional
	UpToDate bool `json:"upToDate,omitempty"`
	// readyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// desiredReplicas is the number of pods the workload wants.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// message says what the rollout is waiting for, if anything.
	// +optional
	Message string `json:"message,omitempty"`
	// pods counts the workload's pods that can serve (terminating ones included), in Reload
	// delivery.
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// podsAcknowledged counts those that run status.targetFingerprint: they acknowledged it, or
	// started after it was written and acknowledge nothing.
	// +optional
	PodsAcknowledged int32 `json:"podsAcknowledged,omitempty"`
	// laggards names up to 10 pods that do not run status.targetFingerprint yet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Laggards []string `json:"laggards,omitempty"`
}

// SelectedPodsStatus is the acknowledgement state of the pods spec.podSelector selects.
type SelectedPodsStatus struct {
	// pods counts the selected pods that can serve, terminating ones included.
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// podsAcknowledged counts those that acknowledged status.targetFingerprint.
	// +optional
	PodsAcknowledged int32 `json:"podsAcknowledged,omitempty"`
	// laggards names up to 10 pods that have not acknowledged it yet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Laggards []string `json:"laggards,omitempty"`
}

// Wait names what a keyring's rotation waits for.
// +kubebuilder:validation:Enum=NextRotation;Resume;Delivery;ReplacedPods;Propagation;TokenExpiry;Fix
type Wait string

const (
	// WaitNextRotation: nothing is under way; the next rotation is due at until.
	WaitNextRotation Wait = "NextRotation"
	// WaitResume: rotations are suspended (spec.suspend) until resumed.
	WaitResume Wait = "Resume"
	// WaitDelivery: the phase's keyring has not reached every pod yet; for names the workloads and
	// pods that lag.
	WaitDelivery Wait = "Delivery"
	// WaitReplacedPods: the pods a rollout replaced may still serve with the old keyring until
	// terminationGracePeriod after it (Restart delivery), until until.
	WaitReplacedPods Wait = "ReplacedPods"
	// WaitPropagation: nothing proves that the Secret arrived (no target, no selected pod), so the
	// phase waits spec.propagationDelay, until until.
	WaitPropagation Wait = "Propagation"
	// WaitTokenExpiry: the TTL wait; the tokens sealed with the old keys expire by until.
	WaitTokenExpiry Wait = "TokenExpiry"
	// WaitFix: the rotation is stalled (the Stalled condition says why) and resumes by itself once
	// that is resolved.
	WaitFix Wait = "Fix"
)

// WaitingFor is what a keyring's rotation waits for: what, for whom, until when.
type WaitingFor struct {
	// what names the wait.
	// +required
	What Wait `json:"what"`
	// for names up to 10 of the workloads (Kind/name) or pods waited for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	For []string `json:"for,omitempty"`
	// until is when the wait ends by itself, when it is timed.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
	// message says it in a sentence, with absolute times only.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
}

// MRTRKeyringStatus is the observed state. Every timer and every piece of progress of a rotation
// lives here, so a restarted operator resumes exactly where it was.
type MRTRKeyringStatus struct {
	// observedGeneration is the metadata.generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is the rotation phase: Stable, Accepting, SealingWithNew, WaitingTTL, Removing or
	// Revoking.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// secretName is the name of the keyring Secret (spec.secretName or the keyring's name).
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// keys lists the keys of the Secret in order (the first one seals): ids and roles only.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Keys []KeyStatus `json:"keys,omitempty"`

	// secretFingerprint is the fingerprint of the keyring the operator last wrote to (or adopted
	// from) the Secret. A Secret whose fingerprint differs was changed behind the operator's back.
	// +optional
	SecretFingerprint string `json:"secretFingerprint,omitempty"`

	// targetFingerprint is the fingerprint the target workloads are stamped with and rolled out to
	// (pod-template annotation mrtr.dev/keyring-hash).
	// +optional
	TargetFingerprint string `json:"targetFingerprint,omitempty"`

	// workloads is the rollout state of the target workloads: all of them up to 100, else the first
	// 100 of those not yet up to date, then the others, each group in kind and name order.
	// workloadCount and workloadsUpToDate count them all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Workloads []WorkloadStatus `json:"workloads,omitempty"`

	// workloadCount is the number of target workloads, listed in workloads or not.
	// +optional
	WorkloadCount int32 `json:"workloadCount,omitempty"`

	// workloadsUpToDate is the number of target workloads that run status.targetFingerprint.
	// +optional
	WorkloadsUpToDate int32 `json:"workloadsUpToDate,omitempty"`

	// podCount is the number of consumer pods gated by acknowledgement (Reload delivery, and the
	// pods spec.podSelector selects), across every target.
	// +optional
	PodCount int32 `json:"podCount,omitempty"`
	// podsAcknowledged is the number of those pods that run status.targetFingerprint.
	// +optional
	PodsAcknowledged int32 `json:"podsAcknowledged,omitempty"`
	// selectedPods is the acknowledgement state of the pods spec.podSelector selects.
	// +optional
	SelectedPods *SelectedPodsStatus `json:"selectedPods,omitempty"`
	// restartedPods names the pods restarted (evicted) in the current phase because they did not
	// acknowledge its keyring within spec.reloadDeadline: the first 100.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RestartedPods []string `json:"restartedPods,omitempty"`
	// stampFights are the target workloads whose stamp another field manager put back, with their
	// back-off (Restart delivery): kept here, so that a restarted operator does not stamp them once
	// more before the back-off ends.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	StampFights []StampFight `json:"stampFights,omitempty"`
	// refusedAcknowledgements are the pods whose acknowledgement is not taken as proof, and why
	// (the first 100): each one is reported by one Warning event, when it first shows here.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RefusedAcknowledgements []RefusedAcknowledgement `json:"refusedAcknowledgements,omitempty"`
	// phaseStartedAt is when the current phase began; rollout deadlines count from it.
	// +optional
	PhaseStartedAt *metav1.Time `json:"phaseStartedAt,omitempty"`

	// rolledOutAt is when the current phase's rollout was first seen complete. Accepting then waits
	// terminationGracePeriod more, so that replaced pods, which only knew the old keys, have stopped
	// before any pod seals with the new key.
	// +optional
	RolledOutAt *metav1.Time `json:"rolledOutAt,omitempty"`

	// ttlWaitUntil is when the TTL wait ends: the moment the last pod sealing with the old key was
	// seen gone, plus tokenTTL + clockSkew + terminationGracePeriod.
	// +optional
	TTLWaitUntil *metav1.Time `json:"ttlWaitUntil,omitempty"`

	// ttlWaits are the longest TTL waits (tokenTTL + clockSkew + terminationGracePeriod) declared
	// while the keys sealed, so that raising tokenTTL never leaves a token already sealed a wait
	// shorter than its lifetime: the wait before the old keys are removed is extended to the
	// longest one declared since they last sealed.
	// +optional
	TTLWaits *TTLWaits `json:"ttlWaits,omitempty"`

	// waitingFor is what the rotation waits for now, as the operator decided it (kubectl mrtr
	// shows it as it is, recomputing no rule).
	// +optional
	WaitingFor *WaitingFor `json:"waitingFor,omitempty"`

	// lastRotationTime is when the last rotation completed.
	// +optional
	LastRotationTime *metav1.Time `json:"lastRotationTime,omitempty"`

	// nextRotationTime is when the next rotation is due: one rotationInterval after the last, or,
	// with spec.rotationWindows, the opening of the first window at or after that.
	// +optional
	NextRotationTime *metav1.Time `json:"nextRotationTime,omitempty"`

	// nextWindow is, with spec.rotationWindows, the window the next rotation is due in.
	// +optional
	NextWindow *RotationWindowStatus `json:"nextWindow,omitempty"`

	// keySource is, with spec.keySource type Secret, the source version in service, the one the
	// source holds, and the versions skipped and retired.
	// +optional
	KeySource *KeySourceStatus `json:"keySource,omitempty"`

	// lastHandledRotateRequest is the last value of the mrtr.dev/rotate annotation that started a
	// rotation (or, with a secret source, that was refused for want of a new key).
	// +optional
	LastHandledRotateRequest string `json:"lastHandledRotateRequest,omitempty"`

	// rotationsCompleted counts the rotations this keyring has completed.
	// +optional
	RotationsCompleted int64 `json:"rotationsCompleted,omitempty"`

	// revokedKeys are the keys revoked through mrtr.dev/revoke, oldest first (the last
	// MaxRevokedKeys): never added again, whatever the Secret is made to hold.
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:MaxItems=32
	RevokedKeys []RevokedKey `json:"revokedKeys,omitempty"`

	// lastHandledRevokeSequence is the highest sequence of the numbered mrtr.dev/revoke requests
	// handled ("SEQUENCE:TARGET", as kubectl mrtr revoke writes them): a numbered request at or
	// below it is handled, and never handled again, whatever the annotation holds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LastHandledRevokeSequence int64 `json:"lastHandledRevokeSequence,omitempty"`

	// lastHandledRevokeRequest lists the unnumbered requests of the mrtr.dev/revoke annotation
	// handled that the annotation still holds, comma separated: one not among them is new. (Before
	// sequences, every request was unnumbered and this held the last 64 handled; an existing list
	// is read the same way.)
	// +optional
	LastHandledRevokeRequest string `json:"lastHandledRevokeRequest,omitempty"`

	// conditions follow kstatus: Ready, Reconciling (True while a rotation or a rollout is under
	// way) and Stalled (True while something blocks progress). Reasons are the Reason* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +kubebuilder:validation:MaxItems=12
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types. We follow kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux, kpt and the
// cli-utils applier read without configuration: Reconciling and Stalled have abnormal-true polarity.
const (
	// ConditionReady is True when the keyring Secret holds a valid keyring the operator manages,
	// every target exists, and nothing is stalled. It stays True during a healthy rotation: tokens
	// keep working throughout.
	ConditionReady = "Ready"
	// ConditionReconciling is True while a rotation is under way or the targets are still rolling
	// out to the current keyring.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True while the operator cannot make progress without outside help (or
	// without a stuck rollout completing).
	ConditionStalled = "Stalled"
	// ConditionKeyRevoked is True once a key was revoked (reason KeyRevoked; the message names the
	// latest revocation: the keys, when, and whether tokens in flight fail), False before.
	ConditionKeyRevoked = "KeyRevoked"
	// ConditionStampReverted is True while another field manager keeps putting back the pod-template
	// stamp of a target workload that the operator wrote (Restart delivery: a GitOps tool with the
	// stamp in its source, say): the message names the workloads and the managers. The operator
	// then stops re-stamping the workload for a back-off, instead of restarting its pods each time.
	// Absent otherwise.
	ConditionStampReverted = "StampReverted"
	// ConditionAcknowledgementPathSuspect is True while most pods of the targets (more than half,
	// two at least) have not acknowledged the phase's keyring within spec.reloadDeadline at once
	// (Reload delivery): what they share, their path to the API server or the kubelets, is more
	// likely at fault than each pod. The message counts them. The pods are still restarted, at
	// the pace of their workloads. Absent otherwise.
	ConditionAcknowledgementPathSuspect = "AcknowledgementPathSuspect"
	// ConditionRotationWindows is, with spec.rotationWindows, True while the windows keep a
	// rotation from starting within rotationInterval of the time it falls due (reason
	// NoWindowWithinInterval): the primary key then outlives the interval, and the alert on its
	// age fires; and True once a due rotation did not start in the window it fell due in (reason
	// RotationWindowMissed), naming that window and the one it waits for now. False (reason
	// WindowsOpen) otherwise; absent without windows.
	ConditionRotationWindows = "RotationWindowWarning"
	// ConditionPartiallyReady is, on a ClusterMRTRKeyring, True while some selected namespaces are
	// not rotated or cannot be written (reason Conflict or WriteRefused; the message names them
	// and why) while the others are: as external-secrets' ClusterExternalSecret reports a partial
	// success. False (reason AllNamespacesReady) otherwise.
	ConditionPartiallyReady = "PartiallyReady"
	// ConditionKeySourceReady is, with spec.keySource type Secret, True while the source Secret
	// holds a key the keyring can take (reason SourceInService: it is in service, or a rotation
	// to it is under way or starts now) and False with the reason of what is wrong otherwise
	// (SourceNotFound, SourceKeyMissing, SourceKeyTooShort, SourceVersionInvalid,
	// SourceVersionReused, SourceKeyRetired, SourceFlapping, SourceKeyRevoked): the keyring in
	// service stays as it is meanwhile, and the message names the Secret and the data key. Absent
	// with generated keys.
	ConditionKeySourceReady = "KeySourceReady"
)

// Condition reasons.
const (
	// ReasonReady (Ready=True): the keyring is in place and every target runs with a keyring that
	// accepts every key in use.
	ReasonReady = "KeyringReady"
	// ReasonIdle (Reconciling=False): Stable, and every target is rolled out to the current keyring.
	ReasonIdle = "Idle"
	// ReasonRolloutInProgress (Reconciling=True): Stable, targets still rolling out to the keyring.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonRotating (Reconciling=True): a rotation is under way; the message names the phase.
	ReasonRotating = "Rotating"
	// ReasonNotStalled (Stalled=False): nothing blocks progress.
	ReasonNotStalled = "NotStalled"
	// ReasonSecretInvalid (Stalled=True, Ready=False): the Secret exists but does not hold a valid
	// keyring.json. The operator never overwrites it; fix or delete it.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonSecretWrongType (Stalled=True, Ready=False): the Secret's type is not mrtr.dev/keyring.
	// Secret types are immutable: delete it and the operator creates a new one.
	ReasonSecretWrongType = "SecretWrongType"
	// ReasonWorkloadNotFound (Ready=False; Stalled=True while Accepting, or in Stable once a rotation
	// that would seal with the staged key has been due for spec.rolloutDeadline): a named target does
	// not exist. A rotation does not start its first round without it.
	ReasonWorkloadNotFound = "WorkloadNotFound"
	// ReasonRolloutDeadlineExceeded (Stalled=True, Ready=False): a target has not rolled out within
	// spec.rolloutDeadline of the phase's start (in Stable, of a rotation falling due that the staged
	// key's delivery holds back). The rotation waits and resumes by itself when the rollout completes.
	ReasonRolloutDeadlineExceeded = "RolloutDeadlineExceeded"
	// ReasonKeyringFull (Stalled=True, Ready=False): an adopted keyring already holds the maximum
	// number of keys, so no key can be added; remove keys no replica seals with.
	ReasonKeyringFull = "KeyringFull"
	// ReasonAcknowledgementMissing (Ready stays True; event): pods did not acknowledge the
	// phase's keyring within spec.reloadDeadline and are being restarted (status.restartedPods).
	ReasonAcknowledgementMissing = "AcknowledgementMissing"
	// ReasonConflict: the keyring Secret, or a target workload's stamp, belongs to another
	// MRTRKeyring (the message names it). This keyring touches neither until the owner is gone.
	ReasonConflict = "Conflict"
	// ReasonWriteRefused: the API server refused the write of a namespace's Secret (Stalled after
	// rolloutDeadline, and PartiallyReady).
	ReasonWriteRefused = "WriteRefused"
	// ReasonMemberUnreachable (Stalled=True): a member cluster of a ClusterMRTRKeyring could not be
	// reached within spec.rolloutDeadline; the message names it and why.
	ReasonMemberUnreachable = "MemberUnreachable"
	// ReasonAllNamespacesReady: every selected namespace takes part in the rotation (PartiallyReady
	// False).
	ReasonAllNamespacesReady = "AllNamespacesReady"
	// ReasonKeyRevoked (KeyRevoked=True; Warning event): keys were revoked through mrtr.dev/revoke.
	ReasonKeyRevoked = "KeyRevoked"
	// ReasonNoneRevoked (KeyRevoked=False): no key of this keyring was ever revoked.
	ReasonNoneRevoked = "NoneRevoked"
	// ReasonRevertedByOtherManager (StampReverted=True; Warning event StampReverted): another field
	// manager put back a stamp the operator wrote.
	ReasonRevertedByOtherManager = "RevertedByOtherManager"
	// ReasonKindNotServed (Ready=False): a target names a kind the API server does not serve (the
	// Argo Rollouts CRD is not installed): the message names the kind. The operator watches the
	// kind as soon as it is served, without a restart.
	ReasonKindNotServed = "KindNotServed"
	// ReasonWorkloadDegraded (Stalled=True, Ready=False): a target's own controller gave up on its
	// rollout (an Argo Rollout aborted or degraded): the message says why. The rotation waits, and
	// resumes once the rollout is healthy again.
	ReasonWorkloadDegraded = "WorkloadDegraded"
	// ReasonRotationWindowInvalid (Stalled=True, Ready=False): a spec.rotationWindows entry that
	// the API's checks let through does not parse (a range such as 5-1, a zone the operator does
	// not know): the message names the field. No rotation starts on schedule until it is fixed;
	// requested rotations and revocations still do.
	ReasonRotationWindowInvalid = "RotationWindowInvalid"
	// ReasonNoWindowWithinInterval (RotationWindowWarning=True): no window opens within
	// rotationInterval of the time the next rotation falls due.
	ReasonNoWindowWithinInterval = "NoWindowWithinInterval"
	// ReasonRotationWindowMissed (RotationWindowWarning=True): the rotation fell due, and the window
	// it fell due in closed before it started (a staged key not yet delivered held it back, the
	// operator was away); it waits for the next window. The message names both.
	ReasonRotationWindowMissed = "RotationWindowMissed"
	// ReasonWindowsOpen (RotationWindowWarning=False): a window opens within rotationInterval of it.
	ReasonWindowsOpen = "WindowsOpen"
	// ReasonAcknowledgementPathSuspect (AcknowledgementPathSuspect=True): most pods are overdue at once.
	ReasonAcknowledgementPathSuspect = "AcknowledgementPathSuspect"
	// ReasonSourceInService (KeySourceReady=True): the source's key is in service, or a rotation
	// to it is under way or starts now.
	ReasonSourceInService = "SourceInService"
	// ReasonSourceNotFound (KeySourceReady=False): the source Secret does not exist (or the
	// operator may not read it).
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonSourceKeyMissing (KeySourceReady=False): the source Secret has no such data key.
	ReasonSourceKeyMissing = "SourceKeyMissing"
	// ReasonSourceKeyTooShort (KeySourceReady=False): the source key has fewer than 32 bytes.
	ReasonSourceKeyTooShort = "SourceKeyTooShort"
	// ReasonSourceVersionInvalid (KeySourceReady=False): the mrtr.dev/key-version annotation is
	// not a key id (1 to 32 characters of A-Za-z0-9_-), or is part of the key (12 characters or
	// more of it): an id is printed everywhere, and must not reveal the key.
	ReasonSourceVersionInvalid = "SourceVersionInvalid"
	// ReasonSourceVersionReused (KeySourceReady=False): the source's version names a key the
	// keyring already holds, or retired, with other bytes: a version must name one key only.
	ReasonSourceVersionReused = "SourceVersionReused"
	// ReasonSourceKeyRetired (KeySourceReady=False): the source holds a key that a rotation already
	// retired: its tokens were waited out and it is gone, and it never comes back.
	ReasonSourceKeyRetired = "SourceKeyRetired"
	// ReasonSourceFlapping (KeySourceReady=False): the source went back to the key that the last
	// rotation retired: it flaps between two values (two writers, or a secret manager's previous
	// version read as current). Refused as SourceKeyRetired.
	ReasonSourceFlapping = "SourceFlapping"
	// ReasonSourceKeyRevoked (KeySourceReady=False): the source holds a key revoked through
	// mrtr.dev/revoke: the keyring serves with the keys that remain, and the source must move on to
	// a new key. With no key left, nothing seals until it does (Ready=False, Stalled=True).
	ReasonSourceKeyRevoked = "SourceKeyRevoked"
	// ReasonNoKey (Ready=False, Stalled=True): a keyring with a secret source has no key to seal
	// with: its source holds none it can take, and it has none in service.
	ReasonNoKey = "NoKey"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mkr
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.keys[0].id`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Delivery",type=string,JSONPath=`.spec.delivery`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=`.status.podCount`
// +kubebuilder:printcolumn:name="Acknowledged",type=integer,JSONPath=`.status.podsAcknowledged`
// +kubebuilder:printcolumn:name="Next Rotation",type=string,JSONPath=`.status.nextRotationTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.spec.secretName) ? oldSelf.spec.secretName : oldSelf.metadata.name) == (has(self.spec.secretName) ? self.spec.secretName : self.metadata.name)",message="spec.secretName is immutable: the workloads mount the Secret by name",fieldPath=".spec.secretName"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.keySource) || !has(self.spec.keySource.secret) || self.spec.keySource.secret.name != (has(self.spec.secretName) ? self.spec.secretName : self.metadata.name)",message="spec.keySource.secret.name must not be the keyring Secret: the operator writes that one, and never writes the source",fieldPath=".spec.keySource.secret.name"

// MRTRKeyring keeps a shared MRTR keyring Secret rotated, walking every consuming workload through
// accept, seal-with-new, wait-TTL and remove so that no token is ever rejected.
type MRTRKeyring struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of MRTRKeyring
	// +required
	Spec MRTRKeyringSpec `json:"spec"`

	// status defines the observed state of MRTRKeyring
	// +optional
	Status MRTRKeyringStatus `json:"status,omitzero"`
}

// EffectiveSecretName is spec.secretName, or the keyring's name when it is unset.
func (k *MRTRKeyring) EffectiveSecretName() string {
	if k.Spec.SecretName != "" {
		return k.Spec.SecretName
	}
	return k.Name
}

// +kubebuilder:object:root=true

// MRTRKeyringList contains a list of MRTRKeyring
type MRTRKeyringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []MRTRKeyring `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &MRTRKeyring{}, &MRTRKeyringList{})
		return nil
	})
}
