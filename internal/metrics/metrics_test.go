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

package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	consumermetrics "github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func keyring(name string, st mrtrv1alpha1.MRTRKeyringStatus) *mrtrv1alpha1.MRTRKeyring {
	return &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: "mcp", Name: name}, Status: st}
}

// observe records kr as the reconcilers do.
func observe(r *Recorder, kr *mrtrv1alpha1.MRTRKeyring) {
	r.Observe(types.NamespacedName{Namespace: kr.Namespace, Name: kr.Name}, kr.Spec.RotationInterval.Duration, &kr.Status)
}

func newRegistered(t *testing.T) (*Recorder, *prometheus.Registry) {
	t.Helper()
	r := New(func() time.Time { return now })
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(r); err != nil {
		t.Fatalf("register: %v", err)
	}
	return r, reg
}

func TestObserveAndForget(t *testing.T) {
	r, reg := newRegistered(t)
	next := metav1.NewTime(now.Add(90 * time.Minute))
	observe(r, keyring("payments", mrtrv1alpha1.MRTRKeyringStatus{
		Phase: mrtrv1alpha1.PhaseSealingWithNew,
		Keys: []mrtrv1alpha1.KeyStatus{
			{ID: "k2", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: metav1.NewTime(now.Add(-10 * time.Minute))},
			{ID: "k1", Role: mrtrv1alpha1.KeyRetiring, CreatedAt: metav1.NewTime(now.Add(-720 * time.Hour))},
		},
		NextRotationTime:   &next,
		RotationsCompleted: 3,
	}))
	// Never reconciled yet: no phase, no keys, no schedule.
	observe(r, keyring("search", mrtrv1alpha1.MRTRKeyringStatus{}))
	r.RotationFailed("mcp", "payments", mrtrv1alpha1.ReasonRolloutDeadlineExceeded)
	r.RolloutWaited(mrtrv1alpha1.PhaseAccepting, 7*time.Second)
	r.RolloutWaited(mrtrv1alpha1.PhaseAccepting, 3*time.Second)

	want := `
# HELP mrtr_keyring_phase Rotation phase of the keyring: 1, with the current phase as its label.
# TYPE mrtr_keyring_phase gauge
mrtr_keyring_phase{name="payments",namespace="mcp",phase="SealingWithNew"} 1
# HELP mrtr_keyring_primary_key_age_seconds Seconds since the keyring's primary key began to seal (status.keys[0].sealingSince).
# TYPE mrtr_keyring_primary_key_age_seconds gauge
mrtr_keyring_primary_key_age_seconds{name="payments",namespace="mcp"} 600
# HELP mrtr_keyring_next_rotation_timestamp_seconds Unix time at which the keyring's next rotation is due.
# TYPE mrtr_keyring_next_rotation_timestamp_seconds gauge
mrtr_keyring_next_rotation_timestamp_seconds{name="payments",namespace="mcp"} 1.7960454e+09
# HELP mrtr_keyring_rotations_completed_total Rotations the keyring has completed (status.rotationsCompleted).
# TYPE mrtr_keyring_rotations_completed_total counter
mrtr_keyring_rotations_completed_total{name="payments",namespace="mcp"} 3
mrtr_keyring_rotations_completed_total{name="search",namespace="mcp"} 0
# HELP mrtr_keyring_rotations_failed_total Times a rotation of the keyring got stuck (Stalled became True), by condition reason.
# TYPE mrtr_keyring_rotations_failed_total counter
mrtr_keyring_rotations_failed_total{name="payments",namespace="mcp",reason="RolloutDeadlineExceeded"} 1
`
	names := []string{"mrtr_keyring_phase", "mrtr_keyring_primary_key_age_seconds",
		"mrtr_keyring_next_rotation_timestamp_seconds", "mrtr_keyring_rotations_completed_total",
		"mrtr_keyring_rotations_failed_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(reg, "mrtr_keyring_rollout_wait_seconds"); n != 1 {
		t.Errorf("rollout wait histograms = %d, want 1: over all keyrings, by phase", n)
	}

	// A later pass moves the phase: its one series moves with it.
	observe(r, keyring("payments", mrtrv1alpha1.MRTRKeyringStatus{Phase: mrtrv1alpha1.PhaseWaitingTTL}))
	if got := value(t, reg, "mrtr_keyring_phase", "payments", string(mrtrv1alpha1.PhaseWaitingTTL)); got != 1 {
		t.Errorf("phase WaitingTTL = %v, want 1", got)
	}
	if n, _ := testutil.GatherAndCount(reg, "mrtr_keyring_phase"); n != 1 {
		t.Errorf("phase series = %d, want 1: the keyring never reconciled has none", n)
	}

	r.Forget("mcp", "payments")
	for _, name := range names {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == "payments" {
						t.Errorf("%s still has a series for the forgotten keyring: %v", name, m.GetLabel())
					}
				}
			}
		}
	}
	// The other keyring is untouched.
	if n, _ := testutil.GatherAndCount(reg, "mrtr_keyring_rotations_completed_total"); n != 1 {
		t.Errorf("rotations completed series after Forget = %d, want 1 (the other keyring's)", n)
	}
}

