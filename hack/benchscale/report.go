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
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// result is what one size measured.
type result struct {
	n, namespaces int
	delivery      mrtrv1alpha1.Delivery
	nextKey       mrtrv1alpha1.NextKey
	managerEnv    []string // what SCALE_MANAGER_ENV gave the manager
	logPath       string

	created   time.Duration // creating the N keyrings (the harness's side)
	ready     time.Duration // first keyring created -> all Ready
	settled   time.Duration // first keyring created -> all Ready and not Reconciling
	rotateAll time.Duration // rotation requested -> all rotated and Stable
	requested time.Duration // requesting the N rotations (the harness's side)

	// writeLatencies are, per keyring, the time from the harness completing the rollout of the
	// rotation's first keyring to the operator's next Secret write (see writeLatencies).
	writeLatencies []time.Duration
	writeMissing   int // keyrings for which either end was not seen

	rotateRequests   float64            // the manager's API requests during the rotation window
	requestsBy       map[string]float64 // the same by "method code"
	rotateReconciles float64
	rotateCPU        time.Duration            // the manager's CPU (user+system) during the rotation window
	cpuBy            map[string]time.Duration // CPU per process during the rotation window (cpuByProcess)
	// machineBusy and machineIdle are the whole machine's CPU time, over all its cores, during the
	// rotation window (machineCPU): busy beyond cpuBy is other work on a shared machine.
	machineBusy, machineIdle time.Duration
	served                   float64            // the writes the API server served in that window, from every client
	writesBy                 map[string]float64 // the same by "verb resource subresource"
	queueWait                time.Duration      // mean time a request waited in the manager's work queue, same window
	reconcileTime            time.Duration      // mean time of one Reconcile, same window

	steadyWindow     time.Duration
	steadyRequests   float64
	steadyBy         map[string]float64 // the same by "method code"
	steadyReconciles float64
	heapBytes        float64 // go_memstats_heap_inuse_bytes after the steady window
	rssBytes         float64 // VmRSS after the steady window
	rssFileBytes     float64 // the part of it that maps files (the binary's text): the kernel reclaims it under a memory limit

	// trace is the first keyring's rotation as the harness saw it, to show where its time went.
	trace []string
}

// writeLatencies pairs, for every target, the rotation's first keyring with the operator's next
// Secret write: the first keyring the Secret held after since with two keys, the time the harness
// completed its rollout, and the next keyring the Secret held. In AtRotation that is Accepting's
// [old, new] and SealingWithNew's [new, old], one reaction apart; in Staged, SealingWithNew's
// [new, old] and Removing's [new, next], with the TTL wait between them. Targets where any of that
// is missing are counted in missing.
func writeLatencies(ts []target, secrets map[types.NamespacedName][]secretVersion,
	completed map[types.NamespacedName]map[string]time.Time, since time.Time) (lat []time.Duration, missing int) {
	for _, t := range ts {
		d, ok := writeLatency(secrets[t.key()], completed[t.key()], since)
		if !ok {
			missing++
			continue
		}
		lat = append(lat, d)
	}
	return lat, missing
}

func writeLatency(history []secretVersion, completed map[string]time.Time, since time.Time) (time.Duration, bool) {
	for j, v := range history {
		if v.at.Before(since) || len(v.ids) != 2 {
			continue
		}
		done, ok := completed[v.fingerprint]
		if !ok || j+1 == len(history) {
			return 0, false
		}
		return history[j+1].at.Sub(done), true
	}
	return 0, false
}

