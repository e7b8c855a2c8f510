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
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

func TestInspectReadsWhatTheTextSays(t *testing.T) {
	at := t0.Truncate(time.Second)
	signedClock := SignedClock(func() time.Time { return t0 })
	mrtr2 := sealSigned(t, mustSigned(NewSigned(signedRing(t, keyring.NewKey("kid_1", signedSecretA)), signedClock)), signedReq)
	mrtr1 := sealSigned(t, mustSigned(NewSignedSecret(signedSecretA, signedClock)), signedReq)
	sealed := mustSeal(t, newTestSealed(t, keyring.Static(testRing(t, testKey("key-a", 1, 32))), newClock()), testBinding(), testState)
	for name, tc := range map[string]struct {
		tok  string
		want Info
	}{
		"Signed mrtr2": {mrtr2, Info{Codec: CodecSigned, Version: 2, KeyID: "kid_1", Issued: at, Expires: at.Add(DefaultSignedTTL)}},
		"Signed mrtr1": {mrtr1, Info{Codec: CodecSigned, Version: 1, Issued: at, Expires: at.Add(DefaultSignedTTL)}},
		// A Sealed token's times are inside the ciphertext: Inspect cannot read them.
		"Sealed": {sealed, Info{Codec: CodecSealed, Version: 1, KeyID: "key-a"}},
		// A Sealed kid may read "mrtr2": one '.' makes it Sealed all the same.
		"Sealed, kid mrtr2": {"mrtr2" + sealed[len("key-a"):], Info{Codec: CodecSealed, Version: 1, KeyID: "mrtr2"}},
		// "v1" is a valid key id, but "v1." starts the python-sdk's tokens: read as one, with the
		// kid it names (the hex of its first 4 bytes), not as a Sealed token of a key v1.
		"python-sdk": {keyring.PythonTokenPrefix + pythonBody, Info{Codec: CodecPythonSDK, Version: 1, KeyID: "0a0b0c0d"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Inspect(tc.tok)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Inspect = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

// pythonBody is the body of a python-sdk token of kid 0a0b0c0d: base64url of the kid, a 12-byte
// nonce and a 16-byte tag.
var pythonBody = base64.RawURLEncoding.EncodeToString(append([]byte{0x0a, 0x0b, 0x0c, 0x0d}, make([]byte, 12+16)...))

// A Sealed token of a key named v1 reads as the python-sdk's without keys (Inspect), and as what it
// is to the Sealed codec, which holds the key.
func TestExplainReadsASealedTokenOfKeyV1(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("v1", 1, 32))), newClock())
	tok := mustSeal(t, s, testBinding(), testState)
	if info, _ := Inspect(tok); info.Codec != CodecPythonSDK {
		t.Errorf("Inspect = %+v, want the python-sdk's reading", info)
	}
	info, err := s.Explain(testBinding(), tok)
	if err != nil || info.Codec != CodecSealed || info.KeyID != "v1" || !info.Verified {
		t.Errorf("Explain = %+v, %v; want a verified Sealed token of key v1", info, err)
	}
}

func TestInspectRejectsWhatNoCodecReads(t *testing.T) {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, tc := range map[string]struct {
		tok   string
		codec string
		check Check
	}{
		// A text of no format's shape is no format's: Inspect does not take it for a Sealed one.
		"empty":                   {"", "", CheckFormat},
		"no dot":                  {"key-a", "", CheckFormat},
		"Sealed, bad kid":         {"key a." + strings.Repeat("A", 40), "", CheckFormat},
		"python-sdk, short":       {keyring.PythonTokenPrefix + strings.Repeat("A", 42), CodecPythonSDK, CheckFormat},
		"python-sdk, oversize":    {keyring.PythonTokenPrefix + strings.Repeat("A", MaxSealedTokenBytes), CodecPythonSDK, CheckSize},
		"Sealed, short":           {"key-a." + strings.Repeat("A", 36), CodecSealed, CheckFormat},
		"Sealed, not canonical":   {"key-a." + strings.Repeat("A", 38) + "B", CodecSealed, CheckFormat},
		"Sealed, oversize":        {"key-a." + strings.Repeat("A", MaxSealedTokenBytes), CodecSealed, CheckSize},
		"Signed, bad kid":         {"mrtr2.a b." + b64(`[2,1,2,"s",1]`) + "." + strings.Repeat("A", 43), CodecSigned, CheckFormat},
		"Signed, short MAC":       {"mrtr1." + b64(`[1,1,2,"s",1]`) + ".AAAA", CodecSigned, CheckFormat},
		"Signed, not a payload":   {"mrtr1." + b64(`{"i":1}`) + "." + strings.Repeat("A", 43), CodecSigned, CheckFormat},
		"Signed, version differs": {"mrtr1." + b64(`[2,1,2,"s",1]`) + "." + strings.Repeat("A", 43), CodecSigned, CheckFormat},
		"Signed, oversize":        {"mrtr1." + strings.Repeat("A", MaxSignedTokenBytes) + "." + strings.Repeat("A", 43), CodecSigned, CheckSize},
	} {
		t.Run(name, func(t *testing.T) {
			info, err := Inspect(tc.tok)
			var re *RejectError
			if !errors.As(err, &re) || re.Codec != tc.codec || re.Check != tc.check {
				t.Fatalf("Inspect = %+v, %v; want a %s rejection by the %s check", info, err, tc.codec, tc.check)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("errors.Is(%v, ErrInvalid) is false", err)
			}
			if !info.Issued.IsZero() || info.Verified {
				t.Fatalf("a rejected token's Info claims times or verification: %+v", info)
			}
		})
	}
}

// explainCase is one token and binding for Explain, and the check that must reject them ("" when
// the token opens).
type explainCase struct {
	tok   string
	b     Binding
	check Check
}

// TestSealedExplainNamesTheCheck makes a token fail each check of the Sealed codec in turn, and
// checks that Explain names it, that Open agrees, and that the times show only once the key
// authenticated the token.
func TestSealedExplainNamesTheCheck(t *testing.T) {
	ring := keyring.Static(testRing(t, testKey("key-a", 1, 32), testKey("key-b", 2, 32)))
	s := newTestSealed(t, ring, newClock())
	b := testBinding()
	good := mustSeal(t, s, b, testState)
	with := func(f func(*Binding)) Binding { c := b; f(&c); return c }
	sealedAt := func(at time.Time) string {
		return mustSeal(t, newTestSealed(t, ring, &clock{t: at}), b, testState)
	}
	otherRing := newTestSealed(t, keyring.Static(testRing(t, testKey("key-a", 9, 32))), newClock())
	forgedKey := mustSeal(t, otherRing, b, testState) // kid key-a, another secret

	cases := map[string]explainCase{
		"opens":                    {good, b, ""},
		"size":                     {good + strings.Repeat("A", MaxSealedTokenBytes), b, CheckSize},
		"format: no dot":           {"key-a", b, CheckFormat},
		"format: base64":           {"key-a.!!!!", b, CheckFormat},
		"key id":                   {"key-z" + good[len("key-a"):], b, CheckKeyID},
		"auth tag: altered":        {good[:len(good)-4] + "AAAA", b, CheckAuthTag},
		"auth tag: another secret": {forgedKey, b, CheckAuthTag},
		"auth tag: method":         {good, with(func(c *Binding) { c.Method = "prompts/get" }), CheckAuthTag},
		"auth tag: version":        {good, with(func(c *Binding) { c.ProtocolVersion = "2025-06-18" }), CheckAuthTag},
		"payload":                  {handSealed(t, testKey("key-a", 1, 32), b, `{"i":1}`), b, CheckPayload},
		"principal":                {good, with(func(c *Binding) { c.Principal = json.RawMessage(`"user:bob"`) }), CheckPrincipal},
		"expired":                  {sealedAt(t0.Add(-DefaultSealedTTL)), b, CheckExpired},
		"not yet valid":            {sealedAt(t0.Add(time.Minute)), b, CheckNotYetValid},
		"params":                   {good, with(func(c *Binding) { c.Params = json.RawMessage(`{"a":1,"a":2}`) }), CheckParams},
		"binding":                  {good, with(func(c *Binding) { c.Params = json.RawMessage(`{"name":"other"}`) }), CheckBinding},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assertExplains(t, s, CodecSealed, tc) })
	}
	t.Run("lifetime", func(t *testing.T) {
		short := newTestSealed(t, ring, newClock(), SealedTTL(time.Minute))
		assertExplains(t, short, CodecSealed, explainCase{good, b, CheckLifetime})
	})
	t.Run("server", func(t *testing.T) {
		other := newTestSealedFor(t, "https://other.example.com/mcp", ring, newClock())
		assertExplains(t, other, CodecSealed, explainCase{good, b, CheckAuthTag})
	})

	// The times are the key's to tell: shown once the tag verified, and only then.
	info, _ := s.Explain(b, good)
	issued := t0.Truncate(time.Second)
	want := Info{Codec: CodecSealed, Version: 1, KeyID: "key-a", Issued: issued, Expires: issued.Add(DefaultSealedTTL), Verified: true}
	if info != want {
		t.Errorf("Explain of a good token = %+v\nwant %+v", info, want)
	}
	if info, _ := s.Explain(cases["principal"].b, good); !info.Verified || !info.Issued.Equal(issued) {
		t.Errorf("Explain for another principal = %+v: the key authenticated it, so its times are known", info)
	}
	if info, _ := s.Explain(b, cases["auth tag: altered"].tok); info.Verified || !info.Issued.IsZero() {
		t.Errorf("Explain of an altered token = %+v: nothing was decrypted, so no times", info)
	}
}

