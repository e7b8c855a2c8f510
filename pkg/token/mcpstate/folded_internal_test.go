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

package mcpstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// The folding is encoding/json's: two names fold alike exactly when bytes.EqualFold holds, which is
// how encoding/json matches a member to a struct field; for two fields, checked against
// encoding/json itself (a struct with that one field receives the member).
func TestFoldIsEncodingJSONs(t *testing.T) {
	for _, tc := range []struct {
		field, name string
		same        bool
	}{
		{"kind", "KIND", true}, {"kind", "\u212aind", true}, {"K", "\u212a", true}, {"status", "\u017ftatus", true},
		{"σ", "ς", true}, {"σ", "Σ", true}, {"ǆ", "ǅ", true}, {"ß", "ẞ", true},
		{"i", "\u0130", false}, {"i", "\u0131", false}, {"a_b", "ab", false}, {"é", "e", false}, {"ss", "ß", false},
	} {
		a := appendFoldedName(nil, []byte(tc.field))
		var nameStr string
		if err := json.Unmarshal([]byte(`"`+tc.name+`"`), &nameStr); err != nil {
			t.Fatal(err)
		}
		b := appendFoldedName(nil, []byte(nameStr))
		if got := bytes.Equal(a, b); got != tc.same || got != bytes.EqualFold([]byte(tc.field), []byte(nameStr)) {
			t.Errorf("%q and %q fold alike: %v, want %v (bytes.EqualFold %v)", tc.field, nameStr, got, tc.same,
				bytes.EqualFold([]byte(tc.field), []byte(nameStr)))
		}
		if tc.field == "kind" || tc.field == "status" {
			if got := decodesIntoField(t, tc.field, nameStr); got != tc.same {
				t.Errorf("encoding/json fills field %q from member %q: %v, want %v", tc.field, nameStr, got, tc.same)
			}
		}
	}
}

// decodesIntoField reports whether encoding/json fills the struct field tagged field from a member
// named name.
func decodesIntoField(t *testing.T, field, name string) bool {
	t.Helper()
	member, _ := json.Marshal(name)
	in := []byte(`{` + string(member) + `:7}`)
	switch field {
	case "kind":
		var v struct {
			Kind int `json:"kind"`
		}
		if err := json.Unmarshal(in, &v); err != nil {
			t.Fatal(err)
		}
		return v.Kind == 7
	default:
		var v struct {
			Status int `json:"status"`
		}
		if err := json.Unmarshal(in, &v); err != nil {
			t.Fatal(err)
		}
		return v.Status == 7
	}
}

