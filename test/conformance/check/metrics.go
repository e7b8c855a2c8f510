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

package check

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// metricsProbe asks "metrics?" and returns the exposition the consumer answers with, one
// "metric <line>" each, up to "metrics end": every sample by its series (name and labels as
// written), and whether the answer came.
func (r *run) metricsProbe() (map[string]float64, bool) {
	mark := r.rec.now()
	r.c.ask("metrics?")
	var got map[string]float64
	ok := r.rec.await(r.opts.Timeout, func() bool {
		lines, _, _, _, _ := r.c.snapshot()
		samples := map[string]float64{}
		for _, l := range lines {
			if l.at <= mark || l.stream != streamStdout {
				continue
			}
			if l.text == "metrics end" {
				got = samples
				return true
			}
			text, ok := strings.CutPrefix(l.text, "metric ")
			if !ok || strings.HasPrefix(text, "#") {
				continue
			}
			i := strings.LastIndexByte(text, ' ')
			if i < 0 {
				continue
			}
			if v, err := strconv.ParseFloat(text[i+1:], 64); err == nil {
				samples[text[:i]] = v
			}
		}
		return false
	})
	return got, ok
}

// sumOf sums the samples of metric whose labels include every one of want (name="value" each).
func sumOf(samples map[string]float64, metric string, want ...string) float64 {
	var sum float64
	for series, v := range samples {
		name, labels, _ := strings.Cut(series, "{")
		if name != metric {
			continue
		}
		all := true
		for _, w := range want {
			all = all && strings.Contains(labels, w)
		}
		if all {
			sum += v
		}
	}
	return sum
}

// unknownKey returns tok with its key id replaced by one no keyring of the check holds, its shape
// kept: mrtr2's kid text, or the 4-byte kid of a python-sdk token.
func unknownKey(tok string) string {
	if rest, ok := strings.CutPrefix(tok, "mrtr2."); ok {
		if _, after, ok := strings.Cut(rest, "."); ok {
			return "mrtr2.unknown-to-the-check." + after
		}
	}
	if rest, ok := strings.CutPrefix(tok, "v1."); ok {
		if raw, err := base64.RawURLEncoding.DecodeString(rest); err == nil && len(raw) > 4 {
			for i := range 4 {
				raw[i] ^= 0xff
			}
			return "v1." + base64.RawURLEncoding.EncodeToString(raw)
		}
	}
	return tok + "x"
}

// reportsMetrics opens three tokens through the consumer's codec ("open? <token>"): one it sealed,
// the same naming a key it does not hold, and text of no format; the consumer's own counters
// (docs/consumers.md, "Metrics") must move by exactly those results, and name the keyring in
// service and the refused reloads.
func (r *run) reportsMetrics() {
	serving, _ := r.probeServing()
	// A token sealed now, with the keyring in service: the one it must open.
	mark := r.rec.now()
	r.c.ask("seal?")
	var seals []sealed
	fresh := r.rec.await(r.opts.Timeout, func() bool {
		_, seals = r.c.output()
		return len(seals) > 0 && seals[len(seals)-1].at > mark
	})
	before, ok := r.metricsProbe()
	if !ok || !fresh {
		r.result(CheckReportsMetrics, false, "no answer to \"metrics?\" (%v) or to \"seal?\" (%v)", ok, fresh)
		return
	}
	tok := seals[len(seals)-1].token
	mark = r.rec.now()
	for _, t := range []string{tok, unknownKey(tok), "not-a-token"} {
		r.c.ask("open? " + t)
	}
	var opened []string
	answered := r.rec.await(r.opts.Timeout, func() bool {
		lines, _, _, _, _ := r.c.snapshot()
		opened = opened[:0]
		for _, l := range lines {
			if l.at > mark && l.stream == streamStdout && strings.HasPrefix(l.text, "opened ") {
				opened = append(opened, strings.TrimPrefix(l.text, "opened "))
			}
		}
		return len(opened) >= 3
	})
	after, ok := r.metricsProbe()
	if !answered || !ok {
		r.result(CheckReportsMetrics, false, "answers to the opens %v, to \"metrics?\" %v", opened, ok)
		return
	}
	moved := func(result metrics.Result) float64 {
		w := metrics.LabelResult + `="` + string(result) + `"`
		return sumOf(after, metrics.TokensOpenedTotal, w) - sumOf(before, metrics.TokensOpenedTotal, w)
	}
	fp := sumOf(after, metrics.KeyringInfo, metrics.LabelFingerprint+`="`+serving.fingerprint+`"`)
	var problems []string
	if strings.Join(opened, ",") != "ok,rejected,rejected" {
		problems = append(problems, fmt.Sprintf("opens answered %v, want ok, rejected, rejected", opened))
	}
	for _, want := range []struct {
		result metrics.Result
		n      float64
	}{{metrics.OK, 1}, {metrics.UnknownKey, 1}, {metrics.Malformed, 1}} {
		if got := moved(want.result); got != want.n {
			problems = append(problems, fmt.Sprintf("%s{result=%q} moved by %v, want %v", metrics.TokensOpenedTotal, want.result, got, want.n))
		}
	}
	if fp != 1 {
		problems = append(problems, fmt.Sprintf("%s{fingerprint=%q} is %v, want 1", metrics.KeyringInfo, serving.fingerprint, fp))
	}
	if sumOf(after, metrics.ReloadFailuresTotal) < 1 {
		problems = append(problems, metrics.ReloadFailuresTotal+" is 0 after the refused snapshots")
	}
	if sumOf(after, metrics.TokensSealedTotal) < float64(len(seals)) {
		problems = append(problems, fmt.Sprintf("%s is %v, below the %d tokens it sealed", metrics.TokensSealedTotal,
			sumOf(after, metrics.TokensSealedTotal), len(seals)))
	}
	r.result(CheckReportsMetrics, len(problems) == 0, "a sealed token, one of an unknown key and text of no format opened: %d problems%s",
		len(problems), firstOf(problems))
}
