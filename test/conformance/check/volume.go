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

package check

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Volume is a Secret volume written the way the kubelet's atomic writer writes one: each content
// goes into a new timestamped directory, the ..data link is switched to it in one rename, the
// user-visible links to ..data/<file> are created and the stale ones removed, and only then is the
// old timestamped directory removed. A timestamped directory never changes while ..data names it.
type Volume struct {
	dir     string
	n       int
	ts      string
	visible []string
}

// Write replaces the volume's content by files (name to bytes). If afterSwitch is not nil, it runs
// right after the ..data switch, before the links are made and the old directory removed: the
// moment where a reader that goes through the user-visible links rather than ..data finds a link
// missing or dangling.
func (v *Volume) Write(files map[string][]byte, afterSwitch func()) error {
	v.n++
	ts := time.Now().UTC().Format("..2006_01_02_15_04_05.") + fmt.Sprintf("%09d", v.n)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		return err
	}
	var names []string
	for name, data := range files {
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(v.dir, ts, name), data, 0o644); err != nil {
			return err
		}
	}
	slices.Sort(names)
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		return err
	}
	if afterSwitch != nil {
		afterSwitch()
	}
	for _, name := range names {
		if !slices.Contains(v.visible, name) {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)); err != nil {
				return err
			}
		}
	}
	for _, name := range v.visible {
		if !slices.Contains(names, name) {
			if err := os.Remove(filepath.Join(v.dir, name)); err != nil {
				return err
			}
		}
	}
	if v.ts != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.ts)); err != nil {
			return err
		}
	}
	v.ts, v.visible = ts, names
	return nil
}

// NewVolume returns the volume at dir, an existing empty directory, which its first Write fills.
func NewVolume(dir string) *Volume { return &Volume{dir: dir} }

// Dir is the volume's directory, where a consumer finds keyring.json.
func (v *Volume) Dir() string { return v.dir }
