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

// ClusterMRTRKeyringSpec is an MRTRKeyringSpec for a set of namespaces: the same rotation policy,
// one keyring, a copy of its Secret in every namespace the required namespaceSelector selects, and
// the consumers found in each of them as an MRTRKeyring finds its own (the workloads
// workloadSelector selects, and every workload whose pod template references the Secret).
//
// Workloads are not named (a name means something in one namespace only) and pods are not selected
// one by one: both are refused.
//
// +kubebuilder:validation:XValidation:rule="!has(self.workloads)",message="spec.workloads is not supported on a ClusterMRTRKeyring: select the workloads with spec.workloadSelector, or let their pod templates reference the Secret",fieldPath=".workloads"
// +kubebuilder:validation:XValidation:rule="!has(self.podSelector)",message="spec.podSelector is not supported on a ClusterMRTRKeyring: the workloads' pods are gated by their acknowledgements",fieldPath=".podSelector"
type ClusterMRTRKeyringSpec struct {
	// The rotation policy, as on an MRTRKeyring. spec.secretName is the Secret's name in every
	// selected namespace.
	MRTRKeyringSpec `json:",inline"`

	// namespaceSelector selects the namespaces that receive the keyring, as trust-manager's
	// ClusterBundle selects its targets. It is required: an empty selector ({}) selects every
	// namespace, which must be asked for.
	// +required
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`

	// onLeave is what a namespace leaving the selection does to the keyring. Its Secret stays
	// (servers there may still seal with it), so whoever can read Secrets there still holds the
	// primary key and the staged next one, which every selected namespace accepts, and a
	// revocation never reaches a namespace outside the selection.
	// Keep (the default) leaves the rotation schedule as it is: those keys are retired by the next
	// two rotations. Rekey starts a rotation at once (after the one under way, if any) to a fresh
	// key instead of the staged one, which it drops: the keys the namespace holds are gone after
	// that one rotation. Choose Rekey when a namespace leaves because its tenant is not trusted.
	// With keySource type Secret the operator makes no key: Rekey is owed until the source holds a
	// new key, and the rotation to it is the rekey (status.namespaces.pendingRekey until then).
	// +optional
	// +kubebuilder:default=Keep
	OnLeave OnLeave `json:"onLeave,omitempty"`

	// members, when set, are the clusters whose namespaces the keyring reaches: namespaceSelector
	// selects namespaces in each of them, and a phase ends only when every member's copies and
	// consumers hold its keyring. Unset, the keyring reaches the namespaces of the operator's own
	// cluster; set, it reaches that cluster only through a member with local: true.
	// A member the operator cannot reach holds every phase that waits for the copies (nothing is
	// removed, and no key it may lack is made primary) and stalls it after spec.rolloutDeadline.
	// A member removed from the list is reported like a namespace that left (a MemberRemoved
	// event; spec.onLeave applies): its copies stay. See docs/multi-cluster.md.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.filter(m, has(m.local) && m.local).size() <= 1",message="at most one member is local"
	Members []Member `json:"members,omitempty"`
}

// Member is one cluster a ClusterMRTRKeyring reaches: the operator's own (local), or one reached
// through a kubeconfig Secret in the operator's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.kubeconfigSecret) != (has(self.local) && self.local)",message="a member has exactly one of kubeconfigSecret and local: true"
type Member struct {
	// name names the member in status, events and namespace names (MEMBER/NAMESPACE).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// kubeconfigSecret is the name of a Secret in the operator's namespace whose data key "value"
	// holds a kubeconfig for the member, as Cluster API writes CLUSTER-kubeconfig. It must reach
	// the API server over https with a CA it names, and carry its credentials inline: file
	// references and exec or auth-provider plugins are refused.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	KubeconfigSecret string `json:"kubeconfigSecret,omitempty"`
	// local: the member is the operator's own cluster.
	// +optional
	Local bool `json:"local,omitempty"`
}

// MemberKubeconfigKey is the data key of a member's kubeconfig Secret that holds the kubeconfig.
const MemberKubeconfigKey = "value"

// MemberStatus is what the operator knows of reaching one member.
type MemberStatus struct {
	// name is the member's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// reachable: the operator's cache of the member is synced and its API server answers.
	// +required
	Reachable bool `json:"reachable"`
	// message says why the member is unreachable (never a credential).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when reachable last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitzero"`
}

