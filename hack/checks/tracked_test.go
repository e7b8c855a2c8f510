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

package checks

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two folders up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs a script of hack/ with args and env added to this process's environment, and returns
// its exit code, stdout and stderr.
func run(t *testing.T, env []string, script string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "hack", script), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s did not run: %v", script, err)
	}
	return code, out.String(), errOut.String()
}

// file is one file that a case stages in a fresh repository.
type file struct {
	path       string
	content    []byte
	executable bool
}

// newRepo makes a git repository in a temporary folder and stages files in it (the check reads
// git's index, so nothing needs to be committed). The user's and the system's git configuration
// are left out, so that no setting of this machine (core.fileMode, attributes) changes the case.
func newRepo(t *testing.T, files ...file) string {
	t.Helper()
	dir := t.TempDir()
	gitEnv := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.content, 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "--", f.path)
		if f.executable {
			git("update-index", "--chmod=+x", "--", f.path)
		}
	}
	return dir
}

// The files every repository below holds, none of which the check may name: a script with its
// interpreter line and the executable bit, a text file of exactly 1 MB, and large binary test
// inputs in testdata/ folders at the top and deep down.
var cleanFiles = []file{
	{path: "README.md", content: []byte("# a project\n")},
	{path: "hack/build.sh", content: []byte("#!/usr/bin/env bash\necho built\n"), executable: true},
	{path: ".ci/run", content: []byte("#!/bin/sh\nmake test\n"), executable: true},
	{path: "docs/exactly-1MB.txt", content: bytes.Repeat([]byte("a"), 1_000_000)},
	{path: "testdata/corpus.bin", content: append([]byte{0, 1, 2}, bytes.Repeat([]byte{0xff, 0}, 1_000_000)...)},
	{path: "pkg/token/testdata/vectors.json", content: bytes.Repeat([]byte("{}\n"), 500_000)},
}

func TestTrackedFilesCleanRepositoryPasses(t *testing.T) {
	code, stdout, stderr := run(t, nil, "check-tracked-files.sh", newRepo(t, cleanFiles...))
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("a repository without build outputs: exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
}

func TestTrackedFilesOffendersAreNamed(t *testing.T) {
	// This test's own binary: a real executable of this machine's format, as `go build` leaves one.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	header := func(magic ...byte) []byte { return append(magic, make([]byte, 60)...) }

	for name, tc := range map[string]struct {
		offender file
		want     string // what the one line says besides the file's name
	}{
		"a program built in place, even in testdata/, its name with a space": {
			offender: file{path: "testdata/my server", content: program},
			want:     "executable",
		},
		"a program without the executable bit": {
			offender: file{path: "mcp-server", content: program[:4096]},
			want:     "executable",
		},
		"a 64-bit Mach-O program": {
			offender: file{path: "hack/image/image", content: header(0xcf, 0xfa, 0xed, 0xfe), executable: true},
			want:     "Mach-O",
		},
		"a Windows program": {
			offender: file{path: "dist/tool.exe", content: header('M', 'Z', 0x90, 0)},
			want:     "PE (Windows)",
		},
		"a text file with the executable bit and no #! line": {
			offender: file{path: "hack/run-me", content: []byte("echo hello\n"), executable: true},
			want:     "executable bit but no #! line",
		},
		"an empty file with the executable bit": {
			offender: file{path: "hack/empty", executable: true},
			want:     "executable bit but no #! line",
		},
		"a file just over 1 MB outside testdata/": {
			offender: file{path: "docs/big.txt", content: bytes.Repeat([]byte("a"), 1_000_001)},
			want:     "1000001 bytes, over 1 MB",
		},
		"a large file in a folder whose name only contains testdata": {
			offender: file{path: "mytestdata/big.txt", content: bytes.Repeat([]byte("a"), 2_000_000)},
			want:     "over 1 MB",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t, append([]file{tc.offender}, cleanFiles...)...)
			code, stdout, stderr := run(t, nil, "check-tracked-files.sh", repo)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code == 0 || stdout != "" || len(lines) != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a failure and one line naming %s", code, stdout, stderr, tc.offender.path)
			}
			if !strings.Contains(lines[0], " "+tc.offender.path+" ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("the line %q does not name %q as %q", lines[0], tc.offender.path, tc.want)
			}
		})
	}
}

// The repository itself tracks no build output: the check that make lint runs, also in make test.
func TestRepositoryTracksNoBuildOutputs(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("not a git checkout (%v): nothing is tracked", err)
	}
	if code, _, stderr := run(t, nil, "check-tracked-files.sh", root); code != 0 {
		t.Fatalf("git tracks build outputs or large files (exit %d):\n%s", code, stderr)
	}
}
