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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Key sources (spec.keySource type Secret). The manager's cache holds keyring Secrets only (a
// field selector on their type), and a source Secret is whatever its writer made it (Opaque, as
// the External Secrets Operator writes it). So the source is watched through a cache of its own
// that holds the metadata of Secrets only (a metadata watch: no Secret data crosses the wire or
// stays in memory), which is all it takes to wake the keyrings that name one, and each pass reads
// the source itself live, from the API server. The operator only reads it.

// sourceNameIndex holds, for a keyring with a source Secret, that Secret's name.
const sourceNameIndex = "mrtr.dev/keySource"

// defaultSourceDataKey is the data key of spec.keySource.secret.key when it is not set (the CRD
// defaults it; an object written before the default applies reads the same).
const defaultSourceDataKey = "key"

// sourceName is the source Secret's name of spec, "" without one.
func sourceName(spec *mrtrv1alpha1.MRTRKeyringSpec) string {
	if !spec.KeySource.IsSecret() {
		return ""
	}
	return spec.KeySource.Secret.Name
}

// observeSource reads the source Secret of spec in namespace live and classifies it: SourceUnused
// without one. Its bytes go to rotation.ObserveSource and nowhere else.
func (s *Shared) observeSource(ctx context.Context, namespace string, spec *mrtrv1alpha1.MRTRKeyringSpec) (rotation.SourceObservation, error) {
	name := sourceName(spec)
	if name == "" {
		return rotation.SourceObservation{}, nil
	}
	dataKey := cmp.Or(spec.KeySource.Secret.Key, defaultSourceDataKey)
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var sec corev1.Secret
	switch err := s.APIReader.Get(ctx, key, &sec); {
	case apierrors.IsNotFound(err):
		return rotation.ObserveSource(false, name, dataKey, nil, nil), nil
	case err != nil:
		return rotation.SourceObservation{}, fmt.Errorf("read source Secret %s: %w", key, err)
	}
	return rotation.ObserveSource(true, name, dataKey, sec.Data, sec.Annotations), nil
}

// sourceCache is the cache of Secret metadata that wakes keyrings when a source Secret changes,
// made once for both reconcilers and run by the manager.
func (s *Shared) sourceCache(mgr ctrl.Manager) (cache.Cache, error) {
	s.sourcesOnce.Do(func() {
		// Keyring Secrets are left out (the API server filters them): the manager's cache holds
		// them in full already, and their writes are most of a rotation's Secret events, which
		// this cache would decode a second time. A keyring Secret named as a source wakes its
		// keyrings through that cache's watch instead (alsoAsSource).
		opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultTransform: stripToIdentity,
			DefaultFieldSelector: fields.OneTermNotEqualSelector("type", keyring.SecretType)}
		if len(s.Namespaces) > 0 {
			opts.DefaultNamespaces = map[string]cache.Config{}
			for _, ns := range s.Namespaces {
				opts.DefaultNamespaces[ns] = cache.Config{}
			}
		}
		var c cache.Cache
		if c, s.sourcesErr = cache.New(mgr.GetConfig(), opts); s.sourcesErr != nil {
			return
		}
		if s.sourcesErr = mgr.Add(c); s.sourcesErr == nil {
			s.sources = c
		}
	})
	return s.sources, s.sourcesErr
}

// stripToIdentity keeps of an object what maps it to keyrings and tells a change: its name,
// namespace and resourceVersion.
func stripToIdentity(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		m.ObjectMeta = metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion, UID: m.UID}
	}
	return obj, nil
}

// secretMetadata is the metadata-only Secret the source cache watches.
func secretMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// watchSources wakes the keyrings that mapTo names for each change of a Secret, as metadata.
func (s *Shared) watchSources(mgr ctrl.Manager, mapTo func(context.Context, *metav1.PartialObjectMetadata) []reconcile.Request) (source.TypedSource[reconcile.Request], error) {
	c, err := s.sourceCache(mgr)
	if err != nil {
		return nil, err
	}
	return source.Kind(c, secretMetadata(), handler.TypedEnqueueRequestsFromMapFunc(mapTo),
		predicate.TypedResourceVersionChangedPredicate[*metav1.PartialObjectMetadata]{}), nil
}

// alsoAsSource maps a keyring Secret as fn does and, as a key source, as mapSource does: the
// cache of Secret metadata that wakes the keyrings of a source leaves keyring Secrets out
// (sourceCache), so the watch of keyring Secrets wakes those that name one as their source.
func alsoAsSource(fn handler.MapFunc, mapSource func(context.Context, *metav1.PartialObjectMetadata) []reconcile.Request) handler.MapFunc {
	return func(ctx context.Context, s client.Object) []reconcile.Request {
		md := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: s.GetNamespace(), Name: s.GetName()}}
		return append(fn(ctx, s), mapSource(ctx, md)...)
	}
}

// keyringsForSource maps a Secret to the keyrings of its namespace that take their keys from it.
func (r *MRTRKeyringReconciler) keyringsForSource(ctx context.Context, m *metav1.PartialObjectMetadata) []reconcile.Request {
	return r.list(ctx, m.Namespace, client.MatchingFields{sourceNameIndex: m.Name}, nil)
}

// clusterKeyringsForSource maps a Secret of the operator's namespace to the cluster keyrings that
// take their keys from it.
func (r *ClusterMRTRKeyringReconciler) clusterKeyringsForSource(ctx context.Context, m *metav1.PartialObjectMetadata) []reconcile.Request {
	if m.Namespace != r.ClusterKeyrings {
		return nil
	}
	return r.clusterKeyrings(ctx, func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
		return sourceName(&ck.Spec.MRTRKeyringSpec) == m.Name
	})
}
