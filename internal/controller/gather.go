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
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// observed is what gather read besides the Input: the objects Reconcile writes back.
type observed struct {
	// secret is the keyring Secret as read live, nil when it does not exist.
	secret *corev1.Secret
	// targets are the found target workloads, which Reconcile stamps (workload.Stamp).
	targets []client.Object
	// pods are what Reconcile's writes to pods need of each pod read, by name.
	pods map[string]seenPod
}

// seenPod is what the writes to a pod need of it as gather read it.
type seenPod struct {
	// version is the uid and resourceVersion it was read at: the preconditions of its eviction and
	// of its nudge.
	version metav1.Preconditions
	// written is its WrittenAnnotation, which its next nudge must change (nudgeValue).
	written string
}

// gather reads everything rotation.Step needs (cert-manager's gatherer): the Secret (live), the
// target workloads (cached) and a fresh candidate key. It also returns the objects it read, which
// Reconcile writes (writeSecret, workload.Stamp): the Secret is updated from this very copy, so a change made after Step decided
// fails the write instead of being overwritten.
func (r *MRTRKeyringReconciler) gather(ctx context.Context, kr *mrtrv1alpha1.MRTRKeyring) (rotation.Input, observed, error) {
	secret, err := r.readSecret(ctx, placeOf(kr))
	if err != nil {
		return rotation.Input{}, observed{}, err
	}
	settings := rotation.SettingsFrom(kr.Spec)
	fresh, err := r.freshKeys(settings)
	if err != nil {
		return rotation.Input{}, observed{}, fmt.Errorf("generate a key for keyring %s/%s: %w", kr.Namespace, kr.Name, err)
	}
	sec := observeSecret(secret)
	if secret != nil {
		if sec.ClaimedBy, err = r.otherOwner(ctx, placeOf(kr), secretClaim(secret)); err != nil {
			return rotation.Input{}, observed{}, err
		}
	}
	c, err := r.consumers(ctx, placeOf(kr), settings)
	if err != nil {
		return rotation.Input{}, observed{}, err
	}
	src, err := r.observeSource(ctx, kr.Namespace, &kr.Spec)
	if err != nil {
		return rotation.Input{}, observed{}, err
	}
	return rotation.Input{
		Source:          src,
		Now:             r.now().Now(),
		Generation:      kr.Generation,
		Settings:        settings,
		Status:          kr.Status,
		SecretName:      kr.EffectiveSecretName(),
		Secret:          sec,
		FreshKeys:       fresh,
		Workloads:       c.workloads,
		SelectedPods:    c.selected,
		RotateRequest:   kr.Annotations[mrtrv1alpha1.RotateAnnotation],
		RevokeRequest:   kr.Annotations[mrtrv1alpha1.RevokeAnnotation],
		NodesUnreadable: !r.ReadNodes,
	}, observed{secret: secret, targets: c.stampable, pods: c.pods}, nil
}

// freshKeys makes the two candidate keys of a pass.
func (r *Shared) freshKeys(settings rotation.Settings) ([2]keyring.Key, error) {
	generate := r.GenerateKey
	if generate == nil {
		generate = keyring.GenerateKey
	}
	var fresh [2]keyring.Key
	for i := range fresh {
		var err error
		if fresh[i], err = generate("candidate", settings.KeyBytes); err != nil {
			return fresh, err
		}
	}
	return fresh, nil
}

// consumersOf is what gather read of the consumers of a keyring Secret in one namespace.
type consumersOf struct {
	workloads []rotation.Workload
	selected  []rotation.Pod
	// stampable are the found targets that no other keyring claims; pods what the writes to pods
	// need of each pod read, by name.
	stampable []client.Object
	pods      map[string]seenPod
}

