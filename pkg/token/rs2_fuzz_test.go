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
	"errors"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// FuzzOpenRS2 opens arbitrary tokens with arbitrary associated data. Nothing may panic, every
// failure is ErrInvalid with a check Explain names, Inspect agrees with the shape, and a token that
// opens is byte for byte one the codec sealed, for the ad it was sealed for: no mutation of a token
// is ever accepted.
func FuzzOpenRS2(f *testing.F) {
	at := time.UnixMilli(1_800_000_000_000)
	clock := RS2Clock(func() time.Time { return at })
	c, err := NewRS2(signedRing(f, keyring.NewKey("a", rs2SecretA), keyring.NewKey("b", rs2SecretB)), clock)
	if err != nil {
		f.Fatal(err)
	}
	ad, payload := []byte("user:ada|tools/call"), []byte(`{"step":2}`)
	tok, err := c.Seal(ad, payload)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok, ad)
	f.Add(tok, []byte("user:bob|tools/call"))
	f.Add(tok[:len(tok)-1], ad)
	f.Add(tok+".", ad)
	f.Add(string(appendRS2("b", rs2SecretB, ad, payload, 0)), ad)
	f.Add("rs2.YQ.AAAA.AAAA", []byte{})
	f.Add("rs2.cm90YXRpb24ta2V5LTIwMjYtMDg.AAABi8_mx5BzdGVwPTI.twv2acu7lKXqebyrmit-JrHHZm-BkKlBQEMMtL3lHk8", ad)

	f.Fuzz(func(t *testing.T, s string, fad []byte) {
		got, err := c.Open(s, fad)
		_, xerr := c.Explain(s, fad)
		if info, _ := Inspect(s); IsRS2(s) && info.Codec != CodecRS2 {
			t.Fatalf("Inspect read an rs2-shaped text as %q", info.Codec)
		}
		if err != nil {
			var re *RejectError
			if err != ErrInvalid || !errors.As(xerr, &re) || re.Codec != CodecRS2 {
				t.Fatalf("Open failed with %v, Explain with %v", err, xerr)
			}
			return
		}
		if xerr != nil {
			t.Fatalf("Open opened what Explain rejects: %v", xerr)
		}
		if s != tok || !bytes.Equal(fad, ad) || !bytes.Equal(got, payload) {
			t.Fatalf("Open accepted %q with ad %q: %q", s, fad, got)
		}
	})
}
