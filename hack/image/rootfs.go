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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The other kind of image: directory trees, one layer each, under a command. The local cluster's
// Python and TypeScript example servers are built so: a Debian root (hack/server-rootfs.sh) and a
// layer with the server, its packages and its runtime. No container engine is needed for them
// either.

// treeOptions are the flags of a tree image (-layer).
type treeOptions struct {
	// layers are directories whose trees become the image's layers, in order.
	layers []string
	// cmd is the image's entrypoint, a JSON array of strings.
	cmd string
	// env are VAR=value pairs added to the image's environment.
	env []string
}

// assembleTrees builds the image of o.trees.layers for this machine's platform: the trees are this
// machine's files (the interpreter of a Debian root, a node binary), so their platform is its own.
func assembleTrees(o options) (v1.Image, v1.Platform, error) {
	var entrypoint []string
	if err := json.Unmarshal([]byte(o.trees.cmd), &entrypoint); err != nil || len(entrypoint) == 0 {
		return nil, v1.Platform{}, fmt.Errorf("-cmd %q: want a JSON array of strings, the program first", o.trees.cmd)
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Created:      v1.Time{Time: o.created},
		Config: v1.Config{
			User:       imageUser,
			Entrypoint: entrypoint,
			WorkingDir: workDir,
			Env:        append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, o.trees.env...),
			Labels:     map[string]string{"org.opencontainers.image.source": o.source, "org.opencontainers.image.title": o.title},
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, v1.Platform{}, err
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return nil, v1.Platform{}, err
	}
	for i, dir := range o.trees.layers {
		tarPath := filepath.Join(o.outDir, fmt.Sprintf("layer-%d.tar", i))
		if err := tarTree(dir, tarPath, o); err != nil {
			return nil, v1.Platform{}, fmt.Errorf("-layer %s: %w", dir, err)
		}
		l, err := tarball.LayerFromFile(tarPath, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
		if err != nil {
			return nil, v1.Platform{}, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: COPY " + filepath.Base(dir) + " /",
		}}); err != nil {
			return nil, v1.Platform{}, err
		}
	}
	return img, platform, nil
}

// tarTree writes the tree under dir as a layer tar at out: names sorted (a parent before its
// children), modes, owners (numeric) and symbolic links as they are, every time o.created, hard
// links as copies.
func tarTree(dir, out string, o options) error {
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
		if err := tarEntry(tw, dir, p, o); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p, err), f.Close())
		}
	}
	return errors.Join(tw.Close(), f.Close())
}

func tarEntry(tw *tar.Writer, dir, p string, o options) error {
	info, err := os.Lstat(p)
	if err != nil {
		return err
	}
	var link string
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	if !info.Mode().IsRegular() && !info.IsDir() && link == "" {
		return nil // device nodes, sockets, fifos: the runtime makes /dev itself
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	hdr.Name = filepath.ToSlash(rel)
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	}
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = o.created, time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck // read-only
	_, err = io.Copy(tw, src)
	return err
}
