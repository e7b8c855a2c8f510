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
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// The Dockerfile (make docker-build, docker-buildx) and this program (make image, the image the
// tests run) must make the same image. No container engine runs where the tests do, so the
// Dockerfile is read by BuildKit's own parser and linter, the front end of docker build: what they
// refuse or warn about, docker build --check would too.

// parseDockerfile returns the Dockerfile's stages as BuildKit reads them, and every syntax error or
// lint warning as an error.
func parseDockerfile(text string) ([]instructions.Stage, error) {
	res, err := parser.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("the Dockerfile does not parse: %w", err)
	}
	var warnings []string
	for _, w := range res.Warnings {
		warnings = append(warnings, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, _ []parser.Range) {
		warnings = append(warnings, rule+": "+msg)
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, fmt.Errorf("the Dockerfile's instructions do not parse: %w", err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("the Dockerfile has warnings: %s", strings.Join(warnings, "; "))
	}
	return stages, nil
}

// last returns the stage's last command of type T (the one that takes effect), or nil.
func last[T instructions.Command](s instructions.Stage) T {
	var found T
	for _, c := range s.Commands {
		if t, ok := c.(T); ok {
			found = t
		}
	}
	return found
}

var (
	goDirective    = regexp.MustCompile(`(?m)^go (\d+\.\d+)`)
	makeBuildFlags = regexp.MustCompile(`(?m)^MANAGER_BUILD_FLAGS := (.*)$`)
	goBuild        = regexp.MustCompile(`\bgo build (.*)$`)
)

// goBuildArgs splits the arguments of a `go build` command (up to a ';' that ends it in a recipe)
// into its flags (as one string), its output file and its package.
func goBuildArgs(cmd string) (flags, out, pkg string) {
	cmd, _, _ = strings.Cut(cmd, ";")
	m := goBuild.FindStringSubmatch(cmd)
	if m == nil {
		return "", "", ""
	}
	var rest []string
	f := strings.Fields(m[1])
	for i := 0; i < len(f); i++ {
		if f[i] == "-o" && i+1 < len(f) {
			out = f[i+1]
			i++
			continue
		}
		rest = append(rest, f[i])
	}
	if len(rest) > 0 {
		pkg, rest = rest[len(rest)-1], rest[:len(rest)-1]
	}
	return strings.Join(rest, " "), out, pkg
}

// dockerfileDisagreements lists how the Dockerfile differs from what this program builds, from the
// binary the Makefile's image target builds (MANAGER_BUILD_FLAGS, its package) and from go.mod's
// Go version.
func dockerfileDisagreements(dockerfile, makefile, gomod string) []string {
	var diffs []string
	differ := func(what, got, want string) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s: the Dockerfile has %q, make image %q", what, got, want))
		}
	}
	stages, err := parseDockerfile(dockerfile)
	if err != nil {
		return []string{err.Error()}
	}
	if len(stages) != 2 {
		return []string{fmt.Sprintf("the Dockerfile has %d stages, want 2 (a builder and the image)", len(stages))}
	}
	builder, final := stages[0], stages[1]

	// The image: base, user, working directory, entrypoint, where the binary lands.
	differ("the final stage's base", final.BaseName, distrolessBase)
	user, wd, ep := last[*instructions.UserCommand](final), last[*instructions.WorkdirCommand](final),
		last[*instructions.EntrypointCommand](final)
	if user == nil || wd == nil || ep == nil {
		return append(diffs, "the final stage lacks a USER, WORKDIR or ENTRYPOINT")
	}
	differ("USER", user.User, imageUser)
	differ("WORKDIR", wd.Path, workDir)
	if ep.PrependShell {
		diffs = append(diffs, fmt.Sprintf("ENTRYPOINT %q is in shell form, which runs /bin/sh: the image has none", ep.CmdLine))
	}
	differ("ENTRYPOINT", strings.Join(ep.CmdLine, " "), binaryPath)
	cp := last[*instructions.CopyCommand](final)
	if cp == nil || cp.From != builder.Name || len(cp.SourcePaths) != 1 {
		return append(diffs, fmt.Sprintf("the final stage does not copy one binary from the builder stage %q", builder.Name))
	}
	src, dest := cp.SourcePaths[0], cp.DestPath
	if dest == "." || strings.HasSuffix(dest, "/") {
		dest = path.Join(wd.Path, dest, path.Base(src))
	}
	differ("the binary's path", dest, binaryPath)

	// The builder: its Go, and the binary's build.
	goVersion := ""
	if m := goDirective.FindStringSubmatch(gomod); m != nil {
		goVersion = m[1]
	}
	differ("the builder's Go", builder.BaseName, "golang:"+goVersion)
	wantFlags := ""
	if m := makeBuildFlags.FindStringSubmatch(makefile); m != nil {
		wantFlags = strings.Join(strings.Fields(m[1]), " ")
	}
	_, _, makePkg := goBuildArgs(recipeLine(makefile, "image", "go build"))
	run, bwd := last[*instructions.RunCommand](builder), last[*instructions.WorkdirCommand](builder)
	if run == nil || bwd == nil {
		return append(diffs, "the builder stage lacks a RUN or WORKDIR")
	}
	cmd := strings.Join(run.CmdLine, " ")
	flags, out, pkg := goBuildArgs(cmd)
	differ("go build's flags", flags, wantFlags)
	differ("go build's package", pkg, makePkg)
	differ("the builder's binary", path.Join(bwd.Path, out), src)
	if !strings.Contains(cmd, "CGO_ENABLED=0") {
		diffs = append(diffs, fmt.Sprintf("the builder's go build %q is not static (CGO_ENABLED=0)", cmd))
	}
	return diffs
}

