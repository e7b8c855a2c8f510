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

// Package canonical reads JSON strictly and writes it the way Snodo (Elixir) binds and signs it.
//
// Reading follows Elixir's JSON decoder (a copy of OTP's json module) as Snodo uses it:
//   - A number literal with '.', 'e' or 'E' is a float, any other an exact integer of any size; "-0"
//     is the integer 0. A literal with an exponent and no fraction is read as prefix ".0e" exponent,
//     where the prefix of "0" and "-0" is "0", so "-0e0" is the float +0.0 while "-0.0" is -0.0.
//     A float beyond the float64 range is an error; one too small becomes zero.
//   - Strings must be valid UTF-8 without raw control characters; \u escapes must form valid code
//     points (surrogates only as a high-low pair).
//   - An object with a repeated name is an error (Snodo's JSONValue.decode rejects it at seal time;
//     silently keeping one of two values is how two parties come to read different data), except
//     in AppendFirstWins, which keeps the first, as Elixir's JSON.decode does when Snodo opens a
//     token.
//   - Whitespace is space, tab, CR and LF; anything but whitespace after the value is an error.
//   - Nesting deeper than MaxDepth is an error (Elixir has no limit; the Go stack is not free), and
//     for client params deeper than MaxParamsDepth; an integer of client params longer than
//     MaxParamsIntegerDigits digits is an error too (Snodo's JSONValue.decode refuses it).
//
// Writing is Elixir's JSON.encode! with object members sorted by the UTF-8 bytes of their names:
//   - Integers as their digits; floats in Erlang's shortest round-trip layout (AppendFloat).
//   - Strings escape only '"', '\\' and bytes below 0x20 (\b \t \n \f \r short, others \u00XX in
//     upper-case hex); '/', "<>&", DEL, U+2028/U+2029 and all other text are written raw.
//   - No whitespace.
//
// For objects of at most 32 members this is also exactly what Elixir writes for a decoded map
// (Erlang iterates small maps in key order); larger maps come out of Erlang in hash order, which
// Snodo never relies on: bindings are always sorted, and a payload is only ever verified as text.
//
// The cost is O(n log n) in the input's size whatever its member order or depth, and text already
// in canonical form is copied in one piece (see encode.go). Scratch space lives in a Decoder, pooled
// or the caller's (a codec holds one for all the texts of a Seal or an Open), so canonicalizing a
// request costs no allocation beyond the output.
//
// The files: scan.go is the scanner (lexical rules, the Decoder's primitives), encode.go the
// canonical encoder, float.go Erlang's float layout; tree_test.go holds a tree decoder for
// the tests.
package canonical

import (
	"errors"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects accepted in text the caller trusts: the
// server's own state, a payload whose MAC verified. A Signed token of 16384 bytes can nest 8000
// deep, which Snodo opens; so must Go.
const MaxDepth = 10000

// MaxParamsIntegerDigits is the most digits an integer of a request's params may have: Snodo reads
// untrusted JSON with Snodo.JSONValue.decode, which refuses longer integer literals before
// converting them (a million digits cost it a second).
const MaxParamsIntegerDigits = 64

// MaxParamsDepth is the deepest nesting accepted in a request's params, which come from the client:
// the official MCP Go SDK refuses messages nested deeper than 1000, and params sit inside the message.
const MaxParamsDepth = 1000

var (
	strict    = rules{maxDepth: MaxDepth}
	firstWins = rules{maxDepth: MaxDepth, firstWins: true}
	params    = rules{maxDepth: MaxParamsDepth, maxIntDigits: MaxParamsIntegerDigits}
)

// Append appends the canonical form of the single JSON value in src to dst. A repeated member name
// is an error.
func Append(dst, src []byte) ([]byte, error) {
	d := get(src)
	defer put(d)
	return d.canonical(dst, strict, false, nil)
}

// AppendFirstWins is Append for text that may repeat member names, of which it keeps the first
// occurrence and drops the others: what Snodo returns when it opens a token whose state repeats a
// name.
func AppendFirstWins(dst, src []byte) ([]byte, error) {
	d := get(src)
	defer put(d)
	return d.canonical(dst, firstWins, false, nil)
}

// AppendParams appends the canonical form of the JSON object of a request's params in src to dst,
// leaving out its top-level members named in omit (nested members of the same names stay; omitted
// members are still checked). Beyond Append's rules it refuses nesting deeper than MaxParamsDepth and
// integers of more than MaxParamsIntegerDigits digits, as Snodo does.
// Names that differ only by case are distinct members, as they are to Snodo.
func AppendParams(dst, src []byte, omit ...string) ([]byte, error) {
	d := get(src)
	defer put(d)
	return d.canonical(dst, params, true, omit)
}

// AppendString appends s as a JSON string. It fails if s is not valid UTF-8: Elixir cannot encode
// such a string either.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, errors.New("json: string is not valid UTF-8")
	}
	return appendEscaped(dst, s), nil
}

// Append, AppendFirstWins and AppendParams as methods use d's scratch space instead of a pooled
// Decoder's, for a caller that canonicalizes several texts in a row with a Decoder of its own (a
// codec's Seal or Open): one pool round trip instead of one per text. d reads src from its start
// and is left reading it; Release lets go of src.

// Append is the package's Append with d's scratch space.
func (d *Decoder) Append(dst, src []byte) ([]byte, error) {
	d.Reset(src)
	return d.canonical(dst, strict, false, nil)
}

// AppendFirstWins is the package's AppendFirstWins with d's scratch space.
func (d *Decoder) AppendFirstWins(dst, src []byte) ([]byte, error) {
	d.Reset(src)
	return d.canonical(dst, firstWins, false, nil)
}

// AppendParams is the package's AppendParams with d's scratch space.
func (d *Decoder) AppendParams(dst, src []byte, omit ...string) ([]byte, error) {
	d.Reset(src)
	return d.canonical(dst, params, true, omit)
}

// Release resets d to read nothing, so that it holds no reference to the last text it read, and
// reports whether its scratch space is small enough to keep for another use: space grown by an
// unusual input is not worth keeping alive.
func (d *Decoder) Release() bool {
	d.Reset(nil)
	return cap(d.keys) <= 64<<10 && cap(d.tmp) <= 64<<10 && cap(d.nodes) <= 4096 && cap(d.mems) <= 4096 &&
		cap(d.stack) <= 4096
}

var pool = sync.Pool{New: func() any { return new(Decoder) }}

func get(src []byte) *Decoder {
	d := pool.Get().(*Decoder)
	d.Reset(src)
	return d
}

func put(d *Decoder) {
	if d.Release() {
		pool.Put(d)
	}
}

// GetDecoder returns a pooled Decoder reading src; give it back with PutDecoder.
func GetDecoder(src []byte) *Decoder { return get(src) }

// PutDecoder returns d to the pool. d must not be used afterwards.
func PutDecoder(d *Decoder) { put(d) }
