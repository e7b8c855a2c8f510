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
	"context"
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

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is. The Dockerfile's final stage must agree (TestDockerfileAgrees checks it).
const (
	nonrootID  = 65532
	imageUser  = "65532:65532"
	binaryPath = "/manager"
	workDir    = "/"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	imageTitle = "mrtr-operator"
	// distrolessBase is the Dockerfile's base, which the base layer here stands in for (it cannot be
	// pulled on the machines that build this image): the same accounts, CA bundle path and /tmp.
	distrolessBase = "gcr.io/distroless/static:nonroot"
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
	// binaries are the static Linux programs, one per platform (read from each ELF header): with
	// one the image is a single image, with more an index of one image per platform.
	binaries        []string
	caBundle        string
	tag, outDir     string
	source, version string
	revision        string
	created         time.Time
	// entrypoint is where the binary goes in the image, and what runs; "" means binaryPath. The
	// local cluster's images (the example server, the pause container) take the same base.
	entrypoint string
	// title is the org.opencontainers.image.title label; "" means imageTitle.
	title string
	// push sends the image (or the index) to the registry of tag once the files are written.
	push bool
	// remote are the options of the push: the credentials, and in tests the transport.
	remote []remote.Option
	// trees, when it names layers, makes an image of directory trees instead (see rootfs.go).
	trees treeOptions
}

func (o options) entry() string { return cmp.Or(o.entrypoint, binaryPath) }

// platformImage is one platform's image, and how big its layers are.
type platformImage struct {
	img                      v1.Image
	digest                   v1.Hash
	platform                 v1.Platform
	archive                  string // its docker-archive
	compressed, uncompressed int64  // the layers' sizes, summed
	layers                   int
}

type result struct {
	// digest is what tag names: the image's, or the index's when there are several platforms.
	digest    v1.Hash
	images    []platformImage
	layoutDir string
	layoutTar string // the OCI layout as one tar, for ctr images import
	pushed    string // the reference pushed, by digest; "" without o.push
}

// build assembles the image from o and writes its outputs into o.outDir: the OCI layout, its tar,
// and one docker-archive per platform (docker load takes no index). With o.push it pushes to tag.
func build(ctx context.Context, o options) (*result, error) {
	tag, err := name.NewTag(o.tag)
	if err != nil {
		return nil, fmt.Errorf("image tag %q: %w", o.tag, err)
	}
	if len(o.trees.layers) > 0 {
		o.binaries = []string{""} // one image, of the trees
	}
	if len(o.binaries) == 0 {
		return nil, errors.New("no binary to build the image of (-binary)")
	}
	res := &result{layoutDir: filepath.Join(o.outDir, "oci"), layoutTar: filepath.Join(o.outDir, "oci.tar")}
	seen := map[string]string{}
	for _, bin := range o.binaries {
		img, platform, err := assemble(o, bin)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[platform.String()]; dup {
			return nil, fmt.Errorf("%s and %s are both for %s: give one binary per platform", other, bin, platform)
		}
		seen[platform.String()] = bin
		pi, err := measure(img, platform)
		if err != nil {
			return nil, err
		}
		archive := slashpath.Base(o.entry())
		if len(o.binaries) > 1 {
			archive += "-" + platform.Architecture
		}
		pi.archive = filepath.Join(o.outDir, archive+".tar")
		res.images = append(res.images, pi)
	}

	// What the tag names, and how the layout lists it.
	var (
		top   partial.Describable
		write func(layout.Path) error
		desc  *v1.Descriptor
	)
	if len(res.images) == 1 {
		pi := res.images[0]
		top, write = pi.img, func(p layout.Path) error { return p.WriteImage(pi.img) }
		if desc, err = partial.Descriptor(pi.img); err != nil {
			return nil, err
		}
		desc.Platform = &pi.platform
	} else {
		idx := index(res.images)
		top, write = idx, func(p layout.Path) error { return p.WriteIndex(idx) }
		if desc, err = partial.Descriptor(idx); err != nil {
			return nil, err
		}
	}
	if res.digest, err = top.Digest(); err != nil {
		return nil, err
	}
	// go-containerregistry fills artifactType with the config's media type, which marks an artifact,
	// not an image; an image's index entry has none.
	desc.ArtifactType = ""

	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeLayout(res.layoutDir, write, *desc, o.tag); err != nil {
		return nil, fmt.Errorf("writing the OCI layout %s: %w", res.layoutDir, err)
	}
	for _, pi := range res.images {
		if err := tarball.WriteToFile(pi.archive, tag, pi.img); err != nil {
			return nil, fmt.Errorf("writing the docker-archive %s: %w", pi.archive, err)
		}
	}
	if err := tarDir(res.layoutDir, res.layoutTar, o.created); err != nil {
		return nil, fmt.Errorf("writing the OCI layout's tar %s: %w", res.layoutTar, err)
	}
	if o.push {
		if err := push(ctx, tag, top, o.remote); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", o.tag, err)
		}
		res.pushed = tag.Context().Digest(res.digest.String()).String()
	}
	return res, nil
}

