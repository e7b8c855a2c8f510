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
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

func TestProjectSwapsLikeTheKubelet(t *testing.T) {
	dir := t.TempDir()
	if err := Project(dir, map[string][]byte{"keyring.json": []byte("v1"), "extra": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Project(dir, map[string][]byte{"keyring.json": []byte("v2")}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "keyring.json"))
	if err != nil || string(got) != "v2" {
		t.Fatalf("keyring.json = %q, %v; want v2", got, err)
	}
	if link, _ := os.Readlink(filepath.Join(dir, "keyring.json")); link != filepath.Join("..data", "keyring.json") {
		t.Errorf("keyring.json links to %q, want ..data/keyring.json", link)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("the previous data directory %s is still there (%v)", first, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "extra")); !os.IsNotExist(err) {
		t.Errorf("the link of a file gone from the Secret is still there (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "..data_tmp")); !os.IsNotExist(err) {
		t.Errorf("..data_tmp left behind (%v)", err)
	}
}

func TestBalancerRoundRobin(t *testing.T) {
	lb := NewBalancer()
	defer lb.Close()
	front := httptest.NewServer(lb)
	defer front.Close()
	get := func() (int, string) {
		resp, err := http.Get(front.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }() // the body was read; nothing is lost
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Errorf("no backends: status %d, want 503", code)
	}
	for _, name := range []string{"a", "b", "c"} {
		be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }))
		defer be.Close()
		lb.Add(name, strings.TrimPrefix(be.URL, "http://"))
	}
	seq := make([]string, 0, 6)
	for range 6 {
		_, body := get()
		seq = append(seq, body)
	}
	for i := range seq {
		if seq[i] == seq[(i+1)%len(seq)] {
			t.Fatalf("consecutive requests went to the same backend: %v", seq)
		}
	}
	lb.Remove("b")
	for range 4 {
		if _, body := get(); body == "b" {
			t.Fatal("a removed backend still gets requests")
		}
	}
}

func TestRotations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	phase := func(s float64, p mrtrv1alpha1.Phase) Event { return Event{At: at(s), Kind: EventPhase, Phase: p} }
	events := []Event{
		phase(-10, mrtrv1alpha1.PhaseStable),
		// The operator writes, then sets the phase.
		{At: at(0), Kind: EventSecret, KeyIDs: []string{"a", "b"}, Phase: mrtrv1alpha1.PhaseAccepting},
		phase(0.1, mrtrv1alpha1.PhaseAccepting),
		{At: at(0.2), Kind: EventStamp, Fingerprint: "ab"},
		{At: at(5.2), Kind: EventRolledOut, Fingerprint: "ab"},
		phase(5.3, mrtrv1alpha1.PhaseSealingWithNew),
		{At: at(5.4), Kind: EventSecret, KeyIDs: []string{"b", "a"}, Phase: mrtrv1alpha1.PhaseSealingWithNew},
		{At: at(5.5), Kind: EventStamp, Fingerprint: "ba"},
		{At: at(10.5), Kind: EventRolledOut, Fingerprint: "ba"},
		phase(10.6, mrtrv1alpha1.PhaseWaitingTTL),
		phase(17.6, mrtrv1alpha1.PhaseRemoving),
		{At: at(17.7), Kind: EventSecret, KeyIDs: []string{"b"}, Phase: mrtrv1alpha1.PhaseRemoving},
		{At: at(17.8), Kind: EventStamp, Fingerprint: "b"},
		{At: at(22.8), Kind: EventRolledOut, Fingerprint: "b"},
		phase(23, mrtrv1alpha1.PhaseStable),
	}
	rs := Rotations(events, 7*time.Second, []time.Time{at(17)})
	if len(rs) != 1 {
		t.Fatalf("got %d rotations, want 1", len(rs))
	}
	r := rs[0]
	if r.Duration() != 23*time.Second || r.Floor() != 22*time.Second {
		t.Errorf("duration %v floor %v, want 23s and 22s", r.Duration(), r.Floor())
	}
	if len(r.Phases) != len(RotationPhases) || len(r.Stamps) != 3 || len(r.Secrets) != 3 {
		t.Errorf("rotation = %+v", r)
	}
	if len(r.RolloutToWrite) != 1 || r.RolloutToWrite[0] != 200*time.Millisecond {
		t.Errorf("rollout to write = %v, want [200ms]", r.RolloutToWrite)
	}
	if len(r.TTLToWrite) != 1 || r.TTLToWrite[0] != 700*time.Millisecond {
		t.Errorf("TTL to write = %v, want [700ms]", r.TTLToWrite)
	}
}

