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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

func TestOwnWritesWaitsOnlyForACacheBehindTheLastWrite(t *testing.T) {
	keyring := func(rv string) client.Object {
		return &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kr", ResourceVersion: rv}}
	}
	deployment := func(rv string) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kr", ResourceVersion: rv}}
	}
	var w ownWrites
	if w.behind(keyring("5")) {
		t.Fatal("behind without any write recorded")
	}
	w.wrote(keyring("100"))
	for _, tc := range []struct {
		cached string
		behind bool
	}{
		{"99", true},
		{"9", true}, // shorter is older: the versions compare as integers, not as strings
		{"100", false},
	} {
		if got := w.behind(keyring(tc.cached)); got != tc.behind {
			t.Errorf("behind(%q) after a write at 100 = %v, want %v", tc.cached, got, tc.behind)
		}
	}
	// Once the cache has caught up, the write is forgotten: a later write by someone else (a
	// higher version) or a re-created keyring is never waited for.
	if w.behind(keyring("50")) {
		t.Error("still waiting after the cache had shown the write")
	}
	// Objects of another kind with the same name are other objects; any one behind holds the pass.
	w.wrote(deployment("300"))
	if w.behind(keyring("50")) {
		t.Error("a Deployment's write held its keyring namesake back")
	}
	if !w.behind(keyring("50"), deployment("299")) {
		t.Error("a Deployment behind the stamp did not hold the pass back")
	}

	w.wrote(keyring("200"))
	if w.behind(keyring("not-an-integer")) {
		t.Error("an uncomparable resourceVersion held the pass back")
	}
	w.wrote(keyring("300"))
	w.forget(keyring(""))
	if w.behind(keyring("1")) {
		t.Error("a forgotten keyring held the pass back")
	}
}

// TestQueueOrdersPassesByProgress queues, through the handlers, a pass of a keyring in each state
// and checks the order they run in: a revocation, then each keyring whose next pass writes its next
// keyring, then a start and a completion in the order they came, then one with nothing under way,
// then an initial list.
func TestQueueOrdersPassesByProgress(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	phases := map[string]mrtrv1alpha1.Phase{
		"revoking": mrtrv1alpha1.PhaseRevoking, "accepting": mrtrv1alpha1.PhaseAccepting,
		"sealing": mrtrv1alpha1.PhaseSealingWithNew, "waiting": mrtrv1alpha1.PhaseWaitingTTL,
		"removing": mrtrv1alpha1.PhaseRemoving, "stable": mrtrv1alpha1.PhaseStable,
	}
	priorityOf := func(_ context.Context, r reconcile.Request) int {
		return progressPriority(&mrtrv1alpha1.MRTRKeyringStatus{Phase: phases[r.Name]})
	}
	mapTo := func(names ...string) handler.MapFunc {
		return func(context.Context, client.Object) []reconcile.Request {
			reqs := make([]reconcile.Request, 0, len(names))
			for _, n := range names {
				reqs = append(reqs, req(n))
			}
			return reqs
		}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}
	keyring := func(name string, annotations map[string]string) *mrtrv1alpha1.MRTRKeyring {
		return &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations}}
	}

	// In the order that runs them last first: the queue must reorder them all.
	enqueueByProgress(mapTo("initial"), priorityOf).Create(ctx, event.CreateEvent{Object: dep, IsInInitialList: true}, q)
	q.Add(req("edited")) // the For watch: an edit, at 0
	enqueueByProgress(mapTo("stable", "removing"), priorityOf).Update(ctx, event.UpdateEvent{ObjectOld: dep, ObjectNew: dep}, q)
	q.Add(req("requested"))
	enqueueRequests().Update(ctx, event.UpdateEvent{ObjectOld: keyring("requested", nil),
		ObjectNew: keyring("requested", map[string]string{mrtrv1alpha1.RotateAnnotation: "now"})}, q)
	enqueueByProgress(mapTo("accepting", "sealing", "waiting"), priorityOf).Update(ctx, event.UpdateEvent{ObjectOld: dep, ObjectNew: dep}, q)
	enqueueRequests().Update(ctx, event.UpdateEvent{ObjectOld: keyring("revoke", map[string]string{mrtrv1alpha1.RotateAnnotation: "now"}),
		ObjectNew: keyring("revoke", map[string]string{mrtrv1alpha1.RotateAnnotation: "now", mrtrv1alpha1.RevokeAnnotation: "k1"})}, q)
	enqueueByProgress(mapTo("revoking"), priorityOf).Update(ctx, event.UpdateEvent{ObjectOld: dep, ObjectNew: dep}, q)

	want := []struct {
		name     string
		priority int
	}{
		{"revoke", revokingPriority}, {"revoking", revokingPriority},
		{"accepting", rotatingPriority}, {"sealing", rotatingPriority}, {"waiting", rotatingPriority},
		{"removing", endPriority}, {"requested", endPriority}, // in the order they reached it

		{"edited", 0}, {"stable", 0},
		{"initial", handler.LowPriority},
	}
	if n := q.Len(); n != len(want) { // Len also moves what was added into the queue proper
		t.Fatalf("%d items queued, want %d", n, len(want))
	}
	for _, w := range want {
		item, priority, _ := q.GetWithPriority()
		if item != req(w.name) || priority != w.priority {
			t.Errorf("got %s at priority %d, want %s at %d", item.Name, priority, w.name, w.priority)
		}
		q.Done(item)
	}
}