// timeline lists, from since on, the keyrings t's Secret held and the rollout completions the harness
// wrote, in order, each stamped with the time since since.
func timeline(t target, history []secretVersion, completed map[string]time.Time, since time.Time, label string) []string {
	type event struct {
		at   time.Time
		what string
	}
	var evs []event
	names := map[string]string{} // fingerprint -> key ids, to name what rolled out
	for _, v := range history {
		names[v.fingerprint] = "[" + strings.Join(v.ids, " ") + "]"
		if !v.at.Before(since) {
			evs = append(evs, event{v.at, "Secret holds " + names[v.fingerprint]})
		}
	}
	for fp, at := range completed {
		if !at.Before(since) {
			evs = append(evs, event{at, label + " of " + cmp.Or(names[fp], fp)})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	out := make([]string, 0, 1+len(evs))
	out = append(out, fmt.Sprintf("%s: rotation requested at +0", t.key()))
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s: +%s %s", t.key(), fmtDur(e.at.Sub(since)), e.what))
	}
	return out
}

// percentile is the nearest-rank percentile p (0 < p <= 100) of ds; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func (r result) perKeyring(d time.Duration) time.Duration { return d / time.Duration(r.n) }
func (r result) requestsPerRotation() float64             { return r.rotateRequests / float64(r.n) }
func (r result) cpuPerRotation() time.Duration            { return r.perKeyring(r.rotateCPU) }

// ttlWaitNote says when the next write measured waits out the TTL wait first (Staged: the write after
// the first rollout is Removing's).
func (r result) ttlWaitNote() string {
	if r.nextKey == mrtrv1alpha1.NextKeyStaged {
		return fmt.Sprintf("; the TTL wait of %s included", tokenTTL)
	}
	return ""
}

// completionLabel is what "rollout complete" is in the delivery measured.
func completionLabel(d mrtrv1alpha1.Delivery) string {
	if d == mrtrv1alpha1.DeliveryReload {
		return "acknowledgement"
	}
	return "rollout complete"
}

// block is the readable summary of one size.
func (r result) block() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("")
	p("N=%d (%d namespace(s), delivery %s), manager log %s", r.n, r.namespaces, r.delivery, r.logPath)
	if len(r.managerEnv) > 0 {
		p("  manager environment           %s", strings.Join(r.managerEnv, " "))
	}
	p("  keyrings created in           %s (harness side)", fmtDur(r.created))
	p("  all Ready after creation      %s (%s per keyring); idle (Reconciling=False) after %s",
		fmtDur(r.ready), fmtDur(r.perKeyring(r.ready)), fmtDur(r.settled))
	p("  rotation of all N at once     %s (%s per keyring); requesting them took %s", fmtDur(r.rotateAll),
		fmtDur(r.perKeyring(r.rotateAll)), fmtDur(r.requested))
	p("  %s -> next Secret write: p50 %s, p99 %s, max %s over %d keyrings (%d not measurable)%s",
		completionLabel(r.delivery), fmtDur(percentile(r.writeLatencies, 50)), fmtDur(percentile(r.writeLatencies, 99)),
		fmtDur(percentile(r.writeLatencies, 100)), len(r.writeLatencies), r.writeMissing, r.ttlWaitNote())
	for _, line := range r.trace {
		p("    %s", line)
	}
	p("  manager CPU during rotation   %s (%s per keyring rotation)", fmtDur(r.rotateCPU), fmtDur(r.cpuPerRotation()))
	p("  CPU during rotation, all      %s of %d cores x %s", formatCPU(r.cpuBy), runtime.NumCPU(), fmtDur(r.rotateAll))
	floor := floorWithoutManager(r.cpuBy, runtime.NumCPU())
	p("    a manager of no CPU:        at least %s (the others' CPU over %d cores); the rotation took %.2fx that",
		fmtDur(floor), runtime.NumCPU(), ratio(r.rotateAll, floor))
	if r.machineBusy+r.machineIdle > 0 {
		p("    the machine's cores:        %s idle, %s busy with other work than benchscale's",
			fmtDur(r.machineIdle), fmtDur(max(r.machineBusy-sumCPU(r.cpuBy), 0)))
	}
	if r.served > 0 {
		p("  API server writes, all clients %.0f (%.1f per keyring), %s of its CPU each", r.served, r.served/float64(r.n),
			fmtDur(r.cpuBy["kube-apiserver"]/time.Duration(r.served)))
		p("    by verb and resource:       %s", formatCounts(r.writesBy))
	}
	p("  manager API requests          %.0f during rotation (%.1f per keyring rotation), %.0f reconciles (%.1f per keyring)",
		r.rotateRequests, r.requestsPerRotation(), r.rotateReconciles, r.rotateReconciles/float64(r.n))
	p("    by method and code:         %s", formatCounts(r.requestsBy))
	p("  mean work-queue wait          %s, mean Reconcile %s (during rotation)", fmtDur(r.queueWait), fmtDur(r.reconcileTime))
	p("  steady state (%v):            %.0f requests, %.0f reconciles", r.steadyWindow, r.steadyRequests, r.steadyReconciles)
	if r.steadyRequests > 0 {
		// A reflector renews its watch every 5 to 10 minutes: a GET in a long run's window is that,
		// not the manager polling (which the reconciles would show).
		p("    by method and code:         %s (a GET may be an informer renewing its watch)", formatCounts(r.steadyBy))
	}
	p("  steady heap in use / RSS      %.1f MB / %.1f MB (%.1f MB of it files: the binary's text)",
		r.heapBytes/1e6, r.rssBytes/1e6, r.rssFileBytes/1e6)
	return b.String()
}

