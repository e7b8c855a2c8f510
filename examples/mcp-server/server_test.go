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
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics/prommetrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
)

// replica is one example server with its own mounted keyring folder, as one pod.
type replica struct {
	dir     string
	src     *keyring.FileSource
	url     string
	changed chan struct{} // gets a value after each keyring change, for project to wait on
}

func keyringJSON(t *testing.T, keys ...keyring.Key) []byte {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyring.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newKey(t *testing.T, id string) keyring.Key {
	t.Helper()
	k, err := keyring.GenerateKey(id, 32)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func startReplica(t *testing.T, ctx context.Context, name string, ring []byte) *replica {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keyring")
	if err := harness.Project(dir, map[string][]byte{keyringFile: ring}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	rec, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := keyringSource(ctx, dir, log, rec)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := token.NewSealed(src, "test", token.SealedTTL(time.Minute), token.SealedAnonymousTTL(time.Minute),
		token.SealedMetrics(rec))
	if err != nil {
		t.Fatal(err)
	}
	a := &app{replica: name, src: src, guard: newGuard(codec, log), log: log, metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	ts := httptest.NewServer(a.handler())
	t.Cleanup(ts.Close)
	r := &replica{dir: dir, src: src.(*keyring.FileSource), url: ts.URL, changed: make(chan struct{}, 1)}
	r.src.OnChange(func(*keyring.Keyring) {
		select {
		case r.changed <- struct{}{}:
		default: // a change not yet waited for is pending already
		}
	})
	return r
}

// project mounts ring into the replica's folder and waits until the replica serves with it.
func (r *replica) project(t *testing.T, ring []byte) {
	t.Helper()
	want, err := keyring.Parse(ring)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.Project(r.dir, map[string][]byte{keyringFile: ring}); err != nil {
		t.Fatal(err)
	}
	// The file source reloads on its own goroutine and signals each change after putting it in service.
	timeout := time.After(10 * time.Second)
	for r.src.Keyring().Fingerprint() != want.Fingerprint() {
		select {
		case <-r.changed:
		case <-timeout:
			t.Fatalf("replica at %s did not load keyring %s", r.dir, want.Fingerprint())
		}
	}
}

// opened scrapes the replica's GET /metrics and returns its mrtr_consumer_tokens_opened_total by
// result, and the fingerprint of its keyring_info.
func (r *replica) opened(t *testing.T) (byResult map[string]float64, fingerprint string) {
	t.Helper()
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end by the parser
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	byResult = map[string]float64{}
	for _, m := range families[metrics.TokensOpenedTotal].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == metrics.LabelResult {
				byResult[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range families[metrics.KeyringInfo].GetMetric() {
		fingerprint = m.GetLabel()[0].GetValue()
	}
	return byResult, fingerprint
}

// call runs one MRTR round trip through the balancer and reports whether it completed; a rejected
// request state returns false, anything else fails the test.
func call(t *testing.T, cs *mcp.ClientSession) bool {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]any{"location": "Bern"}})
	if mcpstate.IsInvalidRequestState(err) {
		return false
	}
	if err != nil || res.IsError {
		t.Fatalf("round trip: %v %+v", err, res)
	}
	m := res.StructuredContent.(map[string]any)
	if m["sealedBy"] == m["openedBy"] {
		t.Fatalf("round 1 and the retry both went to %v: the balancer is sticky", m["sealedBy"])
	}
	return true
}

// TestRotationAcrossReplicas runs two replicas behind a round-robin balancer, so that every retry
// lands on the other replica, and walks their mounted keyrings through the documented rotation one
// replica at a time: no round trip may fail at any step. Replacing the key in one step then must.
func TestRotationAcrossReplicas(t *testing.T) {
	ctx := t.Context()
	a, b, c := newKey(t, "a"), newKey(t, "b"), newKey(t, "c")
	ringA := keyringJSON(t, a)
	r1, r2 := startReplica(t, ctx, "r1", ringA), startReplica(t, ctx, "r2", ringA)
	lb := harness.NewBalancer()
	lb.Add("r1", r1.url[len("http://"):])
	lb.Add("r2", r2.url[len("http://"):])
	front := httptest.NewServer(lb)
	defer front.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close the client session: %v", err)
		}
	}()

	steps := []struct {
		name string
		ring []byte
	}{
		{"accept b", keyringJSON(t, a, b)},
		{"seal with b", keyringJSON(t, b, a)},
		{"remove a", keyringJSON(t, b)},
	}
	for _, s := range steps {
		for _, r := range []*replica{r1, r2} { // one replica at a time, calling in between
			r.project(t, s.ring)
			for range 4 {
				if !call(t, cs) {
					t.Fatalf("%s: a request state was rejected", s.name)
				}
			}
		}
	}

	// The servers' own counters agree: every retry opened, nothing rejected, each on the keyring
	// it serves.
	okBefore := 0.0
	for _, r := range []*replica{r1, r2} {
		got, fp := r.opened(t)
		okBefore += got[string(metrics.OK)]
		for res, n := range got {
			if res != string(metrics.OK) && n != 0 {
				t.Errorf("%s counted %v opens with the result %s during the rotation", r.url, n, res)
			}
		}
		if fp != r.src.Keyring().Fingerprint() {
			t.Errorf("%s: keyring_info says %s, it serves %s", r.url, fp, r.src.Keyring().Fingerprint())
		}
	}
	if want := float64(4 * len(steps) * 2); okBefore != want {
		t.Errorf("the replicas counted %v opened tokens, want %v (one per round trip)", okBefore, want)
	}

	// The control experiment: r1 alone switches to a new key. r1's tokens cannot open on r2 and r2's
	// cannot open on r1, and round robin sends every retry to the other one.
	r1.project(t, keyringJSON(t, c))
	rejected := 0
	for range 4 {
		if !call(t, cs) {
			rejected++
		}
	}
	if rejected != 4 {
		t.Errorf("after replacing the key on one replica, %d of 4 round trips were rejected, want 4", rejected)
	}
	// Each rejection is counted, as unknown_key, by the replica that refused it.
	unknown := 0.0
	for _, r := range []*replica{r1, r2} {
		got, _ := r.opened(t)
		unknown += got[string(metrics.UnknownKey)]
	}
	if unknown != float64(rejected) {
		t.Errorf("the replicas counted %v unknown_key rejections, the client saw %d", unknown, rejected)
	}
}

func TestDebugAndHeaders(t *testing.T) {
	ctx := t.Context()
	a := newKey(t, "key-1")
	r := startReplica(t, ctx, "r1", keyringJSON(t, a))
	resp, err := http.Get(r.url + "/debug/keyring")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // the body was read; nothing is lost
	var d Debug
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Replica != "r1" || d.SealKey != "key-1" || d.Fingerprint != r.src.Keyring().Fingerprint() {
		t.Errorf("debug = %+v", d)
	}
	mresp, err := http.Post(r.url+"/mcp", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = mresp.Body.Close() // only the headers matter
	h := mresp.Header
	if h.Get(HeaderSealKey) != "key-1" || h.Get(HeaderFingerprint) != d.Fingerprint || h.Get(HeaderReplica) != "r1" {
		t.Errorf("headers = %v", mresp.Header)
	}
}
