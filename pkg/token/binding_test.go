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
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Tests that hold for both codecs: what a binding accepts, who is blamed for what, and the times a
// token can carry.

type codecCase struct {
	name  string
	codec func(t *testing.T, now func() time.Time) Codec
}

var bothCodecs = []codecCase{
	{"Signed", func(t *testing.T, now func() time.Time) Codec {
		return mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretA)), SignedClock(now)))
	}},
	{"Sealed", func(t *testing.T, now func() time.Time) Codec {
		s, err := NewSealed(keyring.Static(testRing(t, testKey("a", 1, 32))), testServer, SealedClock(now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func fixedNow() time.Time { return t0 }

func callTool(args string) Binding {
	return Binding{Method: "tools/call", Principal: json.RawMessage(`"user:ada"`), ProtocolVersion: "2026-07-28",
		Params: json.RawMessage(`{"name":"get_weather","arguments":` + args + `}`)}
}

// Names that differ only by case or Unicode case folding are distinct members, bound each with its
// value as Snodo binds them: both codecs seal and open such params, the same members in any order
// open the token, and the values of two folded names swapped do not (mcpstate.Guard, which knows
// whether the handler decodes with encoding/json, is where such params are refused).
func TestFoldedSiblingNamesAreDistinctMembers(t *testing.T) {
	for _, tc := range []struct{ args, reordered, swapped string }{
		{`{"location":"Paris","LOCATION":"Pyongyang"}`, `{"LOCATION":"Pyongyang","location":"Paris"}`,
			`{"location":"Pyongyang","LOCATION":"Paris"}`},
		{`{"sku":1,"\u212Aind":2,"kind":3}`, `{"kind":3,"sku":1,"\u212Aind":2}`, // U+212A KELVIN SIGN
			`{"sku":1,"\u212Aind":3,"kind":2}`},
		{`{"ſtatus":1,"status":2}`, `{"status":2,"ſtatus":1}`, `{"ſtatus":2,"status":1}`}, // U+017F LONG S
		{`{"a":{"deep":[{"id":1,"ID":2}]}}`, `{"a":{"deep":[{"ID":2,"id":1}]}}`, `{"a":{"deep":[{"id":2,"ID":1}]}}`},
		{`{"k00":0,"k01":1,"k02":2,"k03":3,"k04":4,"k05":5,"k06":6,"k07":7,"k08":8,"K04":9}`,
			`{"K04":9,"k08":8,"k07":7,"k06":6,"k05":5,"k04":4,"k03":3,"k02":2,"k01":1,"k00":0}`,
			`{"k00":0,"k01":1,"k02":2,"k03":3,"k04":9,"k05":5,"k06":6,"k07":7,"k08":8,"K04":4}`},
	} {
		for _, cc := range bothCodecs {
			t.Run(cc.name+"/"+tc.args, func(t *testing.T) {
				c := cc.codec(t, fixedNow)
				tok, err := c.Seal(callTool(tc.args), json.RawMessage(`{"Step":1,"step":2}`))
				if err != nil {
					t.Fatalf("Seal: %v", err)
				}
				for _, args := range []string{tc.args, tc.reordered} {
					if got, err := c.Open(callTool(args), tok); err != nil || string(got) != `{"Step":1,"step":2}` {
						t.Fatalf("Open(%s) = %s, %v", args, got, err)
					}
				}
				if got, err := c.Open(callTool(tc.swapped), tok); err != ErrInvalid {
					t.Fatalf("Open with swapped values %s = %s, %v; want ErrInvalid", tc.swapped, got, err)
				}
			})
		}
	}
}

// Params that json.Valid and the SDK accept but that cannot be bound are the client's mistake: an
// *InputError, never a *ConfigError (which a server reports as its own failure).
func TestUnbindableParamsAreInputErrors(t *testing.T) {
	deep := strings.Repeat(`[`, 1000) + strings.Repeat(`]`, 1000) // 1001 levels with the params object
	for name, params := range map[string]string{
		"repeated names":     `{"name":"x","arguments":{"a":1,"a":2}}`,
		"lone surrogate":     `{"name":"x","arguments":{"a":"\ud800"}}`,
		"float out of range": `{"name":"x","arguments":{"a":1e400}}`,
		"nesting too deep":   `{"name":` + deep + `}`,
	} {
		for _, cc := range bothCodecs {
			t.Run(cc.name+"/"+name, func(t *testing.T) {
				if !json.Valid([]byte(params)) && name != "lone surrogate" {
					t.Fatalf("the case is not valid JSON")
				}
				b := callTool(`{}`)
				b.Params = json.RawMessage(params)
				_, err := cc.codec(t, fixedNow).Seal(b, json.RawMessage(`1`))
				if !IsInputError(err) || IsConfigError(err) {
					t.Fatalf("Seal: %v; want an *InputError", err)
				}
			})
		}
	}
	// Nesting up to the SDK's limit is bound.
	ok := strings.Repeat(`[`, 998) + strings.Repeat(`]`, 998)
	for _, cc := range bothCodecs {
		b := callTool(`{}`)
		b.Params = json.RawMessage(`{"name":` + ok + `}`)
		if _, err := cc.codec(t, fixedNow).Seal(b, json.RawMessage(`1`)); err != nil {
			t.Fatalf("%s: 999 levels: %v", cc.name, err)
		}
	}
}

// Seal never writes a token that it cannot open: a clock so late that the expiry would not fit an
// int64 is a configuration error, and the latest time that fits still round-trips.
func TestSealAtTheEndOfTime(t *testing.T) {
	for _, cc := range bothCodecs {
		t.Run(cc.name, func(t *testing.T) {
			now := time.Unix(math.MaxInt64-10, 0)
			c := cc.codec(t, func() time.Time { return now })
			var ce *ConfigError
			if tok, err := c.Seal(callTool(`{}`), json.RawMessage(`1`)); !errors.As(err, &ce) {
				t.Fatalf("Seal = %.60q, %v; want a *ConfigError", tok, err)
			} else if !strings.Contains(ce.Field, "Clock") {
				t.Fatalf("the error names %q, not the clock", ce.Field)
			}
			now = time.Unix(math.MaxInt64-int64(MaxTTL/time.Second), 0)
			tok, err := c.Seal(callTool(`{}`), json.RawMessage(`1`))
			if err != nil {
				t.Fatalf("Seal at the latest time that fits: %v", err)
			}
			if _, err := c.Open(callTool(`{}`), tok); err != nil {
				t.Fatalf("Open of a token sealed at the latest time that fits: %v", err)
			}
		})
	}
}

// No attacker-controlled work before authentication: a forged token is rejected before the
// request's params are canonicalized, so huge params cost nothing on a forged token (no scratch
// space grows: not one allocation).
func TestOpenRejectsForgeriesBeforeReadingParams(t *testing.T) {
	args := `{"z":` + strings.Repeat(`{"b":1,"a":`, 20000) + `0` + strings.Repeat(`}`, 20000) + `}`
	b := callTool(args)
	for _, cc := range bothCodecs {
		c := cc.codec(t, fixedNow)
		good, err := c.Seal(callTool(`{}`), json.RawMessage(`1`))
		if err != nil {
			t.Fatal(err)
		}
		forged := good[:len(good)-4] + "AAAA"
		if _, err := c.Open(b, forged); err != ErrInvalid {
			t.Fatalf("%s: Open of a forgery: %v", cc.name, err)
		}
		if raceEnabled {
			continue // the pools drop items at random under -race: the count means nothing there
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = c.Open(b, forged) }); n != 0 {
			t.Errorf("%s: Open of a forgery with %d bytes of params allocates %v times: it read the params", cc.name, len(args), n)
		}
	}
}

// The state of a Signed token repeats a member name only if a key holder wrote it so (Snodo seals
// whatever its decoder produced; another implementation may write repeats). Open returns what
// Snodo's open returns: the first occurrence wins, each name once, at every depth; the vectors'
// c02-ok-data-duplicate-keys-first-wins.
func TestSignedOpenKeepsTheFirstOfRepeatedNames(t *testing.T) {
	s := mustSigned(NewSignedSecret(signedSecretA, newSignedClock(1000).opt()))
	binding, err := signedBindingOf(signedReq)
	if err != nil {
		t.Fatal(err)
	}
	scope := hmacB64(signedSecretA, string(signedTagScope)+string(binding))
	for data, want := range map[string]string{
		`{"a":"first","a":"second"}`:                         `{"a":"first"}`,
		`{"b":1,"a":{"x":1,"x":2},"b":2}`:                    `{"a":{"x":1},"b":1}`,
		`[{"k":[1],"k":[2],"j":0}]`:                          `[{"j":0,"k":[1]}]`,
		` { "a" : 1 , "a" : 2 } `:                            `{"a":1}`,
		`{"z":0,"a":"first","m":0,"a":"second","a":"third"}`: `{"a":"first","m":0,"z":0}`,
	} {
		payload := `[1,1000,1300,"` + scope + `",` + data + `]`
		enc := base64.RawURLEncoding.EncodeToString([]byte(payload))
		tok := "mrtr1." + enc + "." + hmacB64(signedSecretA, string(signedTagV1)+enc)
		got, err := s.Open(signedReq, tok)
		if err != nil || string(got) != want {
			t.Errorf("Open of state %s = %s, %v; want %s", data, got, err, want)
		}
		var v map[string]any
		if json.Unmarshal(got, &v) == nil && len(v) > 0 {
			if a, ok := v["a"]; ok && a == "second" {
				t.Errorf("encoding/json reads the second value of %s", data)
			}
		}
	}
}

// A replica whose clock runs ahead seals tokens "issued" in the future. The Sealed codec accepts
// them within the clock skew (default 30s: the operator's clockSkew) and no further, so a replica a
// day ahead cannot mint tokens that live for a day.
func TestSealedBoundsIssuedInTheFuture(t *testing.T) {
	ring := keyring.Static(testRing(t, testKey("a", 1, 32)))
	for name, tc := range map[string]struct {
		ahead time.Duration
		opts  []SealedOption
		opens bool
	}{
		"in step":                 {0, nil, true},
		"30s ahead, default skew": {30 * time.Second, nil, true},
		"31s ahead, default skew": {31 * time.Second, nil, false},
		"a day ahead":             {24 * time.Hour, nil, false},
		"2m ahead, 2m skew":       {2 * time.Minute, []SealedOption{SealedClockSkew(2 * time.Minute)}, true},
		"1s ahead, no skew":       {time.Second, []SealedOption{SealedClockSkew(0)}, false},
		"in step, no skew":        {0, []SealedOption{SealedClockSkew(0)}, true},
	} {
		t.Run(name, func(t *testing.T) {
			fast := newTestSealed(t, ring, &clock{t: t0.Add(tc.ahead)})
			honest := newTestSealed(t, ring, newClock(), tc.opts...)
			tok := mustSeal(t, fast, testBinding(), testState)
			_, err := honest.Open(testBinding(), tok)
			if tc.opens && err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !tc.opens && err != ErrInvalid {
				t.Fatalf("Open: %v; want ErrInvalid", err)
			}
		})
	}
}

// One TTL ceiling for both codecs: MRTR's, Snodo's and the MRTRKeyring's 15 minutes.
func TestOneTTLCeiling(t *testing.T) {
	src := keyring.Static(testRing(t, testKey("a", 1, 32)))
	if _, err := NewSealed(src, "s", SealedTTL(MaxTTL)); err != nil {
		t.Fatalf("Sealed at MaxTTL: %v", err)
	}
	if _, err := NewSigned(src, SignedTTL(MaxTTL)); err != nil {
		t.Fatalf("Signed at MaxTTL: %v", err)
	}
	if _, err := NewSealed(src, "s", SealedTTL(MaxTTL+time.Second)); !IsConfigError(err) {
		t.Fatalf("Sealed over MaxTTL: %v", err)
	}
	if _, err := NewSigned(src, SignedTTL(MaxTTL+time.Second)); !IsConfigError(err) {
		t.Fatalf("Signed over MaxTTL: %v", err)
	}
	if MaxTTL != 15*time.Minute {
		t.Fatalf("MaxTTL %v", MaxTTL)
	}
}

// A keyring whose owner declared a token lifetime (the Secret's token-ttl) refuses seals of longer
// tokens, with a *ConfigError on the first seal rather than lost tokens at the next rotation; seals
// within it, and every open, are unaffected.
func TestSealRefusesLongerThanTheKeyringDeclares(t *testing.T) {
	ring := testRing(t, testKey("a", 1, 32)).WithMaxTokenTTL(time.Minute)
	src := newSwapSource(ring)
	for name, c := range map[string]Codec{
		"Signed default 5m": mustSigned(NewSigned(src, SignedClock(fixedNow))),
		"Sealed default 5m": func() Codec { s, _ := NewSealed(src, testServer, SealedClock(fixedNow)); return s }(),
	} {
		var ce *ConfigError
		if _, err := c.Seal(callTool(`{}`), json.RawMessage(`1`)); !errors.As(err, &ce) || !strings.Contains(ce.Reason, "token-ttl") {
			t.Errorf("%s under a keyring declaring 1m: %v; want a *ConfigError naming token-ttl", name, err)
		}
	}
	for name, c := range map[string]Codec{
		"Signed 1m": mustSigned(NewSigned(src, SignedClock(fixedNow), SignedTTL(time.Minute))),
		"Sealed 1m": func() Codec {
			s, _ := NewSealed(src, testServer, SealedClock(fixedNow), SealedTTL(time.Minute))
			return s
		}(),
	} {
		tok, err := c.Seal(callTool(`{}`), json.RawMessage(`1`))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The declaration is read on every seal: raised, longer codecs seal again; open never checks.
		src.set(ring.WithMaxTokenTTL(0))
		if _, err := c.Open(callTool(`{}`), tok); err != nil {
			t.Errorf("%s: Open: %v", name, err)
		}
		src.set(ring)
	}
	src.set(ring.WithMaxTokenTTL(5 * time.Minute))
	if _, err := mustSigned(NewSigned(src, SignedClock(fixedNow))).Seal(callTool(`{}`), json.RawMessage(`1`)); err != nil {
		t.Errorf("Signed 5m under a keyring declaring 5m: %v", err)
	}
}

// UnboundParams is the codecs' list, and a copy of it: a caller cannot change what they bind.
func TestUnboundParams(t *testing.T) {
	got := UnboundParams()
	if strings.Join(got, ",") != "_meta,requestState,inputResponses" {
		t.Fatalf("UnboundParams() = %v", got)
	}
	got[0] = "arguments"
	if unboundParams[0] != "_meta" {
		t.Fatal("changing UnboundParams' result changed the codecs' list")
	}
}
