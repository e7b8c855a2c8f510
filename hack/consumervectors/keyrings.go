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

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// keyringsFile is keyrings.json.
type keyringsFile struct {
	Comment []string         `json:"comment"`
	Limits  limits           `json:"limits"`
	Valid   []validKeyring   `json:"valid"`
	Invalid []invalidKeyring `json:"invalid"`
}

type limits struct {
	MaxKeys          int `json:"maxKeys"`
	MinSecretBytes   int `json:"minSecretBytes"`
	MaxIDLength      int `json:"maxIdLength"`
	MaxDocumentBytes int `json:"maxDocumentBytes"`
}

// file is the bytes of one keyring.json: Data always (base64 in the JSON), Text too when the bytes
// are UTF-8 (for the reader), and PadTo when the file is Data followed by spaces up to PadTo bytes
// (the documents around the 1 MiB limit, which would make this file large).
type file struct {
	Data  []byte `json:"data"`
	Text  string `json:"text,omitempty"`
	PadTo int    `json:"padTo,omitempty"`
}

type validKeyring struct {
	Name string `json:"name"`
	file
	Fingerprint string    `json:"fingerprint"`
	Keys        []keyInfo `json:"keys"`
}

type keyInfo struct {
	ID        string `json:"id"`
	Secret    []byte `json:"secret"` // base64 in the JSON
	PythonKid string `json:"pythonKid"`
}

type invalidKeyring struct {
	Name string `json:"name"`
	file
	// Rule is the rule of Parse the file breaks (see keyringsComment).
	Rule string `json:"rule"`
	// Entry is the index of the keys entry the error names, absent when it names none.
	Entry *int `json:"entry,omitempty"`
	// Error is Go's keyring.Parse error, for reference: a consumer need not match it word for word,
	// but must name the same entry.
	Error string `json:"error"`
}

// The rules of keyring.Parse, as keyrings.json names them.
const (
	ruleSize       = "size"
	ruleJSON       = "json"
	ruleSchema     = "schema"
	ruleDuplicates = "duplicates"
	ruleLimits     = "limits"
	ruleID         = "id"
	ruleBase64     = "base64"
)

var keyringsComment = []string{
	"Made by `go run ./hack/consumervectors` from pkg/keyring; do not edit. See docs/consumers.md.",
	"Each file's bytes are `data` (standard base64); `text` is the same bytes as text when they are UTF-8.",
	"When `padTo` is set, the file is `data` followed by ASCII spaces (0x20) up to `padTo` bytes in all.",
	"valid: the file parses; `keys` are its keys in order (secret: standard base64 of the key bytes;",
	"pythonKid: the kid python-sdk mcp 2.3.0 derives from the key, 8 lowercase hex digits), and",
	"`fingerprint` is keyring.Keyring.Fingerprint(), which every consumer acknowledges.",
	"invalid: the file must be refused as a whole; `rule` names the broken rule, `entry` the keys[i]",
	"the error must name (when set), and `error` is Go's message, for reference.",
	"Rules: size (at most maxDocumentBytes bytes), json (one well-formed JSON value, nothing after it),",
	"schema (an object with exactly the field \"keys\", a list of objects with exactly \"id\" and \"secret\",",
	"both strings; names are case-sensitive), duplicates (a field twice in one object, an id twice),",
	"limits (1 to maxKeys keys, secrets at least minSecretBytes bytes), id (1 to maxIdLength characters",
	"of A-Za-z0-9_-), base64 (secret is canonical standard base64: RFC 4648 alphabet, padded, no line",
	"breaks or spaces, zero padding bits).",
}

