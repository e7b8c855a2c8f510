package keyring

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
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
