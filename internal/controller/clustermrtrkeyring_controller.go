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
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/members"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
)

// ClusterMRTRKeyringReconciler rotates ClusterMRTRKeyrings: it observes the lead Secret (in
// Shared.ClusterKeyrings, the operator's namespace), the copy and the consumers in every selected namespace, asks
// rotation.Step, and does it, in an order that a pass killed at any point resumes from: the lead
// Secret, the status, then the copies that differ from it (Decision.CopyTo), each followed by the
// nudges of its pods; then the events, the stamps and the evictions, place by place. Every step is
// Shared's, as for an MRTRKeyring: this shell only knows where the keyring is stored (leadPlace)
// and which places it has; what is whose, and what to write, stamp and evict where, rotation
// decides from the raw facts gatherPlace reads.
//
// No Secret is written outside the selected namespaces and the operator's, and a Secret there
// that rotation does not judge this keyring's copy is never overwritten (rotation.Place).
type ClusterMRTRKeyringReconciler struct {
	*Shared
	// MaxConcurrentReconciles is how many cluster keyrings are reconciled at once; 0 means
	// DefaultConcurrency.
	MaxConcurrentReconciles int
	// Members reaches the member clusters of the keyrings that set spec.members; nil: such a
	// keyring is left alone (Ready=False, MembersNotServed), never rotated in this cluster only.
	Members *members.Registry

	refusals    refusals
	views       memberViews
	memberKinds memberKinds
	queue       atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// leadPlace is ck where its keyring lives: its lead Secret in the operator's namespace
// (Shared.ClusterKeyrings), signed with its ClusterKeyringClaim.
func (r *ClusterMRTRKeyringReconciler) leadPlace(ck *mrtrv1alpha1.ClusterMRTRKeyring) keyringPlace {
	p := r.placeOf(ck, r.ClusterKeyrings)
	p.SecretName, p.Fingerprint = mrtrv1alpha1.LeadSecretName(ck.Name), ck.Status.SecretFingerprint
	return p
}

// placeOf is ck in a namespace it selects, where its copy has the name spec.secretName.
func (r *ClusterMRTRKeyringReconciler) placeOf(ck *mrtrv1alpha1.ClusterMRTRKeyring, namespace string) keyringPlace {
	return keyringPlace{Namespace: namespace, Name: mrtrv1alpha1.ClusterKeyringClaim(ck.Name), SecretName: ck.EffectiveSecretName(),
		Spec: &ck.Spec.MRTRKeyringSpec, Keyring: types.NamespacedName{Name: ck.Name}}
}

// refusalRetry is how soon a pass runs again after the API server refused a copy's write: a quota
// or a policy changes at a person's pace, and the refusal is a per-namespace state, not an error
// that backs the whole keyring off.
const refusalRetry = 30 * time.Second

// memberRetry is how soon a pass runs again while a member cannot be reached.
const memberRetry = 5 * time.Second

// refusals remembers, per keyring and namespace, how the API server refused the last write of a
// copy (rotation.Place.WriteRefused), until a write there succeeds. Lost on a restart: the next
// write finds out again.
type refusals struct{ m sync.Map }

func refusalKey(uid types.UID, namespace string) string { return string(uid) + "/" + namespace }

func (f *refusals) get(uid types.UID, namespace string) string {
	v, _ := f.m.Load(refusalKey(uid, namespace))
	s, _ := v.(string)
	return s
}
func (f *refusals) set(uid types.UID, namespace, why string) {
	f.m.Store(refusalKey(uid, namespace), why)
}
func (f *refusals) clear(uid types.UID, namespace string) { f.m.Delete(refusalKey(uid, namespace)) }

// refusal says how the API server refused a write, "" when err is no refusal but a race (a
// conflict, a Secret that appeared meanwhile) or a failure to reach it: those are retried as they are.
// Its message is the API's, as apiReason scrubbed it.
func refusal(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return ""
	}
	status := st.Status()
	switch status.Reason {
	case metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonBadRequest, metav1.StatusReasonRequestEntityTooLarge,
		metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable, metav1.StatusReasonUnsupportedMediaType:
	default:
		return ""
	}
	// writeKeyringSecret's errors carry the API's message already scrubbed (apiReason).
	return string(status.Reason) + ": " + strings.TrimPrefix(status.Message, fmt.Sprintf("%s (%d): ", status.Reason, status.Code))
}

