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
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

var (
	signedSecretA = []byte("signed-test-secret-A-0123456789abcdef")
	signedSecretB = []byte("signed-test-secret-B-0123456789abcdef")

	signedReq = Binding{
		Method:    "tools/call",
		Params:    json.RawMessage(`{"name":"publish","arguments":{"package":"ecto","_meta":{"x":1},"n":1}}`),
		Principal: json.RawMessage(`"user-123"`),
	}
	signedState = json.RawMessage(`{"step":"confirm","n":[1,1.0,-0,1e2]}`)
)

// signedClock is a settable clock in Unix seconds.
type signedClock struct{ now atomic.Int64 }

func (c *signedClock) opt() SignedOption {
	return SignedClock(func() time.Time { return time.Unix(c.now.Load(), 0) })
}

func newSignedClock(at int64) *signedClock {
	c := &signedClock{}
	c.now.Store(at)
	return c
}

func signedRing(t testing.TB, keys ...keyring.Key) keyring.Source {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return keyring.Static(r)
}

// mustSigned is for codecs the test means to be valid: a setup error is a bug in the test.
func mustSigned(s *Signed, err error) *Signed {
	if err != nil {
		panic(err)
	}
	return s
}

func sealSigned(t testing.TB, s *Signed, b Binding) string {
	t.Helper()
	tok, err := s.Seal(b, signedState)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func assertOpens(t *testing.T, s *Signed, b Binding, tok string) {
	t.Helper()
	got, err := s.Open(b, tok)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if want, _ := canonical.Append(nil, signedState); !bytes.Equal(got, want) {
		t.Fatalf("Open = %s, want %s", got, want)
	}
}

func assertSignedInvalid(t *testing.T, s *Signed, b Binding, tok string) {
	t.Helper()
	if got, err := s.Open(b, tok); err != ErrInvalid {
		t.Fatalf("Open = %s, %v; want exactly ErrInvalid", got, err)
	}
}

func TestSignedOptions(t *testing.T) {
	src := signedRing(t, keyring.NewKey("a", signedSecretA))
	for name, tc := range map[string]struct {
		secret []byte
		opts   []SignedOption
		field  string
	}{
		"ttl zero is not the default":   {opts: []SignedOption{SignedTTL(0)}, field: "SignedTTL"},
		"ttl negative":                  {opts: []SignedOption{SignedTTL(-time.Second)}, field: "SignedTTL"},
		"ttl above 900s":                {opts: []SignedOption{SignedTTL(901 * time.Second)}, field: "SignedTTL"},
		"ttl not whole seconds":         {opts: []SignedOption{SignedTTL(1500 * time.Millisecond)}, field: "SignedTTL"},
		"nil clock":                     {opts: []SignedOption{SignedClock(nil)}, field: "SignedClock"},
		"secret of 31 bytes":            {secret: make([]byte, 31), field: "secret"},
		"ttl 1s is the minimum":         {opts: []SignedOption{SignedTTL(time.Second)}},
		"ttl 900s is the maximum":       {opts: []SignedOption{SignedTTL(900 * time.Second)}},
		"secret of 32 bytes is allowed": {secret: make([]byte, 32)},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.secret != nil {
				_, err = NewSignedSecret(tc.secret, tc.opts...)
			} else {
				_, err = NewSigned(src, tc.opts...)
			}
			var ce *ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
				t.Fatalf("error %v, want a *ConfigError on %s", err, tc.field)
			}
		})
	}
	if _, err := NewSigned(nil); !IsConfigError(err) {
		t.Fatalf("NewSigned(nil) = %v", err)
	}
}

