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

// The fast path: text that is already canonical, as everything a canonical encoder wrote is (a
// payload, a principal, a Go client's arguments), is checked in one pass that records nothing and
// then copied whole. The first sign that the text is not canonical (whitespace, an escape, a
// number spelled otherwise, members out of order, an omitted member, anything wrong) ends the pass,
// and the two-pass encoder starts over; it has only the part read so far to read again.

// isCanonical reports whether the value at d.pos is canonical text that the rules accept, moving
// past it if so. omit applies to its members if it is an object.
func (d *Decoder) isCanonical(omit []string) bool {
	if d.pos >= len(d.src) {
		return false
	}
	switch c := d.src[d.pos]; c {
	case '{':
		return d.isCanonicalObject(omit)
	case '[':
		if d.enter() != nil {
			return false
		}
		d.pos++
		if d.pos < len(d.src) && d.src[d.pos] == ']' {
			d.pos++
			d.depth--
			return true
		}
		for {
			if !d.isCanonical(nil) || d.pos >= len(d.src) {
				return false
			}
			switch d.src[d.pos] {
			case ',':
				d.pos++
			case ']':
				d.pos++
				d.depth--
				return true
			default:
				return false
			}
		}
	case '"':
		end, ok := d.plainString()
		d.pos = end + 1
		return ok
	case 't':
		return d.skipLiteral("true") == nil
	case 'f':
		return d.skipLiteral("false") == nil
	case 'n':
		return d.skipLiteral("null") == nil
	default:
		lit, isFloat, err := d.scanNumberValue()
		return err == nil && canonicalNumber(lit, isFloat)
	}
}

func (d *Decoder) isCanonicalObject(omit []string) bool {
	if d.enter() != nil {
		return false
	}
	d.pos++
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		d.depth--
		return true
	}
	var prev []byte
	for {
		if d.pos >= len(d.src) || d.src[d.pos] != '"' {
			return false
		}
		end, ok := d.plainString()
		if !ok {
			return false
		}
		name := d.src[d.pos+1 : end]
		// Strictly increasing names: sorted, and no repeats.
		if prev != nil && string(prev) >= string(name) || isOmitted(omit, name) {
			return false
		}
		prev = name
		d.pos = end + 1
		if d.pos >= len(d.src) || d.src[d.pos] != ':' {
			return false
		}
		d.pos++
		if !d.isCanonical(nil) || d.pos >= len(d.src) {
			return false
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return true
		default:
			return false
		}
	}
}

// isOmitted is slices.Contains written out: string(name) in a comparison never allocates, as an
// argument it may, and this runs for every member of untrusted input.
func isOmitted(omit []string, name []byte) bool {
	for _, n := range omit { //nolint:modernize // see above
		if n == string(name) {
			return true
		}
	}
	return false
}
