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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// image is an image of an OCI layout, read with go-containerregistry: its config and its layers,
// bottom first.
type image struct {
	layout string
	config ocispec.ImageConfig
	layers []v1.Layer
}

// openImage finds ref (the org.opencontainers.image.ref.name of an entry of index.json) in the
// layout; for a multi-platform index, the manifest for this machine's linux/GOARCH.
func openImage(dir, ref string) (*image, error) {
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		return nil, fmt.Errorf("no OCI image layout at %s (make image writes bin/image/oci): %w", dir, err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var names []string
	var desc *v1.Descriptor
	for i, d := range m.Manifests {
		names = append(names, d.Annotations[ocispec.AnnotationRefName])
		if d.Annotations[ocispec.AnnotationRefName] == ref {
			desc = &m.Manifests[i]
			break
		}
	}
	if desc == nil {
		return nil, fmt.Errorf("the OCI layout %s has no image named %q (it has %q)", dir, ref, names)
	}
	for desc.MediaType.IsIndex() {
		if idx, err = idx.ImageIndex(desc.Digest); err != nil {
			return nil, err
		}
		if m, err = idx.IndexManifest(); err != nil {
			return nil, err
		}
		if desc = forThisPlatform(m.Manifests); desc == nil {
			return nil, fmt.Errorf("image %s of %s has no manifest for linux/%s", ref, dir, runtime.GOARCH)
		}
	}
	if !desc.MediaType.IsImage() {
		return nil, fmt.Errorf("image %s of %s: media type %q is not an image manifest", ref, dir, desc.MediaType)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		return nil, fmt.Errorf("image %s of %s is for %s/%s, this machine runs linux/%s",
			ref, dir, cf.OS, cf.Architecture, runtime.GOARCH)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	c := cf.Config
	return &image{layout: dir, layers: layers, config: ocispec.ImageConfig{
		User: c.User, Env: c.Env, Entrypoint: c.Entrypoint, Cmd: c.Cmd, WorkingDir: c.WorkingDir,
	}}, nil
}

func forThisPlatform(ds []v1.Descriptor) *v1.Descriptor {
	for i, d := range ds {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return &ds[i]
		}
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
		d, err := l.Digest()
		if err != nil {
			return err
		}
		if err := applyLayer(root, l); err != nil {
			return fmt.Errorf("unpacking layer %s of %s: %w", d, img.layout, err)
		}
	}
	return nil
}

const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// applyLayer writes the entries of l and applies its whiteouts. The layer's blob is checked against
// its digest first (go-containerregistry's validate), so a corrupt or truncated layout is never
// taken for the image.
func applyLayer(root *os.Root, l v1.Layer) error {
	if err := validate.Layer(l); err != nil {
		return fmt.Errorf("the layer does not match its digest: %w", err)
	}
	// Gzipped or not, by its first bytes: go-containerregistry decompresses.
	r, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer r.Close() //nolint:errcheck // read-only
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
	return nil
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
