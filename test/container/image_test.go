//go:build linux

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

package container

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// These tests need no runc and no root: the layers they unpack belong to the caller.

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func reg(name, body string, mode int64) tarEntry {
	return tarEntry{name: name, body: body, typ: tar.TypeReg, mode: mode}
}

func dirEntry(name string, mode int64) tarEntry {
	return tarEntry{name: name, typ: tar.TypeDir, mode: mode}
}

func layerBlob(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link,
			Size: int64(len(e.body)), Uid: os.Getuid(), Gid: os.Getgid()}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTestLayout writes an OCI layout with one image, named ref, of the given layers.
func writeTestLayout(t *testing.T, ref string, cfg ocispec.ImageConfig, layers ...[]tarEntry) string {
	t.Helper()
	dir := t.TempDir()
	put := func(mediaType string, b []byte) ocispec.Descriptor {
		d := digest.FromBytes(b)
		p := filepath.Join(dir, "blobs", "sha256", d.Encoded())
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest}
	m.SchemaVersion = 2
	m.Config = put(ocispec.MediaTypeImageConfig, mustJSON(ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}, Config: cfg,
	}))
	for _, l := range layers {
		m.Layers = append(m.Layers, put(ocispec.MediaTypeImageLayerGzip, layerBlob(t, l)))
	}
	md := put(ocispec.MediaTypeImageManifest, mustJSON(m))
	md.Annotations = map[string]string{ocispec.AnnotationRefName: ref}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{md}}
	idx.SchemaVersion = 2
	if err := os.WriteFile(filepath.Join(dir, "index.json"), mustJSON(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func unpackTest(t *testing.T, layout string) (string, error) {
	t.Helper()
	img, err := openImage(layout, "test:1")
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	return rootfs, img.unpack(rootfs)
}

func TestUnpackAppliesLayersInOrder(t *testing.T) {
	layout := writeTestLayout(t, "test:1", ocispec.ImageConfig{},
		[]tarEntry{
			dirEntry("etc/", 0o755),
			reg("etc/passwd", "lower\n", 0o644),
			reg("etc/gone", "x", 0o644),
			dirEntry("cache/", 0o755),
			reg("cache/old", "x", 0o644),
			dirEntry("tmp/", 0o1777),
			reg("bin/tool", "#!/bin/true\n", 0o755),
			{name: "bin/alias", typ: tar.TypeSymlink, link: "tool"},
		},
		[]tarEntry{
			reg("etc/passwd", "upper\n", 0o600),
			reg("etc/.wh.gone", "", 0o644),
			dirEntry("cache/", 0o755),
			reg("cache/new", "y", 0o644),
			reg("cache/sub/deep", "z", 0o644),
			reg("cache/.wh..wh..opq", "", 0o644),
			{name: "bin/hard", typ: tar.TypeLink, link: "bin/tool"},
		},
	)
	rootfs, err := unpackTest(t, layout)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(rootfs, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mode := func(p string) fs.FileMode {
		fi, err := os.Lstat(filepath.Join(rootfs, p))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode()
	}
	missing := func(p string) {
		if _, err := os.Lstat(filepath.Join(rootfs, p)); !os.IsNotExist(err) {
			t.Errorf("%s should be gone, Lstat says %v", p, err)
		}
	}

	if got := read("etc/passwd"); got != "upper\n" {
		t.Errorf("etc/passwd = %q, want the upper layer's", got)
	}
	if got := mode("etc/passwd"); got != 0o600 {
		t.Errorf("etc/passwd mode = %v, want the upper layer's -rw-------", got)
	}
	missing("etc/gone")
	missing("etc/.wh.gone")
	missing("cache/old")                                           // hidden by the opaque whiteout ...
	if read("cache/new") != "y" || read("cache/sub/deep") != "z" { // ... which keeps what its own layer adds
		t.Error("the opaque whiteout removed what its own layer adds")
	}
	missing("cache/.wh..wh..opq")
	if got := mode("tmp"); got != fs.ModeDir|fs.ModeSticky|0o777 {
		t.Errorf("tmp mode = %v, want drwxrwxrwt", got)
	}
	if got := mode("bin/tool"); got != 0o755 {
		t.Errorf("bin/tool mode = %v, want -rwxr-xr-x", got)
	}
	if target, err := os.Readlink(filepath.Join(rootfs, "bin/alias")); err != nil || target != "tool" {
		t.Errorf("bin/alias -> %q (%v), want tool", target, err)
	}
	a, _ := os.Stat(filepath.Join(rootfs, "bin/tool"))
	b, _ := os.Stat(filepath.Join(rootfs, "bin/hard"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Error("bin/hard is not a hard link of bin/tool")
	}
	st := a.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		t.Errorf("bin/tool owned by %d:%d, want the entry's %d:%d", st.Uid, st.Gid, os.Getuid(), os.Getgid())
	}
}

func TestUnpackStaysInsideTheRootfs(t *testing.T) {
	outside := t.TempDir()
	for name, layer := range map[string][]tarEntry{
		"a dot-dot path": {reg("../escaped", "x", 0o644)},
		"a write through a symbolic link": {
			{name: "link", typ: tar.TypeSymlink, link: outside},
			reg("link/escaped", "x", 0o644),
		},
		"a hard link to a file outside": {{name: "hard", typ: tar.TypeLink, link: "../" + filepath.Base(outside) + "/x"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := unpackTest(t, writeTestLayout(t, "test:1", ocispec.ImageConfig{}, layer))
			if err == nil {
				t.Fatal("unpacked without an error")
			}
			t.Log(err)
			if _, err := os.Lstat(filepath.Join(outside, "escaped")); !os.IsNotExist(err) {
				t.Fatalf("a file was written outside the rootfs: %v", err)
			}
		})
	}
}

func TestOpenImageErrors(t *testing.T) {
	layout := writeTestLayout(t, "test:1", ocispec.ImageConfig{}, []tarEntry{reg("f", "content", 0o644)})

	if _, err := openImage(t.TempDir(), "test:1"); err == nil || !strings.Contains(err.Error(), "make image") {
		t.Errorf("a directory without index.json: %v, want an error that says how to build the layout", err)
	}
	if _, err := openImage(layout, "other:2"); err == nil || !strings.Contains(err.Error(), `"test:1"`) {
		t.Errorf("an unknown ref: %v, want an error that lists the refs there are", err)
	}

	// A layer blob that does not match its digest is refused, not unpacked.
	img, err := openImage(layout, "test:1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(layout, "blobs", "sha256", d.Hex)
	b, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	// A well-formed layer, so that only the digest can tell.
	corrupt := layerBlob(t, []tarEntry{reg("f", "CONTENT", 0o644)})
	if bytes.Equal(corrupt, b) {
		t.Fatal("the corrupt blob is the original")
	}
	if err := os.WriteFile(blob, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := img.unpack(t.TempDir()); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("a corrupt layer: %v, want a digest mismatch", err)
	}
}

func TestRunWithoutRunc(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Run(t.Context(), Spec{Layout: t.TempDir(), Ref: "test:1", WorkDir: t.TempDir()})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install runc") {
		t.Errorf("without runc: %v, want ErrUnavailable saying how to install it", err)
	}
}

func TestRuntimeConfig(t *testing.T) {
	img := ocispec.ImageConfig{
		User: "65532:65532", Entrypoint: []string{"/manager"}, Cmd: []string{"--default"}, WorkingDir: "/",
		Env: []string{"PATH=/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
	}
	sa := t.TempDir()
	cfg, err := runtimeConfig(Spec{
		Args:         []string{"--leader-elect"},
		Env:          []string{"PATH=/usr/bin", "KUBERNETES_SERVICE_HOST=127.0.0.1"},
		Mounts:       []Mount{{Source: sa, Destination: ServiceAccountDir, ReadOnly: true}},
		ReadOnlyRoot: true,
	}, img, "manager")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Process
	if p.User.UID != 65532 || p.User.GID != 65532 {
		t.Errorf("user %d:%d, want the image's 65532:65532", p.User.UID, p.User.GID)
	}
	if got := strings.Join(p.Args, " "); got != "/manager --leader-elect" {
		t.Errorf("args %q: Spec.Args replace the Cmd after the Entrypoint", got)
	}
	wantEnv := "PATH=/usr/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt KUBERNETES_SERVICE_HOST=127.0.0.1"
	if got := strings.Join(p.Env, " "); got != wantEnv {
		t.Errorf("env %q: Spec.Env overrides the image's in place and adds the rest", got)
	}
	if !p.NoNewPrivileges || !cfg.Root.Readonly {
		t.Error("want no new privileges and a read-only root")
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"capabilities":{}`) {
		t.Errorf("process %s: want every capability set present and empty", raw)
	}
	for _, ns := range cfg.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			t.Error("the container must share the host's network namespace")
		}
	}
	last := cfg.Mounts[len(cfg.Mounts)-1]
	if last.Destination != ServiceAccountDir || last.Source != sa || strings.Join(last.Options, ",") != "rbind,ro,nosuid,nodev" {
		t.Errorf("bind mount %+v", last)
	}

	cfg, err = runtimeConfig(Spec{User: "1000:1001"}, img, "x")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Process.User.UID != 1000 || cfg.Process.User.GID != 1001 || strings.Join(cfg.Process.Args, " ") != "/manager --default" {
		t.Errorf("Spec.User overrides the image's, nil Args keep the Cmd: %+v", cfg.Process)
	}
	if _, err := runtimeConfig(Spec{User: "nonroot"}, img, "x"); err == nil {
		t.Error("a user name should be refused: only numeric ids are resolved")
	}
	if _, err := runtimeConfig(Spec{}, ocispec.ImageConfig{}, "x"); err == nil {
		t.Error("an image with nothing to run should be refused")
	}
}