// What cluster keyrings add to the operator's permissions (granted
// with the rest of the manager's role): clustermrtrkeyrings list, watch (the informer of the
// keyrings); clustermrtrkeyrings/status update (the one status write of a pass); namespaces list,
// watch (which namespaces the selector selects, and their deletion). The copies are written with
// the Secret permissions every cluster-wide install has. The chart leaves these rules out of the
// manager's ClusterRole unless clusterKeyrings.enable is set.
// +kubebuilder:rbac:groups=mrtr.dev,resources=clustermrtrkeyrings,verbs=list;watch
// +kubebuilder:rbac:groups=mrtr.dev,resources=clustermrtrkeyrings/status,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

// Reconcile runs one pass of a ClusterMRTRKeyring.
func (r *ClusterMRTRKeyringReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ck mrtrv1alpha1.ClusterMRTRKeyring
	if err := r.Get(ctx, req.NamespacedName, &ck); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics().Forget("", req.Name)
			r.written.forget(&mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: req.Name}})
			if r.Members != nil {
				// Its selections in the members go (and a member no keyring names stops): the
				// namespaces only it selected leave the members' caches.
				if err := r.retainMembers(ctx); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&ck) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if len(ck.Spec.Members) > 0 && r.Members == nil {
		// A manager built without a member registry cannot reach member clusters: such a keyring
		// is left alone, rather than rotated in the operator's own cluster only, which its
		// members list may not even name.
		return ctrl.Result{}, r.refuseMembers(ctx, &ck)
	}
	if r.Members != nil {
		if err := r.retainMembers(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	in, obs, err := r.gatherCluster(ctx, &ck)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, p := range obs.places {
		if p.shared.written.behind(p.stampable...) {
			return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
		}
	}
	d := rotation.Step(in)
	if d.Secret != nil {
		if err := r.writeSecret(ctx, r.leadPlace(&ck), obs.secret, d); err != nil {
			return retryOnConflict(ctx, err)
		}
	}
	if !equality.Semantic.DeepEqual(ck.Status.MRTRKeyringStatus, d.Status) || !equality.Semantic.DeepEqual(ck.Status.Namespaces, d.Namespaces) ||
		!equality.Semantic.DeepEqual(ck.Status.Members, obs.members) {
		previous := ck.Status.MRTRKeyringStatus
		ck.Status.MRTRKeyringStatus, ck.Status.Namespaces, ck.Status.Members = d.Status, d.Namespaces, obs.members
		if err := r.Status().Update(ctx, &ck, client.FieldOwner(mrtrv1alpha1.FieldManager)); err != nil {
			r.recordCommitted(&ck, d)
			return retryOnConflict(ctx, err)
		}
		r.written.wrote(&ck)
		r.recordTransitions(types.NamespacedName{Name: ck.Name}, ck.Status.MRTRKeyringStatus, previous)
	}
	r.metrics().Observe(types.NamespacedName{Name: ck.Name}, rotation.SettingsFrom(ck.Spec.MRTRKeyringSpec).RotationInterval, &ck.Status.MRTRKeyringStatus)
	r.metrics().ObserveMembers(types.NamespacedName{Name: ck.Name}, ck.Status.Members)
	var errs []error
	requeue := d.RequeueAfter
	if slices.ContainsFunc(obs.members, func(m mrtrv1alpha1.MemberStatus) bool { return !m.Reachable }) {
		// A member's state wakes the keyring when it changes, but a member whose cluster could not
		// be made at all is made again only by a pass.
		requeue = soonest(requeue, memberRetry)
	}
	failed := map[string]bool{} // the places whose copy write failed this pass: not stamped
	if len(d.CopyTo) > 0 {
		var retry time.Duration
		failed, retry = r.writeCopies(ctx, &ck, in, obs, d)
		if retry > 0 {
			requeue = soonest(requeue, retry)
		}
	}
	for _, name := range obs.removed {
		r.Recorder.Eventf(&ck, nil, corev1.EventTypeWarning, mrtrv1alpha1.EventMemberRemoved, "Rotate",
			"member %s was removed from spec.members: it is not rotated any more, its copies stay, and its namespaces are reported as left (spec.onLeave: %s)",
			name, cmp.Or(ck.Spec.OnLeave, mrtrv1alpha1.OnLeaveKeep))
	}
	r.record(&ck, d.Events)
	for _, p := range obs.places {
		stamp := d.Stamp
		if failed[p.name] {
			stamp = "" // its copy does not hold the keyring: a rollout now would restart its pods onto the old one
		}
		retry, placeErrs := p.shared.stampAndEvict(ctx, r.placeOf(&ck, p.namespace), stamp,
			func(ref string) bool { return slices.Contains(d.StampTargets, rotation.PlacedRef(p.name, ref)) },
			p.stampable, placed(d.Evict, p.name), p.pods)
		if retry > 0 {
			requeue = soonest(requeue, retry)
		}
		errs = append(errs, placeErrs...)
	}
	logf.FromContext(ctx).V(1).Info("reconciled", "phase", d.Status.Phase, "fingerprint", d.Status.SecretFingerprint,
		"target", d.Status.TargetFingerprint, "requeueAfter", requeue, "copies", len(d.CopyTo), "evicted", len(d.Evict))
	return ctrl.Result{RequeueAfter: requeue, Priority: requeuePriority(d.Status.Phase)}, errors.Join(errs...)
}

// clusterObserved is what gatherCluster read besides the Input: the objects the pass writes back.
type clusterObserved struct {
	// secret is the lead Secret as read, nil when it does not exist.
	secret *corev1.Secret
	places []placeObserved
	// members is status.members as this pass found them; removed the members status knew that
	// spec.members no longer names.
	members []mrtrv1alpha1.MemberStatus
	removed []string
}

// placeObserved is what was read in one selected namespace.
type placeObserved struct {
	// name is the place's name (MEMBER/NAMESPACE with members), namespace its namespace, and
	// shared does its steps through its cluster.
	name      string
	namespace string
	shared    *Shared
	// copy is the Secret of spec.secretName there, nil when there is none.
	copy      *corev1.Secret
	stampable []client.Object
	pods      map[string]seenPod
}

// gatherCluster reads everything Step needs of ck: the lead Secret, the selected namespaces with
// their copy and consumers, and the namespaces that hold a copy but are no longer selected.
func (r *ClusterMRTRKeyringReconciler) gatherCluster(ctx context.Context, ck *mrtrv1alpha1.ClusterMRTRKeyring) (rotation.Input, clusterObserved, error) {
	lead := r.leadPlace(ck)
	secret, err := r.readSecret(ctx, lead)
	if err != nil {
		return rotation.Input{}, clusterObserved{}, err
	}
	sec := observeSecret(secret)
	if secret != nil {
		if sec.ClaimedBy, err = r.otherOwner(ctx, lead, secret.Labels[mrtrv1alpha1.KeyringLabel]); err != nil {
			return rotation.Input{}, clusterObserved{}, err
		}
	}
	settings := rotation.SettingsFrom(ck.Spec.MRTRKeyringSpec)
	fresh, err := r.freshKeys(settings)
	if err != nil {
		return rotation.Input{}, clusterObserved{}, fmt.Errorf("generate a key for ClusterMRTRKeyring %s: %w", ck.Name, err)
	}
	// A cluster keyring's source lives beside its lead Secret, in the operator's namespace: the
	// selected namespaces are its tenants', whose Secrets are never read as the truth.
	src, err := r.observeSource(ctx, r.ClusterKeyrings, &ck.Spec.MRTRKeyringSpec)
	if err != nil {
		return rotation.Input{}, clusterObserved{}, err
	}
	in := rotation.Input{
		Source: src,
		Now:    r.now().Now(), Generation: ck.Generation, Settings: settings, Status: ck.Status.MRTRKeyringStatus,
		SecretName: ck.EffectiveSecretName(), Secret: sec, FreshKeys: fresh, Namespaces: ck.Status.Namespaces,
		RotateRequest: ck.Annotations[mrtrv1alpha1.RotateAnnotation], RevokeRequest: ck.Annotations[mrtrv1alpha1.RevokeAnnotation],
		NodesUnreadable: !r.ReadNodes, Name: ck.Name, UID: string(ck.UID), OnLeave: ck.Spec.OnLeave,
	}
	obs := clusterObserved{secret: secret}
	clusters := r.clusters(ctx, ck)
	for _, c := range clusters {
		places, pos, left, err := r.gatherIn(ctx, c, ck, settings)
		if err != nil && (c.name == "" || c.local) {
			return rotation.Input{}, clusterObserved{}, err
		}
		if err != nil {
			// A member that fails a read mid-pass is as good as unreachable for this pass: what
			// was read there is dropped, and its places hold the phase.
			c.unreachable = err.Error()
			c.status.Reachable, c.status.Message = false, rotation.Truncate(c.unreachable, 1024)
			c.status.LastTransitionTime = r.memberSince(ck, c.name, false)
		}
		if c.unreachable != "" {
			unreached, held := unreachablePlaces(ck, c)
			in.Places = append(in.Places, unreached...)
			in.Left = append(in.Left, held...)
			continue
		}
		for _, p := range places {
			in.Places = append(in.Places, p.Place)
			in.Workloads = append(in.Workloads, p.workloads...)
		}
		obs.places = append(obs.places, pos...)
		in.Left = append(in.Left, left...)
	}
	obs.members = membersStatus(clusters)
	var removedLeft []rotation.Place
	obs.removed, removedLeft = removedMembers(ck)
	in.Left = append(in.Left, removedLeft...)
	slices.SortFunc(in.Left, func(a, b rotation.Place) int { return strings.Compare(a.Name, b.Name) })
	return in, obs, nil
}

// gatherIn reads the places of ck in cluster c: its selected namespaces, with their copies and
// consumers, and those that hold a copy but are no longer selected. An unreachable member has
// none it can read.
func (r *ClusterMRTRKeyringReconciler) gatherIn(ctx context.Context, c *memberCluster, ck *mrtrv1alpha1.ClusterMRTRKeyring,
	settings rotation.Settings) ([]gatheredPlace, []placeObserved, []rotation.Place, error) {
	if c.unreachable != "" {
		return nil, nil, nil, nil
	}
	selected, err := c.shared.selectedNamespaces(ctx, ck)
	if err != nil {
		return nil, nil, nil, err
	}
	unreadable, err := r.selectIn(c, ck, selected)
	if err != nil {
		return nil, nil, nil, err
	}
	places := make([]gatheredPlace, 0, len(selected))
	pos := make([]placeObserved, 0, len(selected))
	for _, ns := range selected {
		if u, ok := unreadable[ns.Name]; ok {
			// Its pods and workloads cannot be read: the place holds the phase, as one unreachable.
			places = append(places, gatheredPlace{Place: rotation.Place{Name: c.qualify(ns.Name), UID: string(ns.UID),
				Unreachable: u.why, Pending: u.pending}})
			continue
		}
		place, po, err := r.gatherPlace(ctx, c, ck, ns, settings)
		if err != nil {
			return nil, nil, nil, err
		}
		places = append(places, place)
		pos = append(pos, po)
	}
	left, err := r.leftNamespaces(ctx, c, ck, selected)
	if err != nil {
		return nil, nil, nil, err
	}
	return places, pos, left, nil
}

// selectIn makes the cache of member c hold the pods, workloads and PDBs of the namespaces ck
// selects there (members.Registry.Select), and says, of each namespace whose cache has not synced
// yet, why it cannot be read: still syncing (it just joined: pending, as a member connecting), or
// not synced within the registry's SyncTimeout (unreachable). Trusting an unsynced cache would
// read its pods and workloads as absent.
func (r *ClusterMRTRKeyringReconciler) selectIn(c *memberCluster, ck *mrtrv1alpha1.ClusterMRTRKeyring, selected []*corev1.Namespace) (map[string]unread, error) {
	if c.secret == "" {
		return nil, nil
	}
	names := make([]string, len(selected))
	for i, ns := range selected {
		names[i] = ns.Name
	}
	syncing, late, err := r.Members.Select(c.secret, ck.Name, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]unread, len(syncing))
	for _, ns := range syncing {
		out[ns] = unread{why: fmt.Sprintf("the hub's cache of namespace %s is syncing", ns), pending: true}
	}
	for _, ns := range late {
		out[ns] = unread{why: fmt.Sprintf("the hub's cache of namespace %s did not sync within %s", ns, r.Members.SyncTimeout)}
	}
	return out, nil
}

