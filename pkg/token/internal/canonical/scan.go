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
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// This file is the scanner: the lexical rules of the package comment, shared by the encoder
// (encode.go), the syntax-only SkipValue and the tests' tree decoder (tree_test.go).

// SyntaxError reports why and where a text is not acceptable JSON.
type SyntaxError struct {
	Offset int // byte offset in the input
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: %s at offset %d", e.Msg, e.Offset) }

// Decoder reads one JSON text. Besides the canonical encoder it offers the few primitives a caller
// needs to walk a known structure: Consume, Integer, String, SkipValue and End. The zero value is
// ready after Reset.
type Decoder struct {
	src   []byte
	pos   int
	depth int
	rules rules

	// spaces counts the whitespace runs skipped so far: a container whose reading did not change
	// it has no whitespace inside.
	spaces int

	keys  []byte   // decoded member names that have escapes
	nodes []node   // the values read, in document order (encode.go)
	stack []member // members of the objects being read, innermost last
	mems  []member // members of the objects read, each object's sorted and contiguous
	tmp   []byte   // scratch for decoding escaped strings and for formatting floats
}

// Reset makes d read src from the start.
func (d *Decoder) Reset(src []byte) {
	d.src, d.pos, d.depth, d.spaces = src, 0, 0, 0
	d.rules = rules{maxDepth: MaxDepth}
	d.keys, d.nodes, d.stack, d.mems, d.tmp = d.keys[:0], d.nodes[:0], d.stack[:0], d.mems[:0], d.tmp[:0]
}

func (d *Decoder) errorf(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) errUnexpected() error {
	if d.pos >= len(d.src) {
		return d.errorf(d.pos, "unexpected end of input")
	}
	return d.errorf(d.pos, "unexpected byte %q", d.src[d.pos])
}

func (d *Decoder) skipSpace() {
	start := d.pos
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			if d.pos != start {
				d.spaces++
			}
			return
		}
	}
	if d.pos != start {
		d.spaces++
	}
}

// SkipSpace moves past whitespace.
func (d *Decoder) SkipSpace() { d.skipSpace() }

// Offset is the position of the decoder in its input.
func (d *Decoder) Offset() int { return d.pos }

// Consume skips whitespace and then c, reporting whether c was there.
func (d *Decoder) Consume(c byte) bool {
	if d.pos < len(d.src) && d.src[d.pos] > ' ' { // no whitespace: the common case
		if d.src[d.pos] == c {
			d.pos++
			return true
		}
		return false
	}
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// End skips whitespace and fails unless the input ends there.
func (d *Decoder) End() error {
	d.skipSpace()
	if d.pos != len(d.src) {
		return d.errorf(d.pos, "unexpected data after the JSON value")
	}
	return nil
}

// Integer reads the next value, which must be an integer literal, and returns its text (JSON allows
// no leading zeros, so the text is the integer's only spelling, except "-0" for 0).
func (d *Decoder) Integer() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	isFloat, err := d.scanNumber()
	if err != nil {
		return nil, err
	}
	if isFloat {
		return nil, d.errorf(start, "number is a float, not an integer")
	}
	return d.src[start:d.pos], nil
}

// String reads the next value, which must be a string, and appends its decoded bytes to dst.
func (d *Decoder) String(dst []byte) ([]byte, error) {
	d.skipSpace()
	if d.pos >= len(d.src) || d.src[d.pos] != '"' {
		return dst, d.errUnexpected()
	}
	return d.decodeString(dst)
}