func TestRequestPriority(t *testing.T) {
	rotate, revoke := mrtrv1alpha1.RotateAnnotation, mrtrv1alpha1.RevokeAnnotation
	for _, tc := range []struct {
		name          string
		before, after map[string]string
		want          int
	}{
		{"a rotation requested", nil, map[string]string{rotate: "a"}, endPriority},
		{"a rotation requested again", map[string]string{rotate: "a"}, map[string]string{rotate: "b"}, endPriority},
		{"a request removed", map[string]string{rotate: "a"}, nil, -1},
		{"a revocation requested", nil, map[string]string{revoke: "1:k1"}, revokingPriority},
		{"both at once", nil, map[string]string{rotate: "a", revoke: "1:k1"}, revokingPriority},
		{"another annotation", nil, map[string]string{"team": "x"}, -1},
	} {
		if got := requestPriority(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: requestPriority = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRequeuePriority(t *testing.T) {
	for phase, want := range map[mrtrv1alpha1.Phase]int{
		"": endPriority, mrtrv1alpha1.PhaseStable: endPriority,
		mrtrv1alpha1.PhaseAccepting: rotatingPriority, mrtrv1alpha1.PhaseSealingWithNew: rotatingPriority,
		mrtrv1alpha1.PhaseWaitingTTL: rotatingPriority, mrtrv1alpha1.PhaseRemoving: endPriority,
		mrtrv1alpha1.PhaseRevoking: revokingPriority,
	} {
		if got := *requeuePriority(phase); got != want {
			t.Errorf("requeuePriority(%q) = %d, want %d", phase, got, want)
		}
	}
}

// TestEnqueueByProgressMapsTheOldObjectOnlyWhenItMayMapElsewhere counts the mappings of an update:
// one of status only maps the new object; one of labels, annotations or spec (generation), or of
// an object without a generation, maps the old one too. Each keyring is asked its priority once.
func TestEnqueueByProgressMapsTheOldObjectOnlyWhenItMayMapElsewhere(t *testing.T) {
	ctx := context.Background()
	dep := func(generation int64, labels, annotations map[string]string, ready int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", Generation: generation, Labels: labels, Annotations: annotations},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
		}
	}
	app := map[string]string{"app": "a"}
	for _, tc := range []struct {
		name     string
		old, new *appsv1.Deployment
		mapped   int
	}{
		{"status only", dep(3, app, app, 0), dep(3, app, app, 1), 1},
		{"labels", dep(3, app, nil, 0), dep(3, map[string]string{"app": "b"}, nil, 0), 2},
		{"annotations", dep(3, nil, nil, 0), dep(3, nil, app, 0), 2},
		{"spec", dep(3, app, nil, 0), dep(4, app, nil, 0), 2},
		{"no generation", dep(0, app, nil, 0), dep(0, app, nil, 1), 2},
	} {
		q := priorityqueue.New[reconcile.Request]("test")
		mapped, asked := 0, 0
		fn := func(context.Context, client.Object) []reconcile.Request {
			mapped++
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "kr"}}}
		}
		priorityOf := func(context.Context, reconcile.Request) int { asked++; return 0 }
		enqueueByProgress(fn, priorityOf).Update(ctx, event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, q)
		if mapped != tc.mapped || asked != 1 || q.Len() != 1 {
			t.Errorf("%s: mapped %d times (want %d), priority asked %d times (want 1), %d queued (want 1)",
				tc.name, mapped, tc.mapped, asked, q.Len())
		}
		q.ShutDown()
	}
}
