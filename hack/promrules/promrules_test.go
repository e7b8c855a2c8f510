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

// Package promrules checks, with Prometheus's own parsers, the alerting rules and the Grafana
// dashboard that config/ ships: a rule that Prometheus would refuse, or a panel query it cannot
// parse, fails here rather than in a user's cluster. That every metric they use is one the
// manager exports is checked in internal/metrics (TestShippedQueriesUseExportedMetrics).
package promrules

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	promlabels "github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"
	"sigs.k8s.io/yaml"
)

var config = filepath.Join("..", "..", "config")

// TestAlertsParse loads the PrometheusRule's groups as Prometheus loads a rules file: every
// expression parses, every template renders syntax, names and durations are valid.
func TestAlertsParse(t *testing.T) {
	parsed := parseAlerts(t)
	if parsed == nil {
		return
	}
	alerts := 0
	for _, g := range parsed.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Labels["severity"] == "" {
				t.Errorf("alert %s needs a summary, a description and a severity", r.Alert)
			}
		}
	}
	if alerts < 4 {
		t.Errorf("%d alerts, want at least the four the operator documents", alerts)
	}
}

// consumerGroup is the group of the alerts on the consumers' own metrics (docs/consumers.md,
// "Metrics"), scraped from the servers: their series carry the pod's namespace and pod, no keyring.
const consumerGroup = "mrtr-consumers"

// TestAlertsNameTheKeyring expands every alert's summary and description as Prometheus does, for
// the series of an MRTRKeyring and for those of a ClusterMRTRKeyring, which have no namespace
// (internal/metrics records them with namespace=""; an aggregation by namespace, name keeps none):
// each names its keyring by kind, and none reads as a namespace left blank.
func TestAlertsNameTheKeyring(t *testing.T) {
	parsed := parseAlerts(t)
	if parsed == nil {
		return
	}
	for _, tc := range []struct {
		labels  map[string]string
		want    string
		notWant []string
	}{
		{
			labels: map[string]string{"namespace": "mcp", "name": "payments", "reason": "RolloutTimeout"},
			want:   "MRTRKeyring mcp/payments", notWant: []string{"ClusterMRTRKeyring"},
		},
		{
			labels: map[string]string{"name": "tenants", "reason": "RolloutTimeout"},
			want:   "ClusterMRTRKeyring tenants", notWant: []string{" /tenants", "-n  ", "-n tenants", "MRTRKeyring /"},
		},
	} {
		for _, g := range parsed.Groups {
			if g.Name == consumerGroup {
				continue // TestConsumerAlertsNameThePod
			}
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				summary := expandAlert(t, r.Alert, r.Annotations["summary"], tc.labels)
				description := expandAlert(t, r.Alert, r.Annotations["description"], tc.labels)
				if !strings.Contains(summary, tc.want) {
					t.Errorf("alert %s for %v: summary %q does not name %s", r.Alert, tc.labels, summary, tc.want)
				}
				for _, text := range []string{summary, description} {
					for _, bad := range tc.notWant {
						if strings.Contains(text, bad) {
							t.Errorf("alert %s for %v: %q holds %q", r.Alert, tc.labels, text, bad)
						}
					}
				}
			}
		}
	}
}

// TestConsumerAlertsNameThePod: the consumers' alerts name the pod that counted.
func TestConsumerAlertsNameThePod(t *testing.T) {
	parsed := parseAlerts(t)
	if parsed == nil {
		return
	}
	n := 0
	for _, g := range parsed.Groups {
		if g.Name != consumerGroup {
			continue
		}
		for _, r := range g.Rules {
			n++
			labels := map[string]string{"namespace": "mcp", "pod": "weather-0"}
			if s := expandAlert(t, r.Alert, r.Annotations["summary"], labels); !strings.Contains(s, "mcp/weather-0") {
				t.Errorf("alert %s: summary %q does not name the pod", r.Alert, s)
			}
		}
	}
	if n == 0 {
		t.Errorf("no alert in the group %s", consumerGroup)
	}
}

// TestConsumerUnknownKeyAlertSelectsUnknownKeyRejections reads MRTRConsumerUnknownKeyRejections'
// expression as Prometheus parses it: the increase of the consumers' opened tokens with the result
// unknown_key and no other (expired tokens are the clients', not a rotation's), per pod, above 0.
// (Evaluating it on samples would take Prometheus's storage, whose dependencies this module keeps
// out.)
func TestConsumerUnknownKeyAlertSelectsUnknownKeyRejections(t *testing.T) {
	parsed := parseAlerts(t)
	if parsed == nil {
		return
	}
	var expr string
	for _, g := range parsed.Groups {
		for _, r := range g.Rules {
			if r.Alert == "MRTRConsumerUnknownKeyRejections" {
				expr = r.Expr
			}
		}
	}
	if expr == "" {
		t.Fatal("no alert MRTRConsumerUnknownKeyRejections")
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatal(err)
	}
	cmp, ok := e.(*parser.BinaryExpr)
	if !ok || cmp.Op != parser.GTR {
		t.Fatalf("%s: want a comparison > 0", expr)
	}
	if n, ok := cmp.RHS.(*parser.NumberLiteral); !ok || n.Val != 0 {
		t.Errorf("%s: want > 0, one rejection is enough", expr)
	}
	agg, ok := cmp.LHS.(*parser.AggregateExpr)
	if !ok || agg.Op != parser.SUM || strings.Join(agg.Grouping, ",") != "namespace,pod" || agg.Without {
		t.Fatalf("%s: want sum by (namespace, pod): the alert names the pod", expr)
	}
	call, ok := agg.Expr.(*parser.Call)
	if !ok || call.Func.Name != "increase" {
		t.Fatalf("%s: want the increase of the counter", expr)
	}
	m, ok := call.Args[0].(*parser.MatrixSelector)
	if !ok {
		t.Fatalf("%s: want a range of the counter", expr)
	}
	vs := m.VectorSelector.(*parser.VectorSelector)
	var name, result string
	for _, l := range vs.LabelMatchers {
		switch l.Name {
		case model.MetricNameLabel:
			name = l.Value
		case "result":
			if l.Type != promlabels.MatchEqual {
				t.Errorf("%s: the result matcher must be an equality: other results are not a rotation's", expr)
			}
			result = l.Value
		}
	}
	if name != "mrtr_consumer_tokens_opened_total" || result != "unknown_key" {
		t.Errorf("%s: selects %s{result=%q}, want mrtr_consumer_tokens_opened_total{result=\"unknown_key\"}", expr, name, result)
	}
}

// expandAlert expands text as the rule manager expands an alert's annotations, with its
// $labels and $value.
func expandAlert(t *testing.T, alert, text string, labels map[string]string) string {
	t.Helper()
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(labels, nil, "", promql.Sample{F: 3})
	out, err := template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+alert, data, 0, nil, nil, nil).Expand()
	if err != nil {
		t.Fatalf("alert %s: expand %q: %v", alert, text, err)
	}
	return out
}

// parseAlerts loads the PrometheusRule's groups as Prometheus loads a rules file.
func parseAlerts(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(config, "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("kind %q, want PrometheusRule", rule.Kind)
	}
	groups, err := yaml.JSONToYAML(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	parsed, errs := rulefmt.Parse(groups, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("alerts.yaml: %v", err)
	}
	return parsed
}

// TestDashboardQueriesParse parses every panel query of the dashboard, with Grafana's interval
// variables replaced by a duration (they are not PromQL).
func TestDashboardQueriesParse(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(config, "grafana", "mrtr-operator-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m").Replace(tg.Expr)
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(expr); err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
			}
			queries++
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}
