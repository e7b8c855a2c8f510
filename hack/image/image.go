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
	"cmp"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	slashpath "path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is.
const (
	nonrootID  = 65532
	imageUser  = "65532:65532"
	binaryPath = "/manager"
	workDir    = "/"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	imageTitle = "mrtr-operator"
)

// The accounts of distroless's static image: root and nobody so that tools resolve those ids, and
// nonroot, the user the manager runs as.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

type options struct {
	binary, caBundle string
	tag, outDir      string
	source, version  string
	revision         string
	created          time.Time
	// entrypoint is where the binary goes in the image, and what runs; "" means binaryPath. The
	// local cluster's images (the example server, the pause container) take the same base.
	entrypoint string
	// title is the org.opencontainers.image.title label; "" means imageTitle.
	title string
}

func (o options) entry() string { return cmp.Or(o.entrypoint, binaryPath) }

type result struct {
	digest                   v1.Hash
	platform                 v1.Platform
	layoutDir, archive       string
	layoutTar                string // the OCI layout as one tar, for ctr images import
	compressed, uncompressed int64  // the layers' sizes, summed
	layers                   int
}

// build assembles the image from o and writes both outputs into o.outDir.
func build(o options) (*result, error) {
	tag, err := name.NewTag(o.tag)
	if err != nil {
		return nil, fmt.Errorf("image tag %q: %w", o.tag, err)
	}
	img, platform, err := assemble(o)
	if err != nil {
		return nil, err
	}
	res := &result{
		platform:  platform,
		layoutDir: filepath.Join(o.outDir, "oci"),
		archive:   filepath.Join(o.outDir, slashpath.Base(o.entry())+".tar"),
		layoutTar: filepath.Join(o.outDir, "oci.tar"),
	}
	if res.digest, err = img.Digest(); err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	res.layers = len(layers)
	for _, l := range layers {
		c, err := l.Size()
		if err != nil {
			return nil, err
		}
		u, err := uncompressedSize(l)
		if err != nil {
			return nil, err
		}
		res.compressed += c
		res.uncompressed += u
	}

	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeLayout(res.layoutDir, img, platform, o.tag); err != nil {
		return nil, fmt.Errorf("writing the OCI layout %s: %w", res.layoutDir, err)
	}
	if err := tarball.WriteToFile(res.archive, tag, img); err != nil {
		return nil, fmt.Errorf("writing the docker-archive %s: %w", res.archive, err)
	}
	if err := tarDir(res.layoutDir, res.layoutTar, o.created); err != nil {
		return nil, fmt.Errorf("writing the OCI layout's tar %s: %w", res.layoutTar, err)
	}
	return res, nil
}

// assemble builds the image in memory: a base layer (CA certificates, accounts, /tmp) and a layer
// with the manager binary, so that the base layer is shared between versions.
func assemble(o options) (v1.Image, v1.Platform, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("reading the manager binary (built by `make image`): %w", err)
	}
	arch, err := staticLinuxArch(bin)
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("%s: %w", o.binary, err)
	}
	platform := v1.Platform{OS: "linux", Architecture: arch}
	ca, err := readCABundle(o.caBundle)
	if err != nil {
		return nil, v1.Platform{}, err
	}

	base, err := layer(o.created, []entry{
		dir("etc", 0o755, 0),
		file("etc/group", 0o644, []byte(group)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		file(strings.TrimPrefix(caPath, "/"), 0o644, ca),
		dir("home", 0o755, 0),
		// The nonroot user's own home, as in distroless.
		dir("home/nonroot", 0o700, nonrootID),
		dir("root", 0o700, 0),
		dir("tmp", 0o1777, 0),
	})
	if err != nil {
		return nil, v1.Platform{}, err
	}
	app, err := layer(o.created, []entry{file(strings.TrimPrefix(o.entry(), "/"), 0o755, bin)})
	if err != nil {
		return nil, v1.Platform{}, err
	}

	labels := map[string]string{
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.title":    cmp.Or(o.title, imageTitle),
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
	}
	for k, v := range labels {
		if v == "" {
			delete(labels, k)
		}
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Created:      v1.Time{Time: o.created},
		Config: v1.Config{
			User:       imageUser,
			Entrypoint: []string{o.entry()},
			WorkingDir: workDir,
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=" + caPath,
			},
			Labels: labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, v1.Platform{}, err
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: base (CA certificates, passwd, group, /tmp)",
		}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: COPY " + slashpath.Base(o.entry()) + " " + o.entry(),
		}},
	)
	if err != nil {
		return nil, v1.Platform{}, err
	}
	// The same keys as manifest annotations, where OCI tools (skopeo, crane, registries) look.
	return mutate.Annotations(img, labels).(v1.Image), platform, nil
}

