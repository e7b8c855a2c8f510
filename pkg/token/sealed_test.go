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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// t0 is the fixed clock of these tests: 2026-07-28T10:15:00.25Z.
var t0 = time.Unix(1785233700, 250_000_000).UTC()

// testKey is a keyring key whose secret is n bytes of fill, so tests can tell keys apart and name
// them without printing secrets.
func testKey(id string, fill byte, n int) keyring.Key {
	return keyring.NewKey(id, bytes.Repeat([]byte{fill}, n))
}

func testRing(t testing.TB, keys ...keyring.Key) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// swapSource is a Source whose keyring a test replaces, as a hot reload would.
type swapSource struct {
	p atomic.Pointer[keyring.Keyring]
}

func newSwapSource(r *keyring.Keyring) *swapSource {
	s := new(swapSource)
	s.p.Store(r)
	return s
}

func (s *swapSource) Keyring() *keyring.Keyring { return s.p.Load() }
func (s *swapSource) set(r *keyring.Keyring)    { s.p.Store(r) }

// clock is a settable clock starting at t0. Not for concurrent use: tests that share one run
// sequentially.
type clock struct{ t time.Time }

func newClock() *clock          { return &clock{t: t0} }
func (c *clock) Now() time.Time { return c.t }

const testServer = "https://mcp.example.com/mcp"

func newTestSealed(t testing.TB, src keyring.Source, c *clock, opts ...SealedOption) *Sealed {
	t.Helper()
	return newTestSealedFor(t, testServer, src, c, opts...)
}

