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

// The wire contract: every name the operator and the people who run it read or write on objects
// other than the MRTRKeyring itself, in one place. What the servers read or write is the library's
// (pkg/keyring: the Secret's type and data keys; pkg/ack: the acknowledgement annotation), and this
// package, a leaf, imports none of it. One word per thing: a keyring's
// fingerprint (keyring.Keyring.Fingerprint, a short hash of its ids and bytes, safe to print) is
// what the Secret records, what a pod template is stamped with (stamping is the act, the
// fingerprint the value) and what a pod acknowledges. The annotation keys are fixed by deployed
// systems, so some spell the fingerprint "keyring-hash"; the constants name them for what they hold.

// The keyring Secret: the label naming the MRTRKeyring that owns it, and the operator's field
// manager (its type and data keys are keyring.SecretType, SecretDataKey and TokenTTLDataKey).
const (
	// KeyringLabel names, on the Secret, the MRTRKeyring that owns it.
	KeyringLabel = "mrtr.dev/keyring"
	// ClusterKeyringLabel names, on a copy of a ClusterMRTRKeyring's Secret in a selected
	// namespace, the ClusterMRTRKeyring it is a copy of. A copy without it is not the operator's,
	// and is never overwritten.
	ClusterKeyringLabel = "mrtr.dev/cluster-keyring"
	// ClusterKeyringUIDAnnotation is, on a copy, the uid of the ClusterMRTRKeyring that wrote it: a
	// Secret anyone labelled with ClusterKeyringLabel in a namespace never selected is no copy, and
	// neither shows as Left nor wakes the keyring.
	ClusterKeyringUIDAnnotation = "mrtr.dev/cluster-keyring-uid"
	// FieldManager is the operator's field manager in every write it makes; the managedFields time
	// of its entry in the Secret is when it last wrote the keyring, by the API server's clock.
	FieldManager = "mrtr-operator"
)

// Annotations.
const (
	// RotateAnnotation, on an MRTRKeyring, requests a rotation now: set it to a new value (a
	// timestamp, a commit, anything) and one rotation starts; status.lastHandledRotateRequest
	// records the value handled, so re-applying the same value (GitOps) does nothing.
	RotateAnnotation = "mrtr.dev/rotate"
	// RevokeAnnotation, on an MRTRKeyring, revokes keys at once, in any phase (suspended or stalled
	// too, but not while the Secret is unusable, of another type or another keyring's: it waits
	// for it to be fixed, since the operator never writes such a Secret). It holds requests,
	// comma separated, each a key id, or RevokeAll for every key the keyring holds when the
	// request is first seen (the whole Secret leaked), numbered ("7:k20261201-120000") or not; see
	// RevokeRequest for the format and when a request counts as handled. Each request is handled
	// once: a numbered one at or below status.lastHandledRevokeSequence is handled, so re-applying
	// the list (GitOps) or pruning it revokes nothing more. Append a request, never replace the
	// list, or a request the operator has not seen yet is lost: kubectl mrtr revoke appends
	// (AppendRevokeRequests), conditionally on the keyring as read, and prunes handled ones.
	RevokeAnnotation = "mrtr.dev/revoke"
	// RevokeAll, as a request of a RevokeAnnotation value, revokes every key: "*", or "*" followed
	// by a note ("*incident-42").
	RevokeAll = "*"
	// FingerprintAnnotation is, on the Secret, the fingerprint of the keyring the operator's last
	// write held (when it no longer matches the data, someone else changed the Secret), and, on a
	// pod template (Restart delivery), the fingerprint the pods must run: changing it restarts them.
	FingerprintAnnotation = "mrtr.dev/keyring-hash"
	// FingerprintAnnotationPrefix starts, on the pod template of a workload shared by several
	// keyrings (SharedByAnnotation), the annotation of each sharing keyring's own fingerprint after
	// the first: FingerprintAnnotationPrefix + its name.
	FingerprintAnnotationPrefix = "keyring-hash.mrtr.dev/"
	// PhaseAnnotation, on the Secret, is the phase the operator's last write entered.
	PhaseAnnotation = "mrtr.dev/phase"
	// HandledRotateAnnotation, on the Secret, is the last RotateAnnotation value that started a
	// rotation of it: it survives the keyring, so a re-created keyring does not rotate again.
	HandledRotateAnnotation = "mrtr.dev/rotate-handled"
	// HandledRevokeAnnotation, on the Secret, lists the unnumbered RevokeAnnotation requests
	// handled for it, as status.lastHandledRevokeRequest does, and HandledRevokeSequenceAnnotation
	// is the highest sequence handled, as status.lastHandledRevokeSequence: they outlive a deleted
	// and re-created keyring.
	HandledRevokeAnnotation         = "mrtr.dev/revoke-handled"
	HandledRevokeSequenceAnnotation = "mrtr.dev/revoke-handled-sequence"
	// RevokedKeysAnnotation, on the Secret, lists the ids of its revoked keys (comma separated, the
	// last MaxRevokedKeys), so that neither a lost status nor a re-created keyring adds one again.
	RevokedKeysAnnotation = "mrtr.dev/revoked-keys"
	// RetiredKeysAnnotation, on the Secret of a keyring with a source Secret, lists the keys its
	// rotations retired, as "id:digest" (the digest as in status.keySource.retired), comma
	// separated, the last MaxRetiredSourceKeys: written with the write that removes them, so that
	// a status update lost after it still leaves the keyring refusing them when they come back.
	RetiredKeysAnnotation = "mrtr.dev/retired-keys"
	// StagedKeyAnnotation, on the Secret, is the id of its staged key (nextKey Staged), if any.
	StagedKeyAnnotation = "mrtr.dev/staged-key"
	// StampedByAnnotation, on a workload, names the MRTRKeyring whose fingerprint its pod template
	// carries in FingerprintAnnotation; no other keyring stamps it while that one exists.
	StampedByAnnotation = "mrtr.dev/stamped-by"
	// SharedByAnnotation, on a workload, lets several MRTRKeyrings share it: their names, comma
	// separated; the first stamps FingerprintAnnotation, each other its own prefixed annotation.
	SharedByAnnotation = "mrtr.dev/keyrings"
	// KeyVersionAnnotation, on a source Secret (spec.keySource type Secret), is the version of the
	// key it holds, which becomes the key's id (1 to 32 characters of A-Za-z0-9_-): set by a
	// person or an ExternalSecret's template. Without it the id is derived from a digest of the
	// bytes. The operator only reads it.
	KeyVersionAnnotation = "mrtr.dev/key-version"
	// WrittenAnnotation, on a Pod, is "<fingerprint>/<n>": the fingerprint of the keyring the
	// operator last wrote to a Secret that the pod mounts and must load (reloadTrigger
	// PodAnnotation), and the number of that nudge, so that each nudge changes the Pod even when it
	// already names the fingerprint. The operator changes it right after the write, and nothing
	// else on the pod (the admission policy mrtr-operator-pod-annotation): the change makes the
	// kubelet sync the pod, and so refresh its Secret volumes, at once instead of at its next
	// periodic sync. No consumer reads it.
	WrittenAnnotation = "mrtr.dev/keyring-written"
)

