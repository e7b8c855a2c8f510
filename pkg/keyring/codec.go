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

package keyring

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Names shared with the operator (DESIGN.md).
const (
	// SecretDataKey is the one data key of the keyring Secret, and the file name of the mounted volume.
	SecretDataKey = "keyring.json"
	// SecretType is the type of the keyring Secret.
	SecretType = "mrtr.dev/keyring"
	// TokenTTLDataKey is the optional second data key of the keyring Secret, and file of the mounted
	// volume beside keyring.json: the longest lifetime of the tokens the servers may seal, in whole
	// seconds (ASCII decimal, 1 to 900), the MRTRKeyring's tokenTTL that its rotation waits out
	// before it drops a key. keyring.json itself is unchanged, so a reader that does not know this
	// file keeps working; one that does refuses to seal longer tokens (Keyring.MaxTokenTTL).
	TokenTTLDataKey = "token-ttl"
	// MaxTokenTTL is the longest token-ttl (MRTR's and the MRTRKeyring's ceiling).
	MaxTokenTTL = 15 * time.Minute
	// EnvVar is the environment variable that carries the keyring.json text (see FromEnv).
	EnvVar = "MRTR_KEYRING"
	// MaxDocumentBytes bounds a keyring.json document: the size limit of a Secret (1 MiB).
	MaxDocumentBytes = 1 << 20
)

// Parse decodes and validates a keyring.json document:
//
//	{"keys":[{"id":"<id>","secret":"<standard base64 of the key bytes>"}, ...]}
//
// It is strict because the document is the contract between the operator and every replica: it
// rejects unknown fields, duplicate object keys, null, values of the wrong type, secrets that are not
// canonical standard base64 (padding, no line breaks), data after the object, and any keyring New
// rejects. Errors name the entry by position (keys[i]) and, when it is valid, by id; they never
// contain key bytes or any part of a secret string.
func Parse(data []byte) (*Keyring, error) {
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("keyring.json: document is %d bytes: at most %d are allowed", len(data), MaxDocumentBytes)
	}
	p := parser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber() // never round a number just to report that it is the wrong type
	keys, err := p.document()
	if err != nil {
		return nil, fmt.Errorf("keyring.json: %w", err)
	}
	r, err := New(keys...)
	if err != nil { // unreachable: document checks everything New does, with better names
		return nil, fmt.Errorf("keyring.json: %w", err)
	}
	return r, nil
}

// Marshal encodes r as keyring.json. The output is deterministic (same keyring, same bytes), so
// writing it back to a Secret is a no-op when nothing changed. It contains the key bytes: it is for
// the Secret and nothing else.
func Marshal(r *Keyring) ([]byte, error) {
	if r == nil {
		return nil, errors.New("keyring: Marshal(nil)")
	}
	type entry struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	doc := struct {
		Keys []entry `json:"keys"`
	}{Keys: make([]entry, len(r.keys))}
	for i, k := range r.keys {
		doc.Keys[i] = entry{ID: k.id, Secret: base64.StdEncoding.EncodeToString(k.bytes())}
	}
	return json.Marshal(doc)
}

// GenerateKey returns a key with id and n bytes from crypto/rand. n must be at least MinSecretBytes.
func GenerateKey(id string, n int) (Key, error) {
	if err := ValidateID(id); err != nil {
		return Key{}, fmt.Errorf("keyring: generate key: %w", err)
	}
	if n < MinSecretBytes {
		return Key{}, fmt.Errorf("keyring: generate key %q: %d bytes requested, at least %d are required", id, n, MinSecretBytes)
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil { // never fails on supported platforms, but say so if it does
		return Key{}, fmt.Errorf("keyring: generate key %q: %w", id, err)
	}
	return newKey(id, b), nil
}

// parser walks the JSON token stream. Walking tokens rather than unmarshalling into a struct is what
// lets it see duplicate object keys, null and exact (case-sensitive) field names, which
// encoding/json's Unmarshal silently accepts.
type parser struct {
	dec *json.Decoder
}

func (p *parser) document() ([]Key, error) {
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, errors.New("document is empty: want {\"keys\":[...]}")
	}
	if err != nil {
		return nil, p.syntax(err, "")
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("document is %s: want an object {\"keys\":[...]}", kind(tok))
	}
	var keys []Key
	seen := false
	for p.dec.More() {
		name, err := p.name("")
		if err != nil {
			return nil, err
		}
		if name != "keys" {
			return nil, fmt.Errorf("unknown field %s at top level: only \"keys\" is allowed", showName(name))
		}
		if seen {
			return nil, errors.New("duplicate field \"keys\" at top level")
		}
		seen = true
		if keys, err = p.keys(); err != nil {
			return nil, err
		}
	}
	if _, err := p.dec.Token(); err != nil { // the closing brace
		return nil, p.syntax(err, "")
	}
	if !seen {
		return nil, errors.New("missing field \"keys\"")
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the keyring object")
	}
	return keys, nil
}

func (p *parser) keys() ([]Key, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err, "in \"keys\"")
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("\"keys\" is %s: want a list of 1 to %d keys", kind(tok), MaxKeys)
	}
	var keys []Key
	ids := make(map[string]int)
	for i := 0; p.dec.More(); i++ {
		if i == MaxKeys {
			return nil, fmt.Errorf("\"keys\" has more than %d entries", MaxKeys)
		}
		k, err := p.entry(i, ids)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if _, err := p.dec.Token(); err != nil { // the closing bracket
		return nil, p.syntax(err, "in \"keys\"")
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("\"keys\" is empty: a keyring needs 1 to %d keys", MaxKeys)
	}
	return keys, nil
}

