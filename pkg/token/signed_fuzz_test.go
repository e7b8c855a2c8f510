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
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// FuzzOpenSigned opens arbitrary tokens with arbitrary params. Nothing may panic, every failure is
// ErrInvalid, and a token that opens is byte for byte one the codecs sealed, for params equal to the
// sealed ones: no mutation of a token is ever accepted.
func FuzzOpenSigned(f *testing.F) {
	at := time.Unix(1_800_000_000, 0)
	clock := SignedClock(func() time.Time { return at })
	secret := mustSigned(NewSignedSecret(signedSecretA, clock))
	keys := mustSigned(NewSigned(signedRing(f, keyring.NewKey("a", signedSecretA), keyring.NewKey("b", signedSecretB)), clock))
	b := Binding{Method: "tools/call", Params: json.RawMessage(`{"name":"n","arguments":{"x":1}}`), Principal: json.RawMessage(`"p"`)}
	state := json.RawMessage(`{"s":[1,2.5,"\u2028"]}`)
	sealed := map[string]bool{}
	for _, s := range []*Signed{secret, keys} {
		tok, err := s.Seal(b, state)
		if err != nil {
			f.Fatal(err)
		}
		sealed[tok] = true
		f.Add(tok, []byte(b.Params))
		f.Add(tok, []byte(`{"arguments":{"x":1},"name":"n","_meta":{}}`))
		f.Add(tok[:len(tok)-1], []byte(b.Params))
	}
	f.Add("mrtr2.zzz.e30.AAAA", []byte(`{}`))
	wantParams, _ := canonical.Append(nil, b.Params)
	wantState, _ := canonical.Append(nil, state)

	f.Fuzz(func(t *testing.T, tok string, params []byte) {
		fb := b
		fb.Params = params
		for _, s := range []*Signed{secret, keys} {
			got, err := s.Open(fb, tok)
			if err != nil {
				// Params that are not an object are the server's mistake whatever the token.
				if err != ErrInvalid && (!IsConfigError(err) || checkParamsObject(params) == nil) {
					t.Fatalf("Open failed with %v, not ErrInvalid", err)
				}
				continue
			}
			canon, cerr := canonical.AppendParams(nil, params, unboundParams...)
			if !sealed[tok] || cerr != nil || !bytes.Equal(canon, wantParams) {
				t.Fatalf("Open accepted token %q with params %q", tok, params)
			}
			if !bytes.Equal(got, wantState) {
				t.Fatalf("Open returned %s, sealed %s", got, wantState)
			}
		}
	})
}
