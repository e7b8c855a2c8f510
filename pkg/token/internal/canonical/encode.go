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
	"slices"
)

// The encoder works in two passes over a flat list of nodes, so that its cost is O(n log n) in the
// size of the input whatever the order of its members:
//
//  1. read checks the whole text and records every value as a node, in document order, with its
//     span in the input. An object's members are sorted once, when the object closes, and moved to
//     d.mems as one contiguous run: a member is moved once, however deep it sits, and nothing
//     nested is copied at all.
//  2. emit writes the canonical form, walking the nodes: a value whose text is already canonical
//     (no whitespace, members in order, plain strings, canonical numbers; the common case for
//     anything a canonical encoder wrote, such as a payload) is copied in one piece, anything else
//     is rebuilt from its parts.
//
// Text that is canonical already skips both passes: fast.go checks it in one pass and copies it.
//
// An encoder that writes while it reads and then sorts what it wrote copies everything nested below
// an unsorted object once per unsorted level above it: quadratic in the depth.

// rules are what one canonicalization accepts.
type rules struct {
	maxDepth int
	// firstWins keeps the first of repeated member names, as Elixir's JSON.decode does (Snodo's
	// open); otherwise a repeated name is an error.
	firstWins bool
	// maxIntDigits, if not zero, is the most digits an integer may have.
	maxIntDigits int
}

type kind uint8

const (
	kindLiteral kind = iota // true, false, null
	kindString
	kindNumber
	kindArray
	kindObject
)

// node is one value of the input.
type node struct {
	start, end int32 // the value's text in src
	next       int32 // the index of the node after this value and all the values inside it
	mems, nmem int32 // objects: their members are d.mems[mems:mems+nmem], in canonical order
	kind       kind
	canon      bool // src[start:end] is already canonical
}

// member is one member of an object.
type member struct {
	// prefix is the name's first eight bytes, big-endian and zero-padded: unequal prefixes order two
	// names as their bytes do, which settles almost every comparison without a call to bytes.Compare.
	prefix uint64
	name   int32 // the decoded name is src[name:name+nlen], or d.keys[name:name+nlen] if escaped
	nlen   int32 //
	quoted int32 // where the name's opening quote is in src
	value  int32 // the node of the value
	esc    bool  // the name has escapes: decoded into d.keys
	drop   bool  // left out of the output: omitted, or a repeat under firstWins
}

func (d *Decoder) key(m *member) []byte {
	if m.esc {
		return d.keys[m.name : m.name+m.nlen]
	}
	return d.src[m.name : m.name+m.nlen]
}

// compare orders members by name, then by position, so that the first of repeated names sorts first.
func (d *Decoder) compare(a, b member) int {
	if c := d.compareNames(&a, &b); c != 0 {
		return c
	}
	return int(a.value - b.value)
}

func (d *Decoder) compareNames(a, b *member) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	return bytes.Compare(d.key(a), d.key(b))
}

// canonical appends the canonical form of the single value of d's input to dst. object requires it
// to be an object; omit names the top-level members to leave out (still checked).
func (d *Decoder) canonical(dst []byte, r rules, object bool, omit []string) ([]byte, error) {
	d.rules = r
	if len(d.src) > maxInput {
		return dst, d.errorf(0, "text of %d bytes is longer than %d", len(d.src), maxInput)
	}
	d.skipSpace()
	if object && (d.pos >= len(d.src) || d.src[d.pos] != '{') {
		return dst, d.errorf(d.pos, "not a JSON object")
	}
	start := d.pos
	if d.isCanonical(omit) {
		if end := d.pos; d.End() == nil {
			return append(dst, d.src[start:end]...), nil
		}
	}
	d.pos, d.depth = start, 0
	root, err := d.read(omit)
	if err != nil {
		return dst, err
	}
	if err := d.End(); err != nil {
		return dst, err
	}
	return d.emit(dst, root), nil
}

// maxInput is the longest text the encoder reads: its offsets are int32, to keep nodes small.
const maxInput = 1<<31 - 1

