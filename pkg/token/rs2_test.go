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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The rs2 interop test: testdata/rs2/vectors.json was written by the real rmcp crate
// (clients/rust/examples/rs2_vectors.rs, every token checked with rmcp's open_with before it was
// written). MRTR_RS2_VECTORS names another file of the same schema to run as well.

type rs2Vectors struct {
	Vectors  []rs2Case `json:"vectors"`
	Tampered []rs2Case `json:"tampered"`
}

type rs2Case struct {
	ID      string `json:"id"`
	Kid     string `json:"kid"`
	Key     []byte `json:"key_b64"` // encoding/json reads standard base64 into []byte
	AD      []byte `json:"ad_b64"`
	Payload []byte `json:"payload_b64"`
	NowMs   int64  `json:"now_ms"`
	TTLMs   *int64 `json:"ttl_ms"`
	Token   string `json:"token"`
}

func rs2VectorFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"testdata/rs2/vectors.json"}
	if path := os.Getenv("MRTR_RS2_VECTORS"); path != "" {
		files = append(files, path)
	}
	return files
}

func loadRS2Vectors(t *testing.T, path string) rs2Vectors {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the rs2 vectors (MRTR_RS2_VECTORS names another file): %v", err)
	}
	var v rs2Vectors
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(v.Vectors) == 0 || len(v.Tampered) == 0 {
		t.Fatalf("%s: %d vectors and %d tampered cases; both lists must be there", path, len(v.Vectors), len(v.Tampered))
	}
	return v
}

// oneKey is the key lookup of a keyring of one key.
func oneKey(kid string, key []byte) func(string) []byte {
	return func(id string) []byte {
		if id == kid {
			return key
		}
		return nil
	}
}

// rs2Codec is the RS2 codec over a keyring of keys at the fixed instant ms, or nil when the keys are
// not a keyring's (ids of A-Za-z0-9_- up to 32 bytes, secrets of 32 bytes or more).
func rs2Codec(t *testing.T, ms int64, ttl time.Duration, keys ...keyring.Key) *RS2 {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		return nil
	}
	c, err := NewRS2(keyring.Static(r), RS2TTL(ttl), RS2Clock(func() time.Time { return time.UnixMilli(ms) }))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRS2Vectors(t *testing.T) {
	for _, path := range rs2VectorFiles(t) {
		v := loadRS2Vectors(t, path)
		for _, c := range v.Vectors {
			t.Run(path+"/"+c.ID, func(t *testing.T) {
				expiry := int64(0)
				if c.TTLMs != nil {
					expiry = c.NowMs + *c.TTLMs
				}
				if got := string(appendRS2(c.Kid, c.Key, c.AD, c.Payload, expiry)); got != c.Token {
					t.Fatalf("sealed\n%s\nwant\n%s", got, c.Token)
				}
				r := openRS2(c.Token, c.AD, c.NowMs, oneKey(c.Kid, c.Key))
				if r.check != "" || !bytes.Equal(r.payload, c.Payload) {
					t.Fatalf("open at now_ms: check %q, payload %q; want %q", r.check, r.payload, c.Payload)
				}
				if info, err := Inspect(c.Token); err != nil || info.Codec != CodecRS2 || info.KeyID != c.Kid {
					t.Fatalf("Inspect = %+v, %v", info, err)
				}

				// The keyring codec, where the vector's key is a keyring's: byte for byte the same
				// token when its TTL is the vector's, and it opens; a token without expiry it refuses.
				codec := rs2Codec(t, c.NowMs, MaxTTL, keyring.NewKey(c.Kid, c.Key))
				if codec == nil {
					return
				}
				if c.TTLMs == nil {
					if _, err := codec.Explain(c.Token, c.AD); !isCheck(err, CheckLifetime) {
						t.Fatalf("a token without expiry: %v, want the lifetime check", err)
					}
					return
				}
				if got, err := codec.Open(c.Token, c.AD); err != nil || !bytes.Equal(got, c.Payload) {
					t.Fatalf("RS2.Open = %q, %v", got, err)
				}
				ttl := time.Duration(*c.TTLMs) * time.Millisecond
				if ttl%time.Second != 0 || ttl > MaxTTL {
					return
				}
				codec = rs2Codec(t, c.NowMs, ttl, keyring.NewKey(c.Kid, c.Key))
				if got, err := codec.Seal(c.AD, c.Payload); err != nil || got != c.Token {
					t.Fatalf("RS2.Seal = %s, %v; want %s", got, err, c.Token)
				}
			})
		}
		for _, c := range v.Tampered {
			t.Run(path+"/tampered/"+c.ID, func(t *testing.T) {
				if r := openRS2(c.Token, c.AD, c.NowMs, oneKey(c.Kid, c.Key)); r.check == "" {
					t.Fatalf("opened a tampered token: payload %q", r.payload)
				}
				if codec := rs2Codec(t, c.NowMs, MaxTTL, keyring.NewKey(c.Kid, c.Key)); codec != nil {
					if got, err := codec.Open(c.Token, c.AD); !errors.Is(err, ErrInvalid) || got != nil {
						t.Fatalf("RS2.Open = %q, %v; want ErrInvalid", got, err)
					}
				}
			})
		}
	}
}

