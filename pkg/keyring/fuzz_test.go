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

package keyring

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds Parse arbitrary bytes. Parse must not panic, and whatever it accepts must survive
// Marshal unchanged: Marshal(Parse(x)) parses back to an equal keyring and is a fixed point. As a
// differential check, encoding/json (lenient where Parse is strict) must read the same ids and bytes
// out of anything Parse accepts. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"keys":[{"id":"a","secret":"` + b64('a', 32) + `"}]}`))
	f.Add([]byte(`{"keys":[{"id":"b","secret":"` + b64('b', 33) + `"},{"secret":"` + b64('a', 34) + `","id":"a"}]}`))
	f.Add([]byte(`{"keys":[{"id":"a","secret":"` + b64('a', 32) + `","id":"a"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			if r != nil {
				t.Fatalf("Parse returned a keyring and an error %v", err)
			}
			return
		}
		out, err := Marshal(r)
		if err != nil {
			t.Fatalf("Marshal of an accepted keyring: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(r)) = %v for %s", err, out)
		}
		if !back.Equal(r) || back.Fingerprint() != r.Fingerprint() {
			t.Fatalf("round trip changed %v into %v", r, back)
		}
		if again, _ := Marshal(back); !bytes.Equal(again, out) {
			t.Fatalf("Marshal is not a fixed point:\n%s\n%s", out, again)
		}

		var doc struct {
			Keys []struct{ ID, Secret string }
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("Parse accepted what encoding/json rejects (%v): %q", err, data)
		}
		ids := make([]string, len(doc.Keys))
		for i, k := range doc.Keys {
			ids[i] = k.ID
			key, ok := r.Lookup(k.ID)
			if b, err := base64.StdEncoding.DecodeString(k.Secret); !ok || err != nil || !bytes.Equal(b, key.Secret()) {
				t.Fatalf("encoding/json reads key %d (%q) differently", i, k.ID)
			}
		}
		if !slices.Equal(ids, r.IDs()) {
			t.Fatalf("encoding/json reads ids %v, Parse %v", ids, r.IDs())
		}
	})
}

// FuzzParseTokenTTL: ParseTokenTTL accepts exactly the decimal spellings of 1 to 900 (a trailing
// newline allowed) and returns that many seconds; everything else, values that would overflow a
// Duration included, is refused. The oracle is math/big, which cannot overflow.
func FuzzParseTokenTTL(f *testing.F) {
	for _, s := range []string{"300", "900\n", "901", "0", "-1", "+5", "05", "9223372037", "18446744074",
		"9223372036854775807", "99999999999999999999", "1e3", " 5", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseTokenTTL(data)
		text := strings.TrimSuffix(string(data), "\n")
		n, ok := new(big.Int).SetString(text, 10)
		valid := ok && n.Sign() > 0 && n.Cmp(big.NewInt(900)) <= 0 && n.String() == text
		switch {
		case valid && (err != nil || got != time.Duration(n.Int64())*time.Second):
			t.Fatalf("ParseTokenTTL(%q) = %v, %v; want %ss", data, got, err, n)
		case !valid && err == nil:
			t.Fatalf("ParseTokenTTL(%q) = %v, want an error", data, got)
		}
	})
}