// A rotation with a staged key starts by sealing with it: two rounds, no Accepting; a
// revocation between rotations is none.
func TestStagedRotations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	phase := func(s float64, p mrtrv1alpha1.Phase) Event { return Event{At: at(s), Kind: EventPhase, Phase: p} }
	secret := func(s float64, p mrtrv1alpha1.Phase, ids ...string) Event {
		return Event{At: at(s), Kind: EventSecret, KeyIDs: ids, Phase: p}
	}
	events := []Event{
		phase(-10, mrtrv1alpha1.PhaseStable),
		secret(-5, mrtrv1alpha1.PhaseRevoking, "a", "n"),
		phase(-5, mrtrv1alpha1.PhaseRevoking),
		phase(-3, mrtrv1alpha1.PhaseStable),
		secret(0, mrtrv1alpha1.PhaseSealingWithNew, "n", "a"),
		phase(0.1, mrtrv1alpha1.PhaseSealingWithNew),
		phase(2, mrtrv1alpha1.PhaseWaitingTTL),
		phase(9, mrtrv1alpha1.PhaseRemoving),
		secret(9.3, mrtrv1alpha1.PhaseRemoving, "n", "m"),
		phase(12, mrtrv1alpha1.PhaseStable),
	}
	rs := Rotations(events, 7*time.Second, []time.Time{at(9)})
	if len(rs) != 1 {
		t.Fatalf("got %d rotations, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	if !slices.Equal(r.Phases, StagedRotationPhases) || r.Rounds() != 2 || !r.Start.Equal(at(0)) || len(r.RolloutToWrite) != 0 {
		t.Errorf("rotation = %+v", r)
	}
	if len(r.TTLToWrite) != 1 || r.TTLToWrite[0] != 300*time.Millisecond {
		t.Errorf("TTL to write = %v, want [300ms]", r.TTLToWrite)
	}
	if !strings.HasSuffix(r.String(), "(2 rounds)") {
		t.Errorf("String() = %q, want it to end with the rounds", r.String())
	}
}

// A Reload rotation: each write's wait ends with the operator's next step once every pod has
// acknowledged; GateViolations finds a step taken before a pod that existed acknowledged, and
// lets a pod created after the write pass without one.
func TestReloadRotationGates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rv := uint64(0)
	ev := func(s float64, e Event) Event { rv++; e.At, e.RV = at(s), rv; return e }
	phase := func(s float64, p mrtrv1alpha1.Phase) Event { return ev(s, Event{Kind: EventPhase, Phase: p}) }
	ackOf := func(s float64, pod, fp string) Event { return ev(s, Event{Kind: EventAck, Pod: pod, Fingerprint: fp}) }
	secret := func(s float64, fp string, ph mrtrv1alpha1.Phase, ids ...string) Event {
		return ev(s, Event{Kind: EventSecret, Fingerprint: fp, KeyIDs: ids, Phase: ph})
	}
	build := func(late bool) []Event {
		events := []Event{
			ev(-20, Event{Kind: EventPodAdded, Pod: "p1"}),
			ev(-20, Event{Kind: EventPodAdded, Pod: "p2"}),
			phase(-10, mrtrv1alpha1.PhaseStable),
			secret(0, "ab", mrtrv1alpha1.PhaseAccepting, "a", "b"),
			phase(0.1, mrtrv1alpha1.PhaseAccepting),
			ackOf(0.8, "p1", "ab"),
		}
		if !late {
			events = append(events, ackOf(1, "p2", "ab"))
		}
		events = append(events,
			secret(1.1, "ba", mrtrv1alpha1.PhaseSealingWithNew, "b", "a"), // p2 has not acknowledged "ab" yet when late
			phase(1.2, mrtrv1alpha1.PhaseSealingWithNew),
			ev(1.5, Event{Kind: EventPodDeleted, Pod: "p2"}),
			ev(1.6, Event{Kind: EventPodAdded, Pod: "p3"}), // created after the write: counts without acknowledging
			ackOf(1.9, "p1", "ba"),
			phase(2, mrtrv1alpha1.PhaseWaitingTTL),
			phase(9, mrtrv1alpha1.PhaseRemoving),
			secret(9.1, "b", mrtrv1alpha1.PhaseRemoving, "b"),
			ackOf(9.6, "p1", "b"),
			ackOf(9.8, "p3", "b"),
			phase(9.9, mrtrv1alpha1.PhaseStable),
		)
		return events
	}
	events := build(false)
	rs := Rotations(events, 7*time.Second, nil)
	if len(rs) != 1 {
		t.Fatalf("got %d rotations, want 1", len(rs))
	}
	r := rs[0]
	if v := r.GateViolations(events); len(v) != 0 {
		t.Errorf("violations in a gated rotation: %v", v)
	}
	wantWaits := []time.Duration{time.Second, 800 * time.Millisecond, 700 * time.Millisecond}
	wantLatency := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
	if !slices.Equal(roundAll(r.AckWaits), wantWaits) || !slices.Equal(roundAll(r.AckToWrite), wantLatency) {
		t.Errorf("ack waits %v, latencies %v; want %v and %v", r.AckWaits, r.AckToWrite, wantWaits, wantLatency)
	}
	if r.PodsAdded != 1 || r.Floor() != 7*time.Second+2500*time.Millisecond {
		t.Errorf("pods added %d, floor %v; want 1 and 9.5s", r.PodsAdded, r.Floor())
	}
	late := build(true)
	v := Rotations(late, 7*time.Second, nil)[0].GateViolations(late)
	if len(v) != 1 || !strings.Contains(v[0], "before pod p2 acknowledged keyring ab") {
		t.Errorf("violations %v, want one naming p2 and keyring ab", v)
	}
}
