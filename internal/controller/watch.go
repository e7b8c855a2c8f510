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
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Field indexes on MRTRKeyrings, so that a Secret or workload event wakes only the keyrings that
// use it.
const (
	// secretNameIndex holds the effective Secret name.
	secretNameIndex = "mrtr.dev/secretName"
	// workloadIndex holds "Kind/name" of each workload named in spec.workloads.
	workloadIndex = "mrtr.dev/workload"
	// acknowledgementIndex holds the pod annotation under which pods acknowledge the keyring of
	// the keyring's Secret (ack.AnnotationKey).
	acknowledgementIndex = "mrtr.dev/acknowledgement"
	// selectorIndex holds selectsWorkloads and selectsPods for a keyring with a workloadSelector or
	// a podSelector: an event maps to the keyrings that name it through the indexes above, and
	// only these few need a label match.
	selectorIndex    = "mrtr.dev/selector"
	selectsWorkloads = "workloads"
	selectsPods      = "pods"
)

// SetupWithManager registers the indexes and watches: keyrings (spec changes and annotations,
// for rotation requests), Secrets (metadata only: a change or deletion of a keyring Secret) and
// the workload kinds the API server serves (their template stamp, status and labels; kinds.go
// adds a kind served later).
func (r *MRTRKeyringReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &mrtrv1alpha1.MRTRKeyring{}, secretNameIndex, func(o client.Object) []string {
		return []string{o.(*mrtrv1alpha1.MRTRKeyring).EffectiveSecretName()}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &mrtrv1alpha1.MRTRKeyring{}, workloadIndex, func(o client.Object) []string {
		refs := specRefs(&o.(*mrtrv1alpha1.MRTRKeyring).Spec)
		keys := make([]string, len(refs))
		for i, ref := range refs {
			keys[i] = ref.String()
		}
		return keys
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &mrtrv1alpha1.MRTRKeyring{}, acknowledgementIndex, func(o client.Object) []string {
		return []string{ack.AnnotationKey(o.(*mrtrv1alpha1.MRTRKeyring).EffectiveSecretName())}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &mrtrv1alpha1.MRTRKeyring{}, selectorIndex, func(o client.Object) []string {
		kr := o.(*mrtrv1alpha1.MRTRKeyring)
		var keys []string
		if kr.Spec.WorkloadSelector != nil {
			keys = append(keys, selectsWorkloads)
		}
		if kr.Spec.PodSelector != nil {
			keys = append(keys, selectsPods)
		}
		return keys
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &mrtrv1alpha1.MRTRKeyring{}, sourceNameIndex, func(o client.Object) []string {
		if name := sourceName(&o.(*mrtrv1alpha1.MRTRKeyring).Spec); name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.setup(mgr, workers(r.MaxConcurrentReconciles)); err != nil {
		return err
	}
	sources, err := r.watchSources(mgr, r.keyringsForSource)
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(sources).
		For(&mrtrv1alpha1.MRTRKeyring{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&mrtrv1alpha1.MRTRKeyring{}, enqueueRequests(), builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(alsoAsSource(r.keyringsForSecret, r.keyringsForSource)),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		// A keyring that is deleted releases what it claimed: wake those it was in conflict with.
		Watches(&mrtrv1alpha1.MRTRKeyring{}, handler.EnqueueRequestsFromMapFunc(r.keyringsInConflict),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(event.CreateEvent) bool { return false },
				UpdateFunc: func(event.UpdateEvent) bool { return false },
				DeleteFunc: func(event.DeleteEvent) bool { return true },
			}))
	b = b.Watches(&corev1.Pod{}, enqueueByProgress(r.keyringsForPod, r.progressOf), builder.WithPredicates(podChanged{}))
	c, err := b.Named("mrtrkeyring").WithOptions(controller.Options{MaxConcurrentReconciles: workers(r.MaxConcurrentReconciles)}).Build(r)
	if err != nil {
		return err
	}
	// The workload kinds are watched as the API server serves them (kinds.go): those it serves
	// now before the manager starts, any other once its CRD is installed.
	return r.kinds.subscribe(ctx, func(_ context.Context, obj client.Object) error {
		return c.Watch(source.Kind(mgr.GetCache(), obj, enqueueByProgress(r.keyringsForWorkload, r.progressOf), predicate.Predicate(workloadChanged{})))
	})
}

// progressOf is the priority of a pass of the keyring req names, by where the cached copy stands
// (progressPriority); 0 when the cache has none.
func (r *MRTRKeyringReconciler) progressOf(ctx context.Context, req reconcile.Request) int {
	var kr mrtrv1alpha1.MRTRKeyring
	if err := r.Get(ctx, req.NamespacedName, &kr, client.UnsafeDisableDeepCopy); err != nil {
		return 0
	}
	return progressPriority(&kr.Status)
}

// workers is n, or DefaultConcurrency when it is not set.
func workers(n int) int {
	if n <= 0 {
		return DefaultConcurrency
	}
	return n
}

// keyringsForSecret maps a Secret to the keyrings in its namespace that use it.
func (r *MRTRKeyringReconciler) keyringsForSecret(ctx context.Context, s client.Object) []reconcile.Request {
	return r.list(ctx, s.GetNamespace(), client.MatchingFields{secretNameIndex: s.GetName()}, nil)
}

// keyringsInConflict maps a deleted keyring to the keyrings of its namespace stalled on a conflict,
// which may now take over what it claimed.
func (r *MRTRKeyringReconciler) keyringsInConflict(ctx context.Context, deleted client.Object) []reconcile.Request {
	return r.list(ctx, deleted.GetNamespace(), nil, func(kr *mrtrv1alpha1.MRTRKeyring) bool {
		c := meta.FindStatusCondition(kr.Status.Conditions, mrtrv1alpha1.ConditionStalled)
		return kr.Name != deleted.GetName() && c != nil && c.Status == metav1.ConditionTrue && c.Reason == mrtrv1alpha1.ReasonConflict
	})
}

// keyringsForWorkload maps a workload to the keyrings that name it, whose Secret its pod template
// references, or whose selector matches its labels. Updates are mapped for the old and the new object, so a workload that stops matching
// still wakes the keyring that must drop it.
func (r *MRTRKeyringReconciler) keyringsForWorkload(ctx context.Context, obj client.Object) []reconcile.Request {
	ref, err := workload.RefOf(obj)
	if err != nil {
		return nil
	}
	named := r.list(ctx, obj.GetNamespace(), client.MatchingFields{workloadIndex: ref.String()}, nil)
	for _, secret := range workload.ReferencedSecrets(obj) { // its consumers' keyrings
		named = append(named, r.list(ctx, obj.GetNamespace(), client.MatchingFields{secretNameIndex: secret}, nil)...)
	}
	selected := r.list(ctx, obj.GetNamespace(), client.MatchingFields{selectorIndex: selectsWorkloads}, func(kr *mrtrv1alpha1.MRTRKeyring) bool {
		return matches(kr.Spec.WorkloadSelector, obj)
	})
	return append(named, selected...)
}

// keyringsForPod maps a pod to the keyrings it acknowledges, whose Secret it references, or whose
// pod selector matches its labels: those whose gate it may open or close, in Reload delivery.
// (A pod of a target that references none of them still wakes its keyring through its workload's
// status.)
func (r *MRTRKeyringReconciler) keyringsForPod(ctx context.Context, pod client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, key := range workload.AcknowledgementKeys(pod) {
		reqs = append(reqs, r.list(ctx, pod.GetNamespace(), client.MatchingFields{acknowledgementIndex: key}, nil)...)
	}
	for _, secret := range workload.ReferencedSecrets(pod) {
		reqs = append(reqs, r.list(ctx, pod.GetNamespace(), client.MatchingFields{secretNameIndex: secret}, nil)...)
	}
	return append(reqs, r.list(ctx, pod.GetNamespace(), client.MatchingFields{selectorIndex: selectsPods}, func(kr *mrtrv1alpha1.MRTRKeyring) bool {
		return matches(kr.Spec.PodSelector, pod)
	})...)
}

// matches reports whether sel, a keyring's selector, selects obj's labels.
func matches(sel *metav1.LabelSelector, obj client.Object) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(obj.GetLabels()))
}

// list returns requests for the cached keyrings in namespace that match (an index lookup; nil for
// all) and keep selects. keep must only read: the keyrings are the cache's own objects, not copies
// (a copy of each per event was most of the operator's CPU with thousands of keyrings).
func (r *MRTRKeyringReconciler) list(ctx context.Context, namespace string, match client.MatchingFields, keep func(*mrtrv1alpha1.MRTRKeyring) bool) []reconcile.Request {
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	if match != nil {
		opts = append(opts, match)
	}
	var krs mrtrv1alpha1.MRTRKeyringList
	if err := r.List(ctx, &krs, opts...); err != nil {
		logf.FromContext(ctx).Error(err, "list keyrings to wake", "namespace", namespace)
		return nil
	}
	var reqs []reconcile.Request
	for i := range krs.Items {
		if keep == nil || keep(&krs.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: krs.Items[i].Name}})
		}
	}
	return reqs
}

