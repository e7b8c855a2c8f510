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

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// inFlightPriority is the work-queue priority of a pass that carries work in progress forward: a
// workload or pod that keyrings wait on changed (a rollout completed, a pod acknowledged), or a
// timed wait of a rotation ended. Such passes run before those that start new work (a keyring
// created or edited, a rotation requested: priority 0), so that when thousands of keyrings rotate
// at once each one's next step follows its rollout within a pass or two instead of after the whole
// queue, and each keyring spends as little time as it can between keys. Order is all it changes:
// controller-runtime still never runs two passes of one keyring at once.
const inFlightPriority = 10

// enqueueInFlight is handler.EnqueueRequestsFromMapFunc at inFlightPriority. The initial list of a
// cache keeps its low priority, so that a restarted operator with thousands of workloads does not
// put them all before a keyring that is being edited.
func enqueueInFlight(fn handler.MapFunc) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.IsInInitialList {
				addAt(q, handler.LowPriority, fn(ctx, e.Object))
				return
			}
			addAt(q, inFlightPriority, fn(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			addAt(q, inFlightPriority, append(fn(ctx, e.ObjectOld), fn(ctx, e.ObjectNew)...))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			addAt(q, inFlightPriority, fn(ctx, e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			addAt(q, inFlightPriority, fn(ctx, e.Object))
		},
	}
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

// requeuePriority is the priority of a keyring's next timed pass: inFlightPriority while a rotation
// or revocation is under way (the end of a TTL wait, a propagation delay, a deadline), 0 in Stable,
// where the next pass starts new work (the next scheduled rotation).
func requeuePriority(phase mrtrv1alpha1.Phase) *int {
	if phase == mrtrv1alpha1.PhaseStable || phase == "" {
		return new(0)
	}
	return new(inFlightPriority)
}