// consumers reads the consumers of kr's Secret in kr's namespace: the target workloads (cached),
// with their pods in Reload delivery, and the pods spec.podSelector selects.
func (r *Shared) consumers(ctx context.Context, kr keyringPlace, settings rotation.Settings) (consumersOf, error) {
	targets, err := r.targets(ctx, kr)
	if err != nil {
		return consumersOf{}, err
	}
	po := podObserver{key: ack.AnnotationKey(kr.EffectiveSecretName()), secretName: kr.EffectiveSecretName(), nodes: r.nodeReadiness(ctx),
		evicted: func(p *corev1.Pod) bool { return r.evictions.pending(p, r.now().Now()) }, seen: map[string]seenPod{}}
	ws := observeWorkloads(targets, kr)
	stampable := make([]client.Object, 0, len(targets.Found))
	counted := map[string]bool{} // pods counted with a target, by name
	for _, obj := range targets.Found {
		ref, _ := workload.RefOf(obj)
		w := &ws[slices.IndexFunc(ws, func(w rotation.Workload) bool { return w.Name == ref.Name && string(w.Kind) == string(ref.Kind) })]
		if settings.Reload() {
			if w.Pods, err = r.workloadPods(ctx, kr, obj, &po); err != nil {
				return consumersOf{}, err
			}
			if w.DisruptionBudget, err = r.disruptionBudget(ctx, kr.Namespace, obj); err != nil {
				return consumersOf{}, err
			}
			w.CountedPods = workload.CountedPods(obj)
			for _, p := range w.Pods {
				counted[p.Name] = true
			}
		}
		owner, err := r.stampOwner(ctx, kr, obj)
		if err != nil {
			return consumersOf{}, err
		}
		if owner == "" {
			stampable = append(stampable, obj)
			continue
		}
		w.ClaimedBy = owner
	}
	selected, err := r.selectedPods(ctx, kr, counted, &po)
	if err != nil {
		return consumersOf{}, err
	}
	return consumersOf{workloads: ws, selected: selected, stampable: stampable, pods: po.seen}, nil
}

// workloadPods reads the pods obj's selector selects, through the cache.
func (r *Shared) workloadPods(ctx context.Context, kr keyringPlace, obj client.Object, po *podObserver) ([]rotation.Pod, error) {
	sel, err := workload.Selector(obj)
	if err != nil {
		return nil, err
	}
	pods, err := workload.ListPods(ctx, r.Client, kr.Namespace, sel)
	if err != nil {
		return nil, err
	}
	return po.observe(pods, nil), nil
}

// selectedPods reads the pods spec.podSelector selects, but for those counted with a target.
func (r *Shared) selectedPods(ctx context.Context, kr keyringPlace, counted map[string]bool, po *podObserver) ([]rotation.Pod, error) {
	if kr.Spec.PodSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(kr.Spec.PodSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.podSelector: %w", err)
	}
	pods, err := workload.ListPods(ctx, r.Client, kr.Namespace, sel)
	if err != nil {
		return nil, err
	}
	return po.observe(pods, counted), nil
}

// podObserver turns pods into rotation.Pods with what each carries under key and who wrote it
// (rotation decides what counts as proof), and collects the version of each pod it saw.
type podObserver struct {
	key  string
	seen map[string]seenPod
	// secretName is the keyring Secret, which a pod must mount to be nudged.
	secretName string
	// nodes tells the readiness of a node by name.
	nodes func(name string) rotation.NodeState
	// evicted reports whether a pod's eviction was accepted though the cache does not show it yet.
	evicted func(*corev1.Pod) bool
}

// observe turns pods into rotation.Pods, leaving out those in skip.
func (po *podObserver) observe(pods []corev1.Pod, skip map[string]bool) []rotation.Pod {
	out := make([]rotation.Pod, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if skip[p.Name] {
			continue
		}
		po.seen[p.Name] = seenPod{version: metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion},
			written: p.Annotations[mrtrv1alpha1.WrittenAnnotation]}
		out = append(out, rotation.Pod{Name: p.Name, Loaded: p.Annotations[po.key], AckWriter: ackWriter(p, po.key),
			Mounts: slices.Contains(workload.MountedSecrets(p), po.secretName), CreatedAt: p.CreationTimestamp.Time,
			Terminating: p.DeletionTimestamp != nil || po.evicted(p), NodeName: p.Spec.NodeName, Node: po.nodes(p.Spec.NodeName)})
	}
	return out
}

