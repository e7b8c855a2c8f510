//go:build linux

/*
Copyright 2026.

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
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// image is an image of an OCI layout: its config and its layers, bottom first.
type image struct {
	layout string
	config ocispec.Image
	layers []ocispec.Descriptor
}

// openImage finds ref (the org.opencontainers.image.ref.name of an entry of index.json) in the
// layout; for a multi-platform index, the manifest for this machine's linux/GOARCH.
func openImage(layout, ref string) (*image, error) {
	var index ocispec.Index
	if err := readJSON(filepath.Join(layout, "index.json"), &index); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no OCI image layout at %s (make image writes bin/image/oci): %w", layout, err)
		}
		return nil, err
	}
	var names []string
	var desc *ocispec.Descriptor
	for i, d := range index.Manifests {
		names = append(names, d.Annotations[ocispec.AnnotationRefName])
		if d.Annotations[ocispec.AnnotationRefName] == ref {
			desc = &index.Manifests[i]
			break
		}
	}
	if desc == nil {
		return nil, fmt.Errorf("the OCI layout %s has no image named %q (it has %q)", layout, ref, names)
	}
	img := &image{layout: layout}
	for desc.MediaType == ocispec.MediaTypeImageIndex {
		var sub ocispec.Index
		if err := img.readBlob(*desc, &sub); err != nil {
			return nil, err
		}
		if desc = forThisPlatform(sub.Manifests); desc == nil {
			return nil, fmt.Errorf("image %s of %s has no manifest for linux/%s", ref, layout, runtime.GOARCH)
		}
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("image %s of %s: media type %q is not an OCI image manifest", ref, layout, desc.MediaType)
	}
	var m ocispec.Manifest
	if err := img.readBlob(*desc, &m); err != nil {
		return nil, err
	}
	if err := img.readBlob(m.Config, &img.config); err != nil {
		return nil, err
	}
	if img.config.OS != "linux" || img.config.Architecture != runtime.GOARCH {
		return nil, fmt.Errorf("image %s of %s is for %s/%s, this machine runs linux/%s",
			ref, layout, img.config.OS, img.config.Architecture, runtime.GOARCH)
	}
	img.layers = m.Layers
	return img, nil
}

func forThisPlatform(ds []ocispec.Descriptor) *ocispec.Descriptor {
	for i, d := range ds {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return &ds[i]
		}
	}
	return nil
}

// openBlob opens the blob of d; the reader fails at its end if the content does not match the
// digest, so a corrupt or truncated layout is never taken for the image.
func (img *image) openBlob(d ocispec.Descriptor) (io.ReadCloser, error) {
	if err := d.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("descriptor of %s: %w", img.layout, err)
	}
	f, err := os.Open(filepath.Join(img.layout, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded()))
	if err != nil {
		return nil, err
	}
	return &verifiedBlob{f: f, name: f.Name(), v: d.Digest.Verifier(), want: d.Digest}, nil
}

type verifiedBlob struct {
	f    *os.File
	name string
	v    digest.Verifier
	want digest.Digest
}

func (b *verifiedBlob) Read(p []byte) (int, error) {
	n, err := b.f.Read(p)
	_, _ = b.v.Write(p[:n])
	if errors.Is(err, io.EOF) && !b.v.Verified() {
		return n, fmt.Errorf("blob %s does not match its digest %s", b.name, b.want)
	}
	return n, err
}

func (b *verifiedBlob) Close() error { return b.f.Close() }

func (img *image) readBlob(d ocispec.Descriptor, v any) error {
	rc, err := img.openBlob(d)
	if err != nil {
		return err
	}
	defer rc.Close() //nolint:errcheck // read-only
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("blob %s (%s): %w", d.Digest, d.MediaType, err)
	}
	return nil
}

func readJSON(p string, v any) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// unpack applies the image's layers, bottom first, to the empty directory dir, with their owners and
// modes (so it needs root for any file not owned by the caller). Every write goes through an
// os.Root, so that no entry, not even one under a symbolic link that an earlier entry made, lands
// outside dir.
func (img *image) unpack(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close() //nolint:errcheck // directory handle
	for _, l := range img.layers {
		if err := img.applyLayer(root, l); err != nil {
			return fmt.Errorf("unpacking layer %s of %s: %w", l.Digest, img.layout, err)
		}
	}
	return nil
}

const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

func (img *image) applyLayer(root *os.Root, l ocispec.Descriptor) error {
	blob, err := img.openBlob(l)
	if err != nil {
		return err
	}
	defer blob.Close() //nolint:errcheck // read-only
	r, err := decompress(blob)
	if err != nil {
		return err
	}
	// Whiteouts hide what the layers below have, never what this one adds.
	added := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q points outside the root filesystem", hdr.Name)
		}
		dir, base := path.Split(name)
		switch {
		case base == opaqueWhiteout:
			if err := emptyDir(root, path.Clean(dir), added); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			if err := root.RemoveAll(path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix))); err != nil {
				return err
			}
			continue
		}
		if err := writeEntry(root, name, hdr, tr); err != nil {
			return fmt.Errorf("entry %s: %w", hdr.Name, err)
		}
		// Its parents too: they are this layer's even where it has no entry of their own.
		for p := name; p != "."; p = path.Dir(p) {
			added[p] = true
		}
	}
	// Drain the stream, so that the blob's digest is checked over all of it.
	_, err = io.Copy(io.Discard, r)
	return err
}

// decompress reads a layer, gzipped or not, by its first bytes rather than its media type, which
// Docker's and OCI's spell differently.
func decompress(blob io.Reader) (io.Reader, error) {
	br := bufio.NewReader(blob)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return gzip.NewReader(br)
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, errors.New("zstd-compressed layers are not supported")
	}
	return br, nil
}

// emptyDir removes what dir holds from the layers below (an opaque whiteout).
func emptyDir(root *os.Root, dir string, added map[string]bool) error {
	f, err := root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if !added[p] {
			if err := root.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeEntry(root *os.Root, name string, hdr *tar.Header, body io.Reader) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	mode := hdr.FileInfo().Mode()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if fi, err := root.Lstat(name); err == nil && !fi.IsDir() {
			if err := root.Remove(name); err != nil {
				return err
			}
		}
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case tar.TypeReg:
		// A file from a lower layer is replaced, not written through (it may be a hard link).
		if err := removeNonDir(root, name); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, body); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := removeNonDir(root, name); err != nil {
			return err
		}
		// The target is resolved inside the container, where it cannot escape; while unpacking,
		// os.Root refuses to follow it out of dir.
		if err := root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		return root.Lchown(name, hdr.Uid, hdr.Gid)
	case tar.TypeLink:
		target := path.Clean(strings.TrimPrefix(hdr.Linkname, "/"))
		if !filepath.IsLocal(target) {
			return fmt.Errorf("hard link to %q points outside the root filesystem", hdr.Linkname)
		}
		if err := removeNonDir(root, name); err != nil {
			return err
		}
		return root.Link(target, name)
	default:
		// Device nodes and FIFOs: no image this package runs has them, and runc provides /dev.
		return fmt.Errorf("entry type %q is not supported", hdr.Typeflag)
	}
	// Owner before mode: chown clears the setuid and setgid bits.
	if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	return root.Chmod(name, mode.Perm()|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

func removeNonDir(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return root.RemoveAll(name)
	}
	return root.Remove(name)
}