func TestSignedDefaults(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	tok := sealSigned(t, s, signedReq)
	if !strings.HasPrefix(tok, "mrtr1.") || strings.Count(tok, ".") != 2 {
		t.Fatalf("secret mode token %q is not mrtr1", tok)
	}
	k := mustSigned(NewSigned(signedRing(t, keyring.NewKey("kid_1", signedSecretA)), newSignedClock(1000).opt()))
	tok = sealSigned(t, k, signedReq)
	if !strings.HasPrefix(tok, "mrtr2.kid_1.") || strings.Count(tok, ".") != 3 {
		t.Fatalf("keys mode token %q is not mrtr2 with kid", tok)
	}
	payload := signedPayload(t, tok)
	if !bytes.HasPrefix(payload, []byte(`[2,1000,1300,"`)) {
		t.Fatalf("payload %s: want version 2, issued 1000, expires 1300 (default TTL)", payload)
	}
	if fmt.Sprint(k) != "Signed{mode: keyring, ttl: 300s}" || fmt.Sprintf("%#v", s) != "Signed{mode: secret, ttl: 300s}" {
		t.Fatalf("String: %v / %#v", k, s)
	}
}

func signedPayload(t *testing.T, tok string) []byte {
	t.Helper()
	parts := strings.Split(tok, ".")
	p, ok := decodeSignedB64(nil, []byte(parts[len(parts)-2]))
	if !ok {
		t.Fatalf("payload of %q is not base64url", tok)
	}
	return p
}

func TestSignedBindingErrors(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	tok := sealSigned(t, s, signedReq)
	for name, tc := range map[string]struct {
		b          Binding
		field      string
		openResult error // nil: a *ConfigError like Seal's
	}{
		"empty principal":    {b: Binding{Method: "m", Params: signedReq.Params}, field: "Binding.Principal"},
		"principal not JSON": {b: Binding{Method: "m", Principal: json.RawMessage(`{`)}, field: "Binding.Principal"},
		"empty method":       {b: Binding{Principal: Anonymous}, field: "Binding.Method"},
		"method not UTF-8":   {b: Binding{Method: "m\xff", Principal: Anonymous}, field: "Binding.Method"},
		// Not an object: the server's mistake (Snodo raises ArgumentError), for Seal and Open alike.
		"params an array":  {b: Binding{Method: "m", Params: json.RawMessage(`[1]`), Principal: Anonymous}, field: "Binding.Params"},
		"params a string":  {b: Binding{Method: "m", Params: json.RawMessage(` "x"`), Principal: Anonymous}, field: "Binding.Params"},
		"params null":      {b: Binding{Method: "m", Params: json.RawMessage(`null`), Principal: Anonymous}, field: "Binding.Params"},
		"params all space": {b: Binding{Method: "m", Params: json.RawMessage("\n "), Principal: Anonymous}, field: "Binding.Params"},
		"params with a repeat": {
			b:     Binding{Method: "m", Params: json.RawMessage(`{"a":1,"a":2}`), Principal: Anonymous},
			field: "Binding.Params", openResult: ErrInvalid,
		},
		"params not JSON": {
			b:     Binding{Method: "m", Params: json.RawMessage(`{"a":}`), Principal: Anonymous},
			field: "Binding.Params", openResult: ErrInvalid,
		},
		"params with invalid UTF8": {
			b:     Binding{Method: "m", Params: json.RawMessage("{\"a\":\"\xff\"}"), Principal: Anonymous},
			field: "Binding.Params", openResult: ErrInvalid,
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Seal(tc.b, signedState)
			var ce *ConfigError
			if tc.field == "Binding.Params" && tc.openResult != nil {
				// The client's params: an *InputError, never mistaken for the server's configuration.
				if !IsInputError(err) || IsConfigError(err) {
					t.Fatalf("Seal: %v, want an *InputError", err)
				}
			} else if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Seal: %v, want a *ConfigError on %s", err, tc.field)
			}
			_, err = s.Open(tc.b, tok)
			if tc.openResult != nil {
				if err != tc.openResult {
					t.Fatalf("Open: %v, want %v", err, tc.openResult)
				}
			} else if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Open: %v, want a *ConfigError on %s", err, tc.field)
			}
		})
	}
	for _, state := range []string{``, `{`, `{"a":1,"a":2}`, `1e999`, `[1] x`} {
		if _, err := s.Seal(signedReq, json.RawMessage(state)); !IsConfigError(err) {
			t.Errorf("Seal of state %q: %v, want a *ConfigError", state, err)
		}
	}
}