// measure sums the sizes of img's layers, compressed and not.
func measure(img v1.Image, platform v1.Platform) (platformImage, error) {
	pi := platformImage{img: img, platform: platform}
	var err error
	if pi.digest, err = img.Digest(); err != nil {
		return pi, err
	}
	layers, err := img.Layers()
	if err != nil {
		return pi, err
	}
	pi.layers = len(layers)
	for _, l := range layers {
		c, err := l.Size()
		if err != nil {
			return pi, err
		}
		u, err := uncompressedSize(l)
		if err != nil {
			return pi, err
		}
		pi.compressed += c
		pi.uncompressed += u
	}
	return pi, nil
}

// index is the OCI image index of images, each entry with its platform, in the order given.
func index(images []platformImage) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, 0, len(images))
	for _, pi := range images {
		adds = append(adds, mutate.IndexAddendum{Add: image{pi.img}, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &pi.platform,
		}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

// image is an image whose descriptor has no artifactType. go-containerregistry fills it with the
// config's media type, which marks an artifact, not an image: registries and clients that honour
// it would not take the index's entries for the platforms' images.
type image struct{ v1.Image }

func (image) ArtifactType() (string, error) { return "", nil }

// push writes the image or index top to the registry as tag, credentials from the docker config
// (docker login, crane auth login) unless opts give others.
func push(ctx context.Context, tag name.Tag, top partial.Describable, opts []remote.Option) error {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	switch t := top.(type) {
	case v1.ImageIndex:
		return remote.WriteIndex(tag, t, opts...)
	case v1.Image:
		return remote.Write(tag, t, opts...)
	}
	return fmt.Errorf("cannot push a %T", top)
}

// assemble builds the image of bin in memory: a base layer (CA certificates, accounts, /tmp) and a
// layer with the binary, so that the base layer is shared between versions.
func assemble(o options, binPath string) (v1.Image, v1.Platform, error) {
	if len(o.trees.layers) > 0 {
		return assembleTrees(o)
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("reading the manager binary (built by `make image`): %w", err)
	}
	arch, err := staticLinuxArch(bin)
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("%s: %w", binPath, err)
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
			Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: base like " + distrolessBase + " (CA certificates, passwd, group, /tmp)",
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

// writeLayout writes, with write, the image or index that desc describes as the only entry of a
// fresh OCI layout at dir, named tag (org.opencontainers.image.ref.name, which `skopeo copy
// oci:DIR:TAG` and test/container select by). It is written beside dir and renamed into place, so
// a failed build leaves the previous one.
func writeLayout(dir string, write func(layout.Path) error, desc v1.Descriptor, tag string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // gone after the rename
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := write(p); err != nil {
		return err
	}
	// containerd's importer (ctr images import, the local cluster's real node) names the image by
	// io.containerd.image.name, which must be the normalized reference the kubelet asks for.
	desc.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          containerdName(tag),
	}
	if err := p.AppendDescriptor(desc); err != nil {
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

// sortedTree lists the paths under dir (not dir itself) in byte order, so that a parent comes
// before its children and every build of the same tree lists it alike.
func sortedTree(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		names = append(names, p)
		return nil
	})
	slices.Sort(names)
	return names, err
}

// tarDir writes the files under dir into a tar at out, sorted, every time stamped with created: the
// form of an OCI layout that ctr images import reads.
func tarDir(dir, out string, created time.Time) error {
	names, err := sortedTree(dir)
	if err != nil {
		return err
	}
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
