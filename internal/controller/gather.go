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

package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// gather reads everything rotation.Step needs (cert-manager's gatherer): the Secret (live), the
// target workloads (cached) and a fresh candidate key. It also returns the found targets, which
// apply stamps.
func (r *MRTRKeyringReconciler) gather(ctx context.Context, kr *mrtrv1alpha1.MRTRKeyring) (rotation.Input, []client.Object, error) {
	secret, err := r.readSecret(ctx, kr)
	if err != nil {
		return rotation.Input{}, nil, err
	}
	objs, err := r.targets(ctx, kr)
	if err != nil {
		return rotation.Input{}, nil, err
	}
	observed, found := observeWorkloads(kr, objs)
	generate := r.GenerateKey
	if generate == nil {
		generate = keyring.GenerateKey
	}
	keyBytes := int(kr.Spec.KeyBytes)
	if keyBytes < keyring.MinSecretBytes {
		keyBytes = keyring.MinSecretBytes
	}
	fresh, err := generate("candidate", keyBytes)
	if err != nil {
		return rotation.Input{}, nil, fmt.Errorf("generate a key for keyring %s/%s: %w", kr.Namespace, kr.Name, err)
	}
	return rotation.Input{
		Now:           r.now().Now(),
		Generation:    kr.Generation,
		Settings:      rotation.SettingsFrom(kr.Spec),
		Status:        kr.Status,
		SecretName:    kr.EffectiveSecretName(),
		Secret:        secret,
		FreshKey:      fresh,
		Workloads:     observed,
		RotateRequest: kr.Annotations[mrtrv1alpha1.RotateAnnotation],
	}, found, nil
}

// readSecret reads the keyring Secret from the API server, not the cache (see APIReader).
func (r *MRTRKeyringReconciler) readSecret(ctx context.Context, kr *mrtrv1alpha1.MRTRKeyring) (rotation.SecretObservation, error) {
	var s corev1.Secret
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: kr.Namespace, Name: kr.EffectiveSecretName()}, &s)
	if apierrors.IsNotFound(err) {
		return rotation.ObserveSecret(false, "", nil, nil), nil
	}
	if err != nil {
		return rotation.SecretObservation{}, fmt.Errorf("read Secret %s/%s: %w", kr.Namespace, kr.EffectiveSecretName(), err)
	}
	return rotation.ObserveSecret(true, string(s.Type), s.Data, s.Annotations), nil
}

// targets returns the workloads the keyring names that exist, plus those its selector matches,
// sorted and without duplicates. A named workload that does not exist is left out here and
// reported by observeWorkloads.
func (r *MRTRKeyringReconciler) targets(ctx context.Context, kr *mrtrv1alpha1.MRTRKeyring) ([]client.Object, error) {
	var out []client.Object
	seen := map[workload.Ref]bool{}
	add := func(obj client.Object) {
		ref, err := workload.RefOf(obj)
		if err == nil && !seen[ref] {
			seen[ref] = true
			out = append(out, obj)
		}
	}
	for _, w := range kr.Spec.Workloads {
		obj, err := workload.Kind(w.Kind).New()
		if err != nil {
			return nil, err
		}
		err = r.Get(ctx, types.NamespacedName{Namespace: kr.Namespace, Name: w.Name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", w.Kind, w.Name, err)
		}
		add(obj)
	}
	if kr.Spec.WorkloadSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(kr.Spec.WorkloadSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.workloadSelector: %w", err)
		}
		opts := []client.ListOption{client.InNamespace(kr.Namespace), client.MatchingLabelsSelector{Selector: sel}}
		var ds appsv1.DeploymentList
		var ss appsv1.StatefulSetList
		var dss appsv1.DaemonSetList
		for _, l := range []client.ObjectList{&ds, &ss, &dss} {
			if err := r.List(ctx, l, opts...); err != nil {
				return nil, fmt.Errorf("list workloads matching spec.workloadSelector: %w", err)
			}
		}
		for i := range ds.Items {
			add(&ds.Items[i])
		}
		for i := range ss.Items {
			add(&ss.Items[i])
		}
		for i := range dss.Items {
			add(&dss.Items[i])
		}
	}
	return out, nil
}

// observeWorkloads turns the found targets, and the named ones that were not found, into
// rotation.Workloads sorted by kind and name. It also returns the found objects in that order.
func observeWorkloads(kr *mrtrv1alpha1.MRTRKeyring, objs []client.Object) ([]rotation.Workload, []client.Object) {
	type entry struct {
		ref workload.Ref
		obs rotation.Workload
		obj client.Object
	}
	var all []entry
	found := map[workload.Ref]bool{}
	for _, obj := range objs {
		ref, _ := workload.RefOf(obj)
		ro, _ := workload.RolloutStatus(obj)
		found[ref] = true
		all = append(all, entry{ref, rotation.Workload{
			Kind: mrtrv1alpha1.WorkloadKind(ref.Kind), Name: ref.Name, Found: true,
			Stamp: workload.Hash(obj), RolledOut: ro.Done, Ready: ro.Ready, Desired: ro.Desired, Message: ro.Message,
		}, obj})
	}
	for _, w := range kr.Spec.Workloads {
		ref := workload.Ref{Kind: workload.Kind(w.Kind), Name: w.Name}
		if !found[ref] {
			found[ref] = true
			all = append(all, entry{ref: ref, obs: rotation.Workload{Kind: w.Kind, Name: w.Name}})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return a.ref.Compare(b.ref) })
	obs := make([]rotation.Workload, len(all))
	var present []client.Object
	for i, e := range all {
		obs[i] = e.obs
		if e.obj != nil {
			present = append(present, e.obj)
		}
	}
	return obs, present
}
