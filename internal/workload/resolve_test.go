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

package workload

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// testScheme knows the built-in kinds and the operator's own (the Argo Rollout).
var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// The fake client is enough here: Resolve only gets and lists, and the envtest suite in
// internal/controller exercises it against a real API server through the reconciler.
func TestResolve(t *testing.T) {
	meta := func(ns, name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	mcp := map[string]string{"app": "mcp"}
	c := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(
		&appsv1.Deployment{ObjectMeta: meta("a", "web", nil)},
		&appsv1.Deployment{ObjectMeta: meta("a", "api", mcp)},
		&appsv1.StatefulSet{ObjectMeta: meta("a", "db", mcp)},
		&appsv1.DaemonSet{ObjectMeta: meta("a", "agent", mcp)},
		&appsv1.DaemonSet{ObjectMeta: meta("a", "logs", map[string]string{"app": "logs"})},
		&appsv1.Deployment{ObjectMeta: meta("b", "other", mcp)},
		&ArgoRollout{ObjectMeta: meta("a", "canary", mcp)},
	).Build()
	noRollouts := func(k Kind) bool { return k != ArgoRolloutKind }

	tests := map[string]struct {
		refs         []Ref
		selector     *metav1.LabelSelector
		served       Served
		wantFound    []string
		wantMissing  []string
		wantUnserved []string
	}{
		"nothing named and no selector": {},
		"named targets, one missing, one named twice": {
			refs:        []Ref{{StatefulSet, "db"}, {Deployment, "web"}, {Deployment, "gone"}, {Deployment, "web"}, {Deployment, "gone"}},
			wantFound:   []string{"Deployment/web", "StatefulSet/db"},
			wantMissing: []string{"Deployment/gone"},
		},
		"a selector across the four kinds, in the namespace only": {
			selector:  &metav1.LabelSelector{MatchLabels: mcp},
			wantFound: []string{"Deployment/api", "StatefulSet/db", "DaemonSet/agent", "Rollout/canary"},
		},
		"named and selected are merged without duplicates": {
			refs:      []Ref{{DaemonSet, "agent"}, {Deployment, "web"}, {ArgoRolloutKind, "canary"}},
			selector:  &metav1.LabelSelector{MatchLabels: mcp},
			wantFound: []string{"Deployment/api", "Deployment/web", "StatefulSet/db", "DaemonSet/agent", "Rollout/canary"},
		},
		"an empty selector selects every workload of the namespace": {
			selector:  &metav1.LabelSelector{},
			wantFound: []string{"Deployment/api", "Deployment/web", "StatefulSet/db", "DaemonSet/agent", "DaemonSet/logs", "Rollout/canary"},
		},
		"a kind the cluster does not serve is neither read nor listed, and a named one is unserved": {
			refs:         []Ref{{ArgoRolloutKind, "canary"}, {Deployment, "web"}},
			selector:     &metav1.LabelSelector{MatchLabels: mcp},
			served:       noRollouts,
			wantFound:    []string{"Deployment/api", "Deployment/web", "StatefulSet/db", "DaemonSet/agent"},
			wantUnserved: []string{"Rollout/canary"},
		},
		"a named workload of another kind with the same name is missing": {
			refs:        []Ref{{DaemonSet, "web"}},
			wantMissing: []string{"DaemonSet/web"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Resolve(context.Background(), c, tc.served, "a", tc.refs, tc.selector, "")
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			var found, missing []string
			for _, o := range got.Found {
				ref, _ := RefOf(o)
				found = append(found, ref.String())
			}
			for _, r := range got.Missing {
				missing = append(missing, r.String())
			}
			if !slices.Equal(found, tc.wantFound) {
				t.Errorf("Found = %v, want %v", found, tc.wantFound)
			}
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("Missing = %v, want %v", missing, tc.wantMissing)
			}
			var unserved []string
			for _, r := range got.Unserved {
				unserved = append(unserved, r.String())
			}
			if !slices.Equal(unserved, tc.wantUnserved) {
				t.Errorf("Unserved = %v, want %v", unserved, tc.wantUnserved)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme).Build()
	_, err := Resolve(context.Background(), c, nil, "a", []Ref{{Kind: "CronJob", Name: "x"}}, nil, "")
	if err == nil || !strings.Contains(err.Error(), `workload kind "CronJob" is not supported`) {
		t.Errorf("unknown kind: err = %v", err)
	}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
	_, err = Resolve(context.Background(), c, nil, "a", nil, bad, "")
	if err == nil || !strings.Contains(err.Error(), "workload selector") {
		t.Errorf("invalid selector: err = %v", err)
	}
}

// Stamp against the fake client: one write, then none; the rest of the object is left alone.
func TestStampIsIdempotent(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}
	d.Spec.Template.Annotations = map[string]string{"keep": "me"}
	c := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(d).Build()
	ctx := context.Background()
	get := func() *appsv1.Deployment {
		var got appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	obj := get()
	wrote, err := Stamp(ctx, c, obj, "0123456789abcdef", "payments")
	if err != nil || !wrote {
		t.Fatalf("first Stamp = %v, %v; want a write", wrote, err)
	}
	after := get()
	if Fingerprint(after) != "0123456789abcdef" || after.Spec.Template.Annotations["keep"] != "me" {
		t.Fatalf("template annotations after Stamp = %v", after.Spec.Template.Annotations)
	}
	wrote, err = Stamp(ctx, c, after, "0123456789abcdef", "payments")
	if err != nil || wrote {
		t.Fatalf("second Stamp = %v, %v; want no write", wrote, err)
	}
	if get().ResourceVersion != after.ResourceVersion {
		t.Errorf("second Stamp changed the resourceVersion")
	}
	if _, err := Stamp(ctx, c, after, "", "payments"); err == nil {
		t.Errorf("Stamp with an empty fingerprint succeeded")
	}
	// The write is conditional on the copy it decided from: a stale one is refused, not stamped.
	stale := obj.DeepCopy()
	stale.ResourceVersion = "1"
	if _, err := Stamp(ctx, c, stale, "fedcba9876543210", "payments"); !apierrors.IsConflict(err) {
		t.Errorf("Stamp of a stale copy: err = %v, want a conflict", err)
	}
	if got := get(); Fingerprint(got) != "0123456789abcdef" || got.Annotations[mrtrv1alpha1.StampedByAnnotation] != "payments" {
		t.Errorf("after a refused Stamp: fingerprint %q, stamped by %q", Fingerprint(got), got.Annotations[mrtrv1alpha1.StampedByAnnotation])
	}
}
