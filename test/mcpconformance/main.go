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

// Command mcpconformance runs the MCP project's conformance suite (@modelcontextprotocol/conformance,
// pinned in suite/package.json) against replicas of one consumer's conformance server while their
// keyring rotates: every input-required-result-* scenario, through a round-robin balancer that
// sends each request to the next replica (so every retry lands on another replica than the round
// that sealed its state), over one keyring folder that a kubelet-style writer takes through all
// four phases of a rotation (accept the new key, seal with it, wait token-ttl, remove the old one),
// again and again, while the scenarios run.
//
//	make test-mcp-conformance   # every consumer
//	go run ./test/mcpconformance -name go -- bin/mcpconf-goserver
//
// The server command gets --listen ADDR --keyring-dir DIR --token-ttl SECONDS appended, and must
// serve MCP on /mcp (stateless, protocol 2026-07-28) and {"fingerprint": ...} of the keyring in
// service on GET /debug/keyring, which is how the writer knows that every replica has reloaded
// before it takes the next phase, as the operator waits for acknowledgements.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.name, "name", "", "the consumer's name, for the report and its expected-failures file")
	flag.IntVar(&o.replicas, "replicas", 2, "how many replicas of the server run behind the balancer")
	flag.StringVar(&o.node, "node", "bin/node22", "Node.js 22 or later, which the suite needs")
	flag.StringVar(&o.suite, "suite", "test/mcpconformance/suite/node_modules/@modelcontextprotocol/conformance/dist/index.js",
		"the suite's entry point")
	flag.StringVar(&o.baseline, "expected-failures", "",
		"the suite's --expected-failures baseline (default: test/mcpconformance/expected-failures/NAME.yaml)")
	flag.DurationVar(&o.tokenTTL, "token-ttl", 3*time.Second, "the volume's token-ttl, which the writer waits between phases 2 and 4")
	flag.Parse()
	o.server = flag.Args()
	if o.name == "" || len(o.server) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpconformance -name NAME [flags] -- SERVER-COMMAND [ARGS...]")
		os.Exit(2)
	}
	if o.baseline == "" {
		o.baseline = filepath.Join("test/mcpconformance/expected-failures", o.name+".yaml")
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "%s: FAIL: %v\n", o.name, err)
		os.Exit(1)
	}
}

type options struct {
	name, node, suite, baseline string
	replicas                    int
	tokenTTL                    time.Duration
	server                      []string
}

// scenarioPrefix names the multi round-trip scenarios: all of them run.
const scenarioPrefix = "input-required-result-"

// mustRun are scenarios whose absence from the suite's list means the pinned suite is not the one
// this program was written for.
var mustRun = []string{"request-state", "tampered-state", "multi-round", "multiple-input-requests"}

// maxPasses bounds the passes over the scenarios: passes go on until a whole rotation has happened
// during the run (the first pass is normally long enough for several).
const maxPasses = 5

func run(o options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scenarios, err := listScenarios(ctx, o)
	if err != nil {
		return err
	}

	root, err := os.MkdirTemp("", "mcpconformance-"+o.name+"-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(root) }()
	w, err := newWriter(filepath.Join(root, "keyring"), o.tokenTTL)
	if err != nil {
		return err
	}

	var addrs []string
	for i := range o.replicas {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		stop, err := startReplica(ctx, o, fmt.Sprintf("%s-%d", o.name, i), addr, w.vol.Dir())
		if err != nil {
			return err
		}
		defer stop()
		addrs = append(addrs, addr)
	}
	w.replicas = addrs
	if err := w.awaitAll(ctx, 60*time.Second); err != nil { // the first start may compile or import a lot
		return fmt.Errorf("replicas did not come up: %w", err)
	}

	bal := httptest.NewServer(newRoundRobin(addrs))
	defer bal.Close()
	url := bal.URL + "/mcp"

	rctx, stopRotating := context.WithCancel(ctx)
	rotErr := make(chan error, 1)
	go func() { rotErr <- w.rotate(rctx) }()

	start := time.Now()
	passes, checks := 0, 0
	for passes == 0 || w.completed() == 0 && passes < maxPasses {
		passes++
		for _, sc := range scenarios {
			n, err := runScenario(ctx, o, url, sc)
			checks += n
			if err != nil {
				stopRotating()
				return errors.Join(err, <-rotErr)
			}
		}
	}
	stopRotating()
	if err := <-rotErr; err != nil {
		return err
	}
	if w.completed() == 0 {
		return fmt.Errorf("no whole rotation happened during %d passes over the scenarios", passes)
	}
	fmt.Printf("%s: %d scenarios (%d checks) passed %d time(s) on %d replicas behind a round-robin balancer, "+
		"during %d whole rotations (%d keyring writes, each awaited on every replica), in %s: %s\n",
		o.name, len(scenarios), checks, passes, o.replicas, w.completed(), w.writes,
		time.Since(start).Round(time.Millisecond), strings.Join(scenarios, " "))
	return nil
}

var scenarioLine = regexp.MustCompile(`^\s*-\s+(` + scenarioPrefix + `[a-z0-9-]+)\b`)

// listScenarios returns the suite's input-required-result-* scenarios, as its list command prints them.
func listScenarios(ctx context.Context, o options) ([]string, error) {
	out, err := exec.CommandContext(ctx, o.node, o.suite, "list").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s list: %w\n%s", o.node, o.suite, err, out)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := scenarioLine.FindStringSubmatch(sc.Text()); m != nil && !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	for _, want := range mustRun {
		if !slices.Contains(names, scenarioPrefix+want) {
			return nil, fmt.Errorf("the suite lists no scenario %s%s (it listed %v)", scenarioPrefix, want, names)
		}
	}
	return names, nil
}

// runScenario runs one scenario of the suite against url and returns how many checks it made. The
// suite's exit status is the verdict: with a baseline, a check that fails or warns fails the run
// unless the baseline lists it, and so does a listed one that passes.
func runScenario(ctx context.Context, o options, url, scenario string) (int, error) {
	out, err := exec.CommandContext(ctx, o.node, o.suite, "server", "--url", url, "--scenario", scenario,
		"--expected-failures", o.baseline).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("scenario %s: %w\n%s", scenario, err, out)
	}
	m := passedLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("scenario %s: the suite printed no %q line\n%s", scenario, "Passed: N/N", out)
	}
	var checks int
	_, _ = fmt.Sscan(string(m[1]), &checks)
	return checks, nil
}

// passedLine is the suite's summary of a scenario's checks.
var passedLine = regexp.MustCompile(`Passed: \d+/(\d+),`)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// startReplica starts the server command for one replica; stop ends it (SIGTERM, then SIGKILL).
func startReplica(ctx context.Context, o options, name, addr, dir string) (stop func(), err error) {
	args := append(slices.Clone(o.server[1:]), "--listen", addr, "--keyring-dir", dir,
		"--token-ttl", fmt.Sprint(int(o.tokenTTL/time.Second)))
	cmd := exec.CommandContext(ctx, o.server[0], args...)
	cmd.Stdout, cmd.Stderr = prefixed(name, os.Stderr), prefixed(name, os.Stderr)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "POD_NAME="+name)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("replica %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}, nil
}

// prefixed returns a writer that writes each line to w with the replica's name before it.
func prefixed(name string, w io.Writer) io.Writer {
	return &lineWriter{prefix: "[" + name + "] ", w: w}
}

type lineWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintf(l.w, "%s%s\n", l.prefix, l.buf[:i]); err != nil {
			return 0, err
		}
		l.buf = l.buf[i+1:]
	}
}
