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
	"fmt"
	"hash/maphash"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// checkFoldedNames fails with a *token.InputError if an object of params, at any depth, has two
// member names that Go's encoding/json matches to one struct field (see the package doc): names
// whose folds, as encoding/json folds them, are equal. The top-level members named in omit are not
// bound, so neither their names nor anything inside them counts. Text that is not JSON fails too,
// as the codec would fail it.
//
// It runs on the client's params before any token is authenticated, so its cost is linear in their
// size: each name is folded once, an object of up to foldPairwise members compares its folded names
// pairwise, and a larger one looks up their seeded hashes in a map (no allocation per member).
func checkFoldedNames(params []byte, omit []string) error {
	w := walkers.Get().(*foldWalker)
	w.d, w.src = canonical.GetDecoder(params), params
	defer func() {
		canonical.PutDecoder(w.d)
		w.d, w.src = nil, nil
		// Do not keep scratch space grown by an unusual request alive forever.
		if cap(w.name) <= 4<<10 && cap(w.folded) <= 64<<10 && cap(w.spans) <= 4096 {
			walkers.Put(w)
		}
	}()
	if err := w.value(0, omit); err != nil {
		return err
	}
	if err := w.d.End(); err != nil {
		return &token.InputError{Reason: err.Error()}
	}
	return nil
}

// foldPairwise is the most members an object may have for its folded names to be compared pairwise:
// at most 28 comparisons of short names, cheaper than a map.
const foldPairwise = 8

// walkers keeps the scratch space of the check between requests.
var walkers = sync.Pool{New: func() any { return new(foldWalker) }}

type foldWalker struct {
	d      *canonical.Decoder
	src    []byte
	name   []byte   // scratch: the decoded name being read
	folded []byte   // the folded names of the objects being read, innermost last
	spans  [][2]int // where each name is in folded
}

// value reads the next value, checking the objects in it.
func (w *foldWalker) value(depth int, omit []string) error {
	w.d.SkipSpace()
	off := w.d.Offset()
	if off >= len(w.src) || w.src[off] != '{' && w.src[off] != '[' {
		if err := w.d.SkipValue(); err != nil {
			return &token.InputError{Reason: err.Error()}
		}
		return nil
	}
	if depth++; depth > canonical.MaxParamsDepth {
		return &token.InputError{Reason: fmt.Sprintf("nesting deeper than %d at offset %d", canonical.MaxParamsDepth, off)}
	}
	if w.src[off] == '[' {
		w.d.Consume('[')
		if w.d.Consume(']') {
			return nil
		}
		for {
			if err := w.value(depth, nil); err != nil {
				return err
			}
			if w.d.Consume(',') {
				continue
			}
			if w.d.Consume(']') {
				return nil
			}
			return w.unexpected()
		}
	}
	return w.object(depth, omit)
}

func (w *foldWalker) object(depth int, omit []string) error {
	w.d.Consume('{')
	if w.d.Consume('}') {
		return nil
	}
	base, spanBase := len(w.folded), len(w.spans)
	defer func() { w.folded, w.spans = w.folded[:base], w.spans[:spanBase] }()
	var seen map[uint64]int // past foldPairwise members: a folded name's hash to its sibling's index
	for {
		w.d.SkipSpace()
		at := w.d.Offset()
		var err error
		if w.name, err = w.d.String(w.name[:0]); err != nil {
			return &token.InputError{Reason: err.Error()}
		}
		if !w.d.Consume(':') {
			return w.unexpected()
		}
		if isOmitted(omit, w.name) {
			if err := w.d.SkipValue(); err != nil {
				return &token.InputError{Reason: err.Error()}
			}
		} else {
			start := len(w.folded)
			w.folded = appendFoldedName(w.folded, w.name)
			f := w.folded[start:]
			siblings := w.spans[spanBase:]
			if seen == nil && len(siblings) == foldPairwise {
				seen = make(map[uint64]int, 4*foldPairwise)
				for i, s := range siblings {
					seen[maphash.Bytes(foldSeed, w.folded[s[0]:s[1]])] = i
				}
			}
			if seen == nil {
				if w.foldedAmong(f, siblings) {
					return w.clash(at)
				}
			} else {
				h := maphash.Bytes(foldSeed, f)
				if i, ok := seen[h]; ok {
					s := siblings[i]
					// Equal hashes of unequal names (a 2^-64 chance under a seed no client knows):
					// compare with every sibling.
					if bytes.Equal(w.folded[s[0]:s[1]], f) || w.foldedAmong(f, siblings) {
						return w.clash(at)
					}
				} else {
					seen[h] = len(siblings)
				}
			}
			w.spans = append(w.spans, [2]int{start, len(w.folded)})
			if err := w.value(depth, nil); err != nil {
				return err
			}
		}
		if w.d.Consume(',') {
			continue
		}
		if w.d.Consume('}') {
			return nil
		}
		return w.unexpected()
	}
}

// foldedAmong reports whether one of siblings folds to f.
func (w *foldWalker) foldedAmong(f []byte, siblings [][2]int) bool {
	for _, s := range siblings {
		if bytes.Equal(w.folded[s[0]:s[1]], f) {
			return true
		}
	}
	return false
}

// foldSeed seeds the hashes of folded names: unknown to clients, so they cannot choose names whose
// hashes collide.
var foldSeed = maphash.MakeSeed()

// clash reports the name just read, at offset at, and its fold. The reason is for the server's logs
// only (the Guard answers the client with the fixed InvalidParams), like every InputError's.
func (w *foldWalker) clash(at int) error {
	return &token.InputError{Reason: fmt.Sprintf(
		"the member name %.64q at offset %d folds to %.64q as a sibling's does: encoding/json matches both to one "+
			"struct field (see mcpstate.CaseSensitiveDecoding)", w.name, at, w.folded[w.spans[len(w.spans)-1][1]:])}
}

func (w *foldWalker) unexpected() error {
	return &token.InputError{Reason: fmt.Sprintf("unexpected data at offset %d", w.d.Offset())}
}

// isOmitted reports whether name is one of omit, without converting name to a string.
func isOmitted(omit []string, name []byte) bool {
	for _, n := range omit { //nolint:modernize // string(name) in a comparison does not allocate
		if n == string(name) {
			return true
		}
	}
	return false
}

// appendFoldedName appends in folded as encoding/json folds member names to match them to struct
// fields (its appendFoldedName, in fold.go of Go 1.26): ASCII letters to upper case, every other rune
// to the smallest rune of its Unicode simple-folding orbit. Two names fold equal exactly when
// bytes.EqualFold holds for them, which is how encoding/json matches a name that is not a field's
// exact name: "k", "K" and the Kelvin sign U+212A fold to "K", "s", "S" and the long s U+017F to "S".
func appendFoldedName(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

// foldRune returns the smallest rune of r's simple-folding orbit, as encoding/json's foldRune does.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
