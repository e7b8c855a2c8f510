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
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile sorted its argument")
	}
}

func TestParseMetrics(t *testing.T) {
	const text = `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 3
rest_client_requests_total{code="200",host="127.0.0.1:1",method="PUT"} 5 1700000000000
controller_runtime_reconcile_total{controller="mrtrkeyring",result="success"} 7
odd{v="a \"quoted\" \\ value,}"} 1e3
go_memstats_heap_inuse_bytes 1.2e+07
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum(metricRequests); got != 20 {
		t.Errorf("requests = %v, want 20", got)
	}
	by := m.sumBy(metricRequests, "method", "code")
	if by["GET 200"] != 12 || by["POST 201"] != 3 || by["PUT 200"] != 5 || len(by) != 3 {
		t.Errorf("by method and code = %v", by)
	}
	if got := m.sum(metricHeapInuse); got != 12e6 {
		t.Errorf("heap = %v", got)
	}
	if got := m.sumBy("odd", "v"); got[`a "quoted" \ value,}`] != 1000 {
		t.Errorf("escaped label = %v", got)
	}
	if _, err := parseMetrics(strings.NewReader("broken{a=\"x\n")); err == nil {
		t.Error("an unterminated label was accepted")
	}
}

func TestHistogramMean(t *testing.T) {
	parse := func(s string) metrics {
		m, err := parseMetrics(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := parse("h_sum 1\nh_count 10\n")
	after := parse("h_sum 4\nh_count 16\n")
	if got := after.mean(before, "h"); got != 500*time.Millisecond {
		t.Errorf("mean = %v, want 500ms", got)
	}
	if got := before.mean(before, "h"); got != 0 {
		t.Errorf("mean of nothing = %v", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses; utime 250 and stime 50 ticks are 3s.
	const stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	got, err := parseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Errorf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU("4242 (x) S 1"); err == nil {
		t.Error("a short line was accepted")
	}
}

func TestParseMachineCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice: guest is inside user already.
	busy, idle, err := parseMachineCPU("cpu  100 20 30 400 50 6 4 40 90 0")
	if err != nil || busy != 2*time.Second || idle != 4500*time.Millisecond {
		t.Errorf("parseMachineCPU = %v, %v, %v; want 2s busy, 4.5s idle", busy, idle, err)
	}
	for _, bad := range []string{"cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, _, err := parseMachineCPU(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestWriteLatencyPairsTheFirstRolloutWithTheNextWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	key := types.NamespacedName{Namespace: "ns", Name: "kr-00000"}
	history := []secretVersion{
		{at(-5000), "fA", []string{"a"}},
		{at(100), "fAB", []string{"a", "b"}},
		{at(400), "fBA", []string{"b", "a"}},
		{at(1500), "fB", []string{"b"}},
	}
	completed := map[string]time.Time{"fA": at(-4000), "fAB": at(300), "fBA": at(500), "fB": at(1600)}
	ts := []target{{namespace: "ns", name: "kr-00000"}, {namespace: "ns", name: "kr-00001"}}
	lat, missing := writeLatencies(ts, map[types.NamespacedName][]secretVersion{key: history},
		map[types.NamespacedName]map[string]time.Time{key: completed}, t0)
	if !slices.Equal(lat, []time.Duration{100 * time.Millisecond}) || missing != 1 {
		t.Errorf("latencies %v, missing %d; want [100ms] and 1 (kr-00001 has no history)", lat, missing)
	}

	// A staged rotation measures from its first rollout to Removing's write, the TTL wait between.
	staged := []secretVersion{
		{at(-5000), "fAB", []string{"a", "b"}},
		{at(100), "fBA", []string{"b", "a"}},
		{at(1800), "fBC", []string{"b", "c"}},
	}
	if d, ok := writeLatency(staged, map[string]time.Time{"fBA": at(300)}, t0); !ok || d != 1500*time.Millisecond {
		t.Errorf("staged: %v, %v; want 1.5s", d, ok)
	}
	// A rotation the operator has not written again since is not measured.
	if _, ok := writeLatency(history[:2], completed, t0); ok {
		t.Error("a rotation without a next write was measured")
	}
	// Nor is a rotation whose rollout the harness never completed.
	if _, ok := writeLatency(history, map[string]time.Time{}, t0); ok {
		t.Error("a rotation without a completed rollout was measured")
	}
}

func testResult(n int) result {
	return result{n: n, namespaces: namespacesFor(n), delivery: mrtrv1alpha1.DeliveryRestart,
		ready: time.Duration(n) * 50 * time.Millisecond, rotateAll: time.Duration(n) * 150 * time.Millisecond,
		writeLatencies: []time.Duration{20 * time.Millisecond, 30 * time.Millisecond},
		rotateRequests: 15 * float64(n), rotateCPU: time.Duration(n) * 16 * time.Millisecond,
		steadyWindow: 10 * time.Second, steadyRequests: 3, heapBytes: 14.3e6, rssBytes: 71.3e6}
}

func TestFloorWithoutManagerLeavesOnlyTheManagerOut(t *testing.T) {
	cpu := map[string]time.Duration{"kube-apiserver": 100 * time.Second, "etcd": 12 * time.Second,
		"harness": 8 * time.Second, managerProcess: 16 * time.Second}
	if got, want := floorWithoutManager(cpu, 2), 60*time.Second; got != want {
		t.Errorf("floor on 2 cores = %v, want %v: the others' 120 s over 2 cores", got, want)
	}
	if got := floorWithoutManager(map[string]time.Duration{managerProcess: time.Minute}, 2); got != 0 {
		t.Errorf("floor with the manager alone = %v, want 0", got)
	}
}

func TestMarkdownTableHasAColumnPerSize(t *testing.T) {
	table := markdownTable([]result{testResult(100), testResult(1000)})
	for _, want := range []string{
		"|  | N=100 | N=1000 |",
		"| --- | --- | --- |",
		"| all Ready after creation | 5.00 s | 50.00 s |",
		"| — per keyring | 50 ms | 50 ms |",
		"| rotation of all N at once | 15.00 s | 150 s |",
		"| rollout complete -> next Secret write, p50 / p99 | 20 ms / 30 ms | 20 ms / 30 ms |",
		"| manager CPU per keyring rotation | 16 ms | 16 ms |",
		"| API requests per keyring rotation | 15.0 | 15.0 |",
		"| steady state (10s): requests / reconciles | 3 / 0 | 3 / 0 |",
		"| steady heap in use / RSS | 14.3 MB / 71.3 MB | 14.3 MB / 71.3 MB |",
	} {
		if !strings.Contains(table, want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestJSONLineHasExactlyTheKeys(t *testing.T) {
	line := testResult(10000).jsonLine()
	var got map[string]float64
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"n", "namespaces", "ready_s", "rotate_all_s", "write_p50_s", "write_p99_s",
		"requests_per_rotation", "cpu_ms_per_rotation", "steady_requests", "heap_mb", "rss_mb"}
	keys := slices.Sorted(maps.Keys(got))
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if got["n"] != 10000 || got["namespaces"] != 100 || got["ready_s"] != 500 || got["cpu_ms_per_rotation"] != 16 {
		t.Errorf("values %v", got)
	}
	if !strings.HasPrefix(line, `{"n":10000,"namespaces":100,`) || strings.Contains(line, "\n") {
		t.Errorf("line %q", line)
	}
}

func TestTargetsSpreadOverNamespaces(t *testing.T) {
	for _, c := range []struct{ n, namespaces int }{{1, 1}, {100, 1}, {1000, 1}, {1500, 15}, {10000, 100}} {
		ns, ts := targets(c.n)
		if len(ns) != c.namespaces || len(ts) != c.n {
			t.Errorf("targets(%d): %d namespaces, %d targets; want %d, %d", c.n, len(ns), len(ts), c.namespaces, c.n)
			continue
		}
		per := map[string]int{}
		for _, tg := range ts {
			per[tg.namespace]++
		}
		if len(per) != c.namespaces {
			t.Errorf("targets(%d) used %d namespaces", c.n, len(per))
		}
	}
	_, ts := targets(10000)
	if ts[9999].name != "kr-09999" || ts[9999].namespace != "bench-099" || ts[0].namespace != "bench-000" {
		t.Errorf("last target %+v, first %+v", ts[9999], ts[0])
	}
}
