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
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// SetupWithManager builds the ClusterMRTRKeyring controller beside the namespaced one, over the
// same Shared: the keyrings themselves, namespaces (a selector that starts or stops matching, a
// deletion), Secrets (the lead and the copies, and a Secret of the keyring's name that appears in a
// selected namespace), and pods and workloads of the selected namespaces; with a member registry,
// each member's state and each change its cache sees (setupMembers).
func (r *ClusterMRTRKeyringReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ClusterKeyrings == "" {
		return errors.New("cluster keyrings need the namespace of their lead Secrets (Shared.ClusterKeyrings)")
	}
	if err := r.setup(mgr, workers(r.MaxConcurrentReconciles)); err != nil {
		return err
	}
	sources, err := r.watchSources(mgr, r.clusterKeyringsForSource)
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).WatchesRawSource(sources)
	if r.Members != nil {
		if err := r.setupMembers(mgr); err != nil {
			return err
		}
		b = b.WatchesRawSource(r.memberSource())
	}
	c, err := b.
		For(&mrtrv1alpha1.ClusterMRTRKeyring{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&mrtrv1alpha1.ClusterMRTRKeyring{}, enqueueRequests(), builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allClusterKeyrings),
			builder.WithPredicates(namespaceChanged{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(alsoAsSource(r.clusterKeyringsForSecret, r.clusterKeyringsForSource)),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&corev1.Pod{}, enqueueByProgress(r.clusterKeyringsSelecting, r.progressOf), builder.WithPredicates(podChanged{})).
		Named("clustermrtrkeyring").WithOptions(controller.Options{MaxConcurrentReconciles: workers(r.MaxConcurrentReconciles)}).Build(r)
	if err != nil {
		return err
	}
	return r.kinds.subscribe(context.Background(), func(_ context.Context, obj client.Object) error {
		return c.Watch(source.Kind(mgr.GetCache(), obj, enqueueByProgress(r.clusterKeyringsSelecting, r.progressOf), predicate.Predicate(workloadChanged{})))
	})
}

// allClusterKeyrings maps a namespace event to every ClusterMRTRKeyring: whether one selects it,
// or selected it, is for its pass to find (there are few cluster keyrings).
func (r *ClusterMRTRKeyringReconciler) allClusterKeyrings(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.clusterKeyrings(ctx, nil)
}

// clusterKeyringsForSecret maps a Secret to the cluster keyrings it may matter to: the one its
// label names as its lead or its copy's, and those whose Secret name it has in a namespace they
// select (a Secret that appears there is a conflict).
func (r *ClusterMRTRKeyringReconciler) clusterKeyringsForSecret(ctx context.Context, s client.Object) []reconcile.Request {
	if name := s.GetLabels()[mrtrv1alpha1.ClusterKeyringLabel]; name != "" {
		// Only a copy the keyring wrote (its uid), or a Secret in a namespace it selects: anyone may
		// label a Secret in a namespace never selected, and must not wake the keyring at will.
		var ck mrtrv1alpha1.ClusterMRTRKeyring
		if err := r.Get(ctx, types.NamespacedName{Name: name}, &ck); err != nil {
			return nil
		}
		if ns := r.namespace(ctx, s.GetNamespace()); s.GetAnnotations()[mrtrv1alpha1.ClusterKeyringUIDAnnotation] == string(ck.UID) ||
			ns != nil && selects(&ck, ns) {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		}
		return nil
	}
	if name, ok := strings.CutPrefix(s.GetLabels()[mrtrv1alpha1.KeyringLabel], mrtrv1alpha1.ClusterKeyringClaimPrefix); ok && s.GetNamespace() == r.ClusterKeyrings {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	ns := r.namespace(ctx, s.GetNamespace())
	return r.clusterKeyrings(ctx, func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
		return ns != nil && ck.EffectiveSecretName() == s.GetName() && selects(ck, ns)
	})
}

// clusterKeyringsSelecting maps a pod or workload to the cluster keyrings that select its namespace.
func (r *ClusterMRTRKeyringReconciler) clusterKeyringsSelecting(ctx context.Context, obj client.Object) []reconcile.Request {
	ns := r.namespace(ctx, obj.GetNamespace())
	if ns == nil {
		return nil
	}
	return r.clusterKeyrings(ctx, func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool { return selects(ck, ns) })
}

// progressOf is the priority of a pass of the cluster keyring req names, by where the cached copy
// stands (progressPriority); 0 when the cache has none.
func (r *ClusterMRTRKeyringReconciler) progressOf(ctx context.Context, req reconcile.Request) int {
	var ck mrtrv1alpha1.ClusterMRTRKeyring
	if err := r.Get(ctx, req.NamespacedName, &ck, client.UnsafeDisableDeepCopy); err != nil {
		return 0
	}
	return progressPriority(&ck.Status.MRTRKeyringStatus)
}

// namespace is the cached namespace of that name, nil when it is not known.
func (r *ClusterMRTRKeyringReconciler) namespace(ctx context.Context, name string) *corev1.Namespace {
	var ns corev1.Namespace
	if err := r.Get(ctx, types.NamespacedName{Name: name}, &ns); err != nil {
		return nil
	}
	return &ns
}

// clusterKeyrings returns requests for the cached cluster keyrings that keep selects (nil: all).
// keep must only read: the keyrings are the cache's own objects.
func (r *ClusterMRTRKeyringReconciler) clusterKeyrings(ctx context.Context, keep func(*mrtrv1alpha1.ClusterMRTRKeyring) bool) []reconcile.Request {
	var list mrtrv1alpha1.ClusterMRTRKeyringList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "list cluster keyrings to wake")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// namespaceChanged lets through what can change a selection: a namespace created or deleted, its
// labels, its deletion starting.
type namespaceChanged struct {
	predicate.Funcs
}

func (namespaceChanged) Create(event.CreateEvent) bool { return true }
func (namespaceChanged) Delete(event.DeleteEvent) bool { return true }
func (namespaceChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
}