// secret returns n deterministic bytes for test key number i: these are test vectors, not keys.
func secret(i, n int) []byte {
	var out []byte
	for block := 0; len(out) < n; block++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("mrtr-consumer-vector-%d-%d", i, block)))
		out = append(out, sum[:]...)
	}
	return out[:n]
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// doc builds a compact keyring.json of (id, secret) pairs.
func doc(pairs ...any) string {
	var b strings.Builder
	b.WriteString(`{"keys":[`)
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%s,"secret":%q}`, strconv.Quote(pairs[i].(string)), b64(pairs[i+1].([]byte)))
	}
	b.WriteString("]}")
	return b.String()
}

// nkeys builds a keyring.json of n keys k0..k(n-1).
func nkeys(n int) string {
	pairs := make([]any, 0, 2*n)
	for i := range n {
		pairs = append(pairs, fmt.Sprintf("k%d", i), secret(100+i, 32))
	}
	return doc(pairs...)
}

func newFile(data []byte, padTo int) file {
	f := file{Data: data, PadTo: padTo}
	if utf8.Valid(data) {
		f.Text = string(data)
	}
	return f
}

// bytesOf returns the whole file f stands for.
func (f file) bytesOf() []byte {
	if f.PadTo == 0 {
		return f.Data
	}
	return append(bytes.Clone(f.Data), bytes.Repeat([]byte(" "), f.PadTo-len(f.Data))...)
}

var entryRE = regexp.MustCompile(`keys\[(\d+)\]`)

func keyringVectors() (*keyringsFile, error) {
	a, b, c := secret(2, 32), secret(1, 32), secret(3, 32)
	long := secret(4, 1024)
	id32 := strings.Repeat("a", 31) + "Z"

	valid := []struct {
		name  string
		text  string
		padTo int
	}{
		{"one key of 32 bytes", doc("a", a), 0},
		{"two keys: keys[0] seals, both open", doc("a", a, "b", b), 0},
		{"the same two keys in the other order: another keyring, another fingerprint", doc("b", b, "a", a), 0},
		{"three keys, as in the middle of a rotation", doc("k2", c, "k1", b, "k0", a), 0},
		{"eight keys, the most allowed", nkeys(8), 0},
		{"a 1024-byte secret", doc("long", long), 0},
		{"a 33-byte secret (its base64 has no padding)", doc("p0", secret(5, 33)), 0},
		{"a 34-byte secret (its base64 has two padding characters)", doc("p2", secret(6, 34)), 0},
		{"a secret of 32 zero bytes", doc("zero", make([]byte, 32)), 0},
		{"an id of 32 characters, the longest allowed", doc(id32, a), 0},
		{"an id of one character", doc("x", a), 0},
		{"an id with every kind of allowed character", doc("Az09_-", a), 0},
		{"pretty-printed: whitespace does not change the keyring or its fingerprint",
			"{\n  \"keys\": [\n    {\n      \"id\": \"a\",\n      \"secret\": \"" + b64(a) + "\"\n    }\n  ]\n}\n", 0},
		{"secret before id: field order within an entry does not matter",
			`{"keys":[{"secret":"` + b64(a) + `","id":"a"}]}`, 0},
		{"JSON escapes in names and strings are decoded before any check",
			`{"k\u0065ys":[{"\u0069d":"\u0061","secret":"` + strings.ReplaceAll(b64(a), "/", `\/`) + `"}]}`, 0},
		{"whitespace before and after the object, a final newline", " \t\r\n" + doc("a", a) + "\n\n", 0},
		{"64 hex digits are valid base64 too: the key is the 48 bytes they decode to, not the 32 they spell",
			`{"keys":[{"id":"hex","secret":"` + fmt.Sprintf("%x", a) + `"}]}`, 0},
		{"exactly maxDocumentBytes bytes (padded with spaces)", doc("a", a), keyring.MaxDocumentBytes},
	}
	// The base64 escape case needs a '/' to escape: check the secret has one, or it proves nothing.
	if !strings.Contains(b64(a), "/") {
		return nil, fmt.Errorf("secret a has no '/' in base64: pick another seed")
	}

	out := &keyringsFile{
		Comment: keyringsComment,
		Limits: limits{MaxKeys: keyring.MaxKeys, MinSecretBytes: keyring.MinSecretBytes,
			MaxIDLength: keyring.MaxIDLength, MaxDocumentBytes: keyring.MaxDocumentBytes},
	}
	for _, v := range valid {
		f := newFile([]byte(v.text), v.padTo)
		r, err := keyring.Parse(f.bytesOf())
		if err != nil {
			return nil, fmt.Errorf("valid vector %q: %w", v.name, err)
		}
		vk := validKeyring{Name: v.name, file: f, Fingerprint: r.Fingerprint()}
		for _, k := range r.Keys() {
			vk.Keys = append(vk.Keys, keyInfo{ID: k.ID(), Secret: k.Secret(), PythonKid: k.PythonKid()})
		}
		out.Valid = append(out.Valid, vk)
	}

	short := secret(7, 31)
	sa := b64(a)
	entryA := `{"id":"a","secret":"` + sa + `"}`
	invalid := []struct {
		name, rule string
		data       []byte
		padTo      int
	}{
		{"one byte over maxDocumentBytes (padded with spaces)", ruleSize, []byte(doc("a", a)), keyring.MaxDocumentBytes + 1},
		{"empty file", ruleJSON, nil, 0},
		{"only whitespace", ruleJSON, []byte(" \n"), 0},
		{"a byte-order mark before the object", ruleJSON, append([]byte("\xef\xbb\xbf"), doc("a", a)...), 0},
		{"truncated", ruleJSON, []byte(doc("a", a)[:20]), 0},
		{"a trailing comma in the list", ruleJSON, []byte(`{"keys":[` + entryA + `,]}`), 0},
		{"single quotes", ruleJSON, []byte(`{'keys':[]}`), 0},
		{"a second object after the first", ruleJSON, []byte(doc("a", a) + doc("b", b)), 0},
		{"text after the object", ruleJSON, []byte(doc("a", a) + " x"), 0},
		{"invalid UTF-8 in an id", ruleID, []byte(`{"keys":[{"id":"a` + "\xff" + `","secret":"` + sa + `"}]}`), 0},
		{"a list, not an object", ruleSchema, []byte(`[` + entryA + `]`), 0},
		{"null", ruleSchema, []byte(`null`), 0},
		{"a string", ruleSchema, []byte(`"keys"`), 0},
		{"an empty object: no \"keys\"", ruleSchema, []byte(`{}`), 0},
		{"\"Keys\": names are case-sensitive", ruleSchema, []byte(`{"Keys":[` + entryA + `]}`), 0},
		{"an unknown top-level field beside \"keys\"", ruleSchema, []byte(`{"keys":[` + entryA + `],"version":1}`), 0},
		{"\"keys\" is null", ruleSchema, []byte(`{"keys":null}`), 0},
		{"\"keys\" is an object", ruleSchema, []byte(`{"keys":` + entryA + `}`), 0},
		{"\"keys\" is a string", ruleSchema, []byte(`{"keys":"a"}`), 0},
		{"an entry is null", ruleSchema, []byte(`{"keys":[` + entryA + `,null]}`), 0},
		{"an entry is a string", ruleSchema, []byte(`{"keys":["` + sa + `"]}`), 0},
		{"an entry is a list", ruleSchema, []byte(`{"keys":[["a","` + sa + `"]]}`), 0},
		{"an entry without \"id\"", ruleSchema, []byte(`{"keys":[{"secret":"` + sa + `"}]}`), 0},
		{"an entry without \"secret\"", ruleSchema, []byte(`{"keys":[` + entryA + `,{"id":"b"}]}`), 0},
		{"an unknown field in an entry", ruleSchema, []byte(`{"keys":[` + entryA + `,{"id":"b","secret":"` + b64(b) + `","kid":"x"}]}`), 0},
		{"\"ID\": entry field names are case-sensitive", ruleSchema, []byte(`{"keys":[{"ID":"a","secret":"` + sa + `"}]}`), 0},
		{"an id that is a number", ruleSchema, []byte(`{"keys":[{"id":1,"secret":"` + sa + `"}]}`), 0},
		{"an id that is a huge number", ruleSchema, []byte(`{"keys":[{"id":1e999,"secret":"` + sa + `"}]}`), 0},
		{"a secret that is null", ruleSchema, []byte(`{"keys":[{"id":"a","secret":null}]}`), 0},
		{"a secret that is a list of bytes", ruleSchema, []byte(`{"keys":[{"id":"a","secret":[1,2,3]}]}`), 0},
		{"a secret that is true", ruleSchema, []byte(`{"keys":[{"id":"a","secret":true}]}`), 0},
		{"\"keys\" twice", ruleDuplicates, []byte(`{"keys":[` + entryA + `],"keys":[` + entryA + `]}`), 0},
		{"\"id\" twice in an entry", ruleDuplicates, []byte(`{"keys":[{"id":"a","id":"b","secret":"` + sa + `"}]}`), 0},
		{"\"secret\" twice in an entry", ruleDuplicates, []byte(`{"keys":[{"id":"a","secret":"` + sa + `","secret":"` + b64(b) + `"}]}`), 0},
		{"two entries with one id", ruleDuplicates, []byte(doc("a", a, "b", b, "a", c)), 0},
		{"one id spelled twice, once with an escape", ruleDuplicates,
			[]byte(`{"keys":[` + entryA + `,{"id":"\u0061","secret":"` + b64(b) + `"}]}`), 0},
		{"no keys", ruleLimits, []byte(`{"keys":[]}`), 0},
		{"nine keys, one more than allowed", ruleLimits, []byte(nkeys(9)), 0},
		{"a 31-byte secret", ruleLimits, []byte(doc("a", a, "short", short)), 0},
		{"an empty secret", ruleLimits, []byte(`{"keys":[{"id":"a","secret":""}]}`), 0},
		{"an empty id", ruleID, []byte(doc("", a)), 0},
		{"an id of 33 characters", ruleID, []byte(doc(id32+"b", a)), 0},
		{"an id with a dot", ruleID, []byte(doc("a.b", a)), 0},
		{"an id with a space", ruleID, []byte(doc("a b", a)), 0},
		{"an id with a non-ASCII letter", ruleID, []byte(doc("é", a)), 0},
		{"an id with a slash", ruleID, []byte(doc("a/b", a)), 0},
		{"a secret without its padding", ruleBase64,
			[]byte(`{"keys":[{"id":"p","secret":"` + strings.TrimRight(b64(secret(6, 34)), "=") + `"}]}`), 0},
		{"a secret in the base64url alphabet", ruleBase64, []byte(`{"keys":[{"id":"a","secret":"` + urlAlphabet(secret(8, 32)) + `"}]}`), 0},
		{"a secret with a line break in it", ruleBase64, []byte(`{"keys":[{"id":"a","secret":"` + sa[:20] + `\n` + sa[20:] + `"}]}`), 0},
		{"a secret with a space in it", ruleBase64, []byte(`{"keys":[{"id":"a","secret":"` + sa[:20] + ` ` + sa[20:] + `"}]}`), 0},
		{"a secret with non-zero padding bits", ruleBase64, []byte(`{"keys":[{"id":"p","secret":"` + nonZeroPadding(secret(6, 34)) + `"}]}`), 0},
		{"a secret with a character outside the alphabet", ruleBase64,
			[]byte(`{"keys":[{"id":"a","secret":"` + sa[:10] + `*` + sa[11:] + `"}]}`), 0},
		{"id and secret swapped", ruleID, []byte(`{"keys":[{"id":"` + sa + `","secret":"a"}]}`), 0},
	}
	for _, v := range invalid {
		f := newFile(v.data, v.padTo)
		_, err := keyring.Parse(f.bytesOf())
		if err == nil {
			return nil, fmt.Errorf("invalid vector %q: Parse accepted it", v.name)
		}
		iv := invalidKeyring{Name: v.name, file: f, Rule: v.rule, Error: err.Error()}
		if m := entryRE.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			iv.Entry = &n
		}
		out.Invalid = append(out.Invalid, iv)
	}
	return out, nil
}

// urlAlphabet returns b in base64 with the URL alphabet, which must differ from the standard one
// for the vector to mean anything.
func urlAlphabet(b []byte) string {
	s := base64.URLEncoding.EncodeToString(b)
	if s == b64(b) {
		panic("consumervectors: the base64url vector has neither '+' nor '/': pick another seed")
	}
	return s
}

// nonZeroPadding returns the base64 of b (whose length leaves padding) with the last character
// before the padding changed so that the unused bits are not zero: a lenient decoder ignores them.
func nonZeroPadding(b []byte) string {
	s := b64(b)
	i := strings.IndexByte(s, '=') - 1
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	v := strings.IndexByte(alphabet, s[i])
	return s[:i] + string(alphabet[v|1]) + s[i+1:]
}
