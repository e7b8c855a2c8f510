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

package main

import (
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// withArm64 adds an arm64 build of the manager to o.
func withArm64(t *testing.T, o *options) {
	t.Helper()
	arm := filepath.Join(filepath.Dir(o.binaries[0]), "manager-arm64")
	if err := os.WriteFile(arm, fakeELF(t, elf.EM_AARCH64, false, "the arm64 manager"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.binaries = append(o.binaries, arm)
}

// testRegistry serves an in-memory registry and returns the tag of o's image in it. DOCKER_CONFIG
// points at an empty folder, so the push reads no credentials of the machine's.
func testRegistry(t *testing.T, o *options) name.Tag {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	o.tag = strings.TrimPrefix(srv.URL, "http://") + "/mrtr-dev/mrtr-operator:v1.2.3"
	tag, err := name.NewTag(o.tag)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// TestMultiPlatformIndex builds the image for amd64 and arm64 (make image-push's PLATFORMS): the
// layout's one entry is an index named by the tag, holding one image per platform, each with its
// own binary on the same base, and one docker-archive per platform.
func TestMultiPlatformIndex(t *testing.T) {
	o := testOptions(t)
	withArm64(t, &o)
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(res.layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex || tm.Manifests[0].Digest != res.digest ||
		tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != o.tag {
		t.Fatalf("index.json %+v: want one image index %s named %s", tm.Manifests, res.digest, o.tag)
	}
	idx, err := top.ImageIndex(res.digest)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, o)
	for i, want := range []string{"manager-amd64.tar", "manager-arm64.tar"} {
		if got := filepath.Base(res.images[i].archive); got != want {
			t.Errorf("docker-archive %s, want %s", got, want)
		}
		if _, err := os.Stat(res.images[i].archive); err != nil {
			t.Error(err)
		}
	}

	// Two binaries for one platform are refused.
	o2 := testOptions(t)
	o2.binaries = append(o2.binaries, o2.binaries[0])
	if _, err := build(t.Context(), o2); err == nil || !strings.Contains(err.Error(), "both for linux/amd64") {
		t.Errorf("two amd64 binaries: %v, want a refusal naming the platform", err)
	}
}

// checkIndex checks that idx holds the amd64 and the arm64 image of o, in that order, each with its
// platform in the index and in its config, its binary as /manager and the same base layer.
func checkIndex(t *testing.T, idx v1.ImageIndex, o options) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", m.MediaType, len(m.Manifests))
	}
	var bases []v1.Hash
	for i, arch := range []string{"amd64", "arm64"} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.String() != "linux/"+arch || d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
			t.Errorf("manifest %d: %s %v (artifactType %q), want an OCI image for linux/%s", i, d.MediaType, d.Platform, d.ArtifactType, arch)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.Config.User != imageUser {
			t.Errorf("linux/%s's config: architecture %s, user %s", arch, cf.Architecture, cf.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("linux/%s: %d layers, %v", arch, len(layers), err)
		}
		_, files := layerEntries(t, layers[1])
		bin, _ := os.ReadFile(o.binaries[i])
		if files["manager"] != string(bin) {
			t.Errorf("linux/%s's /manager is not %s", arch, o.binaries[i])
		}
		base, _ := layers[0].Digest()
		bases = append(bases, base)
	}
	if len(bases) == 2 && bases[0] != bases[1] {
		t.Errorf("the platforms' base layers differ: %s, %s", bases[0], bases[1])
	}
}

// TestPushIndex pushes the two-platform image to a registry (make image-push): the tag names the
// index the layout holds, and a client that asks for arm64 gets the arm64 image.
func TestPushIndex(t *testing.T) {
	o := testOptions(t)
	withArm64(t, &o)
	tag := testRegistry(t, &o)
	o.push = true
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := tag.Context().Digest(res.digest.String()).String(); res.pushed != want {
		t.Errorf("pushed %q, want %q", res.pushed, want)
	}
	desc, err := remote.Get(tag)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != res.digest || desc.MediaType != types.OCIImageIndex {
		t.Fatalf("the registry serves %s as %s %s, the layout holds %s", tag, desc.MediaType, desc.Digest, res.digest)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, o)
	arm, err := remote.Image(tag, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := arm.Digest(); d != res.images[1].digest {
		t.Errorf("linux/arm64 resolves to %s, want %s", d, res.images[1].digest)
	}
}

// TestPushImage pushes a one-platform image: the tag names the image itself, as in the layout.
func TestPushImage(t *testing.T) {
	o := testOptions(t)
	tag := testRegistry(t, &o)
	o.push = true
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d != res.digest || d != res.images[0].digest {
		t.Errorf("the registry serves %s, the build made %s", d, res.digest)
	}
}

// TestPushFails names the registry when the push cannot reach it, after writing the files.
func TestPushFails(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	o := testOptions(t)
	o.tag = "127.0.0.1:1/mrtr-dev/mrtr-operator:v1"
	o.push = true
	_, err := build(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), "pushing 127.0.0.1:1/mrtr-dev/mrtr-operator:v1") {
		t.Fatalf("error %v, want one naming the push", err)
	}
}
