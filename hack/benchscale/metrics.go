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
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// The manager's metrics benchscale reads: client-go's count of the requests the manager sent (labels
// code, host and method: client-go does not label them by resource), controller-runtime's count of
// reconciles, and the Go runtime's heap in use (spans with at least one live object: what the
// process keeps, which heap_alloc undercounts between collections less than RSS overcounts).
const (
	metricRequests   = "rest_client_requests_total"
	metricReconciles = "controller_runtime_reconcile_total"
	metricHeapInuse  = "go_memstats_heap_inuse_bytes"
	// metricServed counts what the API server served, from every client (the harness's requests
	// too), by verb, resource and subresource.
	metricServed = "apiserver_request_total"
	// The sums and counts of two histograms that say where a keyring's time goes: waiting in the
	// controller's work queue, and inside Reconcile.
	metricQueueWait     = "workqueue_queue_duration_seconds"
	metricReconcileTime = "controller_runtime_reconcile_time_seconds"
)

// servedLabels are the labels metricServed is summed by: "verb resource subresource".
var servedLabels = []string{"verb", "resource", "subresource"}

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is one scrape of /metrics.
type metrics []sample

// scrape reads the manager's /metrics.
func scrape(ctx context.Context, url string) (metrics, error) {
	return scrapeWith(ctx, http.DefaultClient, url)
}

// scrapeWith reads /metrics at url with hc (the API server's, with the admin's credentials).
func scrapeWith(ctx context.Context, hc *http.Client, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text exposition format with Prometheus's own parser, one
// sample per series; a histogram or a summary gives its _sum and _count, which is all benchscale
// reads of them.
func parseMetrics(r io.Reader) (metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out metrics
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out = append(out, sample{name + "_sum", labels, h.GetSampleSum()}, sample{name + "_count", labels, float64(h.GetSampleCount())})
			case m.GetSummary() != nil:
				sm := m.GetSummary()
				out = append(out, sample{name + "_sum", labels, sm.GetSampleSum()}, sample{name + "_count", labels, float64(sm.GetSampleCount())})
			case m.GetCounter() != nil:
				out = append(out, sample{name, labels, m.GetCounter().GetValue()})
			case m.GetGauge() != nil:
				out = append(out, sample{name, labels, m.GetGauge().GetValue()})
			case m.GetUntyped() != nil:
				out = append(out, sample{name, labels, m.GetUntyped().GetValue()})
			}
		}
	}
	return out, nil
}

// sum adds up every sample of the metric, whatever its labels.
func (m metrics) sum(name string) float64 {
	var t float64
	for _, s := range m {
		if s.name == name {
			t += s.value
		}
	}
	return t
}

// sumBy adds up the metric's samples per value of the given labels, joined with a space.
func (m metrics) sumBy(name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name != name {
			continue
		}
		vals := make([]string, len(labels))
		for i, l := range labels {
			vals[i] = s.labels[l]
		}
		out[strings.Join(vals, " ")] += s.value
	}
	return out
}

// mean is the mean of a histogram over the samples from before to m: the growth of its _sum over
// the growth of its _count (0 when nothing was observed).
func (m metrics) mean(before metrics, histogram string) time.Duration {
	count := m.sum(histogram+"_count") - before.sum(histogram+"_count")
	if count <= 0 {
		return 0
	}
	sum := m.sum(histogram+"_sum") - before.sum(histogram+"_sum")
	return time.Duration(sum / count * float64(time.Second))
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on every Linux
// architecture Go supports (sysconf(_SC_CLK_TCK) would need cgo).
const clockTicks = 100

// processCPU is the CPU time, user plus system, the process has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces, so fields are counted after the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line: %d fields", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc stat line: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// cpuByProcess is the CPU time used so far by benchscale itself ("harness") and by each of its
// child processes, by command name (kube-apiserver, etcd, manager): on a small machine they share
// the cores, so what the control plane spends bounds what the manager can do.
func cpuByProcess() (map[string]time.Duration, error) {
	self, err := processCPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{"harness": self}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		for f := range strings.FieldsSeq(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			cpu, err2 := processCPU(pid)
			if err1 != nil || err2 != nil {
				continue // the child ended
			}
			out[strings.TrimSpace(string(comm))] += cpu
		}
	}
	return out, nil
}

// machineCPU is the whole machine's CPU time so far, from the first line of /proc/stat, summed over
// its cores: busy (user, nice, system, irq, softirq, steal) and idle (idle, iowait). Over a window,
// busy minus what benchscale and its children used is other work on a shared machine, and idle is
// the time no process had work for a core: waiting, which no process's CPU time shows.
func machineCPU() (busy, idle time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineCPU(line)
}

// parseMachineCPU reads the "cpu" line of /proc/stat (in USER_HZ ticks). guest and guest_nice, when
// present, are already counted in user and nice.
func parseMachineCPU(line string) (busy, idle time.Duration, err error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("malformed /proc/stat cpu line %q", line)
	}
	var ticks [8]int64 // user nice system idle iowait irq softirq steal
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("malformed /proc/stat cpu line: %w", err)
		}
	}
	toDur := func(t int64) time.Duration { return time.Duration(t) * time.Second / clockTicks }
	return toDur(ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]), toDur(ticks[3] + ticks[4]), nil
}

// processRSS is the resident set size of the process (VmRSS of /proc/<pid>/status), in bytes.
func processRSS(pid int) (float64, error) { return processStatus(pid, "VmRSS") }

// processStatus reads one "kB" field of /proc/pid/status, in bytes.
func processStatus(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(value) // "12345 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// apiServerMetrics scrapes the API server's own /metrics with the admin's credentials.
func apiServerMetrics(ctx context.Context, cfg *rest.Config) (metrics, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return scrapeWith(ctx, hc, apiURL(cfg, "/metrics"))
}

// mutating is whether an apiserver_request_total verb writes: the HTTP verbs, and the API server's
// own names for a server-side apply and a collection delete.
func mutating(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
		return true
	}
	return false
}
