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

package canonical

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCanonical: no input panics; the streaming encoder and the tree decoder agree on what they
// accept and on its canonical form; the canonical form is a fixed point; whatever is accepted is
// JSON to encoding/json too.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,1.0,-0,-0.0,-0e0,1E2],"a":"\u00e9\ud83d\ude00\/"}`, `"\u0000\u001f\u2028"`,
		`[{"z":{},"y":[]},null,true,false]`, `123456789012345678901234567890`, `5e-324`, `1.7976931348623157e308`,
		`{"a":1,"a":2}`, `"\ud800"`, `1e400`, `[`, ` {"_meta" : 1 } `, `[19.99,-0.25,1.234,0.00012,123456789012345.6]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Append(nil, in)
		v, derr := Decode(in)
		if (err == nil) != (derr == nil) || (err == nil) != Valid(in) {
			t.Fatalf("Append error %v, Decode error %v, Valid %v", err, derr, Valid(in))
		}
		if err != nil {
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which encoding/json rejects", in)
		}
		if tree := v.Encode(); !bytes.Equal(tree, out) {
			t.Fatalf("Append %s, Decode+Encode %s", out, tree)
		}
		again, err := Append(nil, out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", out, again, err)
		}
		if d := GetDecoder(in); d.SkipValue() != nil || d.End() != nil {
			t.Fatalf("SkipValue rejects %q", in)
		} else {
			PutDecoder(d)
		}
	})
}

// FuzzRules: the rule variants agree with Append where they should. AppendFirstWins accepts what
// Append accepts and writes the same; what it writes is canonical text without repeats. AppendParams
// accepts an object Append accepts unless it nests too deep or holds too long an integer, and writes
// the same: names that differ only by case are distinct members to it as to Append.
func FuzzRules(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"b":[{"x":1,"x":2}],"a":0}`, `{"location":"P","LOCATION":"Q"}`,
		`{"K":1,"\u212a":2}`, `{"a":{"b":{"c":1},"a":2},"A":3}`, `[{"z":1,"y":2,"z":3}]`, ` { "a" : 1 } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		strict, serr := Append(nil, in)
		first, ferr := AppendFirstWins(nil, in)
		if serr == nil && (ferr != nil || !bytes.Equal(first, strict)) {
			t.Fatalf("Append %s, AppendFirstWins %s (%v)", strict, first, ferr)
		}
		if ferr == nil {
			if again, err := Append(nil, first); err != nil || !bytes.Equal(again, first) {
				t.Fatalf("AppendFirstWins wrote %s, which is not canonical without repeats (%v)", first, err)
			}
		}
		params, perr := AppendParams(nil, in)
		if perr == nil && (serr != nil || !bytes.Equal(params, strict)) {
			t.Fatalf("AppendParams %s, Append %s (%v)", params, strict, serr)
		}
		if serr == nil && perr != nil && len(in) > 0 {
			v, _ := Decode(in)
			if v.Kind == Object && !strings.Contains(perr.Error(), "nesting") && !strings.Contains(perr.Error(), "digits") {
				t.Fatalf("AppendParams refused %s: %v", in, perr)
			}
		}
	})
}