func TestSignedAnonymousIsExplicit(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	anon := signedReq
	anon.Principal = Anonymous
	tok := sealSigned(t, s, anon)
	assertOpens(t, s, anon, tok)
	assertSignedInvalid(t, s, signedReq, tok)
	for _, p := range []string{`""`, `"null"`, `0`, `false`, `{}`} {
		other := anon
		other.Principal = json.RawMessage(p)
		assertSignedInvalid(t, s, other, tok)
	}
}

func TestSignedLifetime(t *testing.T) {
	clock := newSignedClock(1_800_000_000)
	s := mustSigned(NewSignedSecret(signedSecretA, clock.opt(), SignedTTL(10*time.Second)))
	tok := sealSigned(t, s, signedReq)

	clock.now.Store(1_800_000_009)
	assertOpens(t, s, signedReq, tok) // the last second of its life
	clock.now.Store(1_800_000_010)
	assertSignedInvalid(t, s, signedReq, tok) // expiry is exclusive
	clock.now.Store(1_799_999_999)
	assertSignedInvalid(t, s, signedReq, tok) // issued in the future

	// The opener's TTL caps tokens sealed with a longer one; a longer TTL never extends one.
	clock.now.Store(1_800_000_000)
	short := mustSigned(NewSignedSecret(signedSecretA, clock.opt(), SignedTTL(9*time.Second)))
	assertSignedInvalid(t, short, signedReq, tok)
	long := mustSigned(NewSignedSecret(signedSecretA, clock.opt(), SignedTTL(900*time.Second)))
	assertOpens(t, long, signedReq, tok)
	clock.now.Store(1_800_000_010)
	assertSignedInvalid(t, long, signedReq, tok)

	// A clock before 1970 is a configuration error, not a token error.
	clock.now.Store(-1)
	if _, err := s.Seal(signedReq, signedState); !IsConfigError(err) {
		t.Fatalf("Seal with a negative clock: %v", err)
	}
	if _, err := s.Open(signedReq, tok); !IsConfigError(err) {
		t.Fatalf("Open with a negative clock: %v", err)
	}
}