// workloadChanged lets through workload updates that can change a rollout or a selection: the
// spec (generation), the status, the labels. Resyncs and metadata-only noise are dropped.
type workloadChanged struct {
	predicate.Funcs
}

func (workloadChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
		return true
	}
	return !equality.Semantic.DeepEqual(workload.Status(e.ObjectOld), workload.Status(e.ObjectNew))
}

// podChanged lets through pod events that can move a gate: a pod appears or goes, starts
// terminating, changes phase or labels, or acknowledges. Status noise (conditions, IPs) is dropped.
type podChanged struct {
	predicate.Funcs
}

func (podChanged) Update(e event.UpdateEvent) bool {
	o, n, ok := pods(e.ObjectOld, e.ObjectNew)
	if !ok {
		return true
	}
	return (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || o.Status.Phase != n.Status.Phase ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !acknowledgementsEqual(o, n)
}

func pods(a, b client.Object) (*corev1.Pod, *corev1.Pod, bool) {
	o, ok1 := a.(*corev1.Pod)
	n, ok2 := b.(*corev1.Pod)
	return o, n, ok1 && ok2
}

func acknowledgementsEqual(a, b *corev1.Pod) bool {
	keys := workload.AcknowledgementKeys(a)
	if !slices.Equal(keys, workload.AcknowledgementKeys(b)) {
		return false
	}
	for _, k := range keys {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}

// CacheOptions are the manager's cache options, watching namespaces (all of them when empty). The
// cache holds what the operator reads and no more, so that its memory follows the keyrings, not
// the cluster:
//   - Secrets of type mrtr.dev/keyring only (a field selector: the API server filters them), data
//     included, so that a pass reads its Secret without a request; managed fields but the time of
//     the operator's own write dropped;
//   - Pods stripped to names, labels, acknowledgements and Secret references (workload.StripPod);
//   - Deployments, StatefulSets, DaemonSets and Rollouts stripped to their metadata, status, rollout
//     settings and the pod template's annotations and Secret references (workload.StripWorkload);
//   - everything else without managed fields and kubectl's last-applied-configuration annotation,
//     which repeats the whole object (a Secret's data too, for Secrets applied with kubectl).
func CacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		// The workload kinds are stripped by the default transform, not by ByObject entries: an
		// entry makes the cache ask the RESTMapper about its kind when the manager starts, which
		// fails for a kind the API server does not serve (a CRD not installed yet).
		DefaultTransform: stripDefault,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Transform: workload.StripPod},
			&corev1.Node{}: {Transform: stripNode},
			&corev1.Secret{}: {
				Field:     fields.OneTermEqualSelector("type", keyring.SecretType),
				Transform: stripSecret,
			},
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// MemberCacheOptions are the cache options of a member cluster: the operator's own, without
// Nodes, which the hub never reads in a member (their readiness is unknown there), and of its
// Secrets only the cluster keyrings' copies (labelled ClusterKeyringLabel): a member holds no lead
// Secret and no MRTRKeyring's Secret the hub reads, and its other keyring Secrets are none of the
// hub's business. A Secret of a copy's name without the label is read live (gatherPlace), and is
// a conflict. The registry holds the kinds of memberScoped per selected namespace only, with these
// options too (members.Registry.Scoped).
func MemberCacheOptions() cache.Options {
	opts := CacheOptions()
	for obj := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Node:
			delete(opts.ByObject, obj)
		case *corev1.Secret:
			copies, err := labels.NewRequirement(mrtrv1alpha1.ClusterKeyringLabel, selection.Exists, nil)
			if err != nil {
				panic(err) // a constant label key: never
			}
			by := opts.ByObject[obj]
			by.Label = labels.NewSelector().Add(*copies)
			opts.ByObject[obj] = by
		}
	}
	return opts
}

