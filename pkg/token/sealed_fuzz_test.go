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
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// knownSealed are tokens sealed at t0 by a codec with the keyring of knownSealedCodec, for
// testBinding (with the principal given) and the state given. They pin the format: a change that
// stops them opening breaks every token in flight during an upgrade.
var knownSealed = []struct {
	token     string
	principal json.RawMessage
	state     string
}{
	{
		"key-a.RzREGNuNKoxuGK_23VlrSVopKNgTTECUTBLcap9UlfcUq9fD-YeKbx0lllBE-tH2zJRocVU6ZXvCLEFvB62-5rqBCRR3hr" +
			"oafQ-kDr8AYwwFcy3Gtifg-sOOPOM_-2nXfNfLb3bznyJQABfMb-si4byY0dES_t2t58QFHYo4hdotqqB_t0X56PM59cWqiGxlki" +
			"uk0tvz9lTr_fvCSqmEpx-qsvx7anrtib6r1Nbud_pknxxAXZg78P6zmrzKr9B4NsnkuooTAlSVOFufnXnaHtvnj9HaX_Co",
		json.RawMessage(`"user:ada"`), testState,
	},
	{
		"key-a.I8jg7D7FNkjTWJy5rld6LLjV5SUGQINnDPCwVVm7QfdQp4roZASUyw5xroRXI8W9XccqAT9XtZIVQrj82JliNgf00on6rI" +
			"YVPSWG5Lcscq5FgW68SKRQLoeRFrtHvTK3qbWZsR4FEqcFoJlwKipYVB0Xh2kxbJbYRu8GL8-0ZJQ6CN3z9BGLUcO7eR8",
		Anonymous, `"anonymous state"`,
	},
	{
		"key-b.y1aum45RSpRmGxSe1w2MHxKGP-e0z5PXHncVnZy1aT56HPnMg-KSZvHKBkq4IPak0Y7YgXWKdkkOnRxsksOtvTDzqNGQlr" +
			"-9so54fbASLSaJozoDqHLRRc6ne_SezJcyJTLdtscsYYala4eJD5COUaJCZbvTj9k7Ly60vqyDipBhHu_paC_sySzN_pefYizUU_MU",
		json.RawMessage(`"user:ada"`), `[1,2.5,{"x":null}]`,
	},
}

func knownSealedCodec(t testing.TB) *Sealed {
	// key-b's 40-byte secret exercises the derivation of longer secrets.
	return newTestSealed(t, keyring.Static(testRing(t, testKey("key-a", 1, 32), testKey("key-b", 2, 40))), newClock())
}

func TestSealedKnownTokens(t *testing.T) {
	s := knownSealedCodec(t)
	for i, k := range knownSealed {
		b := testBinding()
		b.Principal = k.principal
		if got, err := s.Open(b, k.token); err != nil || string(got) != k.state {
			t.Errorf("known token %d: Open = %s, %v; want %s", i, got, err, k.state)
		}
	}
}