// read reads the next value into nodes and returns its index. omit applies if it is an object.
func (d *Decoder) read(omit []string) (int32, error) {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return 0, d.errUnexpected()
	}
	i := int32(len(d.nodes))
	// Appended zero and filled in place: a node built whole and then copied stalls the store
	// forwarding of the copy, which measurably slows the encoder.
	d.nodes = append(d.nodes, node{})
	d.nodes[i].start, d.nodes[i].canon = int32(d.pos), true
	var err error
	switch c := d.src[d.pos]; c {
	case '{':
		d.nodes[i].kind = kindObject
		err = d.readObject(i, omit)
	case '[':
		d.nodes[i].kind = kindArray
		err = d.readArray(i)
	case '"':
		d.nodes[i].kind = kindString
		if end, ok := d.plainString(); ok {
			d.pos = end + 1
		} else {
			d.nodes[i].canon = false
			err = d.skipString()
		}
	case 't':
		err = d.skipLiteral("true")
	case 'f':
		err = d.skipLiteral("false")
	case 'n':
		err = d.skipLiteral("null")
	default:
		if c != '-' && (c < '0' || c > '9') {
			return 0, d.errUnexpected()
		}
		d.nodes[i].kind = kindNumber
		var lit []byte
		var isFloat bool
		if lit, isFloat, err = d.scanNumberValue(); err == nil {
			d.nodes[i].canon = canonicalNumber(lit, isFloat)
		}
	}
	if err != nil {
		return 0, err
	}
	d.nodes[i].end, d.nodes[i].next = int32(d.pos), int32(len(d.nodes))
	return i, nil
}

// readMember is read(nil) for an array element or a member's value, with the most common of them,
// a string without escapes right after the ',' '[' or ':', recorded without read's dispatch.
func (d *Decoder) readMember() (int32, error) {
	if d.pos < len(d.src) && d.src[d.pos] == '"' {
		if end, ok := d.plainString(); ok {
			i := int32(len(d.nodes))
			d.nodes = append(d.nodes, node{})
			n := &d.nodes[i]
			n.start, n.end, n.next, n.kind, n.canon = int32(d.pos), int32(end+1), i+1, kindString, true
			d.pos = end + 1
			return i, nil
		}
	}
	return d.read(nil)
}

// canonicalNumber reports whether lit is its own canonical form.
func canonicalNumber(lit []byte, isFloat bool) bool {
	if !isFloat {
		return len(lit) != 2 || lit[0] != '-' // "-0" is written 0
	}
	return isShortDecimal(lit)
}

func (d *Decoder) readArray(i int32) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '['
	spaces, canon := d.spaces, true
	if !d.Consume(']') {
		for {
			j, err := d.readMember()
			if err != nil {
				return err
			}
			canon = canon && d.nodes[j].canon
			if d.Consume(',') {
				continue
			}
			if d.Consume(']') {
				break
			}
			return d.errUnexpected()
		}
	}
	d.nodes[i].canon = canon && d.spaces == spaces
	d.depth--
	return nil
}

func (d *Decoder) readObject(i int32, omit []string) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	spaces, canon, sorted := d.spaces, true, true
	base := len(d.stack)
	if !d.Consume('}') {
		for {
			d.skipSpace()
			if d.pos >= len(d.src) || d.src[d.pos] != '"' {
				return d.errUnexpected()
			}
			// Appended zero and filled in place, as read does its nodes: a member built whole and
			// then copied stalls the store forwarding of the copy. Held by index: reading the value
			// may grow d.stack.
			k := len(d.stack)
			d.stack = append(d.stack, member{})
			m := &d.stack[k]
			m.quoted = int32(d.pos)
			if end, ok := d.plainString(); ok {
				m.name, m.nlen = int32(d.pos+1), int32(end-d.pos-1)
				m.prefix = srcPrefix(d.src, d.pos+1, end-d.pos-1)
				d.pos = end + 1
			} else {
				m.name, m.esc = int32(len(d.keys)), true
				var err error
				if d.keys, err = d.decodeString(d.keys); err != nil {
					return err
				}
				m.nlen = int32(len(d.keys)) - m.name
				m.prefix = namePrefix(d.keys[m.name:])
				canon = false
			}
			if k > base && sorted {
				// Unequal prefixes settle the order without a call, as they almost always do.
				if p := &d.stack[k-1]; p.prefix > m.prefix || p.prefix == m.prefix && d.compareNames(p, m) >= 0 {
					sorted = false
				}
			}
			if len(omit) > 0 && isOmitted(omit, d.key(m)) {
				m.drop, canon = true, false
			}
			if d.pos < len(d.src) && d.src[d.pos] == ':' {
				d.pos++ // the common case, without Consume's call
			} else if !d.Consume(':') {
				return d.errUnexpected()
			}
			v, err := d.readMember()
			if err != nil {
				return err
			}
			d.stack[k].value = v
			canon = canon && d.nodes[v].canon
			// ',' or '}' right after the value, the common case, without Consume's calls.
			if pos := d.pos; pos < len(d.src) {
				if c := d.src[pos]; c == ',' {
					d.pos = pos + 1
					continue
				} else if c == '}' {
					d.pos = pos + 1
					break
				}
			}
			if d.Consume(',') {
				continue
			}
			if d.Consume('}') {
				break
			}
			return d.errUnexpected()
		}
	}
	ms := d.stack[base:]
	if !sorted {
		canon = false
		if err := d.sortMembers(ms); err != nil {
			return err
		}
	}
	d.nodes[i].mems, d.nodes[i].nmem = int32(len(d.mems)), int32(len(ms))
	d.nodes[i].canon = canon && d.spaces == spaces
	d.mems = append(d.mems, ms...)
	d.stack = d.stack[:base]
	d.depth--
	return nil
}