func newTestSealedFor(t testing.TB, server string, src keyring.Source, c *clock, opts ...SealedOption) *Sealed {
	t.Helper()
	s, err := NewSealed(src, server, append(opts, SealedClock(c.Now))...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testBinding() Binding {
	return Binding{
		Method: "tools/call",
		Params: json.RawMessage(`{"_meta":{"protocolVersion":"2026-07-28"},"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`),
		Principal:       json.RawMessage(`"user:ada"`),
		ProtocolVersion: "2026-07-28",
	}
}

// testState is in canonical form, so Open gives back exactly these bytes.
const testState = `{"big":123456789012345678901234567890,"collected":{"login":"octocat"},"f":1.0,"step":2}`

func mustSeal(t testing.TB, s *Sealed, b Binding, state string) string {
	t.Helper()
	tok, err := s.Seal(b, json.RawMessage(state))
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return tok
}

func assertInvalid(t testing.TB, s *Sealed, b Binding, tok, what string) {
	t.Helper()
	got, err := s.Open(b, tok)
	if err != ErrInvalid { // the very value, not a wrapper
		t.Fatalf("%s: Open = %q, %v; want ErrInvalid", what, got, err)
	}
}

func TestSealedRoundTrip(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	for _, state := range []string{
		testState, `null`, `0`, `-1.5e300`, `1E2`, `-0`, `"ünïcødé \u2028 </script>"`, `[]`, `{}`, `true`,
		` {"padded": [ 1 , 2 ] } `, `{"s":{"s":",\"s\":"},"p":"}"}`,
	} {
		tok := mustSeal(t, s, testBinding(), state)
		if !strings.HasPrefix(tok, "a.") {
			t.Errorf("token %q does not start with the kid", tok)
		}
		want, err := canonical.Append(nil, []byte(state))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Open(testBinding(), tok)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Open(Seal(%s)) = %s, %v; want %s", state, got, err, want)
		}
	}
}

func TestSealedFreshIVPerSeal(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	seen := map[string]bool{}
	for range 100 {
		tok := mustSeal(t, s, testBinding(), testState)
		raw, err := sealedB64.DecodeString(tok[2:])
		if err != nil {
			t.Fatal(err)
		}
		iv := string(raw[:ivLen])
		if seen[iv] {
			t.Fatalf("IV %x repeated", iv)
		}
		seen[iv] = true
	}
}

// Every field of the binding that is bound must reject a token when it differs; what is not salient
// must not.
func TestSealedBinding(t *testing.T) {
	ring := testRing(t, testKey("a", 1, 32))
	c := newClock()
	s := newTestSealed(t, keyring.Static(ring), c)
	tok := mustSeal(t, s, testBinding(), testState)

	with := func(f func(*Binding)) Binding { b := testBinding(); f(&b); return b }
	params := func(p string) func(*Binding) { return func(b *Binding) { b.Params = json.RawMessage(p) } }

	rejected := map[string]Binding{
		"another method": with(func(b *Binding) { b.Method = "prompts/get" }),
		"another tool": with(params(`{"name":"get_forecast",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`)),
		"another argument": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"Boston","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`)),
		"a nested argument": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"F","wind":"km/h"},"days":[1,2]}}`)),
		"array order": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[2,1]}}`)),
		"an added argument": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2],"x":1}}`)),
		"nested _meta is salient": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2],"_meta":{}}}`)),
		"an added top-level param": with(params(`{"name":"get_weather","cursor":"x",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`)),
		"no arguments":             with(params(`{"name":"get_weather"}`)),
		"params not JSON":          with(params(`{"name":`)),
		"another principal":        with(func(b *Binding) { b.Principal = json.RawMessage(`"user:bob"`) }),
		"a principal prefix":       with(func(b *Binding) { b.Principal = json.RawMessage(`"user:ad"`) }),
		"anonymous":                with(func(b *Binding) { b.Principal = Anonymous }),
		"principal as object":      with(func(b *Binding) { b.Principal = json.RawMessage(`{"sub":"user:ada"}`) }),
		"another protocol version": with(func(b *Binding) { b.ProtocolVersion = "2026-08-01" }),
		"no protocol version":      with(func(b *Binding) { b.ProtocolVersion = "" }),
	}
	for name, b := range rejected {
		t.Run("rejects "+name, func(t *testing.T) { assertInvalid(t, s, b, tok, name) })
	}
	t.Run("rejects another server sharing the keyring", func(t *testing.T) {
		other := newTestSealedFor(t, testServer+"2", keyring.Static(ring), c)
		assertInvalid(t, other, testBinding(), tok, "another server")
	})

	accepted := map[string]Binding{
		"another _meta": with(params(`{"_meta":{"protocolVersion":"2026-07-28","progressToken":7},"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`)),
		"no _meta": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]}}`)),
		"retry fields": with(params(`{"name":"get_weather",` +
			`"arguments":{"location":"New York","units":{"temp":"C","wind":"km/h"},"days":[1,2]},` +
			`"inputResponses":{"a":{"action":"accept"}},"requestState":"x"}`)),
		"key order and spacing": with(params(` { "arguments" : {"days":[1,2],"units":{"wind":"km/h","temp":"C"},"location":"New York"}, ` +
			`"name":"get_weather"}`)),
		"principal spelled apart": with(func(b *Binding) { b.Principal = json.RawMessage(` "user:ada" `) }),
	}
	for name, b := range accepted {
		t.Run("accepts "+name, func(t *testing.T) {
			if got, err := s.Open(b, tok); err != nil || string(got) != testState {
				t.Fatalf("Open = %s, %v; want the state", got, err)
			}
		})
	}
}

func TestSealedObjectPrincipal(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	b := testBinding()
	// A principal that itself contains the bytes that follow the principal in the payload.
	b.Principal = json.RawMessage(`{"s":1,"sub":"ada"}`)
	tok := mustSeal(t, s, b, testState)
	b.Principal = json.RawMessage(`{"sub":"ada", "s":1}`)
	if got, err := s.Open(b, tok); err != nil || string(got) != testState {
		t.Fatalf("Open = %s, %v; want the state", got, err)
	}
	b.Principal = json.RawMessage(`{"s":1}`)
	assertInvalid(t, s, b, tok, "a principal that is a prefix of the sealed one")
}

// Flipping any bit pattern of any byte, or cutting or extending the token, must fail to open.
func TestSealedTamper(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32), testKey("b", 2, 32))), newClock())
	tok := mustSeal(t, s, testBinding(), `{"k":"v"}`)
	for i := range len(tok) {
		for _, mask := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff} {
			m := []byte(tok)
			m[i] ^= mask
			assertInvalid(t, s, testBinding(), string(m), fmt.Sprintf("byte %d ^ %#x", i, mask))
		}
	}
	for i := range len(tok) {
		assertInvalid(t, s, testBinding(), tok[:i], fmt.Sprintf("truncated to %d bytes", i))
		assertInvalid(t, s, testBinding(), tok[:i]+"\n"+tok[i:], fmt.Sprintf("newline at %d", i))
	}
	for _, suffix := range []string{"A", "AA", "AAA", "AAAA", "=", "\n", "."} {
		assertInvalid(t, s, testBinding(), tok+suffix, "suffix "+suffix)
	}
	assertInvalid(t, s, testBinding(), "b"+tok[1:], "the other key's id")
	for _, bad := range []string{"", ".", "a.", "a", "nokid", ".AAAA", "a.!!!!", "c." + tok[2:]} {
		assertInvalid(t, s, testBinding(), bad, fmt.Sprintf("%q", bad))
	}
}

func TestSealedExpiry(t *testing.T) {
	custom := []SealedOption{SealedTTL(90 * time.Second), SealedAnonymousTTL(10 * time.Second)}
	cases := map[string]struct {
		opts      []SealedOption
		principal json.RawMessage
		life      time.Duration
	}{
		"default TTL":             {[]SealedOption{}, json.RawMessage(`"user:ada"`), 5 * time.Minute},
		"anonymous default":       {[]SealedOption{}, Anonymous, 60 * time.Second},
		"anonymous spelled apart": {[]SealedOption{}, json.RawMessage(" null\n"), 60 * time.Second},
		"custom TTL":              {custom, json.RawMessage(`7`), 90 * time.Second},
		"custom anonymous":        {custom, Anonymous, 10 * time.Second},
		"anonymous capped by TTL": {[]SealedOption{SealedTTL(30 * time.Second)}, Anonymous, 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), c, tc.opts...)
			b := testBinding()
			b.Principal = tc.principal
			tok := mustSeal(t, s, b, testState)
			// Times are whole Unix seconds and t0 is .25s past one: the token expires at
			// floor(t0)+life, exclusive.
			c.t = t0.Truncate(time.Second).Add(tc.life - time.Nanosecond)
			if _, err := s.Open(b, tok); err != nil {
				t.Fatalf("one nanosecond before expiry: %v", err)
			}
			c.t = t0.Truncate(time.Second).Add(tc.life)
			assertInvalid(t, s, b, tok, "at expiry")
			c.t = t0.Add(24 * time.Hour)
			assertInvalid(t, s, b, tok, "a day later")
		})
	}
}

func TestSealedOpenerTTLCaps(t *testing.T) {
	ring := keyring.Static(testRing(t, testKey("a", 1, 32)))
	c := newClock()
	long := newTestSealed(t, ring, c, SealedTTL(10*time.Minute))
	short := newTestSealed(t, ring, c, SealedTTL(5*time.Minute))
	assertInvalid(t, short, testBinding(), mustSeal(t, long, testBinding(), testState), "a 10m token on a 5m opener")
	if _, err := long.Open(testBinding(), mustSeal(t, short, testBinding(), testState)); err != nil {
		t.Fatalf("a 5m token on a 10m opener: %v", err)
	}
	// An anonymous token is capped by the anonymous TTL, whatever TTL it was sealed with.
	b := testBinding()
	b.Principal = Anonymous
	lax := newTestSealed(t, ring, c, SealedAnonymousTTL(5*time.Minute))
	assertInvalid(t, long, b, mustSeal(t, lax, b, testState), "a 5m anonymous token on a 60s opener")
}

// The documented rotation: [A,B] then [B,A] then [B]. Tokens open wherever their key is in the ring.
func TestSealedRotation(t *testing.T) {
	a, b := testKey("key-a", 1, 32), testKey("key-b", 2, 48)
	src := newSwapSource(testRing(t, a))
	s := newTestSealed(t, src, newClock())
	opens := func(tok string) bool { _, err := s.Open(testBinding(), tok); return err == nil }

	underA := mustSeal(t, s, testBinding(), testState)
	src.set(testRing(t, a, b))
	underAB := mustSeal(t, s, testBinding(), testState)
	src.set(testRing(t, b, a))
	underBA := mustSeal(t, s, testBinding(), testState)

	if !strings.HasPrefix(underAB, "key-a.") || !strings.HasPrefix(underBA, "key-b.") {
		t.Fatalf("the first key must seal: %q, %q", underAB[:6], underBA[:6])
	}
	for _, tok := range []string{underA, underAB, underBA} {
		if !opens(tok) {
			t.Errorf("[B,A] does not open %.8s…", tok)
		}
	}
	src.set(testRing(t, a, b))
	if !opens(underBA) {
		t.Error("[A,B] does not open a token sealed under [B,A]")
	}
	src.set(testRing(t, b))
	if opens(underA) || opens(underAB) {
		t.Error("[B] opens a token sealed with the dropped key A")
	}
	if !opens(underBA) {
		t.Error("[B] does not open a token sealed with B")
	}
	// A new key under a reused id is another key.
	src.set(testRing(t, testKey("key-b", 3, 32)))
	if opens(underBA) {
		t.Error("a different secret under the same id opens the token")
	}
}

func TestSealedKeyCacheFollowsFingerprint(t *testing.T) {
	src := newSwapSource(testRing(t, testKey("a", 1, 32)))
	s := newTestSealed(t, src, newClock())
	mustSeal(t, s, testBinding(), testState)
	first := s.keys.Load()
	src.set(testRing(t, testKey("a", 1, 32))) // a new keyring value with the same keys
	mustSeal(t, s, testBinding(), testState)
	if s.keys.Load() != first {
		t.Error("the AEADs were rebuilt for an unchanged keyring")
	}
	src.set(testRing(t, testKey("a", 1, 32), testKey("b", 2, 32)))
	mustSeal(t, s, testBinding(), testState)
	if s.keys.Load() == first {
		t.Error("the AEADs were not rebuilt for a changed keyring")
	}
}

func TestSealedLimits(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	// The largest state Seal accepts makes a token of exactly MaxSealedTokenBytes, which opens.
	overhead := len(mustSeal(t, s, testBinding(), `""`)) // kid, dot and the base64 of iv, tag and payload
	n := (MaxSealedTokenBytes-overhead)*3/4 - 2
	for ; ; n++ {
		tok, err := s.Seal(testBinding(), json.RawMessage(`"`+strings.Repeat("x", n+1)+`"`))
		if err != nil {
			if !IsConfigError(err) {
				t.Fatalf("oversize state: %v, want a ConfigError", err)
			}
			break
		}
		if len(tok) > MaxSealedTokenBytes {
			t.Fatalf("sealed a %d-byte token", len(tok))
		}
		if _, err := s.Open(testBinding(), tok); err != nil {
			t.Fatalf("a %d-byte token does not open: %v", len(tok), err)
		}
	}
	big := "a." + strings.Repeat("A", MaxSealedTokenBytes-1)
	assertInvalid(t, s, testBinding(), big, "an oversize token")
}

func TestSealedSealErrors(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	b := testBinding()
	noMethod, noPrincipal, badPrincipal, badParams := b, b, b, b
	noMethod.Method = ""
	noPrincipal.Principal = nil
	badPrincipal.Principal = json.RawMessage(`user`)
	badParams.Params = json.RawMessage(`{"name":`)
	paramsArray, badMethod := b, b
	paramsArray.Params = json.RawMessage(`[1]`)
	badMethod.Method = "tools/\xff"
	cases := map[string]struct {
		b     Binding
		state string
		field string
	}{
		"state not JSON":       {b, `{state}`, "state"},
		"state empty":          {b, ``, "state"},
		"two values":           {b, `1 2`, "state"},
		"trailing comma":       {b, `{"a":1,}`, "state"},
		"no method":            {noMethod, testState, "Binding.Method"},
		"no principal":         {noPrincipal, testState, "Binding.Principal"},
		"principal not JSON":   {badPrincipal, testState, "Binding.Principal"},
		"params not JSON":      {badParams, testState, "Binding.Params"},
		"params not an object": {paramsArray, testState, "not an object"},
		"method not UTF-8":     {badMethod, testState, "Binding.Method"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := s.Seal(tc.b, json.RawMessage(tc.state))
			var ce *ConfigError
			switch {
			case tc.field == "Binding.Params":
				// The client's params: an *InputError, never mistaken for the server's configuration.
				if !IsInputError(err) || IsConfigError(err) {
					t.Fatalf("Seal error %v; want an *InputError", err)
				}
			case tc.field == "not an object":
				// Which bytes are the params is the server's choice, as Snodo's ArgumentError says.
				if !errors.As(err, &ce) || ce.Field != "Binding.Params" || IsInputError(err) {
					t.Fatalf("Seal error %v; want a ConfigError on Binding.Params", err)
				}
			case !errors.As(err, &ce) || ce.Field != tc.field:
				t.Fatalf("Seal error %v; want a ConfigError on %s", err, tc.field)
			}
		})
	}
	t.Run("open with a bad principal is the caller's mistake, whatever the token", func(t *testing.T) {
		for _, tok := range []string{mustSeal(t, s, b, testState), "garbage"} {
			for _, p := range []Binding{noPrincipal, badPrincipal} {
				if _, err := s.Open(p, tok); !IsConfigError(err) {
					t.Fatalf("Open error %v; want a ConfigError", err)
				}
			}
		}
	})
	t.Run("a clock before 1970", func(t *testing.T) {
		c := &clock{t: time.Unix(-1, 0)}
		early := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), c)
		var ce *ConfigError
		if _, err := early.Seal(b, json.RawMessage(testState)); !errors.As(err, &ce) || ce.Field != "SealedClock" {
			t.Fatalf("Seal error %v; want a ConfigError on SealedClock", err)
		}
	})
}

func TestSealedPrintsNoKeys(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 'K', 32))), newClock())
	mustSeal(t, s, testBinding(), testState) // build the AEADs
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, s)
		if strings.Contains(out, "KKKK") || !strings.Contains(out, testServer) {
			t.Errorf("%s of a Sealed = %s", format, out)
		}
	}
}

type nilSource struct{}

func (nilSource) Keyring() *keyring.Keyring { return nil }

func TestSealedWithoutKeyring(t *testing.T) {
	s := newTestSealed(t, nilSource{}, newClock())
	if _, err := s.Seal(testBinding(), json.RawMessage(testState)); !IsConfigError(err) {
		t.Errorf("Seal with no keyring: %v; want a ConfigError", err)
	}
	other := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	assertInvalid(t, s, testBinding(), mustSeal(t, other, testBinding(), testState), "no keyring")
}

func TestNewSealedOptions(t *testing.T) {
	src := keyring.Static(testRing(t, testKey("a", 1, 32)))
	anonymous2m := SealedAnonymousTTL(2 * time.Minute)
	cases := map[string]struct {
		src    keyring.Source
		server string
		opts   []SealedOption
		field  string // "" when valid
	}{
		"defaults":                       {src, "s", nil, ""},
		"no source":                      {nil, "s", nil, "src"},
		"no server":                      {src, "", nil, "server"},
		"TTL of 15 minutes":              {src, "s", []SealedOption{SealedTTL(15 * time.Minute)}, ""},
		"TTL of an hour":                 {src, "s", []SealedOption{SealedTTL(time.Hour)}, "SealedTTL"},
		"TTL just too long":              {src, "s", []SealedOption{SealedTTL(MaxTTL + time.Second)}, "SealedTTL"},
		"TTL zero":                       {src, "s", []SealedOption{SealedTTL(0)}, "SealedTTL"},
		"TTL negative":                   {src, "s", []SealedOption{SealedTTL(-time.Second)}, "SealedTTL"},
		"TTL under a second":             {src, "s", []SealedOption{SealedTTL(time.Millisecond)}, "SealedTTL"},
		"TTL in fractions":               {src, "s", []SealedOption{SealedTTL(1500 * time.Millisecond)}, "SealedTTL"},
		"anonymous above TTL":            {src, "s", []SealedOption{SealedTTL(time.Minute), anonymous2m}, "SealedAnonymousTTL"},
		"anonymous above TTL, any order": {src, "s", []SealedOption{anonymous2m, SealedTTL(time.Minute)}, "SealedAnonymousTTL"},
		"anonymous negative":             {src, "s", []SealedOption{SealedAnonymousTTL(-time.Second)}, "SealedAnonymousTTL"},
		"anonymous equal to TTL":         {src, "s", []SealedOption{SealedTTL(time.Minute), SealedAnonymousTTL(time.Minute)}, ""},
		"anonymous default capped":       {src, "s", []SealedOption{SealedTTL(10 * time.Second)}, ""},
		"no clock skew":                  {src, "s", []SealedOption{SealedClockSkew(0)}, ""},
		"clock skew of 5 minutes":        {src, "s", []SealedOption{SealedClockSkew(5 * time.Minute)}, ""},
		"clock skew negative":            {src, "s", []SealedOption{SealedClockSkew(-time.Second)}, "SealedClockSkew"},
		"clock skew too large":           {src, "s", []SealedOption{SealedClockSkew(5*time.Minute + time.Second)}, "SealedClockSkew"},
		"clock skew in fractions":        {src, "s", []SealedOption{SealedClockSkew(1500 * time.Millisecond)}, "SealedClockSkew"},
		"nil clock":                      {src, "s", []SealedOption{SealedClock(nil)}, "SealedClock"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSealed(tc.src, tc.server, tc.opts...)
			if tc.field == "" {
				if err != nil || s == nil {
					t.Fatalf("NewSealed: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("NewSealed error %v; want a ConfigError on %s", err, tc.field)
			}
		})
	}
}

// Seal and Open from many goroutines while the keyring rotates: run with -race.
func TestSealedConcurrentRotation(t *testing.T) {
	a, b := testKey("a", 1, 32), testKey("b", 2, 32)
	rings := []*keyring.Keyring{testRing(t, a, b), testRing(t, b, a)}
	src := newSwapSource(rings[0])
	s, err := NewSealed(src, testServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				src.set(rings[i%2])
			}
		}
	}()
	var workers sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		workers.Go(func() {
			for range 200 {
				tok, err := s.Seal(testBinding(), json.RawMessage(testState))
				if err == nil {
					_, err = s.Open(testBinding(), tok)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	<-swapped
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