// A keyring with everything set has at most MaxSeriesPerKeyring series (plus one per member of a
// ClusterMRTRKeyring), with a key source too, and a thousand keyrings add no histogram buckets.
func TestSeriesPerKeyringAreFew(t *testing.T) {
	next := metav1.NewTime(now.Add(time.Hour))
	everything := mrtrv1alpha1.MRTRKeyringStatus{
		Phase: mrtrv1alpha1.PhaseAccepting, NextRotationTime: &next, RotationsCompleted: 2, PodCount: 3, PodsAcknowledged: 1,
		Keys:       []mrtrv1alpha1.KeyStatus{{ID: "a", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: metav1.NewTime(now)}},
		Conditions: []metav1.Condition{{Type: mrtrv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: mrtrv1alpha1.ReasonRolloutDeadlineExceeded}},
	}
	sourced := *everything.DeepCopy()
	sourced.NextRotationTime = nil
	sourced.KeySource = &mrtrv1alpha1.KeySourceStatus{Version: "s1", InServiceSince: &next}
	sourced.Conditions = append(sourced.Conditions, metav1.Condition{Type: mrtrv1alpha1.ConditionKeySourceReady, Status: metav1.ConditionFalse, Reason: "Refused"})
	members := make([]mrtrv1alpha1.MemberStatus, 64)
	for i := range members {
		members[i] = mrtrv1alpha1.MemberStatus{Name: fmt.Sprintf("m%02d", i), Reachable: i%2 == 0}
	}
	for name, c := range map[string]struct {
		st      mrtrv1alpha1.MRTRKeyringStatus
		members []mrtrv1alpha1.MemberStatus
	}{
		"generated keys":                  {st: everything},
		"a key source":                    {st: sourced},
		"a cluster keyring of 64 members": {st: everything, members: members},
	} {
		t.Run(name, func(t *testing.T) {
			r, reg := newRegistered(t)
			for i := range 1000 {
				k := fmt.Sprintf("k%04d", i)
				observe(r, keyring(k, c.st))
				if c.members != nil {
					r.ObserveMembers(types.NamespacedName{Namespace: "mcp", Name: k}, c.members)
				}
				r.RotationFailed("mcp", k, mrtrv1alpha1.ReasonRolloutDeadlineExceeded)
				r.PodsRestarted("mcp", k, 1)
				r.RolloutWaited(mrtrv1alpha1.PhaseAccepting, time.Second)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			series := 0
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "name" && l.GetValue() == "k0007" {
							series++
						}
					}
				}
				if mf.GetName() == "mrtr_keyring_rollout_wait_seconds" && len(mf.GetMetric()) != 1 {
					t.Errorf("%d rollout wait histograms for 1000 keyrings, want 1", len(mf.GetMetric()))
				}
			}
			if bound := MaxSeriesPerKeyring + len(c.members); series > bound {
				t.Errorf("keyring k0007 has %d series, more than %d", series, bound)
			}
			if want := 9 + len(c.members); series < want {
				t.Errorf("keyring k0007 has %d series, want at least %d: some metric is missing", series, want)
			}
		})
	}
}

