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
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// An image of trees: each -layer directory one layer, in order, its files, directories and
// symbolic links as they are (modes kept, names sorted, every time the build's), under the
// command and environment given, run as the nonroot user like the manager's.
func TestTreeImage(t *testing.T) {
	o := testOptions(t)
	base, app := t.TempDir(), t.TempDir()
	for p, body := range map[string]string{"usr/bin/python3": "#!", "etc/os-release": "ID=debian\n"} {
		mustWrite(t, filepath.Join(base, p), body, 0o755)
	}
	if err := os.Symlink("python3", filepath.Join(base, "usr/bin/python")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(app, "app/server.py"), "print('hi')\n", 0o644)
	o.trees = treeOptions{layers: []string{base, app}, cmd: `["/usr/bin/python3","/app/server.py"]`, env: []string{"PYTHONPATH=/app/lib"}}

	res, err := build(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	img := loadLayout(t, res)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; !slices.Equal(got, []string{"/usr/bin/python3", "/app/server.py"}) {
		t.Errorf("entrypoint %q", got)
	}
	if !slices.Contains(cf.Config.Env, "PYTHONPATH=/app/lib") || cf.Config.User != imageUser || cf.Architecture != runtime.GOARCH {
		t.Errorf("config %+v", cf.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers, %v; want 2", len(layers), err)
	}
	list, content := layerEntries(t, layers[0])
	want := []string{"etc/", "etc/os-release", "usr/", "usr/bin/", "usr/bin/python", "usr/bin/python3"}
	names := make([]string, 0, len(list))
	for _, e := range list {
		names = append(names, strings.Fields(e)[0])
	}
	if !slices.Equal(names, want) {
		t.Errorf("base layer %q, want %q", names, want)
	}
	for _, e := range list {
		if strings.HasPrefix(e, "usr/bin/python ") && !strings.Contains(e, "L") {
			t.Errorf("usr/bin/python is not a symbolic link: %s", e)
		}
		if strings.HasPrefix(e, "usr/bin/python3 ") && !strings.Contains(e, "-rwxr-xr-x") {
			t.Errorf("usr/bin/python3 lost its mode: %s", e)
		}
		if !strings.Contains(e, " 1764590000 ") {
			t.Errorf("not stamped with the build's time: %s", e)
		}
	}
	if _, c := layerEntries(t, layers[1]); c["app/server.py"] != "print('hi')\n" || content["etc/os-release"] != "ID=debian\n" {
		t.Errorf("contents %q %q", c, content)
	}

	o.trees.cmd = "/usr/bin/python3"
	if _, err := build(t.Context(), o); err == nil || !strings.Contains(err.Error(), "-cmd") {
		t.Errorf("a -cmd that is not a JSON array: %v", err)
	}
}

func mustWrite(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
