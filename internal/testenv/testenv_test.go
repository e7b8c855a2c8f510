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

package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A suite without envtest's binaries fails at once, and the error says how to get them.
func TestStartWithoutBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if _, err := Start(context.Background(), Options{}); !errors.Is(err, ErrNoAssets) {
		t.Fatalf("Start without KUBEBUILDER_ASSETS: %v; want ErrNoAssets", err)
	}
	for _, want := range []string{"KUBEBUILDER_ASSETS", "make -s envtest-assets"} {
		if !strings.Contains(ErrNoAssets.Error(), want) {
			t.Errorf("%q does not name %s", ErrNoAssets, want)
		}
	}

	empty := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", empty)
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "etcd is missing from "+empty) || !strings.Contains(err.Error(), "make -s envtest-assets") {
		t.Fatalf("Start with an empty KUBEBUILDER_ASSETS: %v; want an error naming the missing etcd and make envtest-assets", err)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{CRDDir, ConsumerPoliciesDir} {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}
