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
	"math"
	"strings"
	"testing"
	"time"
)

// linear is a grid point whose cost is exactly linear: 7 requests per namespace and 3 per member
// each rotation, 2 MB of heap per member and 0.1 MB per namespace, over a 20 MB base.
func linear(m, n int) membersResult {
	return membersResult{Members: m, Namespaces: n, Delivery: "Reload", Rotations: 2,
		MemberRequests: float64(7*m*n + 3*m), HubRequests: 12,
		BaseHeap: 20e6, Heap: 20e6 + float64(m)*2e6 + float64(m*n)*0.1e6, RSS: 80e6,
		Rotate: []time.Duration{time.Second, 3 * time.Second}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestGrowthOfALinearGridIsConstant(t *testing.T) {
	rs := []membersResult{linear(1, 10), linear(1, 40), linear(2, 10), linear(2, 40), linear(4, 10), linear(4, 40)}
	for i, r := range rs {
		g := growthOf(rs, i)
		if g.hasNamespace != (r.Namespaces == 40) || g.hasMem != (r.Members > 1) {
			t.Errorf("M=%d N=%d: has namespace growth %v, member growth %v", r.Members, r.Namespaces, g.hasNamespace, g.hasMem)
			continue
		}
		if g.hasNamespace && !near(g.perNamespace, 7) {
			t.Errorf("M=%d N=%d: %v requests per added namespace, want 7", r.Members, r.Namespaces, g.perNamespace)
		}
		// A member added brings its N namespaces: 7 N + 3 requests, 2 MB + 0.1 N MB of heap.
		if g.hasMem && (!near(g.perMember, float64(7*r.Namespaces+3)) || !near(g.heapMember, 2e6+float64(r.Namespaces)*0.1e6)) {
			t.Errorf("M=%d N=%d: %v requests and %v bytes per added member", r.Members, r.Namespaces, g.perMember, g.heapMember)
		}
	}
	// Growth is from the next smaller point, whatever the order: 4 members from 2, not from 1.
	r := linear(4, 10)
	r.MemberRequests += 100
	g := growthOf([]membersResult{linear(2, 10), r, linear(1, 10)}, 1)
	if !near(g.perMember, 73+50) {
		t.Errorf("growth per member from 2 to 4 = %v, want 123", g.perMember)
	}
}

func TestPerMemberAndPerNamespace(t *testing.T) {
	r := linear(4, 10)
	if !near(r.perMember(), 73) || !near(r.perNamespace(), 7.3) {
		t.Errorf("per member %v, per namespace %v; want 73 and 7.3", r.perMember(), r.perNamespace())
	}
	if !near(r.heapPerMember(), 3e6) {
		t.Errorf("heap per member %v, want 3 MB (2 MB + 10 namespaces of 0.1 MB)", r.heapPerMember())
	}
	if r.meanRotate() != 2*time.Second || (membersResult{}).meanRotate() != 0 {
		t.Errorf("mean rotation %v", r.meanRotate())
	}
}

func TestReactionTimeIsFromTheLastCompletionAnywhereToTheFirstNextWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	copyOf := func(accepting, sealing, done int) copyHistory {
		return copyHistory{
			versions: []secretVersion{
				{at(-5000), "fA", []string{"a"}},
				{at(accepting), "fAB", []string{"a", "b"}},
				{at(sealing), "fBA", []string{"b", "a"}},
			},
			completed: map[string]time.Time{"fA": at(-4000), "fAB": at(done)},
		}
	}
	// Two members: the slowest pod completes at 700; the first next write anywhere is at 760.
	copies := []copyHistory{copyOf(100, 800, 300), copyOf(150, 760, 700), copyOf(120, 790, 650)}
	if d, ok := reactionTime(copies, t0); !ok || d != 60*time.Millisecond {
		t.Errorf("reaction %v, %v; want 60ms", d, ok)
	}
	// Any copy without its completion, or without a next write, makes it unmeasurable.
	lacking := copyOf(100, 800, 300)
	delete(lacking.completed, "fAB")
	if _, ok := reactionTime(append(copies[:2:2], lacking), t0); ok {
		t.Error("measured with a copy whose pods never completed")
	}
	unwritten := copyOf(100, 800, 300)
	unwritten.versions = unwritten.versions[:2]
	if _, ok := reactionTime(append(copies[:2:2], unwritten), t0); ok {
		t.Error("measured with a copy never written again")
	}
	// Copies holding different keyrings are not one rotation.
	other := copyOf(100, 800, 300)
	other.versions[1].fingerprint = "fAC"
	if _, ok := reactionTime(append(copies[:2:2], other), t0); ok {
		t.Error("measured across different keyrings")
	}
	if _, ok := reactionTime(nil, t0); ok {
		t.Error("measured with no copy")
	}
	// A later rotation starts from its own request: the first two-key keyring after it.
	second := []copyHistory{{
		versions: append(copyOf(100, 800, 300).versions,
			secretVersion{at(5000), "fBC", []string{"b", "c"}}, secretVersion{at(5400), "fCB", []string{"c", "b"}}),
		completed: map[string]time.Time{"fAB": at(300), "fBC": at(5300)},
	}}
	if d, ok := reactionTime(second, at(4000)); !ok || d != 100*time.Millisecond {
		t.Errorf("second rotation: %v, %v; want 100ms", d, ok)
	}
}

func TestHostOfIsClientGosHostLabel(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:34567":      "127.0.0.1:34567",
		"https://127.0.0.1:34567/base": "127.0.0.1:34567",
		"127.0.0.1:34567":              "127.0.0.1:34567",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMembersTableHasARowPerPointWithItsGrowth(t *testing.T) {
	table := membersTable([]membersResult{linear(1, 10), linear(1, 40), linear(2, 10)})
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header, a separator and 3 rows:\n%s", len(lines), table)
	}
	cells := func(line string) []string { return strings.Split(strings.Trim(line, "|"), "|") }
	header := cells(lines[0])
	if len(cells(lines[1])) != len(header) {
		t.Errorf("separator has %d cells, header %d", len(cells(lines[1])), len(header))
	}
	for _, want := range []string{
		"| 1 | 10 | 0.00 ms | 2.00 s | 73 | 73.0 | 7.30 | - | - | 12 |",
		"| 1 | 40 | 0.00 ms | 2.00 s | 283 | 283.0 | 7.08 | 7.00 | - | 12 |",
		"| 2 | 10 | 0.00 ms | 2.00 s | 146 | 73.0 | 7.30 | - | 73.0 | 12 |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, l := range lines[2:] {
		if got := len(cells(l)); got != len(header) {
			t.Errorf("row has %d cells, header %d: %s", got, len(header), l)
		}
	}
	if !strings.HasSuffix(lines[4], "| 3.00 MB | 3.00 MB |") {
		t.Errorf("2 members' heap per member and per added member: %s", lines[4])
	}
}

func TestPositiveList(t *testing.T) {
	got, err := positiveList(" 1, 2,4")
	if err != nil || len(got) != 3 || got[0] != 1 || got[2] != 4 {
		t.Errorf("positiveList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "x"} {
		if _, err := positiveList(bad); err == nil {
			t.Errorf("positiveList(%q) accepted", bad)
		}
	}
}
