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
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// FuzzInspect reads arbitrary text as a token. Nothing may panic; a failure is a *RejectError of the
// size or format check; what it reads is consistent with the text: the codec its shape says, a key
// id that is valid and in the text, and no times for a Sealed token (they are encrypted).
func FuzzInspect(f *testing.F) {
	for _, k := range knownSealed {
		f.Add(k.token)
	}
	f.Add(sealSigned(f, mustSigned(NewSigned(signedRing(f, keyring.NewKey("kid_1", signedSecretA)))), signedReq))
	f.Add(sealSigned(f, mustSigned(NewSignedSecret(signedSecretA)), signedReq))
	f.Add("mrtr2.zzz.e30.AAAA")
	f.Add("mrtr1..")
	f.Add(keyring.PythonTokenPrefix + pythonBody)
	f.Add("mrtr2.a.WzIsMSwyLCJzIiwxXQ==." + strings.Repeat("A", 43))
	f.Fuzz(func(t *testing.T, tok string) {
		info, err := Inspect(tok)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || (re.Check != CheckSize && re.Check != CheckFormat) || !errors.Is(err, ErrInvalid) ||
				(re.Codec == "" && re.Check != CheckFormat) {
				t.Fatalf("Inspect(%q) failed with %v, not a size or format rejection", tok, err)
			}
			return
		}
		if info.Verified {
			t.Fatalf("Inspect(%q) claims to have verified the token", tok)
		}
		switch info.Codec {
		case CodecPythonSDK:
			if kid, ok := keyring.PythonTokenKid(tok); info.Version != 1 || !ok || info.KeyID != kid || !info.Issued.IsZero() {
				t.Fatalf("Inspect(%q) = %+v: not what a python-sdk token can say", tok, info)
			}
		case CodecSealed:
			if info.Version != 1 || !keyring.ValidID(info.KeyID) || !strings.HasPrefix(tok, info.KeyID+".") ||
				strings.HasPrefix(tok, keyring.PythonTokenPrefix) ||
				!info.Issued.IsZero() || !info.Expires.IsZero() {
				t.Fatalf("Inspect(%q) = %+v: not what a Sealed token can say", tok, info)
			}
		case CodecSigned:
			prefix := "mrtr1."
			if info.Version == 2 {
				prefix = "mrtr2." + info.KeyID + "."
				if !keyring.ValidID(info.KeyID) {
					t.Fatalf("Inspect(%q) = %+v: an invalid key id", tok, info)
				}
			} else if info.Version != 1 || info.KeyID != "" {
				t.Fatalf("Inspect(%q) = %+v: not what a Signed token can say", tok, info)
			}
			if !strings.HasPrefix(tok, prefix) || info.Issued.IsZero() || info.Expires.IsZero() {
				t.Fatalf("Inspect(%q) = %+v: not what its text says", tok, info)
			}
		default:
			t.Fatalf("Inspect(%q) = %+v: unknown codec", tok, info)
		}
	})
}

// FuzzExplain checks that Explain agrees with Open on arbitrary tokens and params: it finds nothing
// exactly when Open opens, every rejection is a *RejectError that is ErrInvalid (params that are
// not an object are a *ConfigError to both, as Binding.Params says), and a Sealed
// token's times are shown only once the key authenticated it (a Signed token's text shows its own,
// whichever codec is asked).
func FuzzExplain(f *testing.F) {
	for _, k := range knownSealed {
		f.Add(k.token, []byte(testBinding().Params))
	}
	at := time.Unix(1_800_000_000, 0)
	signed := mustSigned(NewSigned(signedRing(f, keyring.NewKey("a", signedSecretA)),
		SignedClock(func() time.Time { return at })))
	tok, err := signed.Seal(signedReq, signedState)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok, []byte(signedReq.Params))
	f.Add(tok[:len(tok)-1], []byte(`{}`))
	f.Add("key-a.", []byte(nil))
	sealed := knownSealedCodec(f)

	f.Fuzz(func(t *testing.T, tok string, params []byte) {
		for _, c := range []struct {
			codec    string
			x        explainer
			bindings []Binding
		}{
			{CodecSealed, sealed, []Binding{testBinding(), withPrincipal(testBinding(), Anonymous)}},
			{CodecSigned, signed, []Binding{signedReq}},
		} {
			for _, b := range c.bindings {
				b.Params = params
				info, err := c.x.Explain(b, tok)
				_, openErr := c.x.Open(b, tok)
				if (err == nil) != (openErr == nil) {
					t.Fatalf("%s: Explain = %v but Open = %v", c.codec, err, openErr)
				}
				// Params that are not an object are the server's mistake whatever the token
				// (Binding.Params): both answer a *ConfigError, never a rejection of the token.
				if checkParamsObject(params) != nil {
					if !IsConfigError(err) || !IsConfigError(openErr) {
						t.Fatalf("%s: params %q: Explain = %v, Open = %v, not *ConfigErrors", c.codec, params, err, openErr)
					}
					continue
				}
				var re *RejectError
				if err != nil && (!errors.As(err, &re) || re.Codec != c.codec || !errors.Is(err, ErrInvalid)) {
					t.Fatalf("%s: Explain failed with %v, not a %s *RejectError", c.codec, err, c.codec)
				}
				if info.Codec == CodecSealed && !info.Verified && !info.Issued.IsZero() {
					t.Fatalf("Sealed: Explain showed times %v of a token no key authenticated", info.Issued)
				}
			}
		}
	})
}

func withPrincipal(b Binding, p json.RawMessage) Binding {
	b.Principal = p
	return b
}