func isCheck(err error, c Check) bool {
	var re *RejectError
	return errors.As(err, &re) && re.Codec == CodecRS2 && re.Check == c
}

// rmcp's own known answer (its test rs2_known_answer_matches_wire_specification), independently of
// the vector file.
func TestRS2KnownAnswer(t *testing.T) {
	const want = "rs2.cm90YXRpb24ta2V5LTIwMjYtMDg.AAABi8_mx5BzdGVwPTI.twv2acu7lKXqebyrmit-JrHHZm-BkKlBQEMMtL3lHk8"
	key := []byte("0123456789abcdef0123456789abcdef")
	ad := []byte("user:alice|request:weather")
	if got := string(appendRS2("rotation-key-2026-08", key, ad, []byte("step=2"), 1_700_000_000_000+90_000)); got != want {
		t.Fatalf("got %s", got)
	}
	r := openRS2(want, ad, 1_700_000_000_000, oneKey("rotation-key-2026-08", key))
	if r.check != "" || string(r.payload) != "step=2" {
		t.Fatalf("open: %q %q", r.check, r.payload)
	}
	for ms, check := range map[int64]Check{1_700_000_090_000: "", 1_700_000_090_001: CheckExpired} {
		if r := openRS2(want, ad, ms, oneKey("rotation-key-2026-08", key)); r.check != check {
			t.Errorf("at %d: check %q, want %q (rmcp: the expiry instant still opens)", ms, r.check, check)
		}
	}
	info, err := Inspect(want)
	if err != nil || info.Codec != CodecRS2 || info.Version != 2 || info.KeyID != "rotation-key-2026-08" ||
		!info.Expires.Equal(time.UnixMilli(1_700_000_090_000)) || info.Verified {
		t.Fatalf("Inspect = %+v, %v", info, err)
	}
}

var (
	rs2SecretA = bytes.Repeat([]byte{0xa1}, 32)
	rs2SecretB = bytes.Repeat([]byte{0xb2}, 48)
)

// A keyring's life: keys[0] seals, every key opens the tokens that name it, a dropped key's tokens
// are rejected by the key id check.
func TestRS2Rotation(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	clock := RS2Clock(func() time.Time { return at })
	ring := func(keys ...keyring.Key) keyring.Source { return signedRing(t, keys...) }
	a, b := keyring.NewKey("a", rs2SecretA), keyring.NewKey("b", rs2SecretB)
	ad := []byte("user:ada|tools/call|digest")

	before, _ := NewRS2(ring(a), clock)
	during, _ := NewRS2(ring(b, a), clock)
	after, _ := NewRS2(ring(b), clock)
	tokA, err := before.Seal(ad, []byte("state-a"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tokA, "rs2.YQ.") {
		t.Fatalf("sealed with %s, want key a's kid", tokA)
	}
	tokB, _ := during.Seal(ad, []byte("state-b"))
	if !strings.HasPrefix(tokB, "rs2.Yg.") {
		t.Fatalf("sealed with %s, want keys[0], b", tokB)
	}
	for _, c := range []struct {
		codec *RS2
		tok   string
		want  string
		check Check
	}{
		{during, tokA, "state-a", ""},
		{before, tokB, "", CheckKeyID},
		{after, tokB, "state-b", ""},
		{after, tokA, "", CheckKeyID},
	} {
		got, err := c.codec.Open(c.tok, ad)
		if c.check == "" && (err != nil || string(got) != c.want) || c.check != "" && !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%s) = %q, %v", c.tok, got, err)
		}
		if _, err := c.codec.Explain(c.tok, ad); c.check != "" && !isCheck(err, c.check) || c.check == "" && err != nil {
			t.Errorf("Explain(%s) = %v, want %q", c.tok, err, c.check)
		}
	}
	// Another request or principal: the MAC.
	if _, err := during.Explain(tokA, []byte("user:bob|tools/call|digest")); !isCheck(err, CheckMAC) {
		t.Errorf("other ad: %v", err)
	}
}

