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

package metrics_test

import (
	"strings"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

func TestTextExposition(t *testing.T) {
	var rec metrics.Text
	var out strings.Builder
	if _, err := rec.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "{") {
		t.Errorf("before anything happened, series with labels:\n%s", out.String())
	}

	rec.KeyringInService("1111111111111111")
	rec.KeyringInService("bb0a97748c2a0775")
	rec.TokenSealed("Signed")
	rec.TokenOpened("Signed", metrics.OK)
	rec.TokenOpened("Signed", metrics.UnknownKey)
	rec.TokenOpened("Signed", metrics.UnknownKey)
	rec.ReloadFailed()
	rec.AckStateChanged(metrics.AckPending)
	rec.AckStateChanged(metrics.AckAcknowledged)
	out.Reset()
	if _, err := rec.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	want := `# HELP mrtr_consumer_tokens_sealed_total Request-state tokens sealed, by format.
# TYPE mrtr_consumer_tokens_sealed_total counter
mrtr_consumer_tokens_sealed_total{format="Signed"} 1
# HELP mrtr_consumer_tokens_opened_total Request-state tokens opened, by format and result.
# TYPE mrtr_consumer_tokens_opened_total counter
mrtr_consumer_tokens_opened_total{format="Signed",result="ok"} 1
mrtr_consumer_tokens_opened_total{format="Signed",result="expired"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="unknown_key"} 2
mrtr_consumer_tokens_opened_total{format="Signed",result="bad_mac"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="binding_mismatch"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="malformed"} 0
mrtr_consumer_tokens_opened_total{format="Signed",result="too_large"} 0
# HELP mrtr_consumer_keyring_info The keyring in service, by fingerprint.
# TYPE mrtr_consumer_keyring_info gauge
mrtr_consumer_keyring_info{fingerprint="bb0a97748c2a0775"} 1
# HELP mrtr_consumer_reload_failures_total Reloads that kept the last good keyring.
# TYPE mrtr_consumer_reload_failures_total counter
mrtr_consumer_reload_failures_total 1
# HELP mrtr_consumer_ack_state The acknowledgement's state: 1 for the current one.
# TYPE mrtr_consumer_ack_state gauge
mrtr_consumer_ack_state{state="pending"} 0
mrtr_consumer_ack_state{state="acknowledged"} 1
mrtr_consumer_ack_state{state="retrying"} 0
`
	if out.String() != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestOrNop(t *testing.T) {
	if _, ok := metrics.OrNop(nil).(metrics.Nop); !ok {
		t.Error("OrNop(nil) is not Nop")
	}
	rec := &metrics.Text{}
	if metrics.OrNop(rec) != metrics.Recorder(rec) {
		t.Error("OrNop(rec) is not rec")
	}
}