// jsonLine is the one line a script reads, with the keys docs/benchmarks.md names.
func (r result) jsonLine() string {
	b, err := json.Marshal(struct {
		N                   int     `json:"n"`
		Namespaces          int     `json:"namespaces"`
		ReadyS              float64 `json:"ready_s"`
		RotateAllS          float64 `json:"rotate_all_s"`
		WriteP50S           float64 `json:"write_p50_s"`
		WriteP99S           float64 `json:"write_p99_s"`
		RequestsPerRotation float64 `json:"requests_per_rotation"`
		CPUMsPerRotation    float64 `json:"cpu_ms_per_rotation"`
		SteadyRequests      float64 `json:"steady_requests"`
		HeapMB              float64 `json:"heap_mb"`
		RSSMB               float64 `json:"rss_mb"`
	}{
		N: r.n, Namespaces: r.namespaces,
		ReadyS:              round(r.ready.Seconds(), 3),
		RotateAllS:          round(r.rotateAll.Seconds(), 3),
		WriteP50S:           round(percentile(r.writeLatencies, 50).Seconds(), 4),
		WriteP99S:           round(percentile(r.writeLatencies, 99).Seconds(), 4),
		RequestsPerRotation: round(r.requestsPerRotation(), 2),
		CPUMsPerRotation:    round(float64(r.cpuPerRotation())/float64(time.Millisecond), 2),
		SteadyRequests:      r.steadyRequests,
		HeapMB:              round(r.heapBytes/1e6, 1),
		RSSMB:               round(r.rssBytes/1e6, 1),
	})
	if err != nil { // unreachable: only numbers
		panic(err)
	}
	return string(b)
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// markdownTable compares the sizes, one column each; the per-keyring rows show how the cost grows.
func markdownTable(rs []result) string {
	if len(rs) == 0 {
		return ""
	}
	rows := []struct {
		label string
		cell  func(result) string
	}{
		{"namespaces", func(r result) string { return fmt.Sprint(r.namespaces) }},
		{"all Ready after creation", func(r result) string { return fmtDur(r.ready) }},
		{"— per keyring", func(r result) string { return fmtDur(r.perKeyring(r.ready)) }},
		{"rotation of all N at once", func(r result) string { return fmtDur(r.rotateAll) }},
		{"— per keyring", func(r result) string { return fmtDur(r.perKeyring(r.rotateAll)) }},
		{completionLabel(rs[0].delivery) + " -> next Secret write, p50 / p99", func(r result) string {
			return fmtDur(percentile(r.writeLatencies, 50)) + " / " + fmtDur(percentile(r.writeLatencies, 99))
		}},
		{"manager CPU per keyring rotation", func(r result) string { return fmtDur(r.cpuPerRotation()) }},
		{"API requests per keyring rotation", func(r result) string { return fmt.Sprintf("%.1f", r.requestsPerRotation()) }},
		{fmt.Sprintf("steady state (%v): requests / reconciles", rs[0].steadyWindow), func(r result) string {
			return fmt.Sprintf("%.0f / %.0f", r.steadyRequests, r.steadyReconciles)
		}},
		{"steady heap in use / RSS", func(r result) string {
			return fmt.Sprintf("%.1f MB / %.1f MB", r.heapBytes/1e6, r.rssBytes/1e6)
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "delivery %s\n\n|  |", rs[0].delivery)
	for _, r := range rs {
		fmt.Fprintf(&b, " N=%d |", r.n)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(rs)) + "\n")
	for _, row := range rows {
		b.WriteString("| " + row.label + " |")
		for _, r := range rs {
			b.WriteString(" " + row.cell(r) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// fmtDur prints a duration with three significant digits or so, in ms below a second.
func fmtDur(d time.Duration) string {
	switch ms := float64(d) / float64(time.Millisecond); {
	case d < 0:
		return "-" + fmtDur(-d)
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case d < 100*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
}

// ratio is a/b, 0 when b is.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// sumCPU adds up the CPU times of every process.
func sumCPU(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, d := range m {
		t += d
	}
	return t
}

// floorWithoutManager is the least time the rotation could have taken on cores cores had the
// manager cost no CPU: what the others (API server, etcd, the harness) spent for the same writes,
// spread over every core. The rest of rotate_all_s is the manager's own CPU and idle time.
func floorWithoutManager(cpuBy map[string]time.Duration, cores int) time.Duration {
	var others time.Duration
	for name, d := range cpuBy {
		if name != managerProcess {
			others += d
		}
	}
	return others / time.Duration(cores)
}

// formatCPU prints CPU times per process, largest first: "kube-apiserver 41.20 s, etcd 9.10 s".
func formatCPU(m map[string]time.Duration) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + fmtDur(m[k])
	}
	return strings.Join(parts, ", ")
}

// formatCounts prints a count per key, largest first, as "key=count, ...".
func formatCounts[V int | float64](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
