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

package check

import (
	"bytes"
	"encoding/binary"
)

// leakWindow is the length of the runs of secret bytes the leak scanner looks for: any 16
// consecutive bytes of a key or of the token's random part, 128 bits that no output holds by
// chance. A key cut short in a log line is caught as long as 16 of its bytes are left.
const leakWindow = 16

// leakScanner finds secret bytes in what a consumer writes, in the spellings the languages of the
// consumers print bytes in. Each spelling is first turned back into bytes (a view), and every
// leakWindow-byte run of every view is looked up among the runs of the secrets:
//
//   - raw: the text as it is (a key written as bytes; the token, which is text);
//   - escapes: \xHH, \n, \t, \r, \0, \\, \', \" decoded (Python's bytes repr b'\x8f…', Go's %q,
//     Rust's b"…"), the other characters kept as their UTF-8 bytes;
//   - decimal: the sequence of the decimal numbers of the text, whatever separates them ([1, 2, 3],
//     1,2,3, a Uint8Array or a Rust Vec<u8> printed with Debug, a JSON "data":[…] of a Node Buffer,
//     across lines too);
//   - hex: the text lowercased, \x and 0x dropped, and everything but hex digits dropped, decoded
//     at both nibble offsets (any case; bytes run together or apart: "0102", "01:02", "01 02",
//     Node's <Buffer 01 02 …>, 0x01, 0x02);
//   - base64: every run of base64 characters, decoded at each of the four character offsets with
//     both alphabets at once (+/ and -_), so that a key inside a larger base64 text, at any byte
//     offset of what was encoded, is found; and the same once whitespace is removed, for base64
//     wrapped over lines.
//
// A key at byte offset o of an encoded blob lies, in the blob's base64, on characters that begin at
// a multiple of 4 only when o is a multiple of 3; decoding the text at each character offset and
// looking at every byte of the result finds the run at any o.
type leakScanner struct {
	runs     map[[leakWindow]byte]int // every run of a secret to the secret's index
	prefixes map[uint32]struct{}      // the first 4 bytes of each run: a cheap first test
}

func newLeakScanner(secrets [][]byte) *leakScanner {
	s := &leakScanner{runs: map[[leakWindow]byte]int{}, prefixes: map[uint32]struct{}{}}
	for i, sec := range secrets {
		for o := 0; o+leakWindow <= len(sec); o++ {
			var w [leakWindow]byte
			copy(w[:], sec[o:])
			s.runs[w] = i
			s.prefixes[binary.LittleEndian.Uint32(w[:4])] = struct{}{}
		}
	}
	return s
}

// leak is one secret found: which secret, in which view.
type leak struct {
	secret int
	view   string
}

// scan returns the leaks in text, at most one per secret and view.
func (s *leakScanner) scan(text []byte) []leak {
	var out []leak
	seen := map[leak]bool{}
	add := func(view string, b []byte) {
		for o := 0; o+leakWindow <= len(b); o++ {
			if _, ok := s.prefixes[binary.LittleEndian.Uint32(b[o:])]; !ok {
				continue
			}
			var w [leakWindow]byte
			copy(w[:], b[o:])
			if i, ok := s.runs[w]; ok && !seen[leak{i, view}] {
				seen[leak{i, view}] = true
				out = append(out, leak{i, view})
			}
		}
	}
	add("raw", text)
	add("escaped", unescape(text))
	for _, run := range decimals(text) {
		add("decimal", run)
	}
	hex := hexDigits(text)
	add("hex", decodeHex(hex))
	if len(hex) > 0 {
		add("hex", decodeHex(hex[1:]))
	}
	for _, t := range [][]byte{text, removeSpace(text)} {
		for _, run := range base64Runs(t) {
			for off := 0; off < 4 && off < len(run); off++ {
				add("base64", decodeBase64Any(run[off:]))
			}
		}
	}
	return out
}

// unescape decodes the escapes of a bytes literal; everything else is kept.
func unescape(t []byte) []byte {
	out := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		if t[i] != '\\' || i+1 >= len(t) {
			out = append(out, t[i])
			continue
		}
		c := t[i+1]
		if c == 'x' && i+3 < len(t) && isHex(t[i+2]) && isHex(t[i+3]) {
			out = append(out, hexVal(t[i+2])<<4|hexVal(t[i+3]))
			i += 3
			continue
		}
		if b, ok := map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '0': 0, '\\': '\\', '\'': '\'', '"': '"',
			'a': 7, 'b': 8, 'f': 12, 'v': 11}[c]; ok {
			out = append(out, b)
			i++
			continue
		}
		out = append(out, t[i])
	}
	return out
}

// decimals are the runs of the decimal numbers of t as bytes, whatever separates them; a number
// over 255 ends a run, since no secret byte is one.
func decimals(t []byte) [][]byte {
	var out [][]byte
	var cur []byte
	for i := 0; i < len(t); {
		if t[i] < '0' || t[i] > '9' {
			i++
			continue
		}
		n, j := 0, i
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			if n <= 255 {
				n = n*10 + int(t[j]-'0')
			}
			j++
		}
		if n > 255 || j-i > 3 {
			out, cur = append(out, cur), nil
		} else {
			cur = append(cur, byte(n))
		}
		i = j
	}
	return append(out, cur)
}

// hexDigits keeps the hex digits of t, lowercased, after dropping the \x and 0x prefixes.
func hexDigits(t []byte) []byte {
	t = bytes.ToLower(t)
	t = bytes.ReplaceAll(t, []byte(`\x`), nil)
	t = bytes.ReplaceAll(t, []byte("0x"), nil)
	out := make([]byte, 0, len(t))
	for _, c := range t {
		if isHex(c) {
			out = append(out, c)
		}
	}
	return out
}

func decodeHex(h []byte) []byte {
	out := make([]byte, 0, len(h)/2)
	for i := 0; i+1 < len(h); i += 2 {
		out = append(out, hexVal(h[i])<<4|hexVal(h[i+1]))
	}
	return out
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func removeSpace(t []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, t)
}

// b64 maps a character of either base64 alphabet to its 6 bits, 0xff for any other.
var b64 = func() (m [256]byte) {
	for i := range m {
		m[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		m[c] = byte(i)
	}
	m['-'], m['_'] = 62, 63
	return m
}()

// base64Runs are the runs of at least leakWindow*4/3 base64 characters of t (shorter ones cannot
// hold a run of secret bytes).
func base64Runs(t []byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(t); {
		if b64[t[i]] == 0xff {
			i++
			continue
		}
		j := i
		for j < len(t) && b64[t[j]] != 0xff {
			j++
		}
		if j-i >= leakWindow*4/3 {
			out = append(out, t[i:j])
		}
		i = j
	}
	return out
}

// decodeBase64Any decodes the whole groups of 4 characters of run, either alphabet, no padding.
func decodeBase64Any(run []byte) []byte {
	out := make([]byte, 0, len(run)*3/4)
	for i := 0; i+4 <= len(run); i += 4 {
		v := uint32(b64[run[i]])<<18 | uint32(b64[run[i+1]])<<12 | uint32(b64[run[i+2]])<<6 | uint32(b64[run[i+3]])
		out = append(out, byte(v>>16), byte(v>>8), byte(v))
	}
	return out
}
