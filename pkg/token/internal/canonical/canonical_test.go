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
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestAppend(t *testing.T) {
	for in, want := range map[string]string{
		// Key order is by UTF-8 bytes, not UTF-16 (JCS would put U+FF61 after the emoji).
		`{"b":1,"a":2,"é":3,"Z":4,"😀":5,"｡":6,"":7}`: `{"":7,"Z":4,"a":2,"b":1,"é":3,"｡":6,"😀":5}`,
		` [ 1 , { "y" : [ ] , "x" : { } } ] `:        `[1,{"x":{},"y":[]}]`,
		`-0`:                                         `0`,
		`-0.0`:                                       `-0.0`,
		`-0e0`:                                       `0.0`,
		`-0E+5`:                                      `0.0`,
		`-1e0`:                                       `-1.0`,
		`1.0`:                                        `1.0`,
		`1`:                                          `1`,
		`1e2`:                                        `100.0`,
		`1E2`:                                        `100.0`,
		`100.00`:                                     `100.0`,
		`1e-400`:                                     `0.0`,
		`-1e-400`:                                    `-0.0`,
		`123456789012345678901234567890123456789`: `123456789012345678901234567890123456789`,
		`"\/\u00e9\ud83d\ude00\u2028<>&\u007f"`:   "\"/é😀\u2028<>&\x7f\"",
		`"\u0000\u001f\b\f\n\r\t\"\\"`:            `"\u0000\u001F\b\f\n\r\t\"\\"`,
		`{"a":{"_meta":1}}`:                       `{"a":{"_meta":1}}`,
		`[true,false,null]`:                       `[true,false,null]`,
	} {
		got, err := Append(nil, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Append(%s) = %s, %v; want %s", in, got, err, want)
		}
		v, err := Decode([]byte(in))
		if err != nil || string(v.Encode()) != want {
			t.Errorf("Decode(%s).Encode() = %s, %v; want %s", in, v.Encode(), err, want)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`,
		`NaN`, `Infinity`, `1e400`, `-1e400`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`,
		"\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"", // raw control byte, invalid UTF-8, encoded surrogate
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00"`, `"\ud800x"`,
		`{"a":1,"a":1}`, `{"a":1,"b":{"c":1,"c":2}}`, `{"\u0061":1,"a":2}`,
		`1 2`, `[1] x`, `{}{}`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		if got, err := Append(nil, []byte(in)); err == nil {
			t.Errorf("Append(%.40q) = %s, want an error", in, got)
		}
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%.40q) succeeded, want an error", in)
		}
		if Valid([]byte(in)) {
			t.Errorf("Valid(%.40q)", in)
		}
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if !Valid([]byte(deep)) {
		t.Error("nesting of MaxDepth is rejected")
	}
}