// stripDefault is stripWorkload for a workload, stripApplied for anything else.
func stripDefault(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok && workload.Is(o) {
		return stripWorkload(obj)
	}
	return stripApplied(obj)
}

// lastAppliedAnnotation is kubectl's copy of the last applied object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripApplied drops managed fields and the last-applied annotation from a cached object.
func stripApplied(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
		if a := o.GetAnnotations(); a != nil {
			delete(a, lastAppliedAnnotation)
		}
	}
	return obj, nil
}

// stripWorkload is stripApplied, then workload.StripWorkload (a transform of its own replaces the
// default one), keeping of the managed fields only who wrote each stamp.
func stripWorkload(obj any) (any, error) {
	// Who wrote each stamp is kept (rotation/stampfight.go decides from it), and nothing else of managed fields.
	var stampWriters []metav1.ManagedFieldsEntry
	if o, ok := obj.(client.Object); ok {
		stampWriters = workload.StampWriters(o)
	}
	obj, err := stripApplied(obj)
	if err != nil {
		return nil, err
	}
	obj, err = workload.StripWorkload(obj)
	if o, ok := obj.(client.Object); ok && err == nil {
		o.SetManagedFields(stampWriters)
	}
	return obj, err
}

// stripSecret is stripApplied for a keyring Secret, but it keeps the time of mrtrv1alpha1.FieldManager's last
// write (lastWrittenAt reads it), without the fields it lists.
func stripSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	var ours []metav1.ManagedFieldsEntry
	for _, m := range s.ManagedFields {
		if m.Manager == mrtrv1alpha1.FieldManager && m.Subresource == "" {
			ours = append(ours, metav1.ManagedFieldsEntry{Manager: m.Manager, Operation: m.Operation, Time: m.Time})
		}
	}
	if _, err := stripApplied(s); err != nil {
		return nil, err
	}
	s.ManagedFields = ours
	return s, nil
}

// stripNode keeps of a Node its name and its Ready condition: all nodeReadiness reads.
func stripNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{TypeMeta: node.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion}}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}