// ackWriter is who last wrote pod's annotation key, by its managedFields: the raw fact of
// rotation's acceptance rule.
func ackWriter(pod *corev1.Pod, key string) rotation.Writer {
	if _, ok := pod.Annotations[key]; !ok {
		return rotation.Writer{}
	}
	m, _ := workload.AcknowledgementWriter(pod, key)
	return writerOf(m)
}

// stampOwner returns the keyring that owns the stamp kr would write on obj, when that is another
// keyring: the first of those sharing obj if kr is not among them, else the keyring that claimed
// its one stamp, if it still exists.
func (r *Shared) stampOwner(ctx context.Context, kr keyringPlace, obj client.Object) (string, error) {
	switch key := workload.StampKey(obj, kr.Name); key {
	case "":
		return workload.SharedBy(obj)[0], nil // shared, by others
	case mrtrv1alpha1.FingerprintAnnotation:
		return r.otherOwner(ctx, kr, workload.StampedBy(obj))
	default:
		return "", nil // shared, and kr has a stamp of its own
	}
}

// secretClaim is who a keyring Secret says owns it: the MRTRKeyring its KeyringLabel names, else
// the ClusterMRTRKeyring whose copy its ClusterKeyringLabel says it is (ClusterKeyringClaim).
func secretClaim(s *corev1.Secret) string {
	if c := s.Labels[mrtrv1alpha1.ClusterKeyringLabel]; c != "" && s.Labels[mrtrv1alpha1.KeyringLabel] == "" {
		return mrtrv1alpha1.ClusterKeyringClaim(c)
	}
	return s.Labels[mrtrv1alpha1.KeyringLabel]
}

// otherOwner returns claimant when it names an MRTRKeyring of kr's namespace other than kr that
// exists: the owner of a Secret or a stamp that kr must not touch. A claim of a keyring that is gone
// lapses, so that its successor (or a keyring of another name) takes over.
func (r *Shared) otherOwner(ctx context.Context, kr keyringPlace, claimant string) (string, error) {
	if claimant == "" || claimant == kr.Name {
		return "", nil
	}
	if r.hub != nil {
		// In a member cluster: a cluster keyring's claim is judged where cluster keyrings live;
		// an MRTRKeyring there is none the operator reads, and what it claims is never taken.
		if strings.HasPrefix(claimant, mrtrv1alpha1.ClusterKeyringClaimPrefix) {
			return r.hub.otherOwner(ctx, kr, claimant)
		}
		return claimant, nil
	}
	if name, ok := strings.CutPrefix(claimant, mrtrv1alpha1.ClusterKeyringClaimPrefix); ok {
		if r.ClusterKeyrings == "" {
			// Without cluster keyrings the operator may not read them: a copy one left behind is
			// not taken over, since its servers may still run it.
			return claimant, nil
		}
		var other mrtrv1alpha1.ClusterMRTRKeyring
		switch err := r.Get(ctx, types.NamespacedName{Name: name}, &other); {
		case apierrors.IsNotFound(err), err == nil && other.DeletionTimestamp != nil:
			return "", nil
		case err != nil:
			return "", fmt.Errorf("read ClusterMRTRKeyring %s, which claims an object of %s: %w", name, kr.Name, err)
		}
		return claimant, nil
	}
	var other mrtrv1alpha1.MRTRKeyring
	err := r.Get(ctx, types.NamespacedName{Namespace: kr.Namespace, Name: claimant}, &other)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read MRTRKeyring %s/%s, which claims an object of %s: %w", kr.Namespace, claimant, kr.Name, err)
	case other.DeletionTimestamp != nil:
		return "", nil // on its way out
	}
	return claimant, nil
}

