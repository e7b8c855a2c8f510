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
	"strings"
	"testing"
	"time"
)

// b64 is the standard base64 of n bytes of c: recognisable in any output.
func b64(c byte, n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{c}, n)) }

func TestParseValid(t *testing.T) {
	doc := `{"keys":[{"id":"b","secret":"` + b64('b', 32) + `"},{"secret":"` + b64('a', 48) + `","id":"a-1_Z"}]}`
	r, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := strings.Join(r.IDs(), ","); got != "b,a-1_Z" {
		t.Errorf("ids = %s, want b,a-1_Z", got)
	}
	if r.Primary().ID() != "b" || r.Primary().Len() != 32 {
		t.Errorf("primary = %v, want b with 32 bytes", r.Primary())
	}
	if k, ok := r.Lookup("a-1_Z"); !ok || !bytes.Equal(k.Secret(), bytes.Repeat([]byte{'a'}, 48)) {
		t.Errorf("Lookup(a-1_Z) = %v, %v: wrong key", k, ok)
	}
	// Whitespace anywhere is fine: the document is written by tools and humans alike.
	spaced := "\n { \"keys\" : [ {\"id\":\"b\" , \"secret\":\"" + b64('b', 32) + "\"} ] } \n"
	if _, err := Parse([]byte(spaced)); err != nil {
		t.Errorf("Parse(with whitespace): %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	good := b64('g', 32)
	secretish := b64('S', 33) // must never show up in an error
	entry := func(id, secret string) string { return `{"id":"` + id + `","secret":"` + secret + `"}` }
	cases := map[string]struct {
		doc  string
		want string // a substring of the error
	}{
		"an empty document":              {``, "document is empty"},
		"only whitespace":                {" \n", "document is empty"},
		"null":                           {`null`, "document is null"},
		"a list at top level":            {`[]`, "document is a list"},
		"a string at top level":          {`"x"`, "document is a string"},
		"an empty object":                {`{}`, `missing field "keys"`},
		"keys null":                      {`{"keys":null}`, `"keys" is null`},
		"keys an object":                 {`{"keys":{}}`, `"keys" is an object`},
		"an empty list":                  {`{"keys":[]}`, `"keys" is empty`},
		"an unknown top-level field":     {`{"keys":[` + entry("a", good) + `],"version":1}`, `unknown field "version" at top level`},
		"field names are case-sensitive": {`{"Keys":[` + entry("a", good) + `]}`, `unknown field "Keys"`},
		"a duplicate keys field": {
			`{"keys":[` + entry("a", good) + `],"keys":[` + entry("b", good) + `]}`,
			`duplicate field "keys"`,
		},
		"trailing data":             {`{"keys":[` + entry("a", good) + `]}x`, "after the keyring object"},
		"a second object":           {`{"keys":[` + entry("a", good) + `]}{}`, "after the keyring object"},
		"truncated":                 {`{"keys":[` + entry("a", good), "unexpected end of JSON input"},
		"an entry that is a string": {`{"keys":["a"]}`, "keys[0] is a string"},
		"an entry that is null":     {`{"keys":[` + entry("a", good) + `,null]}`, "keys[1] is null"},
		"an unknown entry field": {
			`{"keys":[{"id":"a","secret":"` + good + `","note":"x"}]}`,
			`keys[0] (id "a"): unknown field "note"`,
		},
		"a duplicate id field": {
			`{"keys":[{"id":"a","id":"b","secret":"` + good + `"}]}`,
			`keys[0] (id "a"): duplicate field "id"`,
		},
		"a duplicate secret field": {
			`{"keys":[{"id":"a","secret":"` + good + `","secret":"` + good + `"}]}`,
			`keys[0] (id "a"): duplicate field "secret"`,
		},
		"a numeric id":                           {`{"keys":[{"id":1,"secret":"` + good + `"}]}`, `keys[0]: "id" is a number`},
		"a null secret":                          {`{"keys":[{"id":"a","secret":null}]}`, `keys[0] (id "a"): "secret" is null`},
		"an object secret, named by id after it": {`{"keys":[{"secret":{"k":[1,{}]},"id":"a"}]}`, `keys[0] (id "a"): "secret" is an object`},
		"a list secret":                          {`{"keys":[{"id":"a","secret":["` + secretish + `"]}]}`, `"secret" is a list`},
		"a missing id":                           {`{"keys":[{"secret":"` + good + `"}]}`, `keys[0]: missing field "id"`},
		"a missing secret":                       {`{"keys":[{"id":"a"}]}`, `keys[0] (id "a"): missing field "secret"`},
		"an empty id":                            {`{"keys":[` + entry("", good) + `]}`, "keys[0]: id is empty"},
		"a bad id character":                     {`{"keys":[` + entry("a.b", good) + `]}`, "keys[0]: id has a byte outside"},
		"an id of 33 characters":                 {`{"keys":[` + entry(strings.Repeat("a", 33), good) + `]}`, "keys[0]: id is 33 bytes long"},
		"swapped id and secret":                  {`{"keys":[` + entry(secretish, "a") + `]}`, "keys[0]: id is 44 bytes long"},
		"a duplicate id": {
			`{"keys":[` + entry("a", good) + `,` + entry("b", good) + `,` + entry("a", good) + `]}`,
			`keys[2] (id "a"): id already used by keys[0]`,
		},
		"a short secret": {
			`{"keys":[` + entry("a", b64('s', 31)) + `]}`,
			`keys[0] (id "a"): secret is 31 bytes: at least 32`,
		},
		"an empty secret": {`{"keys":[` + entry("a", "") + `]}`, `secret is 0 bytes`},
		"url-safe base64": {
			`{"keys":[` + entry("a", strings.NewReplacer("+", "-", "/", "_").Replace(b64(0xfb, 33))) + `]}`,
			"not standard base64",
		},
		"unpadded base64":                   {`{"keys":[` + entry("a", strings.TrimRight(b64('s', 32), "=")) + `]}`, "not standard base64"},
		"base64 with a line break":          {`{"keys":[` + entry("a", secretish[:20]+`\n`+secretish[20:]) + `]}`, "not standard base64"},
		"base64 with non-zero padding bits": {`{"keys":[` + entry("a", b64('s', 32)[:42]+"h=") + `]}`, "not standard base64"},
		"a control character in a secret": {
			`{"keys":[` + entry("a", secretish[:10]+"\x01"+secretish[10:]) + `]}`,
			"invalid JSON at byte offset",
		},
		"nine keys": {`{"keys":[` + entry("a", good) + "," + entry("b", good) + "," + entry("c", good) + "," +
			entry("d", good) + "," + entry("e", good) + "," + entry("f", good) + "," + entry("g", good) + "," +
			entry("h", good) + "," + entry("i", good) + `]}`, `"keys" has more than 8 entries`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted %s: %v", tc.doc, r)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "keyring.json: ") {
				t.Errorf("error %q does not say it is about keyring.json", err)
			}
			for _, s := range []string{secretish, secretish[:12], good, good[:12]} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains secret text %q", err, s)
				}
			}
		})
	}
}

