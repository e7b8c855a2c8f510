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
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The kubelet refreshes a pod's Secret volumes only when it syncs the pod: every syncFrequency (1m
// by default) plus its Secret cache's TTL, or at once when the Pod object changes. So, in Reload
// delivery, right after each Secret write the operator changes one annotation on each pod that
// must load the keyring it wrote: the new keyring reaches the pods in about a second instead of up
// to two minutes (docs/benchmarks.md). The annotation's value is the fingerprint written and the
// number of the nudge, "<fingerprint>/<n>" (nudgeValue): each nudge changes it, so that each one
// changes the Pod, even on a pod that already carries the fingerprint (set by an earlier nudge that
// the kubelet missed, or by anyone else who may patch pods). A patch that changes nothing would
// wake no kubelet.

// syncPods writes WrittenAnnotation (nudgeValue) on the pods Step named to nudge (Decision.Nudge,
// which says which pods must load fingerprint). It is a nudge, not a step of the rotation: a
// refused or failed patch is logged and left to the kubelet's own sync, which reloadDeadline
// covers. Each patch is conditional on the uid and resourceVersion the pod was read at (seen), so
// that it never lands on a pod replaced or changed since; a pod changed since (it acknowledged, or
// its controller touched it) is patched once more on its uid alone. It returns how many pods it
// annotated.
func (r *Shared) syncPods(ctx context.Context, kr keyringPlace, fingerprint string, pods []string,
	seen map[string]seenPod) int {
	synced, failed := 0, 0
	var firstErr error
	for _, name := range pods {
		p := seen[name]
		value := nudgeValue(fingerprint, p.written)
		err := r.annotatePod(ctx, kr.Namespace, name, value, p.version)
		if apierrors.IsConflict(err) {
			// The same pod, changed since it was read (most often its own acknowledgement): the
			// annotation is set whatever else changed, so the uid alone still keeps the patch off a
			// pod that replaced it. Its nudge is one further on, so that it changes the Pod even
			// if what changed was an earlier nudge of the same number.
			value = nudgeValue(fingerprint, value)
			err = r.annotatePod(ctx, kr.Namespace, name, value, metav1.Preconditions{UID: p.version.UID})
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

// annotatePod merge-patches WrittenAnnotation = value on one pod, conditional on pre: a patch that
// names the uid and resourceVersion fails (NotFound or Conflict) unless the pod still has both.
func (r *Shared) annotatePod(ctx context.Context, namespace, name, value string, pre metav1.Preconditions) error {
	meta := map[string]any{"annotations": map[string]string{mrtrv1alpha1.WrittenAnnotation: value}}
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

// maxNudges bounds the number of a nudge: past it, the count starts again at 1. It only has to
// differ from the value the pod carries.
const maxNudges = 999_999

// nudgeValue is the value of WrittenAnnotation that nudges a pod carrying current to load
// fingerprint: "<fingerprint>/<n>", where n is one more than current's when current is a nudge of
// the same fingerprint, else 1. It always differs from current.
func nudgeValue(fingerprint, current string) string {
	n := 1
	if rest, ok := strings.CutPrefix(current, fingerprint+"/"); ok {
		if last, err := strconv.Atoi(rest); err == nil && last >= 1 && last < maxNudges && strconv.Itoa(last) == rest {
			n = last + 1
		}
	}
	return fingerprint + "/" + strconv.Itoa(n)
}
