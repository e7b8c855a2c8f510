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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// servedKinds watches the kinds the RESTMapper knows, and a kind it learns of later (a CRD
// installed) on its next look, once; the envtest suite does the same with the real API server.
func TestServedKindsWatchAKindOnceItIsServed(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range []workload.Kind{workload.Deployment, workload.StatefulSet, workload.DaemonSet} {
		gvk, _ := workload.GVK(k)
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	var watched []workload.Kind
	var indexed int
	s := &servedKinds{mapper: mapper, interval: time.Hour, served: map[workload.Kind]bool{},
		index: func(context.Context, client.Object) error { indexed++; return nil }}
	ctx := context.Background()
	if err := s.subscribe(ctx, func(_ context.Context, obj client.Object) error {
		k, err := workload.KindOf(obj)
		watched = append(watched, k)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if s.Served(workload.ArgoRolloutKind) || !s.Served(workload.Deployment) {
		t.Fatalf("served before the CRD: %v", s.served)
	}
	if got := s.unserved(); !slices.Equal(got, []workload.Kind{workload.ArgoRolloutKind}) {
		t.Fatalf("unserved = %v", got)
	}
	gvk, _ := workload.GVK(workload.ArgoRolloutKind)
	mapper.Add(gvk, meta.RESTScopeNamespace) // the CRD is installed
	if err := s.add(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.add(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.Served(workload.ArgoRolloutKind) || len(s.unserved()) != 0 {
		t.Fatalf("not served after the CRD: %v", s.served)
	}
	want := []workload.Kind{workload.Deployment, workload.StatefulSet, workload.DaemonSet, workload.ArgoRolloutKind}
	if !slices.Equal(watched, want) {
		t.Errorf("watched %v, want each kind once: %v", watched, want)
	}
	// A second controller (the cluster keyrings') subscribing later watches every kind served
	// already, and no kind is indexed twice.
	var second []workload.Kind
	if err := s.subscribe(ctx, func(_ context.Context, obj client.Object) error {
		k, err := workload.KindOf(obj)
		second = append(second, k)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(second)
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	if !slices.Equal(second, sorted) || indexed != len(want) {
		t.Errorf("second controller watched %v (want %v); indexed %d times (want %d)", second, sorted, indexed, len(want))
	}
}
