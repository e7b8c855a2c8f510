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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
)

// The kubelet refreshes a pod's Secret volumes only when it syncs the pod: every syncFrequency (1m
// by default) plus its Secret cache's TTL, or at once when the Pod object changes. So, in Reload
// delivery, right after each Secret write the operator changes one annotation on each pod that
// must load the keyring it wrote: the new keyring reaches the pods in about a second instead of up
// to two minutes (docs/benchmarks.md). The annotation names the fingerprint written, so a second
// pass over the same write changes nothing.

// syncPods writes WrittenAnnotation = fingerprint on the pods in that must load it: the pods of
// every target and the selected pods that have not acknowledged it and are not terminating (a pod
// on its way out is not synced for a new volume). It is a nudge, not a step of the rotation: a
// refused or failed patch is logged and left to the kubelet's own sync, which reloadDeadline
// covers. Each patch is conditional on the uid and resourceVersion the pod was read at (versions),
// so that it never lands on a pod replaced or changed since; a pod changed since (it acknowledged, or
// its controller touched it) is patched once more on its uid alone. It returns how many pods it
// annotated.
func (r *MRTRKeyringReconciler) syncPods(ctx context.Context, kr *mrtrv1alpha1.MRTRKeyring, in rotation.Input,
	fingerprint string, versions map[string]metav1.Preconditions) int {
	if !in.Settings.Reload() || kr.Spec.ReloadTrigger == mrtrv1alpha1.ReloadTriggerNone {
		return 0
	}
	var pods []string
	for _, w := range in.Workloads {
		pods = appendToSync(pods, w.Pods, fingerprint)
	}
	pods = appendToSync(pods, in.SelectedPods, fingerprint)
	synced, failed := 0, 0
	var firstErr error
	for _, name := range pods {
		err := r.annotatePod(ctx, kr.Namespace, name, fingerprint, versions[name])
		if apierrors.IsConflict(err) {
			// The same pod, changed since it was read (most often its own acknowledgement): the
			// annotation is set whatever else changed, so the uid alone still keeps the patch off a
			// pod that replaced it.
			err = r.annotatePod(ctx, kr.Namespace, name, fingerprint, metav1.Preconditions{UID: versions[name].UID})
		}
		switch {
		case err == nil:
			synced++
		case apierrors.IsNotFound(err):
		default:
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("annotate pod %s/%s: %w", kr.Namespace, name, apiReason(err))
			}
		}
	}
	if failed > 0 {
		logf.FromContext(ctx).Info("could not annotate pods so that the kubelet syncs them at once; "+
			"they get the new keyring at the kubelet's own pace", "failed", failed, "of", len(pods), "error", firstErr.Error())
	}
	return synced
}

// annotatePod merge-patches WrittenAnnotation on one pod, conditional on pre: a patch that names
// the uid and resourceVersion fails (NotFound or Conflict) unless the pod still has both.
func (r *MRTRKeyringReconciler) annotatePod(ctx context.Context, namespace, name, fingerprint string, pre metav1.Preconditions) error {
	meta := map[string]any{"annotations": map[string]string{mrtrv1alpha1.WrittenAnnotation: fingerprint}}
	if pre.UID != nil {
		meta["uid"] = *pre.UID
	}
	if pre.ResourceVersion != nil {
		meta["resourceVersion"] = *pre.ResourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return r.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(mrtrv1alpha1.FieldManager))
}

func appendToSync(names []string, pods []rotation.Pod, fingerprint string) []string {
	for _, p := range pods {
		if !p.Terminating && p.Loaded != fingerprint {
			names = append(names, p.Name)
		}
	}
	return names
}
