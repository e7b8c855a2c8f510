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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

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
)

// ServerKinds are the kinds there are, for flags.
var ServerKinds = []ServerKind{ServerGo, ServerPython, ServerTypeScript}

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
		cmd, env = []string{"/usr/bin/python3", "/app/server.py"}, []string{"PYTHONPATH=/app/lib", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"}
		err = stagePython(ctx, root, filepath.Join(app, "app"), filepath.Join(dir, "wheels"))
	case ServerTypeScript:
		cmd = []string{"/usr/local/bin/node", "/app/server.mjs"}
		err = stageTypeScript(ctx, root, app)
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
// extra, at the versions that package pins) into app: the packages as wheels for the image's Python
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
		whl[0]+"[mcp]"); err != nil {
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
