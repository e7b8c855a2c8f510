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

func TestEnqueueInFlightRunsBeforeNewWork(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	mapTo := func(name string) handler.MapFunc {
		return func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{req(name)} }
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}

	q.Add(req("new-work")) // a keyring created or a rotation requested: priority 0
	enqueueInFlight(mapTo("initial")).Create(ctx, event.CreateEvent{Object: dep, IsInInitialList: true}, q)
	enqueueInFlight(mapTo("rolled-out")).Update(ctx, event.UpdateEvent{ObjectOld: dep, ObjectNew: dep}, q)

	if n := q.Len(); n != 3 { // Len also moves what was added into the queue proper
		t.Fatalf("%d items queued, want 3", n)
	}
	for _, want := range []struct {
		name     string
		priority int
	}{{"rolled-out", inFlightPriority}, {"new-work", 0}, {"initial", handler.LowPriority}} {
		item, priority, _ := q.GetWithPriority()
		if item != req(want.name) || priority != want.priority {
			t.Errorf("got %s at priority %d, want %s at %d", item.Name, priority, want.name, want.priority)
		}
		q.Done(item)
	}
}

func TestRequeuePriority(t *testing.T) {
	for phase, want := range map[mrtrv1alpha1.Phase]int{
		"": 0, mrtrv1alpha1.PhaseStable: 0,
		mrtrv1alpha1.PhaseAccepting: inFlightPriority, mrtrv1alpha1.PhaseSealingWithNew: inFlightPriority,
		mrtrv1alpha1.PhaseWaitingTTL: inFlightPriority, mrtrv1alpha1.PhaseRemoving: inFlightPriority,
		mrtrv1alpha1.PhaseRevoking: inFlightPriority,
	} {
		if got := *requeuePriority(phase); got != want {
			t.Errorf("requeuePriority(%q) = %d, want %d", phase, got, want)
		}
	}
}