// unread is why a selected namespace of a member cannot be read in this pass.
type unread struct {
	why string
	// pending: not yet, rather than lost (rotation.Place.Pending).
	pending bool
}

// gatheredPlace is a place as observed, with its consumers.
type gatheredPlace struct {
	rotation.Place
	workloads []rotation.Workload
}

// gatherPlace reads one selected namespace: its copy (the cache, else live: the cache holds keyring
// Secrets only, and a Secret of another type there is a conflict, not an absence), who owns it, and
// its consumers, when the namespace takes part (not being deleted, the copy ours).
func (r *ClusterMRTRKeyringReconciler) gatherPlace(ctx context.Context, c *memberCluster, ck *mrtrv1alpha1.ClusterMRTRKeyring, ns *corev1.Namespace,
	settings rotation.Settings) (gatheredPlace, placeObserved, error) {
	key := types.NamespacedName{Namespace: ns.Name, Name: ck.EffectiveSecretName()}
	name := c.qualify(ns.Name)
	var s corev1.Secret
	err := c.shared.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		s = corev1.Secret{}
		err = c.shared.APIReader.Get(ctx, key, &s)
	}
	var copySecret *corev1.Secret
	switch {
	case err == nil:
		copySecret = &s
	case !apierrors.IsNotFound(err):
		return gatheredPlace{}, placeObserved{}, fmt.Errorf("read Secret %s: %w", key, err)
	}
	p := gatheredPlace{Place: rotation.Place{Name: name, UID: string(ns.UID), Copy: observeSecret(copySecret),
		Terminating: ns.DeletionTimestamp != nil, WriteRefused: r.refusals.get(ck.UID, name)}}
	po := placeObserved{name: name, namespace: ns.Name, shared: c.shared, copy: copySecret}
	if p.Ownership, err = r.ownership(ctx, c, ck, copySecret); err != nil || p.Terminating {
		return p, po, err
	}
	cons, err := c.shared.consumers(ctx, r.placeOf(ck, ns.Name), settings)
	if err != nil {
		return gatheredPlace{}, placeObserved{}, err
	}
	for i := range cons.workloads {
		w := &cons.workloads[i]
		w.Place = name
		for j := range w.Pods {
			w.Pods[j].Place = name
		}
	}
	p.workloads, po.stampable, po.pods = cons.workloads, cons.stampable, cons.pods
	return p, po, nil
}