// TestSealedLayout reads a token the way the package doc describes, with nothing but the standard
// library, and then builds one the same way and opens it: the doc is enough to interoperate.
func TestSealedLayout(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 48)
	s := newTestSealed(t, keyring.Static(testRing(t, keyring.NewKey("kid_1", secret))), newClock())
	b := testBinding()
	tok := mustSeal(t, s, b, ` {"z": 1, "a": [true]} `)

	aesKey, err := hkdf.Key(sha256.New, secret, nil, "mrtr-sealed-v1 aes-256-gcm key", 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(aesKey)
	gcm, _ := cipher.NewGCM(block)
	aad := []byte("mrtr-sealed-v1" +
		"\x00\x00\x00\x05kid_1" +
		"\x00\x00\x00\x0a2026-07-28" +
		"\x00\x00\x00\x0atools/call" +
		"\x00\x00\x00\x1bhttps://mcp.example.com/mcp")

	kid, enc, ok := strings.Cut(tok, ".")
	if !ok || kid != "kid_1" {
		t.Fatalf("token %q is not kid.base64", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	iv, tag, ct := raw[:12], raw[12:28], raw[28:]
	payload, err := gcm.Open(nil, iv, append(bytes.Clone(ct), tag...), aad)
	if err != nil {
		t.Fatalf("the documented layout does not decrypt the token: %v", err)
	}
	digest := sha256.Sum256([]byte("mrtr-sealed-v1 binding\x00" +
		`["tools/call",{"arguments":{"days":[1,2],"location":"New York","units":{"temp":"C","wind":"km/h"}},"name":"get_weather"}]`))
	want := `{"i":1785233700,"e":1785234000,"d":"` + base64.RawURLEncoding.EncodeToString(digest[:]) +
		`","p":"user:ada","s":{"a":[true],"z":1}}`
	if string(payload) != want {
		t.Fatalf("payload\n got %s\nwant %s", payload, want)
	}

	// And the other way: a token built from the doc opens.
	mine := []byte(strings.Replace(want, `"s":{"a":[true],"z":1}`, `"s":"built by hand"`, 1))
	iv = bytes.Repeat([]byte{9}, 12)
	sealed := gcm.Seal(nil, iv, mine, aad) // ciphertext || tag
	ct, tag = sealed[:len(mine)], sealed[len(mine):]
	hand := "kid_1." + base64.RawURLEncoding.EncodeToString(append(append(bytes.Clone(iv), tag...), ct...))
	if got, err := s.Open(b, hand); err != nil || string(got) != `"built by hand"` {
		t.Fatalf("a token built from the doc: Open = %s, %v", got, err)
	}
}

// FuzzOpenSealed feeds Open arbitrary tokens and retry params. Nothing may panic, every failure must
// be ErrInvalid itself, and nothing but a known token, with params that bind the same, may open.
func FuzzOpenSealed(f *testing.F) {
	for _, k := range knownSealed {
		f.Add(k.token, []byte(testBinding().Params))
		f.Add(k.token[:len(k.token)-1], []byte(testBinding().Params))
	}
	f.Add("key-a.", []byte(`{}`))
	f.Add("", []byte(nil))
	f.Add(knownSealed[0].token, []byte(`{"name":"get_weather",`+
		`"arguments":{"days":[1,2],"units":{"wind":"km/h","temp":"C"},"location":"New York"},"requestState":"x"}`))
	f.Add(knownSealed[0].token, []byte(`{"name":"get_weather",`+
		`"arguments":{"days":[1,2.0],"units":{"wind":"km/h","temp":"C"},"location":"New York"}}`))

	s := knownSealedCodec(f)
	salient := func(params []byte) []byte {
		if len(params) == 0 {
			return []byte("{}")
		}
		c, err := canonical.AppendParams(nil, params, unboundParams...)
		if err != nil {
			return nil
		}
		return c
	}
	wantParams := salient(testBinding().Params)

	f.Fuzz(func(t *testing.T, tok string, params []byte) {
		for _, k := range knownSealed {
			b := testBinding()
			b.Principal = k.principal
			b.Params = params
			got, err := s.Open(b, tok)
			if err != nil {
				// Params that are not an object are the server's mistake whatever the token.
				if err != ErrInvalid && (!IsConfigError(err) || checkParamsObject(params) == nil) {
					t.Fatalf("Open failed with %v, not ErrInvalid", err)
				}
				continue
			}
			known := false
			for _, o := range knownSealed {
				known = known || (o.token == tok && bytes.Equal(o.principal, k.principal) && o.state == string(got))
			}
			if !known {
				t.Fatalf("Open accepted %q (state %s), which is not a known token for this principal", tok, got)
			}
			if !bytes.Equal(salient(params), wantParams) {
				t.Fatalf("Open accepted params %s that do not bind like the sealed ones", params)
			}
		}
	})
}
