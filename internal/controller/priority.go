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
	"maps"
	"slices"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Work-queue priorities. controller-runtime's priority queue runs the highest first, and those of
// one priority in the order they were added. They matter only when many keyrings have work at once
// (a window that opens for all of them, a rotation requested of all). A rotation is rounds of a
// write and a rollout around the TTL wait; then:
//   - a pass that writes the next keyring of a rotation under way goes first, so that each
//     keyring's keys move a pass or two after its rollout allows, not after the whole queue;
//   - a pass at either end of a rotation, its start or its completion, next, in the order they
//     came.
//
// While starts waited behind every pass of the rotations under way, the last keyrings to start ran
// their whole rotation, TTL wait included, after all others had ended: 2.8 s of idle core time at
// the end of a 31 s rotation of 1000 keyrings with a TTL of 1 s (0.2 to 0.3 s now). Completions
// wait no longer than starts: behind them all, they would come in one burst at the end, and so
// would their events. Order is all the priorities change: controller-runtime never runs two
// passes of one keyring at once.
const (
	// revokingPriority is a revocation's, under way or just requested: until it is written and
	// rolled out, pods open tokens of a key someone declared compromised.
	revokingPriority = 40
	// rotatingPriority is Accepting's, SealingWithNew's and WaitingTTL's, whose next pass writes
	// the next keyring.
	rotatingPriority = 30
	// endPriority is a Stable keyring's when its pass may start a rotation (one requested through
	// mrtr.dev/rotate, or its timed pass: a rotation that falls due, a window that opens), and
	// Removing's, whose next pass reports the rotation complete.
	endPriority = 20
	// A Stable keyring's pass for anything else (an edit, a workload that changed) is at 0, a
	// cache's initial list at handler.LowPriority: a restarted operator with thousands of workloads
	// does not put them before a keyring that is being edited.
)

// progressPriority is the priority of a pass of a keyring with status st woken by a change of what
// it rotates (a workload, a pod, a member cluster).
func progressPriority(st *mrtrv1alpha1.MRTRKeyringStatus) int {
	switch st.Phase {
	case mrtrv1alpha1.PhaseRevoking:
		return revokingPriority
	case mrtrv1alpha1.PhaseAccepting, mrtrv1alpha1.PhaseSealingWithNew, mrtrv1alpha1.PhaseWaitingTTL:
		return rotatingPriority
	case mrtrv1alpha1.PhaseRemoving:
		return endPriority
	}
	return 0
}

// requeuePriority is the priority of the timed pass after a pass that left the keyring in phase: a
// Stable keyring's may start a rotation.
func requeuePriority(phase mrtrv1alpha1.Phase) *int {
	if phase == mrtrv1alpha1.PhaseStable || phase == "" {
		return new(endPriority)
	}
	return new(progressPriority(&mrtrv1alpha1.MRTRKeyringStatus{Phase: phase}))
}

// requestPriority is the priority of a pass after a keyring's annotations went from before to
// after: revokingPriority for a changed mrtr.dev/revoke, endPriority for a new mrtr.dev/rotate, and
// -1 for neither (the For watch's own pass at 0 stands).
func requestPriority(before, after map[string]string) int {
	switch {
	case before[mrtrv1alpha1.RevokeAnnotation] != after[mrtrv1alpha1.RevokeAnnotation]:
		return revokingPriority
	case before[mrtrv1alpha1.RotateAnnotation] != after[mrtrv1alpha1.RotateAnnotation] && after[mrtrv1alpha1.RotateAnnotation] != "":
		return endPriority
	}
	return -1
}

// enqueueRequests adds a keyring whose request annotations changed at requestPriority. The For
// watch queues every such change already, at 0; the queue keeps one item, at the higher priority.
func enqueueRequests() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if p := requestPriority(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()); p >= 0 {
				addAt(q, p, []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)}})
			}
		},
	}
}

// enqueueByProgress is handler.EnqueueRequestsFromMapFunc with each keyring at the priority of
// where it stands (priorityOf, from the cached keyring), and a cache's initial list at
// handler.LowPriority. An update maps the old object only when what fn reads of it may differ
// (sameMapping), and each keyring is added once.
func enqueueByProgress(fn handler.MapFunc, priorityOf func(context.Context, reconcile.Request) int) handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
		for i, r := range reqs {
			if !slices.Contains(reqs[:i], r) {
				addAt(q, priorityOf(ctx, r), []reconcile.Request{r})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				addAt(q, handler.LowPriority, fn(ctx, e.Object))
				return
			}
			add(ctx, q, fn(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			reqs := fn(ctx, e.ObjectNew)
			if !sameMapping(e.ObjectOld, e.ObjectNew) {
				reqs = append(reqs, fn(ctx, e.ObjectOld)...)
			}
			add(ctx, q, reqs)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, fn(ctx, e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, fn(ctx, e.Object))
		},
	}
}

// sameMapping reports whether the map functions of the watches by progress (keyringsForWorkload,
// keyringsForPod, clusterKeyringsSelecting) map old and new to the same keyrings: they read an
// object's namespace and name, labels, annotations (a pod's acknowledgements) and spec (a pod
// template's Secrets), and an unchanged generation says the spec is unchanged. Most updates are
// of status (a rollout's progress), and mapping the old copy too cost each a second round of
// index lookups. Without a generation (0: the API server does not track one) both are mapped.
func sameMapping(old, new client.Object) bool {
	return old.GetGeneration() != 0 && old.GetGeneration() == new.GetGeneration() &&
		maps.Equal(old.GetLabels(), new.GetLabels()) && maps.Equal(old.GetAnnotations(), new.GetAnnotations())
}

// addAt adds reqs to q at priority, or plainly to a queue without priorities. The queue folds
// duplicates into one item (at the highest priority asked for).
func addAt(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority int, reqs []reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: new(priority)}, reqs...)
		return
	}
	for _, r := range reqs {
		q.Add(r)
	}
}
