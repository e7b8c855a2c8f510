//go:build e2e

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

package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// The keyring the documents act on: they define NS=mcp KEYRING=weather at their top, so these are
// given to the harness explicitly rather than taken from its defaults.
const (
	docsNamespace = "mcp"
	docsKeyring   = "weather"
)

// blockTimeout bounds one block: the longest waits for a rotation, which takes about 10 s here.
const blockTimeout = 3 * time.Minute

// TestDocs runs every sh block of the operator documents (docs/*.md but NotRun), in order, file by
// file, as a reader would in one terminal per file: each block in bash with -e, -u and pipefail,
// in that file's own working folder, seeing the variables (set -a exports every assignment) and
// the folder the blocks before it left. The shell gets KUBECONFIG (an admin of the local
// cluster), PATH with kubectl v1.37.2, a freshly built kubectl-mrtr and helm in front, a HOME of its
// own (so nothing reads ~/.kube), and TOKEN: a request state the example server sealed when the
// test began, as a reader takes one from a client's log. By the time the runbook inspects it, it
// has expired and its key has been rotated out, like the rejected tokens readers bring to it.
func TestDocs(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs := operatorDocs(t, root)  // before the cluster: a malformed document fails in a second
	logf.SetLogger(logr.Discard()) // the harness's watches log through controller-runtime; the processes log to files
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	start := time.Now()
	bin := tools(ctx, t, root)
	// kwok's node: the docs' commands read the operator and its keyring, which no container changes.
	env, err := harness.Start(ctx, harness.Options{Namespace: docsNamespace, Name: docsKeyring, Logf: t.Logf, Node: localcluster.NodeKwok})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the harness: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("start the harness: %v", err)
	}
	token, err := sealedToken(ctx, env.MCPURL)
	if err != nil {
		t.Fatalf("get a request state from the example server: %v", err)
	}
	t.Logf("cluster, operator and %s/%s ready in %v", docsNamespace, docsKeyring, time.Since(start).Round(time.Millisecond))

	home := t.TempDir()
	base := []string{
		"HOME=" + home,
		"KUBECONFIG=" + env.Cluster.KubeconfigPath(),
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TOKEN=" + token,
		"LANG=C.UTF-8",
	}
	for _, d := range docs {
		ok := t.Run(d.name, func(t *testing.T) {
			began := time.Now()
			s := &session{env: base, dir: t.TempDir()}
			for _, b := range d.blocks {
				o, err := s.run(ctx, b, blockTimeout)
				if err != nil {
					t.Fatalf("%s: %v:\n%s--- output ---\n%s", b, err, b.Code, o.output)
				}
				if o.code != b.Exit {
					t.Fatalf("%s: exited %d, want %d:\n%s--- output ---\n%s", b, o.code, b.Exit, b.Code, o.output)
				}
				t.Logf("%s (%v, exit %d):\n%s--- output ---\n%s", b, o.took, o.code, b.Code, o.output)
			}
			t.Logf("%s: %d blocks in %v", d.name, len(d.blocks), time.Since(began).Round(time.Millisecond))
		})
		if !ok {
			// The next documents would start from whatever state the failed one left.
			t.Fatalf("%s failed: the documents after it are not run", d.name)
		}
	}
	t.Logf("every document ran in %v, cluster start included", time.Since(start).Round(time.Millisecond))
}

// doc is one operator document and the blocks of it that run.
type doc struct {
	name   string
	blocks []Block
}

// operatorDocs parses docs/*.md, sorted by name, but NotRun.
func operatorDocs(t *testing.T, root string) []doc {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md under %s (%v)", root, err)
	}
	slices.Sort(files)
	var docs []doc
	for _, f := range files {
		name := filepath.Base(f)
		if why, skip := NotRun[name]; skip {
			t.Logf("not running %s: %s", name, why)
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse("docs/"+name, src)
		if err != nil {
			t.Fatal(err)
		}
		d := doc{name: name}
		for _, b := range blocks {
			if b.Runs() {
				d.blocks = append(d.blocks, b)
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// tools returns a folder holding the kubectl of the API server's version (built once per machine
// into the control-plane cache), kubectl-mrtr built from this tree, which kubectl runs as kubectl
// mrtr, and bin/helm (make helm): the documents call them by name.
func tools(ctx context.Context, t *testing.T, root string) string {
	dir := t.TempDir()
	if err := testenv.Build(ctx, "./cmd/kubectl-mrtr", filepath.Join(dir, "kubectl-mrtr")); err != nil {
		t.Fatal(err)
	}
	cp := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-controlplane.sh"), "kubectl")
	cp.Dir = root
	cp.Stderr = os.Stderr // a first build takes minutes: show that it runs
	out, err := cp.Output()
	if err != nil {
		t.Fatalf("hack/build-controlplane.sh kubectl: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	helm := filepath.Join(root, "bin", "helm") // the harness installs the chart with it too
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing: run make helm (make test-docs does)", helm)
	}
	for name, target := range map[string]string{"kubectl": filepath.Join(lines[len(lines)-1], "kubectl"), "helm": helm} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The request whose state the runbook inspects: get_weather's first round, anonymous, as a client
// of the MRTR protocol revision sends it (stateless: no initialize, the client's identity in _meta).
const (
	mcpProtocolVersion = "2026-07-28"
	weatherCall        = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test-docs","version":"v0"}},` +
		`"name":"get_weather","arguments":{"location":"Paris"}}}`
)

// sealedToken asks the example server, through the balancer at url, for the first round of
// get_weather and returns the request state of its answer.
func sealedToken(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(weatherCall))
	if err != nil {
		return "", err
	}
	for k, v := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": mcpProtocolVersion, "Mcp-Method": "tools/call", "Mcp-Name": "get_weather",
	} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("%s: %w", resp.Status, err)
	}
	if body.Result.RequestState == "" {
		return "", fmt.Errorf("%s: no requestState in the answer (error %s)", resp.Status, body.Error)
	}
	return body.Result.RequestState, nil
}