// sortMembers sorts ms by compare and then finds repeated names: an error, or under firstWins all
// but the first dropped.
func (d *Decoder) sortMembers(ms []member) error {
	d.sortByName(ms)
	for k := 1; k < len(ms); k++ {
		if ms[k-1].prefix != ms[k].prefix || d.compareNames(&ms[k-1], &ms[k]) != 0 {
			continue
		}
		if !d.rules.firstWins {
			// %.64q: the name is the client's and may be megabytes long; 64 characters name it
			// well enough, as the fold check's errors do.
			return d.errorf(d.pos, "object has the name %.64q twice", d.key(&ms[k]))
		}
		ms[k].drop = true
	}
	return nil
}

// sortByName sorts ms by compare: by insertion for the few members most objects have (no calls for
// names whose prefixes differ), else with slices.SortFunc.
func (d *Decoder) sortByName(ms []member) {
	if len(ms) > 12 {
		slices.SortFunc(ms, d.compare)
		return
	}
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		j := i
		for ; j > 0; j-- {
			p := &ms[j-1]
			if p.prefix < m.prefix || p.prefix == m.prefix && d.compare(*p, m) < 0 {
				break
			}
			ms[j] = *p
		}
		ms[j] = m
	}
}

// emit appends the canonical form of node i, read without error.
func (d *Decoder) emit(dst []byte, i int32) []byte {
	n := &d.nodes[i]
	if n.canon {
		return append(dst, d.src[n.start:n.end]...)
	}
	switch n.kind {
	case kindString:
		d.tmp = d.tmp[:0]
		d.pos = int(n.start)
		d.tmp, _ = d.decodeString(d.tmp) // read checked it
		return appendEscaped(dst, d.tmp)
	case kindNumber:
		return appendNumber(dst, d.src[n.start:n.end])
	case kindArray:
		dst = append(dst, '[')
		for j := i + 1; j < n.next; j = d.nodes[j].next {
			if j > i+1 {
				dst = append(dst, ',')
			}
			dst = d.emit(dst, j)
		}
		return append(dst, ']')
	default: // kindObject; literals are always canonical
		dst = append(dst, '{')
		first := true
		for k := n.mems; k < n.mems+n.nmem; k++ {
			m := &d.mems[k]
			if m.drop {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			if m.esc {
				dst = appendEscaped(dst, d.key(m))
			} else {
				dst = append(dst, d.src[m.quoted:m.name+m.nlen+1]...) // a plain name is canonical
			}
			dst = append(dst, ':')
			dst = d.emit(dst, m.value)
		}
		return append(dst, '}')
	}
}

// appendNumber appends the canonical form of the number literal lit.
func appendNumber(dst, lit []byte) []byte {
	isFloat := bytes.ContainsAny(lit, ".eE")
	if !isFloat {
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return append(dst, '0')
		}
		return append(dst, lit...)
	}
	if out, ok := appendShortDecimal(dst, lit); ok {
		return out
	}
	f, _ := parseFloat(lit) // read checked the range
	return AppendFloat(dst, f)
}

// srcPrefix is namePrefix(src[off:off+n]) without copying when eight bytes can be read at off,
// which is nearly always the case: a name is followed by at least its quote, a colon and a value.
func srcPrefix(src []byte, off, n int) uint64 {
	if off+8 > len(src) {
		return namePrefix(src[off : off+n])
	}
	x := binary.BigEndian.Uint64(src[off:])
	if n >= 8 {
		return x
	}
	return x &^ (^uint64(0) >> (8 * n)) // keep the first n bytes
}

// namePrefix returns the prefix of member for name.
func namePrefix(name []byte) uint64 {
	if len(name) >= 8 {
		return binary.BigEndian.Uint64(name)
	}
	var b [8]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

const hexUpper = "0123456789ABCDEF"

// appendEscaped writes s, valid UTF-8, as a JSON string the way Elixir does.
func appendEscaped[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[run:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xF])
		}
		run = i + 1
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}
