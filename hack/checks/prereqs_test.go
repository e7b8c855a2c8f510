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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// machineTools finds the real python3, node and npm of this machine, the ones make test would run.
// python3 and node are resolved to their interpreters (sys.executable, process.execPath): a
// version manager's shim on PATH (pyenv, nvm) runs only with the rest of its PATH. npm is looked
// up on PATH; the check only looks for it. A machine without them cannot run make test, whose first
// step this tests, so the test is skipped there, saying why.
func machineTools(t *testing.T) map[string]string {
	t.Helper()
	tools := map[string]string{}
	for name, args := range map[string][]string{
		"python3": {"-c", "import sys; print(sys.executable)"},
		"node":    {"-p", "process.execPath"},
	} {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			t.Skipf("this machine has no working %s (%v), which make test needs", name, err)
		}
		tools[name] = strings.TrimSpace(string(out))
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("this machine has no npm (%v), which make test needs", err)
	}
	tools["npm"] = npm
	return tools
}

// pathOf makes a folder of symbolic links to tools (name to executable), with bash, which the
// script's #! line finds on PATH, and returns it to be the whole PATH.
func pathOf(t *testing.T, tools map[string]string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, target := range tools {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bash, filepath.Join(dir, "bash")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stub writes an executable shell script that stands in for a tool this machine does not have, an
// old Node.js, and returns its path.
func stub(t *testing.T, name, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// repoWith returns a folder that stands for the repository's root, with clients/rust/Cargo.toml
// when rust is set (the Rust package, whose suite needs cargo).
func repoWith(t *testing.T, rust bool) string {
	t.Helper()
	root := t.TempDir()
	if rust {
		if err := os.MkdirAll(filepath.Join(root, "clients", "rust"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "clients", "rust", "Cargo.toml"), []byte("[package]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestPrereqs(t *testing.T) {
	machine := machineTools(t)
	// A Python whose standard library lacks ensurepip, as Debian's python3 without python3-venv: a
	// module of that name first on its path that fails to import.
	noEnsurepip := t.TempDir()
	if err := os.MkdirAll(filepath.Join(noEnsurepip, "ensurepip"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noEnsurepip, "ensurepip", "__init__.py"),
		[]byte("raise ImportError('ensurepip is disabled in Debian/Ubuntu for the system python')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	without := func(name string) map[string]string {
		tools := map[string]string{}
		for n, p := range machine {
			if n != name {
				tools[n] = p
			}
		}
		return tools
	}
	with := func(name, path string) map[string]string {
		tools := without(name)
		tools[name] = path
		return tools
	}

	for name, tc := range map[string]struct {
		tools map[string]string
		env   []string
		rust  bool
		want  string // the one line's reason; empty: the check passes, silently
	}{
		"this machine's tools": {tools: machine},
		"no node":              {tools: without("node"), want: "Node.js 20.19+ (node is not on PATH)"},
		"no npm":               {tools: without("npm"), want: "npm (not on PATH)"},
		"no python3":           {tools: without("python3"), want: "Python 3.11+ with venv (python3 is not on PATH)"},
		"python3 without ensurepip (Debian without python3-venv)": {
			tools: machine, env: []string{"PYTHONPATH=" + noEnsurepip}, want: "apt-get install python3-venv",
		},
		"PYTHON names an interpreter that is not there": {
			tools: machine, env: []string{"PYTHON=python3.99"}, want: "python3.99 is not on PATH",
		},
		"Node.js 18": {tools: with("node", stub(t, "node", "echo v18.19.0")), want: "Node.js 20.19+ (node is v18.19.0)"},
		"Node.js 20.18": {
			tools: with("node", stub(t, "node", "echo v20.18.3")), want: "Node.js 20.19+ (node is v20.18.3)",
		},
		"Node.js 20.19":             {tools: with("node", stub(t, "node", "echo v20.19.0"))},
		"Node.js 22.1":              {tools: with("node", stub(t, "node", "echo v22.1.0"))},
		"a node that does not run":  {tools: with("node", stub(t, "node", "exit 1")), want: "node --version says ''"},
		"no cargo, no Rust package": {tools: machine},
		"no cargo for the Rust package": {
			tools: machine, rust: true, want: "cargo, for clients/rust (not on PATH)",
		},
		"cargo for the Rust package": {
			tools: with("cargo", stub(t, "cargo", "exit 0")), rust: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"PATH=" + pathOf(t, tc.tools), "PYTHON="}, tc.env...)
			code, stdout, stderr := run(t, env, "check-prereqs.sh", repoWith(t, tc.rust))
			if tc.want == "" {
				if code != 0 || stdout != "" || stderr != "" {
					t.Fatalf("exit %d, stdout %q, stderr %q; want it to pass silently", code, stdout, stderr)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code == 0 || stdout != "" || len(lines) != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a failure and one line", code, stdout, stderr)
			}
			if !strings.HasPrefix(lines[0], "make test needs ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("the line %q does not say %q", lines[0], tc.want)
			}
		})
	}
}

// make test runs the check before anything else: before controller-gen is built or run, and before
// envtest's binaries are downloaded. make -n lists the commands in the order make runs them.
func TestMakeTestChecksPrereqsFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("no make: %v", err)
	}
	cmd := exec.Command("make", "-n", "--no-print-directory", "test")
	cmd.Dir = repoRoot(t)
	// A make that runs this test (make test) passes its flags to its children in the environment:
	// this make is a make of its own.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n test: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if !strings.Contains(first, "hack/check-prereqs.sh") {
		t.Fatalf("make test's first command is %q; want hack/check-prereqs.sh", first)
	}
}