// OnLeave is what a namespace leaving a ClusterMRTRKeyring's selection does: see
// ClusterMRTRKeyringSpec.onLeave.
// +kubebuilder:validation:Enum=Keep;Rekey
type OnLeave string

const (
	// OnLeaveKeep: nothing; the next rotations retire the keys the namespace holds.
	OnLeaveKeep OnLeave = "Keep"
	// OnLeaveRekey: a rotation to a fresh key starts at once, and the staged key is dropped.
	OnLeaveRekey OnLeave = "Rekey"
)

// NamespaceState is what a ClusterMRTRKeyring's rotation knows of one namespace.
// +kubebuilder:validation:Enum=UpToDate;Behind;Conflict;WriteRefused;Unreachable;Left
type NamespaceState string

const (
	// NamespaceUpToDate: the namespace's Secret holds status.targetFingerprint and its consumers
	// run it.
	NamespaceUpToDate NamespaceState = "UpToDate"
	// NamespaceBehind: its Secret does not hold the target keyring yet, or some of its consumers
	// do not run it.
	NamespaceBehind NamespaceState = "Behind"
	// NamespaceConflict: a Secret of that name there is not this keyring's (another keyring's, or
	// nobody's): it is never overwritten, and the namespace is not rotated until it is removed.
	NamespaceConflict NamespaceState = "Conflict"
	// NamespaceWriteRefused: the API server refused the operator's write of the namespace's Secret
	// (an admission policy, a full quota); the message gives its reason. A namespace whose Secret
	// exists holds the phases (its pods lack the keyring) until rolloutDeadline stalls the keyring;
	// one with no Secret has no consumer that could reject a token, and does not. Its workloads are
	// never stamped and its pods never evicted while the write is refused.
	NamespaceWriteRefused NamespaceState = "WriteRefused"
	// NamespaceUnreachable: the namespace is in a member the operator cannot reach: its copy is
	// unknown, so it holds every phase that waits for the copies, and stalls it after
	// rolloutDeadline.
	NamespaceUnreachable NamespaceState = "Unreachable"
	// NamespaceLeft: the namespace holds this keyring's Secret but is no longer selected: it is not
	// rotated any more, and its Secret stays, since servers there may still seal with it.
	NamespaceLeft NamespaceState = "Left"
)