// SkipValue reads past the next value, checking the syntax only: its objects may repeat a name. It
// is for text whose author is trusted, such as a payload whose MAC verified, and costs no memory.
func (d *Decoder) SkipValue() error {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return d.errUnexpected()
	}
	switch c := d.src[d.pos]; c {
	case '{', '[':
		if err := d.enter(); err != nil {
			return err
		}
		d.pos++
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		if d.Consume(end) {
			d.depth--
			return nil
		}
		for {
			if c == '{' {
				d.skipSpace()
				if d.pos >= len(d.src) || d.src[d.pos] != '"' {
					return d.errUnexpected()
				}
				if err := d.skipString(); err != nil {
					return err
				}
				if !d.Consume(':') {
					return d.errUnexpected()
				}
			}
			if err := d.SkipValue(); err != nil {
				return err
			}
			if d.Consume(',') {
				continue
			}
			if d.Consume(end) {
				d.depth--
				return nil
			}
			return d.errUnexpected()
		}
	case '"':
		return d.skipString()
	case 't':
		return d.skipLiteral("true")
	case 'f':
		return d.skipLiteral("false")
	case 'n':
		return d.skipLiteral("null")
	default:
		_, _, err := d.scanNumberValue()
		return err
	}
}

func (d *Decoder) skipString() error {
	if end, ok := d.plainString(); ok {
		d.pos = end + 1
		return nil
	}
	start := len(d.tmp)
	var err error
	d.tmp, err = d.decodeString(d.tmp)
	d.tmp = d.tmp[:start]
	return err
}

func (d *Decoder) skipLiteral(lit string) error {
	if len(d.src)-d.pos < len(lit) || string(d.src[d.pos:d.pos+len(lit)]) != lit {
		return d.errorf(d.pos, "invalid literal")
	}
	d.pos += len(lit)
	return nil
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > d.rules.maxDepth {
		return d.errorf(d.pos, "nesting deeper than %d", d.rules.maxDepth)
	}
	return nil
}

// plainString reports whether the string at d.pos has neither escapes nor control characters, and
// if so where its closing quote is. Invalid UTF-8 also returns false, for decodeString to report.
func (d *Decoder) plainString() (end int, ok bool) {
	src := d.src
	i := d.pos + 1
	for {
		// Find the next special byte (a control byte, '"', '\\' or non-ASCII), eight bytes at a
		// time. In each term of the mask the lowest set high bit marks a special byte exactly
		// (a borrow only carries out of a byte that is itself special), so its position is the
		// first special byte.
		if i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i:])
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			q, b := x^(ones*'"'), x^(ones*'\\')
			m := ((x-ones*0x20)&^x | (q-ones)&^q | (b-ones)&^b | x) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		} else {
			for i < len(src) && byteClass[src[i]] == 0 {
				i++
			}
			if i >= len(src) {
				return 0, false
			}
		}
		switch c := src[i]; {
		case c == '"':
			return i, true
		case c >= 0x80:
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, false
			}
			i += n
		default:
			return 0, false
		}
	}
}

// scanNumber moves past a JSON number literal and reports whether it is a float.
func (d *Decoder) scanNumber() (isFloat bool, err error) {
	src, i := d.src, d.pos
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = skipDigits(src, i+1)
	default:
		d.pos = i
		return false, d.errUnexpected()
	}
	ok := true
	if i < len(src) && src[i] == '.' {
		isFloat = true
		i, ok = scanDigits(src, i+1)
	}
	if ok && i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		isFloat = true
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		i, ok = scanDigits(src, i)
	}
	d.pos = i
	if !ok {
		return false, d.errUnexpected()
	}
	return isFloat, nil
}

// scanNumberValue moves past a number and returns its literal, checking that a float is in range
// and, if the rules limit them, that an integer has at most rules.maxIntDigits digits.
func (d *Decoder) scanNumberValue() (lit []byte, isFloat bool, err error) {
	start := d.pos
	if isFloat, err = d.scanNumber(); err != nil {
		return nil, false, err
	}
	lit = d.src[start:d.pos]
	if !isFloat && d.rules.maxIntDigits > 0 {
		digits := len(lit)
		if lit[0] == '-' {
			digits--
		}
		if digits > d.rules.maxIntDigits {
			return nil, false, d.errorf(start, "integer of %d digits: at most %d are accepted", digits, d.rules.maxIntDigits)
		}
	}
	if isFloat && !plainFloatInRange(lit) {
		if _, err := parseFloat(lit); err != nil {
			return nil, false, d.errorf(start, "%v", err)
		}
	}
	return lit, isFloat, nil
}

