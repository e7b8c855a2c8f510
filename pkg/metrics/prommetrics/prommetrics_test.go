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

package prommetrics_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics/prommetrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

func ring(t *testing.T, id string, b byte) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(keyring.NewKey(id, bytes.Repeat([]byte{b}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The real codecs, recording through the adapter, give the contract's series: every result of a
// format at 0 once the format is seen, the rejections under their results, one keyring_info
// series, and the acknowledgement's state as one series at 1.
func TestRecorderExposesTheContract(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	rec, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := ring(t, "k1", 1), ring(t, "k9", 9)
	codec, err := token.NewSigned(keyring.Static(ours), token.SignedMetrics(rec))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := token.NewSigned(keyring.Static(theirs))
	if err != nil {
		t.Fatal(err)
	}
	b := token.Binding{Method: "tools/call", Params: json.RawMessage(`{"name":"a"}`), Principal: token.Anonymous}
	tok, err := codec.Seal(b, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	strange, err := foreign.Seal(b, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Open(b, tok); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := codec.Open(b, strange); err == nil {
			t.Fatal("a token of another keyring opened")
		}
	}
	rec.KeyringInService(theirs.Fingerprint())
	rec.KeyringInService(ours.Fingerprint())
	rec.ReloadFailed()
	rec.AckStateChanged(metrics.AckPending)
	rec.AckStateChanged(metrics.AckRetrying)

	want := `
# HELP mrtr_consumer_ack_state The acknowledgement's state (pending, acknowledged, retrying): 1 for the current one.
# TYPE mrtr_consumer_ack_state gauge
mrtr_consumer_ack_state{state="acknowledged"} 0
mrtr_consumer_ack_state{state="pending"} 0
mrtr_consumer_ack_state{state="retrying"} 1
# HELP mrtr_consumer_keyring_info The keyring in service: 1 for its fingerprint.
# TYPE mrtr_consumer_keyring_info gauge
mrtr_consumer_keyring_info{fingerprint="` + ours.Fingerprint() + `"} 1
# HELP mrtr_consumer_reload_failures_total Reloads of the keyring volume that kept the last good keyring (unreadable or invalid snapshot).
# TYPE mrtr_consumer_reload_failures_total counter
mrtr_consumer_reload_failures_total 1
# HELP mrtr_consumer_tokens_opened_total Request-state tokens opened, by format and result (docs/consumers.md, Metrics).
# TYPE mrtr_consumer_tokens_opened_total counter
mrtr_consumer_tokens_opened_total{format="Signed",result="bad_mac"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="binding_mismatch"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="expired"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="malformed"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="ok"} 1
mrtr_consumer_tokens_opened_total{format="Signed",result="too_large"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="unknown_key"} 2
# HELP mrtr_consumer_tokens_sealed_total Request-state tokens sealed, by format.
# TYPE mrtr_consumer_tokens_sealed_total counter
mrtr_consumer_tokens_sealed_total{format="Signed"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// No series carries anything of a key: the fingerprint is the only keyring label.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "\x01\x01\x01\x01") {
					t.Errorf("%s has key bytes in label %s", mf.GetName(), l.GetName())
				}
			}
		}
	}
}

func TestNewRefusesASecondRecorderOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := prommetrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := prommetrics.New(reg); err == nil {
		t.Error("a second Recorder registered the same metrics")
	}
}