func TestSignedExplainNamesTheCheck(t *testing.T) {
	now := int64(1_800_000_000)
	clock := newSignedClock(now)
	s := mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretA), keyring.NewKey("b", signedSecretB)), clock.opt()))
	b := signedReq
	good := sealSigned(t, s, b)
	with := func(f func(*Binding)) Binding { c := b; f(&c); return c }
	sealedAt := func(at int64, opts ...SignedOption) string {
		ring := signedRing(t, keyring.NewKey("a", signedSecretA))
		return sealSigned(t, mustSigned(NewSigned(ring, append(opts, newSignedClock(at).opt())...)), b)
	}
	mrtr1 := sealSigned(t, mustSigned(NewSignedSecret(signedSecretA, clock.opt())), b)
	otherSecret := sealSigned(t, mustSigned(NewSignedSecret([]byte("signed-test-secret-C-0123456789abcdef"), clock.opt())), b)
	enc := base64.RawURLEncoding.EncodeToString([]byte(`[2,1,2]`))
	badPayload := "mrtr2.a." + enc + "." + hmacB64(signedSecretA, string(signedTagV2)+"a."+enc)

	cases := map[string]explainCase{
		"opens":              {good, b, ""},
		"opens: mrtr1":       {mrtr1, b, ""},
		"size":               {good + strings.Repeat("A", MaxSignedTokenBytes), b, CheckSize},
		"format":             {"mrtr3.a.b.c", b, CheckFormat},
		"key id":             {strings.Replace(good, "mrtr2.a.", "mrtr2.z.", 1), b, CheckKeyID},
		"mac: altered":       {good[:len(good)-4] + "AAAA", b, CheckMAC},
		"mac: mrtr1":         {otherSecret, b, CheckMAC},
		"payload":            {badPayload, b, CheckPayload},
		"expired":            {sealedAt(now - 300), b, CheckExpired},
		"not yet valid":      {sealedAt(now + 1), b, CheckNotYetValid},
		"lifetime":           {sealedAt(now, SignedTTL(10*time.Minute)), b, CheckLifetime},
		"params":             {good, with(func(c *Binding) { c.Params = json.RawMessage(`{"a":1,"a":2}`) }), CheckParams},
		"binding: params":    {good, with(func(c *Binding) { c.Params = json.RawMessage(`{"name":"other"}`) }), CheckBinding},
		"binding: method":    {good, with(func(c *Binding) { c.Method = "prompts/get" }), CheckBinding},
		"binding: principal": {good, with(func(c *Binding) { c.Principal = json.RawMessage(`"user-9"`) }), CheckBinding},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assertExplains(t, s, CodecSigned, tc) })
	}

	info, _ := s.Explain(b, good)
	if want := (Info{Codec: CodecSigned, Version: 2, KeyID: "a", Issued: time.Unix(now, 0).UTC(),
		Expires: time.Unix(now, 0).UTC().Add(DefaultSignedTTL), Verified: true}); info != want {
		t.Errorf("Explain of a good token = %+v\nwant %+v", info, want)
	}
	if info, _ := s.Explain(b, cases["mac: altered"].tok); info.Verified {
		t.Errorf("Explain of an altered token = %+v: no key verified it", info)
	}
}