// readSecret reads the keyring Secret, nil when it does not exist. The cache is the answer when it
// holds what status says the operator wrote last, which is the case on every pass but the first
// after a write or a change: otherwise it may be a moment behind (a stale copy would look like a
// change made behind the operator's back), or the Secret may be of another type (the cache holds
// keyring Secrets only), so the API server's copy decides.
func (r *Shared) readSecret(ctx context.Context, kr keyringPlace) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: kr.Namespace, Name: kr.EffectiveSecretName()}
	var s corev1.Secret
	err := r.Get(ctx, key, &s)
	if err == nil && kr.Fingerprint != "" && s.Annotations[mrtrv1alpha1.FingerprintAnnotation] == kr.Fingerprint {
		return &s, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read Secret %s from the cache: %w", key, err)
	}
	s = corev1.Secret{}
	switch err := r.APIReader.Get(ctx, key, &s); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read Secret %s: %w", key, err)
	}
	return &s, nil
}

func observeSecret(s *corev1.Secret) rotation.SecretObservation {
	if s == nil {
		return rotation.ObserveSecret(false, "", nil, nil)
	}
	obs := rotation.ObserveSecret(true, string(s.Type), s.Data, s.Annotations)
	obs.WrittenAt = lastWrittenAt(s)
	return obs
}

// lastWrittenAt is when mrtrv1alpha1.FieldManager last changed s, by the API server's clock (the time of its
// managedFields entry), zero when it never did.
func lastWrittenAt(s *corev1.Secret) time.Time {
	var at time.Time
	for _, m := range s.ManagedFields {
		if m.Manager == mrtrv1alpha1.FieldManager && m.Subresource == "" && m.Time != nil && m.Time.After(at) {
			at = m.Time.Time
		}
	}
	return at
}

// targets resolves the named, the selected and the consuming workloads (those whose pod template
// references the keyring Secret) through the cache.
func (r *Shared) targets(ctx context.Context, kr keyringPlace) (workload.Targets, error) {
	served := workload.Served(func(k workload.Kind) bool {
		// A reconciler made without SetupWithManager (a test's) watches nothing of its own: a
		// kind is read when its client's RESTMapper knows it.
		gvk, err := workload.GVK(k)
		if err != nil {
			return false
		}
		_, err = r.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	})
	switch {
	case r.kinds != nil:
		served = r.kinds.Served
	case r.served != nil:
		served = r.served
	}
	return workload.Resolve(ctx, r.Client, served, kr.Namespace, specRefs(kr.Spec), kr.Spec.WorkloadSelector, kr.EffectiveSecretName())
}

// specRefs are the workloads named in spec.workloads.
func specRefs(spec *mrtrv1alpha1.MRTRKeyringSpec) []workload.Ref {
	refs := make([]workload.Ref, len(spec.Workloads))
	for i, w := range spec.Workloads {
		refs[i] = workload.Ref{Kind: w.Kind, Name: w.Name}
	}
	return refs
}