// recipeLine returns the first line of the Makefile target's recipe that contains substr.
func recipeLine(makefile, target, substr string) string {
	in := false
	for line := range strings.SplitSeq(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && !strings.HasPrefix(line, "\t"):
			return ""
		case in && strings.Contains(line, substr):
			return line
		}
	}
	return ""
}

func readRepoFiles(t *testing.T) (dockerfile, makefile, gomod string) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return read("../../Dockerfile"), read("../../Makefile"), read("../../go.mod")
}

// TestDockerfileAgrees checks that the Dockerfile parses and lints clean as docker build reads it,
// and makes the image make image makes: the same base (distroless static:nonroot), user, working
// directory, entrypoint and binary path, the binary built with the same flags from the same
// package, by the Go of go.mod.
func TestDockerfileAgrees(t *testing.T) {
	dockerfile, makefile, gomod := readRepoFiles(t)
	if _, _, pkg := goBuildArgs(recipeLine(makefile, "image", "go build")); pkg == "" {
		t.Fatal("the Makefile's image target builds no package with go build")
	}
	for _, d := range dockerfileDisagreements(dockerfile, makefile, gomod) {
		t.Error(d)
	}
}

// TestDockerfileDrift checks that the agreement test sees each kind of drift, and a syntax error
// or lint warning.
func TestDockerfileDrift(t *testing.T) {
	dockerfile, makefile, gomod := readRepoFiles(t)
	for _, tc := range []struct{ old, new, says string }{
		{"USER 65532:65532", "USER 1000:1000", "USER"},
		{"FROM gcr.io/distroless/static:nonroot", "FROM gcr.io/distroless/base:nonroot", "base"},
		{`ENTRYPOINT ["/manager"]`, `ENTRYPOINT ["/bin/manager"]`, "ENTRYPOINT"},
		{"COPY --from=builder /workspace/manager .", "COPY --from=builder /workspace/manager /bin/", "binary's path"},
		{"FROM golang:1.26 AS builder", "FROM golang:1.25 AS builder", "Go"},
		{`-trimpath -ldflags="-s -w"`, `-ldflags="-s -w"`, "flags"},
		{"-o manager cmd/main.go", "-o manager ./cmd/kubectl-mrtr", "package"},
		{"CGO_ENABLED=0 GOOS", "GOOS", "static"},
		{`ENTRYPOINT ["/manager"]`, `ENTRYPOINT /manager`, "shell form"},
		{"FROM golang:1.26 AS builder", "FROM golang:1.26 as builder", "FromAsCasing"},
		{"USER 65532:65532", "USR 65532:65532", "unknown instruction"},
	} {
		if !strings.Contains(dockerfile, tc.old) {
			t.Fatalf("the Dockerfile has no %q to change", tc.old)
		}
		diffs := dockerfileDisagreements(strings.Replace(dockerfile, tc.old, tc.new, 1), makefile, gomod)
		if len(diffs) != 1 || !strings.Contains(diffs[0], tc.says) {
			t.Errorf("with %q for %q: %q, want one difference about %s", tc.new, tc.old, diffs, tc.says)
		}
	}
}