func TestParseRejectsOversizedDocument(t *testing.T) {
	doc := make([]byte, MaxDocumentBytes+1)
	if _, err := Parse(doc); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Parse(%d bytes) error = %v, want a size error", len(doc), err)
	}
}

func TestMarshalRoundTripAndDeterminism(t *testing.T) {
	a, _ := GenerateKey("a", 32)
	b, _ := GenerateKey("b", 64)
	r, err := New(b, a)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"keys":[{"id":"b","secret":"` + base64.StdEncoding.EncodeToString(b.Secret()) +
		`"},{"id":"a","secret":"` + base64.StdEncoding.EncodeToString(a.Secret()) + `"}]}`
	if string(out) != want {
		t.Errorf("Marshal = %s\nwant      %s", out, want)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(Marshal(r)): %v", err)
	}
	if !back.Equal(r) || back.Fingerprint() != r.Fingerprint() {
		t.Errorf("round trip changed the keyring: %v -> %v", r, back)
	}
	again, _ := Marshal(back)
	if !bytes.Equal(again, out) {
		t.Errorf("Marshal is not deterministic:\n%s\n%s", out, again)
	}
	if _, err := Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
}

func TestGenerateKey(t *testing.T) {
	k1, err := GenerateKey("k1", MinSecretBytes)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := GenerateKey("k1", MinSecretBytes)
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID() != "k1" || k1.Len() != MinSecretBytes {
		t.Errorf("GenerateKey = %v, want id k1 with %d bytes", k1, MinSecretBytes)
	}
	if bytes.Equal(k1.Secret(), k2.Secret()) || k1.Equal(k2) {
		t.Error("two generated keys have the same bytes")
	}
	if bytes.Equal(k1.Secret(), make([]byte, MinSecretBytes)) {
		t.Error("generated key is all zeros")
	}
	if _, err := GenerateKey("k1", MinSecretBytes-1); err == nil {
		t.Error("GenerateKey accepted a short key")
	}
	if _, err := GenerateKey("bad id", MinSecretBytes); err == nil {
		t.Error("GenerateKey accepted a bad id")
	}
}

func TestEqualComparesKeys(t *testing.T) {
	a := NewKey("a", bytes.Repeat([]byte{1}, 32))
	a2 := NewKey("a", bytes.Repeat([]byte{2}, 32))
	b := NewKey("b", bytes.Repeat([]byte{1}, 32))
	r1, _ := New(a, b)
	r2, _ := New(NewKey("a", a.Secret()), NewKey("b", b.Secret()))
	for _, tc := range []struct {
		name string
		x, y *Keyring
		want bool
	}{
		{"same keys", r1, r2, true},
		{"other bytes", r1, must(New(a2, b)), false},
		{"other order", r1, must(New(b, a)), false},
		{"fewer keys", r1, must(New(a)), false},
		{"nil", r1, nil, false},
	} {
		if got := tc.x.Equal(tc.y); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func must(r *Keyring, err error) *Keyring {
	if err != nil {
		panic(err)
	}
	return r
}

// Values beyond the range are refused however far beyond: before the fix, 9223372037 seconds wrapped
// to a negative Duration ("no ceiling") and 18446744074 to 290ms.
func TestParseTokenTTLRefusesOverflow(t *testing.T) {
	for _, s := range []string{"901", "9223372036", "9223372037", "18446744074", "9223372036854775807",
		"9223372036854775808", "99999999999999999999999"} {
		if d, err := ParseTokenTTL([]byte(s)); err == nil {
			t.Errorf("ParseTokenTTL(%s) = %v, want an error", s, d)
		}
	}
	for s, want := range map[string]time.Duration{"1": time.Second, "900\n": 15 * time.Minute} {
		if d, err := ParseTokenTTL([]byte(s)); err != nil || d != want {
			t.Errorf("ParseTokenTTL(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
}