// explainer is what both codecs offer.
type explainer interface {
	Codec
	Explain(b Binding, token string) (Info, error)
}

// assertExplains checks that Explain names tc.check, as a *RejectError that is ErrInvalid, and
// that Open agrees: it opens exactly when Explain finds nothing.
func assertExplains(t *testing.T, c explainer, codec string, tc explainCase) {
	t.Helper()
	_, err := c.Explain(tc.b, tc.tok)
	_, openErr := c.Open(tc.b, tc.tok)
	if tc.check == "" {
		if err != nil || openErr != nil {
			t.Fatalf("Explain = %v, Open = %v; want both to open", err, openErr)
		}
		return
	}
	var re *RejectError
	if !errors.As(err, &re) || re.Check != tc.check || re.Codec != codec {
		t.Fatalf("Explain = %v; want a %s rejection by the %s check", err, codec, tc.check)
	}
	if !errors.Is(err, ErrInvalid) || openErr != ErrInvalid {
		t.Fatalf("Explain = %v, Open = %v: both must be ErrInvalid", err, openErr)
	}
	if !strings.Contains(err.Error(), string(tc.check)) || strings.Contains(err.Error(), "unknown check") {
		t.Fatalf("the error %q does not say which check failed", err)
	}
}

func TestExplainReportsTheServersMistakes(t *testing.T) {
	s := newTestSealed(t, keyring.Static(testRing(t, testKey("a", 1, 32))), newClock())
	if _, err := s.Explain(Binding{Principal: Anonymous}, "a.x"); !IsConfigError(err) {
		t.Errorf("Sealed.Explain without a method = %v; want a *ConfigError", err)
	}
	g := mustSigned(NewSigned(signedRing(t, keyring.NewKey("a", signedSecretA))))
	if _, err := g.Explain(Binding{Method: "m"}, "mrtr1.x.y"); !IsConfigError(err) {
		t.Errorf("Signed.Explain without a principal = %v; want a *ConfigError", err)
	}
}

// handSealed builds a Sealed token for b under key whose payload is exactly payload, as the package
// doc lays it out: authentic, whatever the payload says.
func handSealed(t *testing.T, key keyring.Key, b Binding, payload string) string {
	t.Helper()
	aesKey, err := hkdf.Key(sha256.New, key.Secret(), nil, sealedKeyInfo, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(aesKey)
	gcm, _ := cipher.NewGCM(block)
	raw := make([]byte, ivLen, ivLen+tagLen+len(payload)) // iv || tag || ciphertext; the IV is zero
	box := gcm.Seal(nil, raw[:ivLen], []byte(payload), appendAAD(nil, key.ID(), b.ProtocolVersion, b.Method, testServer))
	ct, tag := box[:len(payload)], box[len(payload):]
	return key.ID() + "." + base64.RawURLEncoding.EncodeToString(append(append(raw, tag...), ct...))
}