func TestRS2Lifetime(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	key := keyring.NewKey("a", rs2SecretA)
	c := rs2Codec(t, at.UnixMilli(), 60*time.Second, key)
	tok, err := c.Seal(nil, []byte("s"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := Inspect(tok)
	if !info.Expires.Equal(at.Add(60 * time.Second)) {
		t.Fatalf("expires %v, want now + TTL", info.Expires)
	}
	for _, tc := range []struct {
		name   string
		expiry int64 // ms from at; 0: none
		check  Check
	}{
		{"no expiry", 0, CheckLifetime},
		{"the TTL", 60_000, ""},
		{"the TTL and the clock skew", 90_000, ""},
		{"beyond the TTL and the clock skew", 90_001, CheckLifetime},
		{"now", 0 + 1, ""},
	} {
		expiry := int64(0)
		if tc.expiry != 0 {
			expiry = at.UnixMilli() + tc.expiry
		}
		tok := string(appendRS2("a", rs2SecretA, nil, []byte("s"), expiry))
		if _, err := c.Explain(tok, nil); tc.check == "" && err != nil || tc.check != "" && !isCheck(err, tc.check) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.check)
		}
	}
	// Expired: one millisecond past the expiry.
	late := rs2Codec(t, at.UnixMilli()+60_001, 60*time.Second, key)
	if _, err := late.Explain(tok, nil); !isCheck(err, CheckExpired) {
		t.Errorf("past expiry: %v", err)
	}
	if _, err := rs2Codec(t, at.UnixMilli()+60_000, 60*time.Second, key).Open(tok, nil); err != nil {
		t.Errorf("at expiry: %v (rmcp still opens it)", err)
	}
}

func TestRS2Config(t *testing.T) {
	if _, err := NewRS2(nil); !IsConfigError(err) {
		t.Errorf("nil source: %v", err)
	}
	for _, o := range []RS2Option{RS2TTL(0), RS2TTL(16 * time.Minute), RS2TTL(1500 * time.Millisecond),
		RS2ClockSkew(-time.Second), RS2ClockSkew(6 * time.Minute), RS2Clock(nil), nil} {
		if _, err := NewRS2(keyring.Static(nil), o); !IsConfigError(err) {
			t.Errorf("option: %v, want a ConfigError", err)
		}
	}
	// No keyring: nothing seals, nothing opens.
	c, _ := NewRS2(keyring.Static(nil))
	if _, err := c.Seal(nil, nil); !IsConfigError(err) {
		t.Errorf("Seal without keyring: %v", err)
	}
	if _, err := c.Explain(string(appendRS2("a", rs2SecretA, nil, nil, 1)), nil); !isCheck(err, CheckKeyID) {
		t.Errorf("Open without keyring: %v", err)
	}
	// A TTL beyond the keyring's declared token lifetime is refused on the first seal.
	r, _ := keyring.New(keyring.NewKey("a", rs2SecretA))
	r = r.WithMaxTokenTTL(time.Minute)
	c, _ = NewRS2(keyring.Static(r), RS2TTL(2*time.Minute))
	if _, err := c.Seal(nil, nil); !IsConfigError(err) || !strings.Contains(err.Error(), "tokenTTL") {
		t.Errorf("TTL beyond the declared: %v", err)
	}
	// A payload whose token would exceed the limit.
	c = rs2Codec(t, 1, time.Minute, keyring.NewKey("a", rs2SecretA))
	if _, err := c.Seal(nil, make([]byte, MaxRS2TokenBytes)); !IsConfigError(err) {
		t.Errorf("oversize payload: %v", err)
	}
	big := make([]byte, MaxRS2TokenBytes-rs2TokenLen(1, 0))
	big = big[:len(big)*3/4]
	tok, err := c.Seal(nil, big)
	if err != nil || len(tok) > MaxRS2TokenBytes {
		t.Fatalf("largest payload: %d bytes, %v", len(tok), err)
	}
	if len(tok) != rs2TokenLen(1, len(big)) {
		t.Fatalf("rs2TokenLen = %d, token %d", rs2TokenLen(1, len(big)), len(tok))
	}
	if _, err := c.Explain(tok+strings.Repeat("A", MaxRS2TokenBytes), nil); !isCheck(err, CheckSize) {
		t.Errorf("oversize token: %v", err)
	}
}

