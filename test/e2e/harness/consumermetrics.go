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
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// OpenCounts is one replica's mrtr_consumer_tokens_opened_total as its own GET /metrics serves it,
// summed over the format label, by result. It is the server's own count, scraped the way
// Prometheus would, so the e2e can cross-check what the clients saw against what every consumer
// (Go, Python, TypeScript, Rust) says it refused.
type OpenCounts map[metrics.Result]uint64

// Rejected is the opens that did not end ok.
func (c OpenCounts) Rejected() uint64 {
	var n uint64
	for r, v := range c {
		if r != metrics.OK {
			n += v
		}
	}
	return n
}

// Sub is c minus before, by result: the opens between two scrapes of one replica.
func (c OpenCounts) Sub(before OpenCounts) OpenCounts {
	out := OpenCounts{}
	for r, v := range c {
		out[r] = v - before[r]
	}
	return out
}

// ReplicaOpenCounts scrapes GET /metrics of every serving replica, by pod name; a replica that
// does not answer (stopping) is left out. A consumer creates a format's series with its first
// token, so a replica that has opened none has no series and counts 0: the specs assert the ok
// count rose with the traffic, which a consumer that reports nothing fails.
func (e *Env) ReplicaOpenCounts() (map[string]OpenCounts, error) {
	out := map[string]OpenCounts{}
	c := &http.Client{Timeout: 2 * time.Second}
	for name, addr := range e.serving() {
		resp, err := c.Get("http://" + addr + "/metrics")
		if err != nil {
			continue // stopping
		}
		counts, err := parseOpenCounts(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("replica %s: GET /metrics: %w", name, err)
		}
		out[name] = counts
	}
	return out, nil
}

// serving is the address of every replica behind the balancer, by pod name: those the Kubelet
// runs on kwok, those the PodNetwork follows on the real node, and a member's as MEMBER/POD.
func (e *Env) serving() map[string]string {
	addrs := map[string]string{}
	if e.Pods != nil {
		addrs = e.Pods.Serving()
	} else {
		for _, r := range e.Kubelet.Replicas() {
			addrs[r.Pod] = r.Addr
		}
	}
	if m := e.servingMember(); m != nil && m.Kubelet != nil {
		for _, r := range m.Kubelet.Replicas() {
			addrs[m.Name+"/"+r.Pod] = r.Addr
		}
	}
	return addrs
}

// parseOpenCounts reads mrtr_consumer_tokens_opened_total out of a text exposition with
// Prometheus's own parser (as hack/benchscale does), so that each consumer's exposition, each from
// its own ecosystem's client, is read as a real scrape would read it. Of a series it keeps only
// what the contract fixes: the result label and an integral value.
func parseOpenCounts(r io.Reader) (OpenCounts, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := OpenCounts{}
	for _, m := range families[metrics.TokensOpenedTotal].GetMetric() {
		result := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == metrics.LabelResult {
				result = l.GetValue()
			}
		}
		if result == "" {
			return nil, fmt.Errorf("%s %v: no %s label", metrics.TokensOpenedTotal, m.GetLabel(), metrics.LabelResult)
		}
		v := m.GetCounter().GetValue() + m.GetUntyped().GetValue() // one of them is set
		if v < 0 || v != float64(uint64(v)) {
			return nil, fmt.Errorf("%s{%s=%q}: value %v is not a count", metrics.TokensOpenedTotal, metrics.LabelResult, result, v)
		}
		out[metrics.Result(result)] += uint64(v)
	}
	return out, nil
}

// UnknownKeyAlertFiring is the pods for which the chart's MRTRConsumerUnknownKeyRejections
// (config/prometheus/alerts.yaml) holds between two scrapes of ReplicaOpenCounts taken less than
// its 5m window apart:
//
//	sum by (namespace, pod) (increase(mrtr_consumer_tokens_opened_total{result="unknown_key"}[5m])) > 0
//
// With both samples inside the window and no counter reset (the e2e asserts no restart),
// increase is > 0 exactly when the later count is above the earlier one; a pod absent from
// before (new) counts from 0, as Prometheus would count a series that appeared. Sorted.
func UnknownKeyAlertFiring(before, after map[string]OpenCounts) []string {
	var out []string
	for pod, a := range after {
		if a[metrics.UnknownKey] > before[pod][metrics.UnknownKey] {
			out = append(out, pod)
		}
	}
	slices.Sort(out)
	return out
}
