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
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics/prommetrics"
)

// The scraper reads the Go consumer's own exposition (the Prometheus adapter), summing the
// formats, so the e2e compares against what a real scrape would see.
func TestParseOpenCountsReadsTheGoExposition(t *testing.T) {
	rec, handler := newPromRecorder(t)
	rec.TokenOpened("mrtr2", metrics.OK)
	rec.TokenOpened("mrtr2", metrics.OK)
	rec.TokenOpened("mrtr2", metrics.UnknownKey)
	rec.TokenOpened("rs2", metrics.UnknownKey)
	rec.TokenOpened("rs2", metrics.BadMAC)
	got, err := parseOpenCounts(strings.NewReader(handler()))
	if err != nil {
		t.Fatal(err)
	}
	if got[metrics.OK] != 2 || got[metrics.UnknownKey] != 2 || got[metrics.BadMAC] != 1 || got[metrics.Expired] != 0 {
		t.Fatalf("counts %v", got)
	}
	if got.Rejected() != 3 {
		t.Fatalf("rejected %d, want 3", got.Rejected())
	}
	if d := got.Sub(OpenCounts{metrics.UnknownKey: 1}); d[metrics.UnknownKey] != 1 || d.Rejected() != 2 {
		t.Fatalf("sub %v", d)
	}
}

func TestParseOpenCountsRefusesABrokenCounter(t *testing.T) {
	if got, err := parseOpenCounts(strings.NewReader("# nothing opened yet\nother_total 3\n")); err != nil || len(got) != 0 {
		t.Fatalf("no series: %v, %v; want no counts", got, err)
	}
	for _, text := range []string{
		metrics.TokensOpenedTotal + `{format="mrtr2"} 1` + "\n",
		metrics.TokensOpenedTotal + `{format="mrtr2",result="ok"} 1.5` + "\n",
	} {
		if _, err := parseOpenCounts(strings.NewReader(text)); err == nil {
			t.Errorf("parsed %q", text)
		}
	}
}

// newPromRecorder is the Go consumer's Prometheus adapter on a registry of its own, and a
// function that returns its text exposition as GET /metrics serves it.
func newPromRecorder(t *testing.T) (*prommetrics.Recorder, func() string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	rec, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return rec, func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return w.Body.String()
	}
}

func TestUnknownKeyAlertFiringOnlyWhereUnknownKeyRose(t *testing.T) {
	before := map[string]OpenCounts{
		"a": {metrics.OK: 5, metrics.UnknownKey: 2},
		"b": {metrics.OK: 5, metrics.UnknownKey: 2},
		"c": {metrics.OK: 5},
	}
	after := map[string]OpenCounts{
		"a": {metrics.OK: 9, metrics.UnknownKey: 2, metrics.BadMAC: 4}, // other rejections: no alert
		"b": {metrics.OK: 9, metrics.UnknownKey: 3},
		"c": {metrics.OK: 9},
		"d": {metrics.UnknownKey: 1}, // a new pod counts from 0
	}
	if got := UnknownKeyAlertFiring(before, after); !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("firing for %v, want [b d]", got)
	}
}
