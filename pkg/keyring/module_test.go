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

package keyring_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The library is its own Go module so that an MCP server importing it does not inherit the
// operator's dependencies: nothing of Kubernetes may enter its module graph.
func TestModuleHasNoKubernetesDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	mods := strings.Fields(string(out))
	if len(mods) == 0 || mods[0] != "github.com/mrtr-dev/mrtr-operator/pkg" {
		t.Fatalf("go list -m all ran in the wrong module: %.200s", out)
	}
	for _, m := range mods {
		if strings.HasPrefix(m, "k8s.io/") || strings.HasPrefix(m, "sigs.k8s.io/") {
			t.Errorf("the library's module graph holds %s", m)
		}
	}
}

// The token libraries pkg/token is benchmarked against (go-jose, golang-jwt, Tink) live in the
// module hack/tokenbench: the library's go.mod requires none of them, and none of its packages, tests
// included, imports one. (The MCP SDK itself requires golang-jwt for its OAuth helpers, so the module
// graph, which go list -m all prints, may still name it; what matters is what pkg asks for and links.)
func TestModuleHasNoBenchmarkDependency(t *testing.T) {
	forbidden := []string{"github.com/go-jose/", "github.com/golang-jwt/", "github.com/tink-crypto/"}
	isForbidden := func(path string) bool {
		for _, f := range forbidden {
			if strings.HasPrefix(path, f) {
				return true
			}
		}
		return false
	}
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(out, &mod); err != nil || mod.Module.Path != "github.com/mrtr-dev/mrtr-operator/pkg" {
		t.Fatalf("go mod edit -json ran in the wrong module (%v): %.200s", err, out)
	}
	for _, r := range mod.Require {
		if isForbidden(r.Path) {
			t.Errorf("pkg/go.mod requires %s", r.Path)
		}
	}
	out, err = exec.Command("go", "list", "-test", "-deps", "github.com/mrtr-dev/mrtr-operator/pkg/...").Output()
	if err != nil {
		t.Fatalf("go list -test -deps: %v", err)
	}
	for p := range strings.FieldsSeq(string(out)) {
		if isForbidden(p) {
			t.Errorf("a package of pkg, or its tests, imports %s", p)
		}
	}
}