func TestSignedBinding(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	tok := sealSigned(t, s, signedReq)

	// What differs between rounds is not bound: top-level _meta, requestState, inputResponses,
	// member order and whitespace, the protocol version.
	retry := signedReq
	retry.Params = json.RawMessage(`{ "arguments" : {"n":1, "_meta":{"x":1}, "package":"ecto"},
		"requestState":"` + tok + `", "_meta":{"progressToken":7}, "inputResponses":{"a":{"action":"accept"}},
		"name":"publish"}`)
	retry.ProtocolVersion = "2026-07-28"
	assertOpens(t, s, retry, tok)

	for name, params := range map[string]string{
		"nested _meta changed":     `{"name":"publish","arguments":{"package":"ecto","_meta":{"x":2},"n":1}}`,
		"nested _meta removed":     `{"name":"publish","arguments":{"package":"ecto","n":1}}`,
		"1 became 1.0":             `{"name":"publish","arguments":{"package":"ecto","_meta":{"x":1},"n":1.0}}`,
		"extra top-level member":   `{"name":"publish","arguments":{"package":"ecto","_meta":{"x":1},"n":1},"x":null}`,
		"other tool":               `{"name":"delete","arguments":{"package":"ecto","_meta":{"x":1},"n":1}}`,
		"string instead of number": `{"name":"publish","arguments":{"package":"ecto","_meta":{"x":1},"n":"1"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			b := signedReq
			b.Params = json.RawMessage(params)
			assertSignedInvalid(t, s, b, tok)
		})
	}
	b := signedReq
	b.Method = "prompts/get"
	assertSignedInvalid(t, s, b, tok)

	// Spellings of the same value bind the same: 1e2, 1E2, 100.0 and 100.00 are one float, -0 is 0.
	same := func(p1, p2 string) {
		t.Helper()
		b1, b2 := signedReq, signedReq
		b1.Params, b2.Params = json.RawMessage(p1), json.RawMessage(p2)
		assertOpens(t, s, b2, sealSigned(t, s, b1))
	}
	same(`{"x":100.0}`, `{"x":1e2}`)
	same(`{"x":100.00}`, `{"x":1E2}`)
	same(`{"x":-0}`, `{"x":0}`)
	same(`{"x":"\u00e9\/"}`, `{"x":"é/"}`)
	same(`{"big":123456789012345678901234567890}`, `{"big":123456789012345678901234567890}`)
	b1, b2 := signedReq, signedReq
	b1.Params = json.RawMessage(`{"big":123456789012345678901234567890}`)
	b2.Params = json.RawMessage(`{"big":123456789012345678901234567891}`)
	assertSignedInvalid(t, s, b2, sealSigned(t, s, b1))
	b1.Params, b2.Params = json.RawMessage(`{"x":-0.0}`), json.RawMessage(`{"x":0.0}`)
	assertSignedInvalid(t, s, b2, sealSigned(t, s, b1))
}

func TestSignedPrefixAndVersion(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	tok := sealSigned(t, s, signedReq)
	enc := strings.Split(tok, ".")[1]
	for name, bad := range map[string]string{
		"mrtr1 relabelled mrtr2":  "mrtr2.a." + enc + "." + strings.Split(tok, ".")[2],
		"unknown prefix":          "mrtr3." + tok[6:],
		"no MAC":                  "mrtr1." + enc,
		"extra part":              tok + ".x",
		"empty":                   "",
		"prefix only":             "mrtr1.",
		"oversize with valid MAC": signedOversize(s),
	} {
		t.Run(name, func(t *testing.T) { assertSignedInvalid(t, s, signedReq, bad) })
	}
}

// signedOversize builds a correctly signed token one byte over the limit.
func signedOversize(s *Signed) string {
	ks := s.keyset()
	for n := MaxSignedTokenBytes - 200; ; n++ {
		payload := []byte(`[1,1000,1300,"x",` + `"` + strings.Repeat("a", n) + `"]`)
		enc := signedB64.AppendEncode(nil, payload)
		var mac [signedMACLen]byte
		ks.keys[0].mac(&mac, signedTagV1, enc, nil)
		if tok := "mrtr1." + string(enc) + "." + string(mac[:]); len(tok) > MaxSignedTokenBytes {
			return tok
		}
	}
}

func TestSignedSealSizeLimit(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	// Find the largest state that fits, then one byte more: exactly 16384 bytes seals and opens.
	var last string
	for n := 12000; ; n++ {
		state := json.RawMessage(`"` + strings.Repeat("x", n) + `"`)
		tok, err := s.Seal(signedReq, state)
		if err != nil {
			if !IsConfigError(err) || len(last) != MaxSignedTokenBytes {
				t.Fatalf("at %d bytes: %v (previous token %d bytes)", n, err, len(last))
			}
			break
		}
		last = tok
	}
	if _, err := s.Open(signedReq, last); err != nil {
		t.Fatalf("a token of exactly %d bytes does not open: %v", len(last), err)
	}
}

func TestSignedTamper(t *testing.T) {
	s := mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretA)), newSignedClock(1000).opt()))
	tok := sealSigned(t, s, signedReq)
	for i := range len(tok) {
		for _, c := range []byte{'A', '_', '.', '='} {
			if tok[i] == c {
				continue
			}
			bad := tok[:i] + string(c) + tok[i+1:]
			if _, err := s.Open(signedReq, bad); err != ErrInvalid {
				t.Fatalf("byte %d set to %q: Open = %v", i, c, err)
			}
		}
	}
}

func TestSignedMigrationSecretAndKeys(t *testing.T) {
	clock := newSignedClock(1000)
	secret := mustSigned(NewSignedSecret(signedSecretA, clock.opt()))
	keys := mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretA)), clock.opt()))
	other := mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretB)), clock.opt()))

	// secret -> keys: a keyring opens mrtr1 tokens with any of its keys.
	v1 := sealSigned(t, secret, signedReq)
	assertOpens(t, keys, signedReq, v1)
	assertSignedInvalid(t, other, signedReq, v1)
	behind := mustSigned(NewSigned(signedRing(t, keyring.NewKey("b", signedSecretB), keyring.NewKey("a", signedSecretA)), clock.opt()))
	assertOpens(t, behind, signedReq, v1)

	// keys -> secret: a secret opens an mrtr2 token of any well-formed kid that it verifies.
	v2 := sealSigned(t, keys, signedReq)
	assertOpens(t, secret, signedReq, v2)
	assertSignedInvalid(t, mustSigned(NewSignedSecret(signedSecretB, clock.opt())), signedReq, v2)

	// A keyring opens mrtr2 tokens only with the key the kid names.
	swapped := mustSigned(NewSigned(signedRing(t, keyring.NewKey("b", signedSecretA)), clock.opt()))
	assertSignedInvalid(t, swapped, signedReq, v2)
}

// signedSwapSource is a Source whose keyring the test replaces.
type signedSwapSource struct {
	r atomic.Pointer[keyring.Keyring]
}

func (s *signedSwapSource) Keyring() *keyring.Keyring { return s.r.Load() }

func TestSignedRotationFollowsSource(t *testing.T) {
	clock := newSignedClock(1000)
	ring := func(keys ...keyring.Key) *keyring.Keyring {
		r, err := keyring.New(keys...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := keyring.NewKey("a", signedSecretA), keyring.NewKey("b", signedSecretB)
	src := &signedSwapSource{}
	src.r.Store(ring(a))
	s := mustSigned(NewSigned(src, clock.opt()))
	tokA := sealSigned(t, s, signedReq)

	src.r.Store(ring(a, b)) // accept b
	assertOpens(t, s, signedReq, tokA)
	if tok := sealSigned(t, s, signedReq); !strings.HasPrefix(tok, "mrtr2.a.") {
		t.Fatalf("[a b] seals with %q", tok[:8])
	}
	src.r.Store(ring(b, a)) // seal with b
	tokB := sealSigned(t, s, signedReq)
	if !strings.HasPrefix(tokB, "mrtr2.b.") {
		t.Fatalf("[b a] seals with %q", tokB[:8])
	}
	assertOpens(t, s, signedReq, tokA)
	src.r.Store(ring(b)) // drop a
	assertOpens(t, s, signedReq, tokB)
	assertSignedInvalid(t, s, signedReq, tokA)

	// An equal keyring (same fingerprint) keeps the derived state.
	before := s.cache.Load()
	src.r.Store(ring(b))
	sealSigned(t, s, signedReq)
	if s.cache.Load() != before {
		t.Fatal("an equal keyring rebuilt the derived key state")
	}
}

func TestDecodeSignedB64IsElixirs(t *testing.T) {
	for in, want := range map[string]string{
		"eyJ9":   `{"}`,
		"eyI":    `{"`,
		"eyJ":    `{"`, // unused bits not zero: Elixir ignores them
		"eyI=":   `{"`, // padding is allowed
		"eQ==":   `y`,
		"eQ":     `y`,
		"":       ``,
		"e":      "!",
		"eyI==":  "!",
		"e===":   "!",
		"eQ=":    "!",
		"ey\nI":  "!",
		"ey+I":   "!",
		"e=Q=":   "!",
		"eyI.eQ": "!",
	} {
		got, ok := decodeSignedB64(nil, []byte(in))
		if want == "!" {
			if ok {
				t.Errorf("%q decodes to %q, want an error", in, got)
			}
		} else if !ok || string(got) != want {
			t.Errorf("%q decodes to %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestSignedConcurrent(t *testing.T) {
	ring := signedRing(t, keyring.NewKey("a", signedSecretA), keyring.NewKey("b", signedSecretB))
	s := mustSigned(NewSigned(ring, newSignedClock(1000).opt()))
	done := make(chan error)
	for g := range 8 {
		go func() {
			b := signedReq
			b.Principal = json.RawMessage(fmt.Sprintf(`"user-%d"`, g))
			for range 200 {
				tok, err := s.Seal(b, signedState)
				if err == nil {
					_, err = s.Open(b, tok)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