// ownership reads what s says of whose it is, and looks up the keyrings its labels name: the raw
// facts from which rotation decides whether it is ck's copy. Empty for no Secret. An MRTRKeyring
// that a Secret in a member names is taken to hold it: the operator does not read the member's
// keyrings, and never takes what may be another's.
func (r *ClusterMRTRKeyringReconciler) ownership(ctx context.Context, c *memberCluster, ck *mrtrv1alpha1.ClusterMRTRKeyring,
	s *corev1.Secret) (rotation.Ownership, error) {
	if s == nil {
		return rotation.Ownership{}, nil
	}
	o := rotation.Ownership{Keyring: s.Labels[mrtrv1alpha1.KeyringLabel], ClusterKeyring: s.Labels[mrtrv1alpha1.ClusterKeyringLabel],
		WriterUID: s.Annotations[mrtrv1alpha1.ClusterKeyringUIDAnnotation], Immutable: s.Immutable != nil && *s.Immutable}
	var err error
	if o.Keyring != "" && c.shared != r.Shared {
		o.KeyringClaim = rotation.Claim{Exists: true}
	} else if o.Keyring != "" {
		var kr mrtrv1alpha1.MRTRKeyring
		if o.KeyringClaim, err = r.claim(ctx, types.NamespacedName{Namespace: s.Namespace, Name: o.Keyring}, &kr); err != nil {
			return o, err
		}
	}
	if o.ClusterKeyring != "" && o.ClusterKeyring != ck.Name {
		var other mrtrv1alpha1.ClusterMRTRKeyring
		if o.ClusterClaim, err = r.claim(ctx, types.NamespacedName{Name: o.ClusterKeyring}, &other); err != nil {
			return o, err
		}
	}
	return o, nil
}