// Event reasons, besides the condition reasons (Reason*), which Warning events also carry.
const (
	EventSecretCreated       = "SecretCreated"       // the first Secret, with one fresh key
	EventSecretRecreated     = "SecretRecreated"     // Warning: the Secret was deleted behind the operator's back
	EventSecretAdopted       = "SecretAdopted"       // a valid keyring nobody wrote through the operator, taken as it is
	EventSecretChanged       = "SecretChanged"       // Warning: the Secret was edited behind the operator's back
	EventResumed             = "Resumed"             // a write whose status update was lost, resumed from the Secret
	EventRotationStarted     = "RotationStarted"     // a new key, accepted everywhere before it seals
	EventKeySealing          = "KeySealing"          // every pod accepts the new key: it seals from now on
	EventKeyRemoved          = "KeyRemoved"          // the old keys, once every token sealed with them expired
	EventRotationCompleted   = "RotationCompleted"   // the rotation is done
	EventTTLWaitExtended     = "TTLWaitExtended"     // a longer tokenTTL was declared: the wait lasts longer
	EventRotationRescheduled = "RotationRescheduled" // rotationInterval was edited
	EventRestartIsOutage     = "RestartIsOutage"     // Warning: a target whose every restart stops all its pods
	EventKeyRevoked          = "KeyRevoked"          // Warning: keys revoked through mrtr.dev/revoke, removed at once
	EventRevokeIgnored       = "RevokeIgnored"       // Warning: a mrtr.dev/revoke request naming no key of the keyring
	EventRevocationCompleted = "RevocationCompleted" // every pod runs the keyring without the revoked keys
	// EventNamespaceLeft: a namespace that held a ClusterMRTRKeyring's Secret is no longer selected;
	// it is not rotated any more, and its Secret stays.
	EventNamespaceLeft = "NamespaceLeft"
	// EventMemberRemoved (Warning): a member was removed from a ClusterMRTRKeyring's spec.members:
	// its namespaces are reported as left (spec.onLeave applies), and its copies stay.
	EventMemberRemoved = "MemberRemoved"
	// EventNamespaceJoined: a selected namespace with no copy of a ClusterMRTRKeyring's Secret
	// receives one: newly selected, or deleted and created again under a selected name.
	EventNamespaceJoined = "NamespaceJoined"
	// EventWriteRefused (Warning): the API server refused the operator's write of a
	// ClusterMRTRKeyring's Secret in a namespace.
	EventWriteRefused = "WriteRefused"
	// EventAcknowledgementRefused (Warning): a pod's acknowledgement that its Pod's managedFields show
	// was not written by the pod's own reporter (another field manager, or the pods/status
	// subresource), or was written before the Secret write it acknowledges: not taken as proof.
	EventAcknowledgementRefused = "AcknowledgementRefused"
	// EventSourceVersionInService: the key a source Secret holds (keySource type Secret) seals
	// from now on; the note names its version, never its bytes.
	EventSourceVersionInService = "SourceVersionInService"
	// EventSourceVersionSkipped: the source changed again during a rotation; the version it held
	// before, never sealed with, is skipped (status.keySource.skippedVersions).
	EventSourceVersionSkipped = "SourceVersionSkipped"
	// EventSourceRefused (Warning): the source Secret holds a key the keyring does not take; the
	// reason is the KeySourceReady condition's.
	EventSourceRefused = "SourceRefused"
	// EventRotateRequestIgnored (Warning): a mrtr.dev/rotate request on a keyring whose source
	// Secret holds the key in service: there is no new key to rotate to; rotate at the source.
	EventRotateRequestIgnored = "RotateRequestIgnored"
	// EventStampReverted (Warning): another field manager put back a workload's stamp that the
	// operator wrote; it stops re-stamping that workload for a back-off (see ConditionStampReverted).
	EventStampReverted = "StampReverted"
)