func TestMetricsLint(t *testing.T) {
	r, _ := newRegistered(t)
	observe(r, keyring("payments", mrtrv1alpha1.MRTRKeyringStatus{Phase: mrtrv1alpha1.PhaseStable}))
	r.RotationFailed("mcp", "payments", mrtrv1alpha1.ReasonWorkloadNotFound)
	r.RolloutWaited(mrtrv1alpha1.PhaseRemoving, time.Second)
	problems, err := testutil.CollectAndLint(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// Default is on controller-runtime's registry, which the manager serves.
func TestDefaultIsRegistered(t *testing.T) {
	err := ctrlmetrics.Registry.Register(Default)
	if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
		t.Fatalf("registering Default again = %v, want AlreadyRegisteredError", err)
	}
}

// value is the gathered value of the series of metric for keyring mcp/name (and phase, if set).
func value(t *testing.T, reg *prometheus.Registry, metric, name, phase string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "name" && l.GetValue() != name) || (l.GetName() == "phase" && l.GetValue() != phase) {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s{name=%q,phase=%q}", metric, name, phase)
	return 0
}

// The alerts and the dashboard that config/ ships query only metrics the manager exports (their
// PromQL syntax is checked by hack/promrules, with Prometheus's own parser).
func TestShippedQueriesUseExportedMetrics(t *testing.T) {
	r, reg := newRegistered(t)
	next := metav1.NewTime(now.Add(time.Hour))
	observe(r, keyring("payments", mrtrv1alpha1.MRTRKeyringStatus{
		Phase: mrtrv1alpha1.PhaseStable, NextRotationTime: &next, PodCount: 1, PodsAcknowledged: 1,
		Keys: []mrtrv1alpha1.KeyStatus{{ID: "a", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: metav1.NewTime(now)}},
	}))
	since := metav1.NewTime(now.Add(-time.Hour))
	observe(r, keyring("sourced", mrtrv1alpha1.MRTRKeyringStatus{
		Phase: mrtrv1alpha1.PhaseStable, KeySource: &mrtrv1alpha1.KeySourceStatus{Version: "v1", InServiceSince: &since},
		Keys: []mrtrv1alpha1.KeyStatus{{ID: "v1", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: since}},
	}))
	r.RotationFailed("mcp", "payments", mrtrv1alpha1.ReasonConflict)
	r.PodsRestarted("mcp", "payments", 1)
	r.RolloutWaited(mrtrv1alpha1.PhaseAccepting, time.Second)
	r.ObserveMembers(types.NamespacedName{Name: "tenants"}, []mrtrv1alpha1.MemberStatus{{Name: "west", Reachable: true}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
	}
	// The alerts of the group mrtr-consumers read what every consumer exports (docs/consumers.md,
	// "Metrics"), under the names pkg/metrics declares.
	for _, n := range []string{consumermetrics.TokensSealedTotal, consumermetrics.TokensOpenedTotal,
		consumermetrics.KeyringInfo, consumermetrics.ReloadFailuresTotal, consumermetrics.AckStateGauge} {
		exported[n] = true
	}
	used := regexp.MustCompile(`\bmrtr_[a-z_]+`)
	for _, f := range []string{"prometheus/alerts.yaml", "grafana/mrtr-operator-dashboard.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", f))
		if err != nil {
			t.Fatal(err)
		}
		names := used.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Errorf("%s uses no metric of the operator", f)
		}
		for _, n := range names {
			if base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count"); !exported[n] && !exported[base] {
				t.Errorf("%s uses %s, which the manager does not export", f, n)
			}
		}
	}
}

// A keyring with a key source exports the age of its source version and whether the source is
// refused, and no rotation interval (its rotations follow the source): the alert on a primary key
// older than the interval cannot fire for it, the one on the source's age can.
func TestKeySourceSeries(t *testing.T) {
	r, reg := newRegistered(t)
	since := metav1.NewTime(now.Add(-2 * time.Hour))
	observe(r, keyring("sourced", mrtrv1alpha1.MRTRKeyringStatus{
		Phase:     mrtrv1alpha1.PhaseStable,
		KeySource: &mrtrv1alpha1.KeySourceStatus{Version: "v1", InServiceSince: &since},
		Keys:      []mrtrv1alpha1.KeyStatus{{ID: "v1", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: since}},
		Conditions: []metav1.Condition{{Type: mrtrv1alpha1.ConditionKeySourceReady, Status: metav1.ConditionFalse,
			Reason: mrtrv1alpha1.ReasonSourceNotFound}},
	}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	if _, ok := got["mrtr_keyring_rotation_interval_seconds"]; ok {
		t.Error("a keyring with a key source exports a rotation interval")
	}
	if got["mrtr_keyring_source_version_age_seconds"] != 7200 || got["mrtr_keyring_source_refused"] != 1 {
		t.Errorf("source age %v, refused %v; want 7200 and 1", got["mrtr_keyring_source_version_age_seconds"], got["mrtr_keyring_source_refused"])
	}
}

// TestMemberReachable: a cluster keyring's members each have a series, 1 while reachable; a member
// no longer listed loses its series, and Forget removes them all.
func TestMemberReachable(t *testing.T) {
	r, reg := newRegistered(t)
	tenants := types.NamespacedName{Name: "tenants"}
	r.ObserveMembers(tenants, []mrtrv1alpha1.MemberStatus{{Name: "hub", Reachable: true}, {Name: "west", Message: "connection refused"}})
	want := `
# HELP mrtr_member_reachable 1 while the operator's cache of a ClusterMRTRKeyring's member cluster is synced and its API server answers (status.members[].reachable), else 0.
# TYPE mrtr_member_reachable gauge
mrtr_member_reachable{member="hub",name="tenants",namespace=""} 1
mrtr_member_reachable{member="west",name="tenants",namespace=""} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mrtr_member_reachable"); err != nil {
		t.Fatal(err)
	}
	r.ObserveMembers(tenants, []mrtrv1alpha1.MemberStatus{{Name: "west", Reachable: true}})
	want = `
# HELP mrtr_member_reachable 1 while the operator's cache of a ClusterMRTRKeyring's member cluster is synced and its API server answers (status.members[].reachable), else 0.
# TYPE mrtr_member_reachable gauge
mrtr_member_reachable{member="west",name="tenants",namespace=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mrtr_member_reachable"); err != nil {
		t.Fatal(err)
	}
	r.Forget("", "tenants")
	if n, err := testutil.GatherAndCount(reg, "mrtr_member_reachable"); err != nil || n != 0 {
		t.Fatalf("%d series after Forget (%v), want 0", n, err)
	}
}