// staticLinuxArch returns the GOARCH of a Linux ELF executable, and refuses one that needs a dynamic
// loader: the image has no libc, so such a binary would fail at start with a bare "no such file or
// directory".
func staticLinuxArch(bin []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable (the image is for Linux): %w", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", errors.New("dynamically linked; build it with CGO_ENABLED=0")
		}
	}
	switch {
	case f.Machine == elf.EM_X86_64:
		return "amd64", nil
	case f.Machine == elf.EM_AARCH64:
		return "arm64", nil
	case f.Machine == elf.EM_S390:
		return "s390x", nil
	case f.Machine == elf.EM_PPC64 && f.ByteOrder == binary.LittleEndian:
		return "ppc64le", nil
	case f.Machine == elf.EM_RISCV && f.Class == elf.ELFCLASS64:
		return "riscv64", nil
	}
	return "", fmt.Errorf("ELF machine %s (%s) is not a platform this image is built for", f.Machine, f.ByteOrder)
}

func readCABundle(path string) ([]byte, error) {
	ca, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the CA certificates the image trusts are missing (%s): "+
			"install them with `apt-get install ca-certificates`, or pass another PEM bundle with -ca-bundle", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return ca, nil
}

// entry is one file or directory of a layer, owned by root unless uid says otherwise.
type entry struct {
	hdr  tar.Header
	body []byte
}

func dir(p string, mode int64, uid int) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid}}
}

func file(p string, mode int64, body []byte) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(body))}, body: body}
}

// layer writes entries as a tar, sorted by name (so a parent precedes its children), every time
// stamped with created and no user or group names, gzipped without a name or time: the same
// entries always give the same bytes.
func layer(created time.Time, entries []entry) (v1.Layer, error) {
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.hdr.Name, b.hdr.Name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		hdr.ModTime = created
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", hdr.Name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer),
		// Compressed once: the digest, the layout and the docker-archive all read it.
		tarball.WithCompressedCaching)
}

func uncompressedSize(l v1.Layer) (int64, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return 0, err
	}
	defer rc.Close() //nolint:errcheck // read-only
	return io.Copy(io.Discard, rc)
}

// writeLayout writes img as the only image of a fresh OCI layout at dir, its index entry named tag
// (org.opencontainers.image.ref.name, which `skopeo copy oci:DIR:TAG` and test/container select
// by). It is written beside dir and renamed into place, so a failed build leaves the previous one.
func writeLayout(dir string, img v1.Image, platform v1.Platform, tag string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // gone after the rename
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.WriteImage(img); err != nil {
		return err
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	// go-containerregistry fills artifactType with the config's media type, which marks an artifact,
	// not an image; an image's index entry has none.
	desc.ArtifactType = ""
	desc.Platform = &platform
	// containerd's importer (ctr images import, the local cluster's real node) names the image by
	// io.containerd.image.name, which must be the normalized reference the kubelet asks for.
	desc.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          containerdName(tag),
	}
	if err := p.AppendDescriptor(*desc); err != nil {
		return err
	}
	// MkdirTemp made it 0700; the layout is as readable as the rest of bin/.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// containerdName is ref as containerd and the kubelet normalize it (docker's rules): a first
// component without a dot, a colon or "localhost" is not a registry, so docker.io is added, and
// library/ before a single name. "controller:latest" is docker.io/library/controller:latest.
func containerdName(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !found {
		ref = "library/" + ref
	}
	return "docker.io/" + ref
}

// tarDir writes the files under dir into a tar at out, sorted, every time stamped with created: the
// form of an OCI layout that ctr images import reads.
func tarDir(dir, out string, created time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range names {
		info, err := os.Stat(p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: created, Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return errors.Join(err, f.Close())
		}
		if !info.IsDir() {
			if err := copyFile(tw, p); err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	return errors.Join(tw.Close(), f.Close())
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read-only
	_, err = io.Copy(w, f)
	return err
}
