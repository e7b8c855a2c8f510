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

package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// dataLink is the symlink through which the kubelet publishes the current content of a Secret volume.
const dataLink = "..data"

// Project writes files into dir the way the kubelet's AtomicWriter (kubernetes
// pkg/volume/util/atomic_writer.go) updates a Secret volume, so that a reader sees the same file-system
// events as in a pod: the files go into a new timestamped directory, a ..data_tmp symlink to it is
// renamed over ..data in one atomic step, each visible file is a symlink into ..data (created once),
// and the previous timestamped directory is removed. A reader never sees a half-written file, and a
// watch on the old file's inode dies with the old directory.
func Project(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("project %s: %w", dir, err)
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ts, name), data, 0o644); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, dataLink+"_tmp")
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return err
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
				return err
			}
		}
	}
	if old != "" {
		// Visible links of files that are gone from the Secret dangle now; the kubelet removes them.
		if entries, err := os.ReadDir(filepath.Join(dir, old)); err == nil {
			for _, e := range entries {
				if _, keep := files[e.Name()]; !keep {
					_ = os.Remove(filepath.Join(dir, e.Name()))
				}
			}
		}
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