func TestCheckFoldedNames(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{"arguments":{`)
		for i := range 30 {
			fmt.Fprintf(&b, `"name%02d":%d,`, i, i)
		}
		b.WriteString(extra + `"z":0},"name":"t"}`)
		return b.String()
	}
	for _, in := range []string{
		`{"arguments":{"location":"Paris","LOCATION":"Pyongyang"},"name":"t"}`,
		`{"arguments":{"kind":1,"\u212aind":2},"name":"t"}`,
		`{"arguments":{"\u017ftatus":1,"STATUS":2},"name":"t"}`,
		`{"arguments":{"a":[{"b":{"Id":1,"iD":2}}]},"name":"t"}`,
		`{"arguments":{"a":1,"a":2},"name":"t"}`,
		`{"arguments":{},"name":"t","NAME":"u"}`,
		`{"task":{"TTL":1,"ttl":2},"name":"t"}`,
		many(`"NAME07":1,`), many(`"x":1,"X":2,`),
	} {
		err := checkFoldedNames([]byte(in), unboundParams)
		if !token.IsInputError(err) {
			t.Errorf("checkFoldedNames(%.80s) = %v, want an *token.InputError", in, err)
		}
	}
	for _, in := range []string{
		`{"arguments":{"location":"Paris"},"name":"t"}`,
		`{"arguments":{"a":{"k":1},"b":{"K":2}},"name":"t"}`,                   // not siblings
		`{"_meta":{"Trace":1,"trace":2},"arguments":{"x":1},"name":"t"}`,       // _meta is not bound
		`{"requestState":"s","inputResponses":{"A":1,"a":2},"name":"t"}`,       // nor are these
		`{"arguments":{"é":1,"e":2,"ss":3,"ß":4,"i":5,"\u0130":6},"name":"t"}`, // no fold relates them
		`{"arguments":{"a":[{"x":1},{"X":1}]},"name":"t"}`,                     // elements are not siblings
		many(``), `{}`, ` { } `,
	} {
		if err := checkFoldedNames([]byte(in), unboundParams); err != nil {
			t.Errorf("checkFoldedNames(%.80s) = %v, want nil", in, err)
		}
	}
	deep := `{"a":` + strings.Repeat(`[`, 999) + strings.Repeat(`]`, 999) + `}`
	if err := checkFoldedNames([]byte(deep), nil); err != nil {
		t.Errorf("1000 levels: %v", err)
	}
	if err := checkFoldedNames([]byte(`{"a":`+strings.Repeat(`[`, 1000)+strings.Repeat(`]`, 1000)+`}`), nil); !token.IsInputError(err) {
		t.Errorf("1001 levels: %v, want an *token.InputError", err)
	}
}

// FuzzCheckFoldedNames: on params the codecs bind, checkFoldedNames fails exactly when an object has
// two bound sibling names equal under bytes.EqualFold (the oracle: encoding/json's own tokens and
// bytes.EqualFold, pairwise); on anything else it fails or passes without panicking.
func FuzzCheckFoldedNames(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"_meta":{"x":1,"X":2},"k":1,"\u212a":2}`,
		`{"a":[{"ſ":1,"s":2}],"b":{"c":{"d":1}}}`, `{"x":"\ud800"}`, `[1,2]`, `{"a":1e400}`,
		`{"n0":0,"n1":1,"n2":2,"n3":3,"n4":4,"n5":5,"n6":6,"n7":7,"n8":8,"N4":9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		err := checkFoldedNames(in, unboundParams)
		if err != nil && !token.IsInputError(err) {
			t.Fatalf("error %v is not an *token.InputError", err)
		}
		if _, cerr := canonical.AppendParams(nil, in, unboundParams...); cerr != nil {
			return
		}
		want := oracleFolded(t, in)
		if (err != nil) != want {
			t.Fatalf("checkFoldedNames(%q) = %v; the oracle finds folded siblings: %v", in, err, want)
		}
	})
}

// oracleFolded walks in with encoding/json's tokens and compares sibling names pairwise with
// bytes.EqualFold, leaving out the unbound top-level members.
func oracleFolded(t *testing.T, in []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(in))
	var walk func(top bool) bool
	walk = func(top bool) bool {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		switch tok {
		case json.Delim('['):
			found := false
			for dec.More() {
				found = walk(false) || found
			}
			_, _ = dec.Token()
			return found
		case json.Delim('{'):
			var names []string
			found := false
			for dec.More() {
				k, _ := dec.Token()
				name := k.(string)
				if top && (name == "_meta" || name == "requestState" || name == "inputResponses") {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						t.Fatalf("oracle: %v", err)
					}
					continue
				}
				for _, n := range names {
					found = found || bytes.EqualFold([]byte(n), []byte(name))
				}
				names = append(names, name)
				found = walk(false) || found
			}
			_, _ = dec.Token()
			return found
		}
		return false
	}
	found := walk(true)
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("oracle: trailing data")
	}
	return found
}

// The check is linear in the params' size: an object of 100 000 members, all sharing a long
// prefix, costs a map lookup per member.
func BenchmarkCheckFoldedNames(b *testing.B) {
	for _, n := range []int{8, 1000, 100000} {
		var buf bytes.Buffer
		buf.WriteString(`{"arguments":{`)
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `"locationprefix%06d":%d`, i, i)
		}
		buf.WriteString(`},"name":"t"}`)
		params := buf.Bytes()
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(params)))
			b.ReportAllocs()
			for b.Loop() {
				if err := checkFoldedNames(params, unboundParams); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestRequestParams(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}`: `{"name":"x","task":{}}`,
		` { "params" : {"uri":"u"} , "method" : "resources/read" } `:                     `{"uri":"u"}`,
		`{"method":"prompts/get","params":{},"Params":{"x":1}}`:                          `{}`, // exact names, as the SDK
		`[{"method":"tools/call","params":{}}]`:                                          "",   // a batch
		`{"method":"tools/list","params":{}}`:                                            "",
		`{"method":"tools/call","params":{"a":1},"params":{"a":2}}`:                      "", // repeated
		`{"method":"tools/call","method":"tools/call","params":{}}`:                      "",
		`{"method":"tools/call","params":[1]}`:                                           "",
		`{"method":"tools/call"}`:                                                        "",
		`{"method":"tools/call","params":{"a":}`:                                         "",
	} {
		got, ok := requestParams([]byte(body))
		if ok != (want != "") || string(got) != want {
			t.Errorf("requestParams(%s) = %s, %v; want %q", body, got, ok, want)
		}
	}
}

// FuzzRequestParams: the JSON-RPC envelope of untrusted POST bodies is read without panicking, and
// what it records is one object value of the body, recorded only for a body encoding/json reads too.
func FuzzRequestParams(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"method":"tools/call","params":{"a":1},"params":{}}`, `[{}]`, `{"method":"resources/read","params":{"uri":"\u0075"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, ok := requestParams(body)
		if !ok {
			return
		}
		if !bytes.Contains(body, p) || len(p) == 0 || p[0] != '{' || !json.Valid(p) {
			t.Fatalf("requestParams(%q) recorded %q", body, p)
		}
	})
}
