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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// ServerKind is the MCP SDK an example server is written with. Every kind serves the same
// get_weather tool (two rounds, an elicitation between them), the same /debug/keyring and /healthz,
// and takes the same flags, so the harness drives and observes them alike.
type ServerKind string

const (
	// ServerGo is examples/mcp-server, on the official Go SDK with pkg/keyring, pkg/token and
	// pkg/ack.
	ServerGo ServerKind = "go"
	// ServerPython is examples/python-server, on the official Python SDK (mcp on PyPI) with
	// clients/python.
	ServerPython ServerKind = "python"
	// ServerTypeScript is examples/typescript-server, on the official TypeScript SDK
	// (@modelcontextprotocol/server on npm) with clients/typescript.
	ServerTypeScript ServerKind = "typescript"
	// ServerRust is examples/rust-server, on rmcp (the official Rust SDK, crates.io) with
	// clients/rust.
	ServerRust ServerKind = "rust"
)

// ServerKinds are the kinds there are, for flags.
var ServerKinds = []ServerKind{ServerGo, ServerPython, ServerTypeScript, ServerRust}

// ParseServerKind reads a kind's name.
func ParseServerKind(s string) (ServerKind, error) {
	for _, k := range ServerKinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("server %q: want one of %v", s, ServerKinds)
}

// Image is the kind's image on the real node, imported, never pulled.
func (k ServerKind) Image() string {
	if k == ServerGo {
		return ServerImage
	}
	return "example.com/mrtr-example-mcp-server-" + string(k) + ":dev"
}

// deployment is the name of the kind's Deployment among those of servers: the first is name
// itself, so that a harness of one kind (the usual) names everything alike.
func deploymentName(name string, servers []ServerKind, i int) string {
	if i == 0 {
		return name
	}
	return name + "-" + string(servers[i])
}

// serverImageDir is where the image of kind is built, its staged files included.
func (e *Env) serverImageDir(kind ServerKind) string {
	return filepath.Join(e.workDir, "server-image-"+string(kind))
}

// pythonLib is where stagePython puts the Python server's packages, under an image's dir.
func pythonLib(dir string) string { return filepath.Join(dir, "app", "app", "lib") }

