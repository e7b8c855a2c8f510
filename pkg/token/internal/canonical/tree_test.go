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

// A tree decoder that this package's tests use as a second, independent reading of the rules to
// check the encoder against. It is a test file so that the shipped package holds only what the
// codecs call.

import (
	"math/big"
	"slices"
	"strings"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of JSON value. Integer and Float are distinct kinds: 1 and 1.0 are different values.
const (
	Null Kind = iota
	Bool
	Integer
	Float
	String
	Array
	Object
)

// Value is a decoded JSON value that keeps what encoding/json loses: integers stay exact integers of
// any size, floats stay floats, and object members are kept in canonical order.
type Value struct {
	Kind    Kind
	Bool    bool
	Int     *big.Int // Integer
	Float   float64  // Float
	Str     string   // String
	Elems   []Value  // Array
	Members []Member // Object, sorted by the bytes of Name, names unique
}

// Member is one name/value pair of an object.
type Member struct {
	Name  string
	Value Value
}

// Decode reads the single JSON value in src with the rules of the package comment.
func Decode(src []byte) (Value, error) {
	d := get(src)
	defer put(d)
	v, err := d.decodeValue()
	if err != nil {
		return Value{}, err
	}
	return v, d.End()
}

// Encode returns the canonical form of v.
func (v Value) Encode() []byte { return v.Append(nil) }

// Append appends the canonical form of v to dst.
func (v Value) Append(dst []byte) []byte {
	switch v.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.Bool {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Integer:
		return v.Int.Append(dst, 10)
	case Float:
		return AppendFloat(dst, v.Float)
	case String:
		return appendEscaped(dst, v.Str)
	case Array:
		dst = append(dst, '[')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.Append(dst)
		}
		return append(dst, ']')
	default:
		ms := v.Members
		if !slices.IsSortedFunc(ms, compareMembers) {
			ms = slices.SortedFunc(slices.Values(ms), compareMembers)
		}
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendEscaped(dst, m.Name)
			dst = append(dst, ':')
			dst = m.Value.Append(dst)
		}
		return append(dst, '}')
	}
}

func compareMembers(a, b Member) int { return strings.Compare(a.Name, b.Name) }

// MaxMembers returns the largest number of members of any object in v, at any depth.
func (v Value) MaxMembers() int {
	n := 0
	if v.Kind == Object {
		n = len(v.Members)
	}
	for _, e := range v.Elems {
		n = max(n, e.MaxMembers())
	}
	for _, m := range v.Members {
		n = max(n, m.Value.MaxMembers())
	}
	return n
}

func (d *Decoder) decodeValue() (Value, error) {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return Value{}, d.errUnexpected()
	}
	switch c := d.src[d.pos]; {
	case c == '{':
		return d.decodeObject()
	case c == '[':
		return d.decodeArray()
	case c == '"':
		b, err := d.decodeString(nil)
		return Value{Kind: String, Str: string(b)}, err
	case c == 't':
		err := d.skipLiteral("true")
		return Value{Kind: Bool, Bool: true}, err
	case c == 'f':
		err := d.skipLiteral("false")
		return Value{Kind: Bool}, err
	case c == 'n':
		err := d.skipLiteral("null")
		return Value{Kind: Null}, err
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		isFloat, err := d.scanNumber()
		if err != nil {
			return Value{}, err
		}
		lit := d.src[start:d.pos]
		if isFloat {
			f, err := parseFloat(lit)
			if err != nil {
				return Value{}, d.errorf(start, "%v", err)
			}
			return Value{Kind: Float, Float: f}, nil
		}
		n, _ := new(big.Int).SetString(string(lit), 10) // the scanner admitted only digits
		return Value{Kind: Integer, Int: n}, nil
	default:
		return Value{}, d.errUnexpected()
	}
}

func (d *Decoder) decodeArray() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++
	v := Value{Kind: Array, Elems: []Value{}}
	if d.Consume(']') {
		d.depth--
		return v, nil
	}
	for {
		e, err := d.decodeValue()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, e)
		if d.Consume(',') {
			continue
		}
		if d.Consume(']') {
			d.depth--
			return v, nil
		}
		return Value{}, d.errUnexpected()
	}
}

func (d *Decoder) decodeObject() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++
	v := Value{Kind: Object, Members: []Member{}}
	if !d.Consume('}') {
		for {
			d.skipSpace()
			if d.pos >= len(d.src) || d.src[d.pos] != '"' {
				return Value{}, d.errUnexpected()
			}
			name, err := d.decodeString(nil)
			if err != nil {
				return Value{}, err
			}
			if !d.Consume(':') {
				return Value{}, d.errUnexpected()
			}
			e, err := d.decodeValue()
			if err != nil {
				return Value{}, err
			}
			v.Members = append(v.Members, Member{Name: string(name), Value: e})
			if d.Consume(',') {
				continue
			}
			if d.Consume('}') {
				break
			}
			return Value{}, d.errUnexpected()
		}
	}
	slices.SortFunc(v.Members, compareMembers)
	for i := 1; i < len(v.Members); i++ {
		if v.Members[i-1].Name == v.Members[i].Name {
			return Value{}, d.errorf(d.pos, "object has the name %q twice", v.Members[i].Name)
		}
	}
	d.depth--
	return v, nil
}

// Valid reports whether src is exactly one JSON value that Append accepts: the reading pass alone,
// for the tests that check the passes agree.
func Valid(src []byte) bool {
	d := get(src)
	defer put(d)
	d.rules = strict
	_, err := d.read(nil)
	return err == nil && d.End() == nil
}