// NamespaceStatus is one namespace of a ClusterMRTRKeyring.
type NamespaceStatus struct {
	// name is the namespace's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// cluster is the member the namespace is in; unset without spec.members.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`
	// uid is the namespace's uid: a namespace deleted and created again under the same name is
	// another namespace, which joins anew.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	UID string `json:"uid,omitempty"`
	// state is UpToDate, Behind, Conflict, WriteRefused or Left.
	// +required
	State NamespaceState `json:"state"`
	// message says what the namespace waits for, or why it is not rotated.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// MaxNamespacesListed is how many namespaces status.namespaces.items lists at most.
const MaxNamespacesListed = 100

// NamespacesStatus counts and lists the namespaces of a ClusterMRTRKeyring.
type NamespacesStatus struct {
	// selected counts the namespaces the selector selects that are not being deleted.
	// +optional
	Selected int32 `json:"selected,omitempty"`
	// upToDate counts those whose Secret holds the target keyring and whose consumers run it.
	// +optional
	UpToDate int32 `json:"upToDate,omitempty"`
	// conflicts counts the selected namespaces where a Secret of that name is not this keyring's.
	// +optional
	Conflicts int32 `json:"conflicts,omitempty"`
	// refused counts the selected namespaces where the API server refused the operator's write of
	// the Secret.
	// +optional
	Refused int32 `json:"refused,omitempty"`
	// left counts the namespaces that hold this keyring's Secret but are no longer selected.
	// +optional
	Left int32 `json:"left,omitempty"`
	// pendingRekey, when set, says which namespaces left with spec.onLeave Rekey: a rotation to a
	// fresh key starts as soon as the keyring is Stable, and clears it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	PendingRekey string `json:"pendingRekey,omitempty"`
	// items lists at most 100 namespaces: those behind first, then those whose write was refused,
	// those in conflict, those that left and those up to date, each group in name order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Items []NamespaceStatus `json:"items,omitempty"`
}

// ClusterMRTRKeyringStatus is an MRTRKeyringStatus, for the keyring of every namespace, and the
// namespaces it reaches.
type ClusterMRTRKeyringStatus struct {
	MRTRKeyringStatus `json:",inline"`

	// namespaces counts the selected namespaces and those up to date, and lists some of them.
	// +optional
	Namespaces NamespacesStatus `json:"namespaces,omitzero"`

	// members is what the operator knows of reaching each of spec.members.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Members []MemberStatus `json:"members,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cmkr
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.keys[0].id`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaces.selected`
// +kubebuilder:printcolumn:name="Up To Date",type=integer,JSONPath=`.status.namespaces.upToDate`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Next Rotation",type=string,JSONPath=`.status.nextRotationTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 44",message="the name of a ClusterMRTRKeyring is at most 44 characters: it labels the Secrets it writes (ClusterKeyringClaim)"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.spec.secretName) ? oldSelf.spec.secretName : oldSelf.metadata.name) == (has(self.spec.secretName) ? self.spec.secretName : self.metadata.name)",message="spec.secretName is immutable: the workloads mount the Secret by name",fieldPath=".spec.secretName"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.keySource) || !has(self.spec.keySource.secret) || self.spec.keySource.secret.name != 'cluster-keyring-' + self.metadata.name",message="spec.keySource.secret.name must not be the keyring's lead Secret (cluster-keyring-NAME): the operator writes that one, and never writes the source",fieldPath=".spec.keySource.secret.name"

// ClusterMRTRKeyring keeps one MRTR keyring rotated across namespaces: the namespaces that
// spec.namespaceSelector selects each hold a copy of its Secret, and a phase ends only when every
// copy holds the phase's keyring and every consumer pod in every namespace runs it. The keyring
// itself lives in the operator's namespace (the cluster resource namespace, as for cert-manager's
// ClusterIssuers): the copies are in namespaces their tenants may write to, so none of them is
// ever read back as the truth.
type ClusterMRTRKeyring struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of ClusterMRTRKeyring
	// +required
	Spec ClusterMRTRKeyringSpec `json:"spec"`

	// status defines the observed state of ClusterMRTRKeyring
	// +optional
	Status ClusterMRTRKeyringStatus `json:"status,omitzero"`
}

// EffectiveSecretName is spec.secretName, or the keyring's name when it is unset.
func (k *ClusterMRTRKeyring) EffectiveSecretName() string {
	if k.Spec.SecretName != "" {
		return k.Spec.SecretName
	}
	return k.Name
}

// ClusterKeyringClaim is how a ClusterMRTRKeyring named name signs what it owns where an
// MRTRKeyring signs with its name (the KeyringLabel of its Secret in the operator's namespace, the
// StampedByAnnotation of a workload it stamps): upper-case letters never start an object's name,
// so no MRTRKeyring can claim the same.
func ClusterKeyringClaim(name string) string { return ClusterKeyringClaimPrefix + name }

// ClusterKeyringClaimPrefix starts every ClusterKeyringClaim.
const ClusterKeyringClaimPrefix = "ClusterMRTRKeyring."

// LeadSecretName is the name of the lead Secret of a ClusterMRTRKeyring named name, in the
// operator's namespace: the keyring as the operator last wrote it, which the copies follow. Its
// own name, not spec.secretName, so that two cluster keyrings never share one, and the operator's
// namespace may be selected too.
func LeadSecretName(name string) string { return "cluster-keyring-" + name }

// +kubebuilder:object:root=true

// ClusterMRTRKeyringList contains a list of ClusterMRTRKeyring
type ClusterMRTRKeyringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []ClusterMRTRKeyring `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &ClusterMRTRKeyring{}, &ClusterMRTRKeyringList{})
		return nil
	})
}
