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
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fakeELF is an executable header for machine with nothing behind it but payload: enough for
// staticLinuxArch, which reads the header and the program headers only. interp adds a PT_INTERP,
// as a dynamically linked binary has.
func fakeELF(t *testing.T, machine elf.Machine, interp bool, payload string) []byte {
	t.Helper()
	progs := []elf.Prog64{{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X)}}
	if interp {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R)})
	}
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs)),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var buf bytes.Buffer
	for _, v := range []any{hdr, progs, []byte(payload)} {
		if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

// testOptions writes a fake static amd64 manager and CA bundle and returns options that build them
// into a fresh directory.
func testOptions(t *testing.T) options {
	t.Helper()
	dir := t.TempDir()
	o := options{
		binaries: []string{filepath.Join(dir, "manager")},
		caBundle: filepath.Join(dir, "ca.crt"),
		tag:      "registry.example/mrtr/manager:v1.2.3",
		outDir:   filepath.Join(dir, "out"),
		source:   "https://github.com/mrtr-dev/mrtr-operator",
		version:  "v1.2.3",
		revision: "0123456789abcdef",
		created:  time.Unix(1764590000, 0).UTC(),
	}
	if err := os.WriteFile(o.binaries[0], fakeELF(t, elf.EM_X86_64, false, "the manager"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.caBundle, []byte(testCA), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

func loadLayout(t *testing.T, res *result) v1.Image {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(res.layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the layout has %d images, want 1", len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// layerEntries lists a layer as "name uid:gid mode mtime", with the content of small files.
func layerEntries(t *testing.T, l v1.Layer) ([]string, map[string]string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close() //nolint:errcheck // read-only
	var list []string
	content := map[string]string{}
	forEachEntry(t, rc, func(hdr *tar.Header, b []byte) {
		list = append(list, fmt.Sprintf("%s %d:%d %s %d %q%q", hdr.Name, hdr.Uid, hdr.Gid, hdr.FileInfo().Mode(),
			hdr.ModTime.Unix(), hdr.Uname, hdr.Gname))
		content[hdr.Name] = string(b)
	})
	return list, content
}

// forEachEntry calls fn with every entry of the tar r and its content.
func forEachEntry(t *testing.T, r io.Reader, fn func(*tar.Header, []byte)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		fn(hdr, b)
	}
}

func TestImageLayersAndConfig(t *testing.T) {
	o := testOptions(t)
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.images) != 1 || res.images[0].platform.String() != "linux/amd64" || res.images[0].layers != 2 {
		t.Fatalf("built %+v, want one linux/amd64 image with 2 layers", res.images)
	}
	img := loadLayout(t, res)
	if d, _ := img.Digest(); d != res.digest {
		t.Errorf("the layout holds %s, the build reported %s", d, res.digest)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("%d layers, want the base and the manager", len(layers))
	}

	epoch := o.created.Unix()
	base, files := layerEntries(t, layers[0])
	want := []string{
		"etc/ 0:0 drwxr-xr-x",
		"etc/group 0:0 -rw-r--r--",
		"etc/passwd 0:0 -rw-r--r--",
		"etc/ssl/ 0:0 drwxr-xr-x",
		"etc/ssl/certs/ 0:0 drwxr-xr-x",
		"etc/ssl/certs/ca-certificates.crt 0:0 -rw-r--r--",
		"home/ 0:0 drwxr-xr-x",
		"home/nonroot/ 65532:65532 drwx------",
		"root/ 0:0 drwx------",
		"tmp/ 0:0 dtrwxrwxrwx",
	}
	for i := range want {
		want[i] += fmt.Sprintf(" %d %q%q", epoch, "", "")
	}
	if strings.Join(base, "\n") != strings.Join(want, "\n") {
		t.Errorf("base layer:\n%s\nwant:\n%s", strings.Join(base, "\n"), strings.Join(want, "\n"))
	}
	if files["etc/ssl/certs/ca-certificates.crt"] != testCA {
		t.Error("the CA bundle is not the one given")
	}
	if !strings.Contains(files["etc/passwd"], "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") ||
		!strings.Contains(files["etc/group"], "\nnonroot:x:65532:\n") {
		t.Errorf("no nonroot user and group 65532:\n%s%s", files["etc/passwd"], files["etc/group"])
	}
	app, files := layerEntries(t, layers[1])
	if got, want := strings.Join(app, "\n"), fmt.Sprintf(`manager 0:0 -rwxr-xr-x %d """"`, epoch); got != want {
		t.Errorf("manager layer: %s, want %s", got, want)
	}
	bin, _ := os.ReadFile(o.binaries[0])
	if files["manager"] != string(bin) {
		t.Error("/manager is not the binary given")
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/manager" || c.Cmd != nil || c.WorkingDir != "/" {
		t.Errorf("config: User %q, Entrypoint %q, Cmd %q, WorkingDir %q", c.User, c.Entrypoint, c.Cmd, c.WorkingDir)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.title":    "mrtr-operator",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
	}
	if fmt.Sprint(c.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels %v, want %v", c.Labels, wantLabels)
	}
	if !cf.Created.Equal(o.created) || len(cf.History) != 2 || !cf.History[1].Created.Equal(o.created) {
		t.Errorf("created %s, history %+v: every time should be SOURCE_DATE_EPOCH", cf.Created, cf.History)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config platform %s/%s", cf.OS, cf.Architecture)
	}
}

func TestImageIsReproducible(t *testing.T) {
	a, b := testOptions(t), testOptions(t)
	ra, err := build(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := build(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	if ra.digest != rb.digest {
		t.Fatalf("two builds of the same inputs: %s and %s", ra.digest, rb.digest)
	}
	if sum(t, ra.layoutTar) != sum(t, rb.layoutTar) {
		t.Error("two builds of the same inputs wrote different OCI layout tars")
	}
	if sum(t, ra.images[0].archive) != sum(t, rb.images[0].archive) {
		t.Error("two builds of the same inputs wrote different docker-archives")
	}
	if sum(t, filepath.Join(ra.layoutDir, "index.json")) != sum(t, filepath.Join(rb.layoutDir, "index.json")) {
		t.Error("two builds of the same inputs wrote different index.json")
	}

	// A rebuild into the same directory replaces the image rather than adding one.
	if _, err := build(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	_ = loadLayout(t, ra)

	// The timestamp is an input: SOURCE_DATE_EPOCH changes the digest.
	c := testOptions(t)
	c.created = c.created.Add(time.Second)
	rc, err := build(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if rc.digest == ra.digest {
		t.Error("another SOURCE_DATE_EPOCH gave the same digest")
	}
}

func sum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestDockerArchive(t *testing.T) {
	o := testOptions(t)
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(res.images[0].archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read-only
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the docker-archive has no manifest.json")
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(manifest) != 1 || strings.Join(manifest[0].RepoTags, ",") != o.tag || len(manifest[0].Layers) != 2 {
		t.Fatalf("manifest.json %+v, want one image tagged %s with 2 layers", manifest, o.tag)
	}

	// What docker load reads is the image of the layout: the same config, hence the same layers.
	tag, err := name.NewTag(o.tag)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(res.images[0].archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadLayout(t, res).ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got != want || manifest[0].Config != want.String() {
		t.Errorf("the docker-archive's config is %s (%s), the layout's %s", got, manifest[0].Config, want)
	}
}

func TestInputsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, o *options)
		error string
	}{{
		name:  "no CA bundle",
		edit:  func(t *testing.T, o *options) { o.caBundle = filepath.Join(t.TempDir(), "missing.crt") },
		error: "apt-get install ca-certificates",
	}, {
		name: "a CA bundle without certificates",
		edit: func(t *testing.T, o *options) {
			if err := os.WriteFile(o.caBundle, []byte("nothing\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		error: "holds no PEM certificate",
	}, {
		name: "a dynamically linked binary",
		edit: func(t *testing.T, o *options) {
			if err := os.WriteFile(o.binaries[0], fakeELF(t, elf.EM_X86_64, true, "cgo"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		error: "dynamically linked; build it with CGO_ENABLED=0",
	}, {
		name: "not an executable",
		edit: func(t *testing.T, o *options) {
			if err := os.WriteFile(o.binaries[0], []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		error: "not an ELF executable",
	}, {
		name:  "a bad tag",
		edit:  func(t *testing.T, o *options) { o.tag = "Not A Tag" },
		error: `image tag "Not A Tag"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(t, &o)
			_, err := build(t.Context(), o)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("error %v, want one that says %q", err, tc.error)
			}
			if _, statErr := os.Stat(o.outDir); !os.IsNotExist(statErr) {
				t.Errorf("a failed build wrote %s", o.outDir)
			}
		})
	}
}

func TestPlatformFromTheBinary(t *testing.T) {
	for machine, arch := range map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"} {
		got, err := staticLinuxArch(fakeELF(t, machine, false, ""))
		if err != nil || got != arch {
			t.Errorf("%s: %q, %v; want %s", machine, got, err, arch)
		}
	}
	if _, err := staticLinuxArch(fakeELF(t, elf.EM_386, false, "")); err == nil {
		t.Error("a 386 binary should be refused")
	}
}

func TestContainerdName(t *testing.T) {
	for ref, want := range map[string]string{
		"controller:latest":                       "docker.io/library/controller:latest",
		"mrtr/manager:v1":                         "docker.io/mrtr/manager:v1",
		"example.com/mrtr-example-mcp-server:dev": "example.com/mrtr-example-mcp-server:dev",
		"localhost/pause:local":                   "localhost/pause:local",
		"registry:5000/pause:local":               "registry:5000/pause:local",
	} {
		if got := containerdName(ref); got != want {
			t.Errorf("containerdName(%q) = %q, want %q", ref, got, want)
		}
	}
}

// TestOtherEntrypoint builds another program on the same base, as the local cluster does for the
// example server: the binary, the entrypoint and the docker-archive take its name, and oci.tar holds
// the layout with the name containerd's importer reads.
func TestOtherEntrypoint(t *testing.T) {
	o := testOptions(t)
	o.entrypoint, o.title, o.tag = "/mcp-server", "mrtr-example-mcp-server", "example.com/mrtr-example-mcp-server:dev"
	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(res.images[0].archive) != "mcp-server.tar" {
		t.Errorf("docker-archive %s, want mcp-server.tar", res.images[0].archive)
	}
	cf, err := loadLayout(t, res).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/mcp-server" {
		t.Errorf("entrypoint %q", got)
	}
	if got := cf.Config.Labels["org.opencontainers.image.title"]; got != o.title {
		t.Errorf("title %q", got)
	}

	f, err := os.Open(res.layoutTar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read-only
	files := map[string][]byte{}
	forEachEntry(t, f, func(hdr *tar.Header, b []byte) {
		if hdr.Typeflag == tar.TypeReg {
			files[hdr.Name] = b
		}
	})
	var onDisk int
	err = filepath.WalkDir(res.layoutDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(res.layoutDir, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(files[filepath.ToSlash(rel)], want) {
			t.Errorf("oci.tar's %s differs from the layout's", rel)
		}
		onDisk++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if onDisk != len(files) {
		t.Errorf("oci.tar has %d files, the layout %d", len(files), onDisk)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations["io.containerd.image.name"] != o.tag {
		t.Errorf("index.json's manifests: %+v", idx.Manifests)
	}
}