func TestAppendObjectOmits(t *testing.T) {
	omit := []string{"_meta", "requestState", "inputResponses"}
	for in, want := range map[string]string{
		`{"name":"x","_meta":{"a":1},"requestState":"t","inputResponses":{},"arguments":{"_meta":2}}`: `{"arguments":{"_meta":2},"name":"x"}`,
		`{"_meta":1}`:              `{}`,
		`{"z":1,"_meta":1,"a":2}`:  `{"a":2,"z":1}`,
		`{}`:                       `{}`,
		`{"a":[{"_meta":1}]}`:      `{"a":[{"_meta":1}]}`,
		`{"b":1,"_meta":[],"a":1}`: `{"a":1,"b":1}`,
		// Out of order and all omitted: sorting must not touch the empty object.
		`{"requestState":"t","inputResponses":{}}`:       `{}`,
		`{"a":1,"requestState":"t","inputResponses":{}}`: `{"a":1}`,
		`{"requestState":"t","a":1,"inputResponses":{}}`: `{"a":1}`,
	} {
		got, err := AppendParams(nil, []byte(in), omit...)
		if err != nil || string(got) != want {
			t.Errorf("AppendParams(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`[]`, `"x"`, `{"_meta":1,"_meta":2}`, `{"_meta":{"a":}}`} {
		if got, err := AppendParams(nil, []byte(in), omit...); err == nil {
			t.Errorf("AppendParams(%s) = %s, want an error", in, got)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", -1: "-1.0", 100: "100.0", 1000: "1.0e3", 1200: "1.2e3", 12.5: "12.5",
		123456: "123456.0", 1234567: "1234567.0", 0.1: "0.1", 0.0001: "0.0001", 0.00012: "1.2e-4",
		1e-5: "1.0e-5", 1e15: "1.0e15", 1 << 53: "9.007199254740992e15", (1 << 53) - 1: "9007199254740991.0",
		1e21: "1.0e21", 5e-324: "5.0e-324", math.MaxFloat64: "1.7976931348623157e308",
		123456789012345680: "1.2345678901234568e17", -1e-7: "-1.0e-7", 1.5e300: "1.5e300",
		math.Copysign(0, -1): "-0.0",
		// Decimal whenever it is not longer, as OTP's to_chars (erts/emulator/ryu) decides:
		1.234: "1.234", 1234.5678: "1234.5678", 123456789.123: "123456789.123", 12340: "12340.0",
		123400: "1.234e5", 3.14159: "3.14159", 0.001234: "0.001234", 0.0001234: "1.234e-4",
		1234567890123.25: "1234567890123.25", 12345678900: "12345678900.0", 123456789000: "1.23456789e11",
	} {
		if got := AppendFloat(nil, f); string(got) != want {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// The verbatim fast path for plain decimals must write exactly what parsing and AppendFloat write.
func TestShortDecimalMatchesAppendFloat(t *testing.T) {
	const random = 20000
	lits := make([]string, 0, 26+random)
	lits = append(lits, "19.99", "249.5", "0.1", "0.25", "1.5", "1.234", "12.34", "123.456", "1234.5",
		"0.0001", "0.00012", "0.30000000000000004", "123456789012345.6", "12345678901234.5",
		"0.000000000000000000001", "9007199254740991.5", "1.0", "10.0", "-0.5", "-19.99", "-0.0",
		"99999999999999.9", "0.999999999999999", "0.9999999999999999", "4.35", "2.675")
	rng := rand.New(rand.NewPCG(1, 2))
	for range random {
		digits := func(n int) string {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('0' + rng.IntN(10))
			}
			return string(b)
		}
		intPart := "0"
		if rng.IntN(3) > 0 {
			intPart = string(byte('1'+rng.IntN(9))) + digits(rng.IntN(17))
		}
		lit := intPart + "." + digits(rng.IntN(6)) + digits(rng.IntN(14)) + string(byte('0'+rng.IntN(10)))
		if rng.IntN(4) == 0 {
			lit = "-" + lit
		}
		lits = append(lits, lit)
	}
	for _, lit := range lits {
		got, err := Append(nil, []byte(lit))
		f, ferr := parseFloat([]byte(lit))
		if err != nil || ferr != nil {
			t.Fatalf("%s: %v, %v", lit, err, ferr)
		}
		if want := AppendFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("Append(%s) = %s, want %s", lit, got, want)
		}
	}
}

// Every float Go can print reads back to itself through the Erlang layout.
func TestAppendFloatRoundTrips(t *testing.T) {
	for _, bits := range []uint64{1, 2, 0x000fffffffffffff, 0x0010000000000000, 0x3ff0000000000001,
		0x4340000000000000, 0x433fffffffffffff, 0x7fefffffffffffff, 0x3e112e0be826d695} {
		for _, f := range []float64{math.Float64frombits(bits), -math.Float64frombits(bits)} {
			enc := AppendFloat(nil, f)
			v, err := Decode(enc)
			if err != nil || v.Kind != Float || v.Float != f {
				t.Errorf("%v -> %s -> %v, %v", f, enc, v.Float, err)
			}
		}
	}
}

func TestDecodeKeepsTypes(t *testing.T) {
	v, err := Decode([]byte(`{"i":1,"f":1.0,"big":-123456789012345678901234567890,"s":"x","n":null,"b":true,"a":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]Kind{"i": Integer, "f": Float, "big": Integer, "s": String, "n": Null, "b": Bool, "a": Array}
	for _, m := range v.Members {
		if kinds[m.Name] != m.Value.Kind {
			t.Errorf("%s: kind %d, want %d", m.Name, m.Value.Kind, kinds[m.Name])
		}
	}
	if big := v.Members[2]; big.Name != "big" || big.Value.Int.String() != "-123456789012345678901234567890" {
		t.Errorf("%s = %v", big.Name, big.Value.Int)
	}
}

// The strict decoder accepts only what encoding/json accepts, and a little less.
func TestValidImpliesEncodingJSONValid(t *testing.T) {
	for _, in := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\ud83d\ude00"`, `-0`, ` 1 `} {
		if Valid([]byte(in)) != json.Valid([]byte(in)) {
			t.Errorf("%q: Valid %v, encoding/json %v", in, Valid([]byte(in)), json.Valid([]byte(in)))
		}
	}
}

// A member order that needs sorting survives nesting: inner objects are rewritten in place.
func TestAppendSortsNested(t *testing.T) {
	in := `{"z":{"b":[{"d":1,"c":2}],"a":"\u0022"},"y":1,"x":{"q":{"s":1,"r":2}}}`
	want := `{"x":{"q":{"r":2,"s":1}},"y":1,"z":{"a":"\"","b":[{"c":2,"d":1}]}}`
	got, err := Append(nil, []byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	// More than 16 members takes the other sort.
	var b, w bytes.Buffer
	b.WriteByte('{')
	w.WriteByte('{')
	for i := 40; i > 0; i-- {
		if i < 40 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%02d":1`, i)
	}
	for i := 1; i <= 40; i++ {
		if i > 1 {
			w.WriteByte(',')
		}
		fmt.Fprintf(&w, `"k%02d":1`, i)
	}
	b.WriteByte('}')
	w.WriteByte('}')
	if got, err := Append(nil, b.Bytes()); err != nil || string(got) != w.String() {
		t.Fatalf("40 members: %s, %v", got, err)
	}
	dup := strings.Replace(b.String(), `"k07"`, `"k31"`, 1)
	if _, err := Append(nil, []byte(dup)); err == nil {
		t.Fatal("a repeated name among 40 members is accepted")
	}
}

// Names that differ only by case or Unicode folding are distinct members of params, as they are to
// Snodo: kept, each with its own value, in the order of their bytes, whatever their number (the
// many-member case sorts differently from the few).
func TestAppendParamsKeepsFoldedSiblings(t *testing.T) {
	many := func(extra ...string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 20 {
			fmt.Fprintf(&b, `"locationprefix%02d":%d,`, i, i)
		}
		for _, e := range extra {
			b.WriteString(e + `,`)
		}
		b.WriteString(`"z":0}`)
		return b.String()
	}
	for _, in := range []string{
		`{"ſssssssss":1,"Sssssssss":2}`, `{"Sssssssss":1,"ſssssssss":2}`, `{"aſ":1,"AS":2}`,
		`{"\u212Aelvin":1,"kelvin":2}`, `{"é":1,"É":2}`, many(`"LOCATIONPREFIX07":99`), many(`"ſtatus":1`, `"STATUS":2`),
		`{"Accept":1,"accept":2,"ACCEPT":3}`, `{"a":[{"X":1,"x":2}],"A":{"σ":1,"ς":2,"Σ":3}}`,
	} {
		got, err := AppendParams(nil, []byte(in))
		if err != nil {
			t.Errorf("AppendParams(%.60s): %v", in, err)
			continue
		}
		v, err := Decode([]byte(in))
		if err != nil || string(got) != string(v.Encode()) {
			t.Errorf("AppendParams(%.60s) = %.60s, the tree decoder writes %.60s (%v)", in, got, v.Encode(), err)
		}
	}
	// Swapping the values of two folded names changes the binding.
	a, _ := AppendParams(nil, []byte(`{"Accept":1,"accept":2}`))
	b, _ := AppendParams(nil, []byte(`{"accept":1,"Accept":2}`))
	if string(a) == string(b) {
		t.Errorf("swapped values of Accept and accept bind alike: %s", a)
	}
}

// The range check skips strconv.ParseFloat for floats without an exponent and at most 308 integer
// digits: on both sides of that bound the encoder must agree with ParseFloat, in range below it
// (underflow reads as zero) and from 309 digits on only if the value fits.
func TestPlainFloatRange(t *testing.T) {
	nines := func(n int) string { return strings.Repeat("9", n) }
	for _, c := range []struct {
		in string
		ok bool
	}{
		{nines(308) + ".9", true}, {"-" + nines(308) + ".9", true}, {"0." + strings.Repeat("0", 400) + "1", true},
		{"1" + strings.Repeat("0", 308) + ".0", true}, // 1e308: 309 digits, parsed, in range
		{nines(309) + ".0", false}, {"-" + nines(309) + ".5", false}, {nines(400) + ".0", false},
	} {
		if c.ok != fitsFloat64(c.in) {
			t.Fatalf("the case %.20q… is wrong: ParseFloat reads it as in range %v", c.in, !c.ok)
		}
		if _, err := Append(nil, []byte(c.in)); (err == nil) != c.ok {
			t.Errorf("Append(%.20q…, %d bytes): error %v, want accepted %v", c.in, len(c.in), err, c.ok)
		}
	}
}

// fitsFloat64 is the reference: strconv reads the literal as a finite float64.
func fitsFloat64(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	return err == nil && !math.IsInf(f, 0)
}

// A repeated member name is the client's: the error names it cut to 64 characters, so that a
// 1 MiB name costs a short line in the server's log, not a megabyte on every request.
func TestRepeatedNameErrorIsCut(t *testing.T) {
	name := strings.Repeat("n", 1<<20)
	src := []byte(`{"` + name + `":1,"` + name + `":2}`)
	_, err := Append(nil, src)
	if err == nil {
		t.Fatal("Append accepted a repeated name")
	}
	if msg := err.Error(); len(msg) > 200 || !strings.Contains(msg, strings.Repeat("n", 64)) {
		t.Errorf("error is %d bytes long (%.80q...); want the name cut to 64 characters", len(msg), msg)
	}
}