// buildServerImage builds the image of kind into dir and returns its OCI layout tar: the Go server's
// binary on hack/image's distroless-like base, the others on a Debian root (hack/server-rootfs.sh)
// with their runtime and packages.
func buildServerImage(ctx context.Context, root string, kind ServerKind, goServer, dir string) (string, error) {
	if kind == ServerGo {
		img, err := localcluster.BuildImage(ctx, localcluster.ImageSpec{Ref: kind.Image(), Binary: goServer, Entrypoint: "/mcp-server"}, dir)
		return img.Tar, err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "server-rootfs.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("hack/server-rootfs.sh: %w%s", err, stderr(err))
	}
	base := strings.TrimSpace(string(out))
	app := filepath.Join(dir, "app")
	var cmd, env []string
	switch kind {
	case ServerPython:
		cmd = []string{"/usr/bin/python3", "/app/server.py"}
		env = []string{"PYTHONPATH=/app/lib", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"}
		err = stagePython(ctx, root, filepath.Dir(pythonLib(dir)), filepath.Join(dir, "wheels"))
	case ServerTypeScript:
		cmd = []string{"/usr/local/bin/node", "/app/server.mjs"}
		err = stageTypeScript(ctx, root, app)
	case ServerRust:
		cmd = []string{"/usr/local/bin/mrtr-example-rust-server"}
		err = stageRust(ctx, root, app)
	default:
		err = fmt.Errorf("no image for server kind %q", kind)
	}
	if err != nil {
		return "", fmt.Errorf("the %s server's image: %w", kind, err)
	}
	img, err := localcluster.BuildImage(ctx, localcluster.ImageSpec{Ref: kind.Image(), Layers: []string{base, app}, Cmd: cmd, Env: env},
		filepath.Join(dir, "image"))
	return img.Tar, err
}

// stagePython puts examples/python-server/server.py and its packages (clients/python with its mcp
// extra, at the versions clients/python/constraints.txt pins) into app: the packages as wheels for the image's Python
// (Debian bookworm's 3.11) and this machine's architecture, so that pip on any machine picks what
// the image can load.
func stagePython(ctx context.Context, root, app, wheels string) error {
	if err := run(ctx, root, "python3", "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
		"--wheel-dir", wheels, "./clients/python"); err != nil {
		return err
	}
	whl, err := filepath.Glob(filepath.Join(wheels, "mrtr_keyring-*.whl"))
	if err != nil || len(whl) != 1 {
		return fmt.Errorf("pip wheel ./clients/python made %v (%v), want one wheel", whl, err)
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if err := run(ctx, root, "python3", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
		"--target", filepath.Join(app, "lib"), "--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11",
		"--platform", "manylinux_2_36_"+arch, "--platform", "manylinux2014_"+arch, "--platform", "any",
		"--constraint", filepath.Join(root, "clients", "python", "constraints.txt"), whl[0]+"[mcp]"); err != nil {
		return err
	}
	return copyFile(filepath.Join(root, "examples", "python-server", "server.py"), filepath.Join(app, "server.py"), 0o644)
}

// stageTypeScript puts examples/typescript-server (server.mjs and its production dependencies, the
// SDK and clients/typescript built and copied in) and this machine's node binary into app.
func stageTypeScript(ctx context.Context, root, app string) error {
	pkg := filepath.Join(root, "clients", "typescript")
	if err := run(ctx, pkg, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
		return err
	}
	if err := run(ctx, pkg, "npm", "run", "--silent", "build"); err != nil {
		return err
	}
	example := filepath.Join(root, "examples", "typescript-server")
	// --install-links copies clients/typescript in (as npm pack would) instead of linking it.
	if err := run(ctx, example, "npm", "ci", "--omit=dev", "--install-links", "--no-audit", "--no-fund", "--loglevel=error"); err != nil {
		return err
	}
	if err := os.MkdirAll(app, 0o755); err != nil {
		return err
	}
	if err := run(ctx, root, "cp", "-r", example, filepath.Join(app, "app")); err != nil {
		return err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return err
	}
	if node, err = filepath.EvalSymlinks(node); err != nil {
		return err
	}
	return copyFile(node, filepath.Join(app, "usr", "local", "bin", "node"), 0o755)
}

// rustTarget is where cargo builds the crate's workspace (clients/rust), the example server and
// its client included.
func rustTarget(root string) string {
	return filepath.Join(root, "clients", "rust", "target", "release")
}

// buildRust builds examples/rust-server's server and client (release, at the versions
// clients/rust/Cargo.lock pins), into the workspace's target directory, which keeps the build
// cached; one job at low priority, as make test-rust.
func buildRust(ctx context.Context, root string) error {
	c := exec.CommandContext(ctx, "nice", "-n", "10", "cargo", "build", "--locked", "--release", "-p", "mrtr-example-rust-server")
	c.Dir = filepath.Join(root, "clients", "rust")
	c.Env = append(os.Environ(), "CARGO_BUILD_JOBS=1")
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("cargo build -p mrtr-example-rust-server: %w\n%s", err, out)
	}
	return nil
}

// stageRust puts the Rust server's binary into app. Built on this machine, it links this machine's
// glibc, which must be no newer than the image's (Debian bookworm's 2.36).
func stageRust(ctx context.Context, root, app string) error {
	if err := buildRust(ctx, root); err != nil {
		return err
	}
	return copyFile(filepath.Join(rustTarget(root), "mrtr-example-rust-server"),
		filepath.Join(app, "usr", "local", "bin", "mrtr-example-rust-server"), 0o755)
}

func run(ctx context.Context, dir, name string, args ...string) error {
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}

func stderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// ClientLoad runs MRTR round trips against an MCP endpoint with another SDK's own client: the
// example's client program (examples/python-server/client.py, examples/typescript-server/
// client.mjs, examples/rust-server's mrtr-example-rust-client on rmcp), which runs until SIGTERM
// and then prints its counts as one JSON line. The Go SDK's client is Load.
type ClientLoad struct {
	Kind ServerKind
	cmd  *exec.Cmd
	out  strings.Builder
	done chan error
}

// StartClientLoad starts the kind's client with workers concurrent sessions against url. The
// kind's server must be among the Env's servers: the client runs on the packages staged for its
// image.
func (e *Env) StartClientLoad(ctx context.Context, kind ServerKind, url string, workers int) (*ClientLoad, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	var c *exec.Cmd
	switch kind {
	case ServerPython:
		c = exec.CommandContext(ctx, "python3", filepath.Join(root, "examples", "python-server", "client.py"),
			"--url", url, "--workers", fmt.Sprint(workers))
		// The packages staged for the image: built for this machine's Python 3.11 and architecture.
		c.Env = append(os.Environ(), "PYTHONPATH="+pythonLib(e.serverImageDir(ServerPython)))
	case ServerTypeScript:
		c = exec.CommandContext(ctx, "node", filepath.Join(root, "examples", "typescript-server", "client.mjs"),
			"--url", url, "--workers", fmt.Sprint(workers))
	case ServerRust:
		// rmcp's own client, built with the server's image.
		c = exec.CommandContext(ctx, filepath.Join(rustTarget(root), "mrtr-example-rust-client"),
			"--url", url, "--workers", fmt.Sprint(workers))
	default:
		return nil, fmt.Errorf("no client program for %s (the Go SDK's client is Load)", kind)
	}
	l := &ClientLoad{Kind: kind, cmd: c, done: make(chan error, 1)}
	c.Stdout = &l.out
	c.Stderr = os.Stderr
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s client: %w", kind, err)
	}
	go func() { l.done <- c.Wait() }()
	return l, nil
}

// Stop ends the client's round trips and returns what it counted, and its last errors.
func (l *ClientLoad) Stop() (Counts, []string, error) {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-l.done; err != nil {
		return Counts{}, nil, fmt.Errorf("the %s client: %w\n%s", l.Kind, err, l.out.String())
	}
	var r struct {
		Completed    uint64   `json:"completed"`
		Rejected     uint64   `json:"rejected"`
		Failed       uint64   `json:"failed"`
		CrossReplica uint64   `json:"crossReplica"`
		Errors       []string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(l.out.String())), &r); err != nil {
		return Counts{}, nil, fmt.Errorf("the %s client's counts %q: %w", l.Kind, l.out.String(), err)
	}
	return Counts{Completed: r.Completed, Rejected: r.Rejected, Failed: r.Failed, CrossReplica: r.CrossReplica}, r.Errors, nil
}