// plainFloatInRange reports, without parsing it, that the float literal lit is within the float64
// range because it has no exponent and at most 308 integer digits (below 1e308; the largest
// float64 is about 1.8e308): the common case of prices and ratios, spared strconv.ParseFloat.
// Literals too small for a float64 read as zero, which is not an error.
func plainFloatInRange(lit []byte) bool {
	dot := bytes.IndexByte(lit, '.')
	if dot < 0 || dot > 308 {
		return false
	}
	for _, c := range lit[dot+1:] {
		if c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// scanDigits returns the end of the one or more digits at src[i:], or i and false if there is none.
func scanDigits(src []byte, i int) (int, bool) {
	if i >= len(src) || src[i] < '0' || src[i] > '9' {
		return i, false
	}
	return skipDigits(src, i+1), true
}

// skipDigits returns the end of the digits, if any, at src[i:].
func skipDigits(src []byte, i int) int {
	for i < len(src) && src[i] >= '0' && src[i] <= '9' {
		i++
	}
	return i
}

// parseFloat reads a float literal as Erlang's json module does (see the package comment).
func parseFloat(lit []byte) (float64, error) {
	if bytes.IndexByte(lit, '.') < 0 && (lit[0] == '0' || lit[0] == '-' && lit[1] == '0') {
		return 0, nil // "0e…" and "-0e…" keep no sign
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return 0, fmt.Errorf("float %.40q is out of range", lit)
	}
	return f, nil
}

// byteClass sorts the bytes of a JSON string: 0 copies as is.
var byteClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	for c := 0x80; c < 0x100; c++ {
		t[c] = 2
	}
	return t
}()

// decodeString appends the bytes of the string at d.pos to dst.
func (d *Decoder) decodeString(dst []byte) ([]byte, error) {
	src := d.src
	i := d.pos + 1
	run := i
	for i < len(src) {
		for i < len(src) && byteClass[src[i]] == 0 {
			i++
		}
		if i >= len(src) {
			break
		}
		c := src[i]
		if byteClass[c] == 2 {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				return dst, d.errorf(i, "invalid UTF-8 in string")
			}
			i += n
			continue
		}
		switch {
		case c == '"':
			dst = append(dst, src[run:i]...)
			d.pos = i + 1
			return dst, nil
		case c < 0x20:
			return dst, d.errorf(i, "control character %#02x in string", c)
		}
		// A backslash.
		dst = append(dst, src[run:i]...)
		if i+1 >= len(src) {
			return dst, d.errorf(i, "unterminated escape")
		}
		switch e := src[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst, i = append(dst, '\b'), i+2
		case 'f':
			dst, i = append(dst, '\f'), i+2
		case 'n':
			dst, i = append(dst, '\n'), i+2
		case 'r':
			dst, i = append(dst, '\r'), i+2
		case 't':
			dst, i = append(dst, '\t'), i+2
		case 'u':
			r, ok := hex4(src, i+2)
			if !ok {
				return dst, d.errorf(i, "invalid \\u escape")
			}
			n := 6
			if r >= 0xD800 && r <= 0xDBFF {
				lo, ok := rune(0), false
				if i+7 < len(src) && src[i+6] == '\\' && src[i+7] == 'u' {
					lo, ok = hex4(src, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return dst, d.errorf(i, "high surrogate escape without a low surrogate")
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				n = 12
			} else if r >= 0xDC00 && r <= 0xDFFF {
				return dst, d.errorf(i, "lone low surrogate escape")
			}
			dst = utf8.AppendRune(dst, r)
			i += n
		default:
			return dst, d.errorf(i, "invalid escape \\%c", e)
		}
		run = i
	}
	return dst, d.errorf(i, "unterminated string")
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
