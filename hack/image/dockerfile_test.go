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
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile (make docker-build, docker-buildx) and this program (make image, the image the
// tests run) must make the same image: both are read here, as text, since no container engine runs
// where the tests do.

// stage is one FROM of a Dockerfile: its image and name, and its instructions in order.
type stage struct {
	from, name string
	instr      [][2]string // {INSTRUCTION, arguments}
}

func (s stage) last(instr string) string {
	v := ""
	for _, i := range s.instr {
		if i[0] == instr {
			v = i[1]
		}
	}
	return v
}

// parseDockerfile splits a Dockerfile into stages, joining continued lines and dropping comments.
func parseDockerfile(text string) []stage {
	var stages []stage
	var line string
	for raw := range strings.SplitSeq(text, "\n") {
		raw = strings.TrimSpace(raw)
		if strings.HasPrefix(raw, "#") || (raw == "" && line == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(raw, `\`); ok {
			line += cont + " "
			continue
		}
		line += raw
		instr, args, _ := strings.Cut(line, " ")
		instr, args, line = strings.ToUpper(instr), strings.TrimSpace(args), ""
		if instr == "FROM" {
			f := strings.Fields(args)
			s := stage{from: f[len(f)-1]}
			if len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
				s.from, s.name = f[len(f)-3], f[len(f)-1]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, [2]string{instr, args})
		}
	}
	return stages
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
// binary the Makefile's image target builds (MANAGER_BUILD_FLAGS, cmd/main.go) and from go.mod's Go
// version.
func dockerfileDisagreements(dockerfile, makefile, gomod string) []string {
	var diffs []string
	differ := func(what, got, want string) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s: the Dockerfile has %q, make image %q", what, got, want))
		}
	}
	stages := parseDockerfile(dockerfile)
	if len(stages) != 2 {
		return []string{fmt.Sprintf("the Dockerfile has %d stages, want 2 (a builder and the image)", len(stages))}
	}
	builder, final := stages[0], stages[1]

	// The image: base, user, working directory, entrypoint, where the binary lands.
	differ("the final stage's base", final.from, distrolessBase)
	differ("USER", final.last("USER"), imageUser)
	differ("WORKDIR", final.last("WORKDIR"), workDir)
	var entrypoint []string
	if err := json.Unmarshal([]byte(final.last("ENTRYPOINT")), &entrypoint); err != nil {
		diffs = append(diffs, fmt.Sprintf("ENTRYPOINT %q is not an exec-form JSON array: %v", final.last("ENTRYPOINT"), err))
	}
	differ("ENTRYPOINT", strings.Join(entrypoint, " "), binaryPath)
	copyArgs := strings.Fields(final.last("COPY"))
	if len(copyArgs) < 3 || copyArgs[0] != "--from="+builder.name {
		return append(diffs, fmt.Sprintf("the final stage's COPY %q does not copy from the builder stage %q", copyArgs, builder.name))
	}
	src, dest := copyArgs[len(copyArgs)-2], copyArgs[len(copyArgs)-1]
	if dest == "." || strings.HasSuffix(dest, "/") {
		dest = path.Join(final.last("WORKDIR"), dest, path.Base(src))
	}
	differ("the binary's path", dest, binaryPath)

	// The builder: its Go, and the binary's build.
	goVersion := ""
	if m := goDirective.FindStringSubmatch(gomod); m != nil {
		goVersion = m[1]
	}
	differ("the builder's Go", builder.from, "golang:"+goVersion)
	wantFlags := ""
	if m := makeBuildFlags.FindStringSubmatch(makefile); m != nil {
		wantFlags = strings.Join(strings.Fields(m[1]), " ")
	}
	_, _, makePkg := goBuildArgs(recipeLine(makefile, "image", "go build"))
	flags, out, pkg := goBuildArgs(builder.last("RUN"))
	differ("go build's flags", flags, wantFlags)
	differ("go build's package", pkg, makePkg)
	differ("the builder's binary", path.Join(builder.last("WORKDIR"), out), src)
	if run := builder.last("RUN"); !strings.Contains(run, "CGO_ENABLED=0") {
		diffs = append(diffs, fmt.Sprintf("the builder's go build %q is not static (CGO_ENABLED=0)", run))
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
	var texts []string
	for _, p := range []string{"../../Dockerfile", "../../Makefile", "../../go.mod"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	return texts[0], texts[1], texts[2]
}

// TestDockerfileAgrees checks that the Dockerfile makes the image make image makes: the same base
// (distroless static:nonroot), user, working directory, entrypoint and binary path, the binary built
// with the same flags from the same package, by the Go of go.mod.
func TestDockerfileAgrees(t *testing.T) {
	dockerfile, makefile, gomod := readRepoFiles(t)
	if _, _, pkg := goBuildArgs(recipeLine(makefile, "image", "go build")); pkg == "" {
		t.Fatal("the Makefile's image target builds no package with go build")
	}
	for _, d := range dockerfileDisagreements(dockerfile, makefile, gomod) {
		t.Error(d)
	}
}

// TestDockerfileDrift checks that the agreement test sees each kind of drift.
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