// observeWorkloads turns the targets into rotation.Workloads sorted by kind and name, the missing
// ones with Found false.
func observeWorkloads(t workload.Targets, kr keyringPlace) []rotation.Workload {
	secret := kr.EffectiveSecretName()
	out := make([]rotation.Workload, 0, len(t.Found)+len(t.Missing))
	for _, obj := range t.Found {
		ref, _ := workload.RefOf(obj)
		ro, _ := workload.RolloutStatus(obj)
		key := workload.StampKey(obj, kr.Name)
		writer, _ := workload.StampWriter(obj, key)
		out = append(out, rotation.Workload{
			Kind: ref.Kind, Name: ref.Name, Found: true, StampWriter: writerOf(writer),
			OwnStamp: key != "" && (key != mrtrv1alpha1.FingerprintAnnotation || workload.StampedBy(obj) == kr.Name),
			Stamp:    workload.FingerprintAt(obj, key), RolledOut: ro.Done, Ready: ro.Ready, Desired: ro.Desired, Message: ro.Message, Unobserved: ro.Unobserved,
			Outage: ro.Outage, Degraded: ro.Degraded, Unreferenced: !slices.Contains(workload.ReferencedSecrets(obj), secret), MaxUnavailable: ro.MaxUnavailable,
		})
	}
	for _, ref := range t.Missing {
		out = append(out, rotation.Workload{Kind: ref.Kind, Name: ref.Name})
	}
	for _, ref := range t.Unserved {
		out = append(out, rotation.Workload{Kind: ref.Kind, Name: ref.Name, NotServed: workload.APIVersion(ref.Kind) + " " + string(ref.Kind)})
	}
	// Found and Missing are each sorted and disjoint; merge their order.
	slices.SortFunc(out, func(a, b rotation.Workload) int {
		return workload.Ref{Kind: a.Kind, Name: a.Name}.Compare(workload.Ref{Kind: b.Kind, Name: b.Name})
	})
	return out
}

// writerOf is what a managedFields entry says of who wrote a field.
func writerOf(m metav1.ManagedFieldsEntry) rotation.Writer {
	w := rotation.Writer{Manager: m.Manager, Subresource: m.Subresource}
	if m.Time != nil {
		w.At = m.Time.Time
	}
	return w
}

// nodeReadiness returns what a pass knows of the readiness of each node, read from the cache once
// per node and pass: NodeUnknown for a pod not yet scheduled, a node not found, or when the
// operator may not read Nodes (ReadNodes false: a namespace-scoped install, whose Roles cannot
// grant a cluster-scoped resource).
func (r *Shared) nodeReadiness(ctx context.Context) func(string) rotation.NodeState {
	seen := map[string]rotation.NodeState{}
	return func(name string) rotation.NodeState {
		if name == "" || !r.ReadNodes {
			return rotation.NodeUnknown
		}
		if s, ok := seen[name]; ok {
			return s
		}
		var node corev1.Node
		s := rotation.NodeUnknown
		if err := r.Get(ctx, types.NamespacedName{Name: name}, &node); err == nil {
			s = nodeState(&node)
		} else if !apierrors.IsNotFound(err) {
			logf.FromContext(ctx).V(1).Info("node readiness unknown", "node", name, "error", err.Error())
		}
		seen[name] = s
		return s
	}
}

// nodeState reads a node's Ready condition: True is Ready; False, or Unknown (the node controller
// heard nothing from its kubelet for the grace period), is NotReady; none is unknown.
func nodeState(node *corev1.Node) rotation.NodeState {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return rotation.NodeReady
			}
			return rotation.NodeNotReady
		}
	}
	return rotation.NodeUnknown
}

// disruptionBudget returns the disruptionsAllowed of the PodDisruptionBudgets of namespace that
// select obj's pods (by its pod template's labels), the least when several do, and nil when none
// does: that paces the restarts of its pods that do not acknowledge, as the eviction API does.
func (r *Shared) disruptionBudget(ctx context.Context, namespace string, obj client.Object) (*int32, error) {
	t, err := workload.PodTemplate(obj)
	if err != nil {
		return nil, nil //nolint:nilerr // not a workload with pods: no budget
	}
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list PodDisruptionBudgets in namespace %s: %w", namespace, err)
	}
	var allowed *int32
	for i := range list.Items {
		pdb := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil || sel.Empty() || !sel.Matches(labels.Set(t.Labels)) {
			continue
		}
		if n := pdb.Status.DisruptionsAllowed; allowed == nil || n < *allowed {
			allowed = &n
		}
	}
	return allowed, nil
}
