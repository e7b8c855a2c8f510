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

package token

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

type (
	// sealFunc seals a token for the test's request.
	sealFunc func() (string, error)
	// openFunc opens tok for the test's request, or for another one.
	openFunc func(tok string, other bool) error
	// makeCodec builds a codec over src, recording to rec, with a clock the test moves.
	makeCodec func(t *testing.T, src keyring.Source, rec metrics.Recorder, now func() time.Time) (sealFunc, openFunc)
)

// metricsCase is one codec under test: seal and open with the Recorder given at construction.
type metricsCase struct {
	format string
	make   makeCodec
}

func metricsCases() []metricsCase {
	req := Binding{Method: "tools/call", Params: json.RawMessage(`{"name":"a"}`), Principal: json.RawMessage(`"u"`)}
	other := Binding{Method: "tools/call", Params: json.RawMessage(`{"name":"b"}`), Principal: json.RawMessage(`"u"`)}
	pick := func(o bool) Binding {
		if o {
			return other
		}
		return req
	}
	state := json.RawMessage(`{"step":1}`)
	return []metricsCase{
		{CodecSigned, func(t *testing.T, src keyring.Source, rec metrics.Recorder, now func() time.Time) (sealFunc, openFunc) {
			c, err := NewSigned(src, SignedMetrics(rec), SignedClock(now))
			if err != nil {
				t.Fatal(err)
			}
			return func() (string, error) { return c.Seal(req, state) },
				func(tok string, o bool) error { _, err := c.Open(pick(o), tok); return err }
		}},
		{CodecSealed, func(t *testing.T, src keyring.Source, rec metrics.Recorder, now func() time.Time) (sealFunc, openFunc) {
			c, err := NewSealed(src, "https://weather.example/mcp", SealedMetrics(rec), SealedClock(now))
			if err != nil {
				t.Fatal(err)
			}
			return func() (string, error) { return c.Seal(req, state) },
				func(tok string, o bool) error { _, err := c.Open(pick(o), tok); return err }
		}},
		{CodecRS2, func(t *testing.T, src keyring.Source, rec metrics.Recorder, now func() time.Time) (sealFunc, openFunc) {
			c, err := NewRS2(src, RS2Metrics(rec), RS2Clock(now))
			if err != nil {
				t.Fatal(err)
			}
			ad := func(o bool) []byte {
				if o {
					return []byte("user:u|request:b")
				}
				return []byte("user:u|request:a")
			}
			return func() (string, error) { return c.Seal(ad(false), []byte("step=1")) },
				func(tok string, o bool) error { _, err := c.Open(tok, ad(o)); return err }
		}},
	}
}

// flipLast changes the last character of tok to another of the base64url alphabet: the MAC or tag
// no longer verifies, and the text keeps its shape.
func flipLast(tok string) string {
	last := tok[len(tok)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return tok[:len(tok)-1] + string(repl)
}

// Every codec counts each seal and each open by its result, the same names across codecs, and
// counts nothing for a token a server never saw.
func TestCodecsRecordSealsAndOpens(t *testing.T) {
	ours, err := keyring.New(keyring.NewKey("k1", bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := keyring.New(keyring.NewKey("k9", bytes.Repeat([]byte{9}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range metricsCases() {
		t.Run(tc.format, func(t *testing.T) {
			at := time.Unix(1_800_000_000, 0)
			now := func() time.Time { return at }
			rec := &metrics.Text{}
			seal, open := tc.make(t, keyring.Static(ours), rec, now)
			foreignSeal, _ := tc.make(t, keyring.Static(foreign), metrics.Nop{}, now)

			tok, err := seal()
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.Sealed(tc.format); got != 1 {
				t.Errorf("sealed = %d after one seal, want 1", got)
			}
			strange, err := foreignSeal()
			if err != nil {
				t.Fatal(err)
			}

			opens := []struct {
				tok    string
				other  bool
				result metrics.Result
			}{
				{tok, false, metrics.OK},
				{tok, false, metrics.OK},
				{strange, false, metrics.UnknownKey},
				{flipLast(tok), false, metrics.BadMAC},
				{"not a token", false, metrics.Malformed},
				{strings.Repeat("a", 70<<10), false, metrics.TooLarge},
			}
			// Signed and Sealed check the binding after the MAC; rs2's tag covers it.
			if tc.format == CodecRS2 {
				opens = append(opens, struct {
					tok    string
					other  bool
					result metrics.Result
				}{tok, true, metrics.BadMAC})
			} else {
				opens = append(opens, struct {
					tok    string
					other  bool
					result metrics.Result
				}{tok, true, metrics.BindingMismatch})
			}
			want := map[metrics.Result]uint64{}
			for _, o := range opens {
				err := open(o.tok, o.other)
				if (err == nil) != (o.result == metrics.OK) {
					t.Fatalf("Open(%.20q) = %v, want the result %s", o.tok, err, o.result)
				}
				want[o.result]++
			}
			at = at.Add(time.Hour)
			if err := open(tok, false); err == nil {
				t.Fatal("an hour later the token still opens")
			}
			want[metrics.Expired]++
			for _, r := range metrics.Results() {
				if got := rec.Opened(tc.format, r); got != want[r] {
					t.Errorf("opened{result=%q} = %d, want %d", r, got, want[r])
				}
			}
			if got := rec.Sealed(tc.format); got != 1 {
				t.Errorf("sealed = %d, want still 1: opens are not seals", got)
			}
		})
	}
}

// Every check maps to one result of the contract; a new check must be given one on purpose.
func TestCheckResults(t *testing.T) {
	for check, want := range map[Check]metrics.Result{
		"": metrics.OK, CheckSize: metrics.TooLarge, CheckFormat: metrics.Malformed,
		CheckKeyID: metrics.UnknownKey, CheckMAC: metrics.BadMAC, CheckAuthTag: metrics.BadMAC,
		CheckPayload: metrics.Malformed, CheckPrincipal: metrics.BindingMismatch,
		CheckExpired: metrics.Expired, CheckNotYetValid: metrics.Expired, CheckLifetime: metrics.Expired,
		CheckParams: metrics.BindingMismatch, CheckBinding: metrics.BindingMismatch,
	} {
		if got := check.Result(); got != want {
			t.Errorf("Check(%q).Result() = %q, want %q", check, got, want)
		}
	}
}

func TestMetricsOptionsRefuseNil(t *testing.T) {
	src := keyring.Static(mustRing(t))
	if _, err := NewSigned(src, SignedMetrics(nil)); !IsConfigError(err) || !strings.Contains(err.Error(), "SignedMetrics") {
		t.Errorf("SignedMetrics(nil): %v", err)
	}
	if _, err := NewSealed(src, "s", SealedMetrics(nil)); !IsConfigError(err) || !strings.Contains(err.Error(), "SealedMetrics") {
		t.Errorf("SealedMetrics(nil): %v", err)
	}
	if _, err := NewRS2(src, RS2Metrics(nil)); !IsConfigError(err) || !strings.Contains(err.Error(), "RS2Metrics") {
		t.Errorf("RS2Metrics(nil): %v", err)
	}
}

func mustRing(t *testing.T) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(keyring.NewKey("k1", bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