// claim reads the keyring key from the cache into obj and says whether it exists and is being
// deleted.
func (r *ClusterMRTRKeyringReconciler) claim(ctx context.Context, key types.NamespacedName, obj client.Object) (rotation.Claim, error) {
	switch err := r.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return rotation.Claim{}, nil
	case err != nil:
		return rotation.Claim{}, fmt.Errorf("read %T %s, which claims a Secret: %w", obj, key, err)
	}
	return rotation.Claim{Exists: true, Deleting: obj.GetDeletionTimestamp() != nil}, nil
}

// selectedNamespaces lists the namespaces of r's cluster that ck's selector selects, sorted by name.
func (r *Shared) selectedNamespaces(ctx context.Context, ck *mrtrv1alpha1.ClusterMRTRKeyring) ([]*corev1.Namespace, error) {
	sel, err := metav1.LabelSelectorAsSelector(ck.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	var list corev1.NamespaceList
	if err := r.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := make([]*corev1.Namespace, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	slices.SortFunc(out, func(a, b *corev1.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// leftNamespaces lists, sorted by name, the Secrets labelled as ck's copies in namespaces it does
// not select, with their raw facts: rotation keeps those ck wrote (its uid on them).
func (r *ClusterMRTRKeyringReconciler) leftNamespaces(ctx context.Context, c *memberCluster, ck *mrtrv1alpha1.ClusterMRTRKeyring,
	selected []*corev1.Namespace) ([]rotation.Place, error) {
	var copies corev1.SecretList
	if err := c.shared.List(ctx, &copies, client.MatchingLabels{mrtrv1alpha1.ClusterKeyringLabel: ck.Name}); err != nil {
		return nil, fmt.Errorf("list the copies of ClusterMRTRKeyring %s: %w", ck.Name, err)
	}
	var left []rotation.Place
	for i := range copies.Items {
		s := &copies.Items[i]
		if s.Name != ck.EffectiveSecretName() || c.shared == r.Shared && s.Namespace == r.ClusterKeyrings && s.Labels[mrtrv1alpha1.KeyringLabel] != "" ||
			slices.ContainsFunc(selected, func(ns *corev1.Namespace) bool { return ns.Name == s.Namespace }) {
			continue
		}
		o, err := r.ownership(ctx, c, ck, s)
		if err != nil {
			return nil, err
		}
		left = append(left, rotation.Place{Name: c.qualify(s.Namespace), Copy: observeSecret(s), Ownership: o})
	}
	slices.SortFunc(left, func(a, b rotation.Place) int { return strings.Compare(a.Name, b.Name) })
	return left, nil
}

// writeCopies writes the copies Step named, each the lead Secret's keyring as this pass leaves it,
// then nudges that place's pods. A write that fails is that place's alone: the API server's
// refusal is remembered for the next pass (rotation.Place.WriteRefused), a race or an outage is
// retried; the others go on. It returns the places whose write failed, which this pass must not
// stamp, and how soon to try again (0: no need).
func (r *ClusterMRTRKeyringReconciler) writeCopies(ctx context.Context, ck *mrtrv1alpha1.ClusterMRTRKeyring, in rotation.Input, obs clusterObserved,
	d rotation.Decision) (failed map[string]bool, retry time.Duration) {
	kr, phase := d.Secret, d.SecretPhase
	if kr == nil {
		kr, phase = in.Secret.Keyring, in.Secret.WrittenPhase
	}
	c := rotation.Decision{Secret: kr, SecretPhase: phase}
	failed = map[string]bool{}
	for _, name := range d.CopyTo {
		i := slices.IndexFunc(obs.places, func(p placeObserved) bool { return p.name == name })
		if i < 0 {
			continue // Step names only the places it was given
		}
		p := obs.places[i]
		err := p.shared.writeKeyringSecret(ctx, copyTarget(ck, p.namespace), p.copy, c, rotation.SettingsFrom(ck.Spec.MRTRKeyringSpec).TokenTTL, copyAnnotations(ck, c))
		if err == nil {
			r.refusals.clear(ck.UID, name)
			p.shared.syncPods(ctx, r.placeOf(ck, p.namespace), kr.Fingerprint(), placed(d.Nudge, name), p.pods)
			continue
		}
		failed[name] = true
		if why := refusal(err); why != "" {
			r.refusals.set(ck.UID, name, why)
			retry = soonest(retry, refusalRetry)
			continue
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			logf.FromContext(ctx).Error(err, "write a copy of the keyring", "place", name)
		}
		retry = soonest(retry, conflictRetry)
	}
	return failed, retry
}

// copyAnnotations are the annotations of a copy: the phase and fingerprint of what it holds, which
// readers and kubectl mrtr show, and the uid of ck, which wrote it. Nothing is resumed from a copy,
// so it records nothing else.
func copyAnnotations(ck *mrtrv1alpha1.ClusterMRTRKeyring, d rotation.Decision) map[string]string {
	return map[string]string{mrtrv1alpha1.PhaseAnnotation: string(d.SecretPhase), mrtrv1alpha1.FingerprintAnnotation: d.Secret.Fingerprint(),
		mrtrv1alpha1.ClusterKeyringUIDAnnotation: string(ck.UID)}
}

// copyTarget is where ck's copy in namespace goes, and how it is labelled.
func copyTarget(ck *mrtrv1alpha1.ClusterMRTRKeyring, namespace string) secretTarget {
	return secretTarget{key: types.NamespacedName{Namespace: namespace, Name: ck.EffectiveSecretName()},
		label: mrtrv1alpha1.ClusterKeyringLabel, owner: ck.Name}
}

// placed are the names of qualified (rotation.PlacedPod) that are in place.
func placed(qualified []string, place string) []string {
	var out []string
	for _, q := range qualified {
		if p, name := rotation.PlacedPod(q); p == place {
			out = append(out, name)
		}
	}
	return out
}

// selects reports whether ck's selector selects ns.
func selects(ck *mrtrv1alpha1.ClusterMRTRKeyring, ns *corev1.Namespace) bool {
	sel, err := metav1.LabelSelectorAsSelector(ck.Spec.NamespaceSelector)
	return err == nil && sel.Matches(labels.Set(ns.Labels))
}

// refuseMembers reports, on Ready, that this manager has no member registry to serve spec.members:
// nothing is written.
func (r *ClusterMRTRKeyringReconciler) refuseMembers(ctx context.Context, ck *mrtrv1alpha1.ClusterMRTRKeyring) error {
	changed := meta.SetStatusCondition(&ck.Status.Conditions, metav1.Condition{Type: mrtrv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "MembersNotServed", ObservedGeneration: ck.Generation,
		Message: "spec.members is not served by this manager (it was built without a member registry): nothing is written; remove spec.members to rotate in this cluster's namespaces"})
	if !changed {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Update(ctx, ck, client.FieldOwner(mrtrv1alpha1.FieldManager)))
}
