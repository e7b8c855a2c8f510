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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Adding a kind is one file that registers its adapter (with its group, version and kind, and its
// RBAC marker), plus the kind in the API's enum and its apiVersion in the API's list: this test
// reads the generated CRD and ClusterRole (make manifests) and fails, naming what is missing, for
// a registered kind that either leaves out.
func TestEveryKindIsInTheAPIAndTheRole(t *testing.T) {
	var crd map[string]any
	read(t, filepath.Join("..", "..", "config", "crd", "bases", "mrtr.dev_mrtrkeyrings.yaml"), &crd)
	item := dig(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties", "workloads", "items").(map[string]any)
	kinds := strings.Fields(strings.Trim(strings.ReplaceAll(yamlOf(t, dig(t, item, "properties", "kind", "enum")), "-", " "), "\n"))
	versions := strings.Fields(strings.ReplaceAll(yamlOf(t, dig(t, item, "properties", "apiVersion", "enum")), "-", " "))
	rule := dig(t, item, "x-kubernetes-validations", 0, "rule").(string)

	var role map[string]any
	read(t, filepath.Join("..", "..", "config", "rbac", "role.yaml"), &role)
	granted := map[string][]string{} // "group/resource" -> verbs
	for _, r := range role["rules"].([]any) {
		rule := r.(map[string]any)
		for _, g := range rule["apiGroups"].([]any) {
			for _, res := range rule["resources"].([]any) {
				for _, v := range rule["verbs"].([]any) {
					granted[g.(string)+"/"+res.(string)] = append(granted[g.(string)+"/"+res.(string)], v.(string))
				}
			}
		}
	}
	if len(Kinds()) < 4 {
		t.Fatalf("Kinds() = %v", Kinds())
	}
	for _, k := range Kinds() {
		gvk, err := GVK(k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(kinds, string(k)) {
			t.Errorf("kind %s is registered but not in the API's enum (mrtrv1alpha1.WorkloadKind's +kubebuilder:validation:Enum): %v", k, kinds)
		}
		if !slices.Contains(versions, gvk.GroupVersion().String()) {
			t.Errorf("kind %s: apiVersion %s is not in WorkloadReference.apiVersion's enum: %v", k, gvk.GroupVersion(), versions)
		}
		if !strings.Contains(rule, "'"+gvk.GroupVersion().String()+"'") {
			t.Errorf("kind %s: WorkloadReference's apiVersion rule does not name %s: %s", k, gvk.GroupVersion(), rule)
		}
		resource := gvk.Group + "/" + strings.ToLower(string(k)) + "s"
		for _, verb := range []string{"list", "watch", "patch"} {
			if !slices.Contains(granted[resource], verb) {
				t.Errorf("kind %s: the ClusterRole does not grant %s on %s (the +kubebuilder:rbac marker beside its adapter)", k, verb, resource)
			}
		}
		if obj, err := New(k); err != nil || !Is(obj) {
			t.Errorf("kind %s: New = %T, %v", k, obj, err)
		}
	}
}

func read(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatal(err)
	}
}

// dig follows keys (strings) and indexes (ints) into decoded YAML.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok || m[k] == nil {
				t.Fatalf("no %q in %v", k, path)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || len(l) <= k {
				t.Fatalf("no [%d] in %v", k, path)
			}
			v = l[k]
		}
	}
	return v
}

func yamlOf(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