// Nothing the codec says carries key bytes.
func TestRS2NoKeyBytes(t *testing.T) {
	secret := []byte("s3cr3t-k3y-bytes-that-must-not-leak!")
	c := rs2Codec(t, 1_800_000_000_000, time.Minute, keyring.NewKey("a", secret))
	tok, _ := c.Seal([]byte("ad"), []byte("p"))
	var out strings.Builder
	fmt.Fprintf(&out, "%v %+v %#v %s", c, c, c, c)
	for _, bad := range []string{tok, tok[:len(tok)-2], "rs2.YQ.AAAA.AAAA", "rs2.x"} {
		_, err := c.Explain(bad, []byte("other"))
		fmt.Fprintf(&out, " %v", err)
	}
	for _, enc := range []string{string(secret), base64.RawURLEncoding.EncodeToString(secret),
		base64.StdEncoding.EncodeToString(secret), fmt.Sprintf("%x", secret)} {
		if strings.Contains(out.String(), enc) {
			t.Fatalf("key bytes in %q", out.String())
		}
	}
}

// The shapes: rs2 is told apart from Signed, Sealed and the python-sdk's by its prefix and dots.
func TestRS2Shape(t *testing.T) {
	for tok, want := range map[string]string{
		"rs2.YQ.AAAAAAAAAAA.AAAA": CodecRS2,
		"rs2.YQ":                  CodecSealed, // a Sealed token of a key named rs2
		"rs2.YQ.AAAA.AAAA.AAAA":   CodecRS2,    // rs2's, malformed
		"mrtr2.a.b.c":             CodecSigned,
		"rs1.AAAA.AAAA":           "",
	} {
		info, _ := Inspect(tok)
		if info.Codec != want {
			t.Errorf("Inspect(%q).Codec = %q, want %q", tok, info.Codec, want)
		}
	}
	if _, err := Inspect("rs2.YQ.AAAA.AAAA.AAAA"); !isCheck(err, CheckFormat) {
		t.Errorf("five parts: %v", err)
	}
}

// TestRS2DeclaredTTLVectors runs testdata/rs2/token-ttl.json, which the Rust crate's tests run too:
// a TTL within the keyring's token-ttl seals tokens that live exactly the TTL; a longer one is
// refused, never shortened, and the refusal names the tokenTTL to change.
func TestRS2DeclaredTTLVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/rs2/token-ttl.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name     string `json:"name"`
			TTL      int64  `json:"ttl_s"`
			TokenTTL *int64 `json:"token_ttl_s"`
			Seals    bool   `json:"seals"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("no cases")
	}
	now := time.UnixMilli(1_700_000_000_000)
	for _, tc := range doc.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r, err := keyring.New(keyring.NewKey("a", rs2SecretA))
			if err != nil {
				t.Fatal(err)
			}
			if tc.TokenTTL != nil {
				r = r.WithMaxTokenTTL(time.Duration(*tc.TokenTTL) * time.Second)
			}
			c, err := NewRS2(keyring.Static(r), RS2TTL(time.Duration(tc.TTL)*time.Second), RS2Clock(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := c.Seal([]byte("ad"), []byte("state"))
			if !tc.Seals {
				if !IsConfigError(err) || !strings.Contains(err.Error(), "tokenTTL") {
					t.Fatalf("Seal = %q, %v; want a ConfigError naming tokenTTL", tok, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Explain(tok, []byte("ad"))
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Expires.Sub(now); got != time.Duration(tc.TTL)*time.Second {
				t.Errorf("lives %v, want %ds", got, tc.TTL)
			}
		})
	}
}
