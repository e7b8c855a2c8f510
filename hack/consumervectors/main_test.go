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
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// repoVectors is testdata/consumers/ at the repository's root, seen from this package.
const repoVectors = "../../testdata/consumers"

// TestFresh fails when the committed vectors are not what the library makes now: after a change
// to pkg/keyring or to this generator, run `go run ./hack/consumervectors` and commit the result.
func TestFresh(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names {
		got, err := os.ReadFile(filepath.Join(repoVectors, name))
		if err != nil {
			t.Fatalf("%v: run go run ./hack/consumervectors", err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("testdata/consumers/%s is stale: run go run ./hack/consumervectors and commit it", name)
		}
	}
	got, err := os.ReadFile(filepath.Join("../..", SealTTLPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, files[SealTTLPath]) {
		t.Errorf("%s is stale: run go run ./hack/consumervectors and commit it", SealTTLPath)
	}
}

// TestDeterministic guards TestFresh itself: two runs make the same bytes.
func TestDeterministic(t *testing.T) {
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(Names, SealTTLPath) {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestKeyringVectorsRoundTrip reads keyrings.json as a consumer in another language would and
// checks every answer against pkg/keyring, so the file means what its comment says.
func TestKeyringVectorsRoundTrip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoVectors, "keyrings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v keyringsFile
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Valid) < 10 || len(v.Invalid) < 30 {
		t.Fatalf("%d valid and %d invalid vectors: too few", len(v.Valid), len(v.Invalid))
	}
	for _, c := range v.Valid {
		r, err := keyring.Parse(c.bytesOf())
		if err != nil {
			t.Errorf("valid %q: %v", c.Name, err)
			continue
		}
		if r.Fingerprint() != c.Fingerprint || r.Len() != len(c.Keys) {
			t.Errorf("valid %q: fingerprint %s, %d keys; the file says %s, %d", c.Name, r.Fingerprint(), r.Len(), c.Fingerprint, len(c.Keys))
			continue
		}
		for i, k := range r.Keys() {
			if !k.Equal(keyring.NewKey(c.Keys[i].ID, c.Keys[i].Secret)) || k.PythonKid() != c.Keys[i].PythonKid {
				t.Errorf("valid %q: keys[%d] differs from the file", c.Name, i)
			}
		}
	}
	for _, c := range v.Invalid {
		if _, err := keyring.Parse(c.bytesOf()); err == nil || err.Error() != c.Error {
			t.Errorf("invalid %q: Parse error %v; the file says %q", c.Name, err, c.Error)
		}
	}
}

// TestBindingVectors runs bindings.json as a Go consumer would, in all three of Go's formats: each
// case's Signed and rs2 tokens are what the codecs seal at the file's clock, and opening each for
// the case's other request counts the file's result. It also holds the file to what docs/consumers.md
// says of it: the same request opens everywhere; any other is binding_mismatch, but bad_mac in
// rs2, whose tag covers the binding.
func TestBindingVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoVectors, "bindings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v bindingsFile
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) != 6 {
		t.Fatalf("%d cases, want 6", len(v.Cases))
	}
	ring, err := keyring.Parse(v.Keyring.Data)
	if err != nil {
		t.Fatal(err)
	}
	codecs, err := newBindingCodecs(ring, time.Unix(v.NowUnix, 0), time.Duration(v.TTLSeconds)*time.Second, v.Server)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			results, tokens, err := codecs.run(c.Seal, c.Open, v.State)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{token.CodecSigned, token.CodecSealed, token.CodecRS2} {
				if results[format] != c.Results[format] {
					t.Errorf("%s counted %q; the file says %q", format, results[format], c.Results[format])
				}
			}
			for format, tok := range c.Tokens {
				if tokens[format] != tok {
					t.Errorf("%s sealed %s; the file says %s", format, tokens[format], tok)
				}
			}
			same := c.Name == "the same request"
			for format, got := range c.Results {
				want := metrics.BindingMismatch
				switch {
				case same:
					want = metrics.OK
				case format == token.CodecRS2:
					want = metrics.BadMAC
				}
				if got != want {
					t.Errorf("the file says %s counts %q, want %q", format, got, want)
				}
			}
			if len(c.Results) != len(v.Formats) {
				t.Errorf("results for %d formats, %d described", len(c.Results), len(v.Formats))
			}
		})
	}
}

// TestRejectionVectors runs rejections.json as a Go consumer would: every Signed and rs2 case opened
// by token.Signed and token.RS2 under the case's keyring at its clock counts the file's result. The
// file holds the cases where two results could apply, each format's too.
func TestRejectionVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoVectors, "rejections.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v rejectionsFile
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, c := range v.Cases {
		ring, err := keyring.Parse(c.Keyring.bytesOf())
		if err != nil {
			t.Fatalf("%s %q: %v", c.Format, c.Name, err)
		}
		tok := pad(c.Token, c.TokenPadTo)
		clock := func() time.Time { return time.UnixMilli(c.NowMs) }
		ttl := time.Duration(c.TTLSeconds) * time.Second
		rec := &lastResult{}
		switch c.Format {
		case token.CodecSigned:
			codec, err := token.NewSigned(keyring.Static(ring), token.SignedClock(clock), token.SignedTTL(ttl), token.SignedMetrics(rec))
			if err != nil {
				t.Fatal(err)
			}
			open := v.Request
			if c.OpenedFor == "otherRequest" {
				open = v.OtherRequest
			}
			_, _ = codec.Open(open.binding(), tok)
		case token.CodecRS2:
			codec, err := token.NewRS2(keyring.Static(ring), token.RS2Clock(clock), token.RS2TTL(ttl), token.RS2Metrics(rec))
			if err != nil {
				t.Fatal(err)
			}
			ad := []byte(v.Request.RS2AD)
			if c.OpenedFor == "otherRequest" {
				ad = []byte(v.OtherRequest.RS2AD)
			}
			_, _ = codec.Open(tok, ad)
		default:
			continue
		}
		ran[c.Format]++
		if rec.result != c.Result {
			t.Errorf("%s %q counted %q; the file says %q", c.Format, c.Name, rec.result, c.Result)
		}
	}
	if ran[token.CodecSigned] < 10 || ran[token.CodecRS2] < 10 {
		t.Fatalf("ran %v: too few", ran)
	}
	// The precedence docs/consumers.md states, held to the file: where two results apply, these win.
	results := map[string]metrics.Result{}
	for _, c := range v.Cases {
		results[c.Format+": "+c.Name] = c.Result
	}
	for name, want := range map[string]metrics.Result{
		"Signed: oversized and unknown key: too_large":          metrics.TooLarge,
		"Signed: malformed and expired: malformed":              metrics.Malformed,
		"Signed: unknown key and bad MAC: unknown_key":          metrics.UnknownKey,
		"Signed: expired and bad MAC: bad_mac":                  metrics.BadMAC,
		"rs2: oversized and unknown key: too_large":             metrics.TooLarge,
		"rs2: malformed and expired: malformed":                 metrics.Malformed,
		"rs2: unknown key and bad MAC: unknown_key":             metrics.UnknownKey,
		"rs2: expired and bad MAC: bad_mac":                     metrics.BadMAC,
		"python-sdk: unknown key and bad tag: unknown_key":      metrics.UnknownKey,
		"python-sdk: expired and bad tag: bad_mac":              metrics.BadMAC,
		"python-sdk: too short, with an unknown kid: malformed": metrics.Malformed,
	} {
		if got, ok := results[name]; !ok || got != want {
			t.Errorf("%s: the file says %q (present: %v), want %q", name, got, ok, want)
		}
	}
}