// entry reads keys[i]. Problems with fields are remembered and reported once the whole object is
// read, so that the error can name the entry by its id even when the bad field comes first.
func (p *parser) entry(i int, ids map[string]int) (Key, error) {
	where := "in keys[" + strconv.Itoa(i) + "]" // not fmt: a keyring is parsed on every pass of its controller
	tok, err := p.dec.Token()
	if err != nil {
		return Key{}, p.syntax(err, where)
	}
	if tok != json.Delim('{') {
		return Key{}, fmt.Errorf("keys[%d] is %s: want an object {\"id\":...,\"secret\":...}", i, kind(tok))
	}
	var (
		id, secret         string
		haveID, haveSecret bool
		problem            error
	)
	note := func(err error) {
		if problem == nil {
			problem = err
		}
	}
	seen := make(map[string]bool, 2)
	for p.dec.More() {
		name, err := p.name(where)
		if err != nil {
			return Key{}, err
		}
		if seen[name] {
			note(fmt.Errorf("duplicate field %s", showName(name)))
		}
		seen[name] = true
		tok, err := p.value(where)
		if err != nil {
			return Key{}, err
		}
		s, isString := tok.(string)
		switch {
		case name != "id" && name != "secret":
			note(fmt.Errorf("unknown field %s: only \"id\" and \"secret\" are allowed", showName(name)))
		case !isString:
			note(fmt.Errorf("%q is %s: want a string", name, kind(tok)))
		case name == "id" && !haveID:
			id, haveID = s, true
		case name == "secret" && !haveSecret:
			secret, haveSecret = s, true
		}
	}
	if _, err := p.dec.Token(); err != nil { // the closing brace
		return Key{}, p.syntax(err, where)
	}

	idErr := ValidateID(id)
	fail := func(err error) (Key, error) {
		if haveID && idErr == nil {
			return Key{}, fmt.Errorf("keys[%d] (id %q): %w", i, id, err)
		}
		return Key{}, fmt.Errorf("keys[%d]: %w", i, err)
	}
	switch {
	case problem != nil:
		return fail(problem)
	case !haveID:
		return fail(errors.New("missing field \"id\""))
	case !haveSecret:
		return fail(errors.New("missing field \"secret\""))
	case idErr != nil:
		return fail(idErr)
	}
	if j, dup := ids[id]; dup {
		return fail(fmt.Errorf("id already used by keys[%d]", j))
	}
	ids[id] = i
	b, err := base64.StdEncoding.DecodeString(secret)
	// Re-encoding rejects what the decoder tolerates: line breaks, missing padding and non-zero
	// padding bits. One key, one spelling, so the fingerprint of the text is the keyring's.
	if err != nil || base64.StdEncoding.EncodeToString(b) != secret {
		return fail(errors.New("secret is not standard base64 (RFC 4648 alphabet, with padding, no line breaks)"))
	}
	if len(b) < MinSecretBytes {
		return fail(fmt.Errorf("secret is %d bytes: at least %d are required", len(b), MinSecretBytes))
	}
	return newKey(id, b), nil
}

// name reads an object key.
func (p *parser) name(where string) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", p.syntax(err, where)
	}
	s, ok := tok.(string)
	if !ok { // the decoder only returns strings here; keep the type switch honest anyway
		return "", fmt.Errorf("invalid object key %s", where)
	}
	return s, nil
}

// value reads one value. A scalar is returned as is; an object or an array is skipped (it is the
// wrong type wherever it appears) and returned as its opening delimiter.
func (p *parser) value(where string) (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err, where)
	}
	if d, ok := tok.(json.Delim); ok {
		for depth := 1; depth > 0; {
			t, err := p.dec.Token()
			if err != nil {
				return nil, p.syntax(err, where)
			}
			switch t {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
		return d, nil
	}
	return tok, nil
}

// syntax reports malformed JSON by byte offset only: encoding/json's messages quote the offending
// character, which may sit inside a secret.
func (p *parser) syntax(err error, where string) error {
	if where != "" {
		where = " " + where
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte offset %d%s", se.Offset, where)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("unexpected end of JSON input%s", where)
	default:
		return fmt.Errorf("invalid JSON near byte offset %d%s", p.dec.InputOffset(), where)
	}
}

// kind names the JSON type of a token, for errors.
func kind(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == '[' {
			return "a list"
		}
		return "an object"
	default:
		return fmt.Sprintf("a %T", tok)
	}
}

// showName quotes a field name for an error if it looks like a name; anything else (a secret pasted
// in the wrong place, for instance) is described by its length only.
func showName(name string) string {
	if ValidateID(name) == nil {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("(a %d-byte name, not shown)", len(name))
}

// ParseTokenTTL reads the content of a token-ttl file (TokenTTLDataKey): whole seconds from 1 to
// 900 in ASCII decimal, without sign or leading zeros, a trailing newline allowed. The range is
// checked on the number before it becomes a Duration, so no value wraps around into range.
func ParseTokenTTL(data []byte) (time.Duration, error) {
	text := strings.TrimSuffix(string(data), "\n")
	max := int64(MaxTokenTTL / time.Second)
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > max || strconv.FormatInt(n, 10) != text {
		return 0, fmt.Errorf("%s is %.20q: want whole seconds from 1 to %d", TokenTTLDataKey, data, max)
	}
	return time.Duration(n) * time.Second, nil
}

// FormatTokenTTL writes d as the content of a token-ttl file; d must be whole seconds.
func FormatTokenTTL(d time.Duration) []byte { return strconv.AppendInt(nil, int64(d/time.Second), 10) }
