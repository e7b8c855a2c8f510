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
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Limits shared by both token systems (see DESIGN.md: they satisfy Snodo and the sealed codec at once).
const (
	MaxKeys        = 8
	MinSecretBytes = 32
	MaxIDLength    = 32
)

// Key is one entry of a keyring: a public id and secret bytes.
//
// The bytes are held by a closure. fmt, and any other printer that walks values by reflection,
// bypasses String and Format for unexported fields (a Keyring value, a struct holding a Key) and on
// a bad verb; it would print a []byte or the target of a pointer, but it prints a func as an address
// only. A func field also makes Key incomparable, so == cannot pretend to compare keys.
type Key struct {
	id     string
	secret func() []byte
}

// NewKey returns a key with a copy of secret. It does not validate: New does, with the key's position.
func NewKey(id string, secret []byte) Key { return newKey(id, append([]byte(nil), secret...)) }

// newKey takes ownership of b.
func newKey(id string, b []byte) Key { return Key{id: id, secret: func() []byte { return b }} }

// ID is the key's public identifier, written into tokens and status.
func (k Key) ID() string { return k.id }

// Secret returns a copy of the key bytes. Only the token codecs should need it.
func (k Key) Secret() []byte { return append([]byte(nil), k.bytes()...) }

// Len is the number of secret bytes.
func (k Key) Len() int { return len(k.bytes()) }

// bytes is the key's own secret slice, for use inside the package only; nil for the zero Key.
func (k Key) bytes() []byte {
	if k.secret == nil {
		return nil
	}
	return k.secret()
}

// Equal reports whether both keys have the same id and bytes; the bytes are compared in constant time.
func (k Key) Equal(o Key) bool {
	return k.id == o.id && subtle.ConstantTimeCompare(k.bytes(), o.bytes()) == 1
}

// String prints the id and the length only.
func (k Key) String() string {
	return fmt.Sprintf("Key{id: %q, secret: <redacted %d bytes>}", k.id, k.Len())
}

// GoString keeps %#v as safe as %v.
func (k Key) GoString() string { return k.String() }

// Keyring is an ordered, validated set of keys. The zero value is not valid; use New or Parse.
type Keyring struct {
	keys        []Key
	fingerprint string
	maxTokenTTL time.Duration // 0: not declared
}

// New validates keys and returns a keyring holding copies of them, in order: keys[0] seals.
func New(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("keyring: no keys: a keyring needs 1 to %d keys", MaxKeys)
	}
	if len(keys) > MaxKeys {
		return nil, fmt.Errorf("keyring: %d keys: at most %d are allowed", len(keys), MaxKeys)
	}
	seen := make(map[string]int, len(keys))
	own := make([]Key, len(keys))
	for i, k := range keys {
		if err := ValidateID(k.id); err != nil {
			return nil, fmt.Errorf("keyring: key %d: %w", i, err)
		}
		if j, dup := seen[k.id]; dup {
			return nil, fmt.Errorf("keyring: key %d (id %q): id already used by key %d", i, k.id, j)
		}
		seen[k.id] = i
		if k.Len() < MinSecretBytes {
			return nil, fmt.Errorf("keyring: key %d (id %q): secret is %d bytes, at least %d are required",
				i, k.id, k.Len(), MinSecretBytes)
		}
		own[i] = NewKey(k.id, k.bytes())
	}
	return &Keyring{keys: own, fingerprint: fingerprint(own)}, nil
}

// ValidateID reports whether id is 1 to 32 characters of A-Za-z0-9_-.
//
// The error does not repeat an invalid id: a common mistake is swapping the id and secret fields,
// and then the "id" is key material.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("id is empty: ids are 1 to %d characters of A-Za-z0-9_-", MaxIDLength)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("id is %d bytes long: at most %d characters of A-Za-z0-9_- are allowed", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !isIDByte(id[i]) {
			return fmt.Errorf("id has a byte outside A-Za-z0-9_- at offset %d", i)
		}
	}
	return nil
}

// ValidID reports whether id is a valid key id (see ValidateID), without an error to build: for the
// hot path of a codec that reads ids out of tokens.
func ValidID[S ~string | ~[]byte](id S) bool {
	if len(id) == 0 || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isIDByte(id[i]) {
			return false
		}
	}
	return true
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Primary is the key that seals: the first one.
func (r *Keyring) Primary() Key { return r.keys[0] }

// Keys returns the keys in order. The slice is a copy; the keys share nothing mutable.
func (r *Keyring) Keys() []Key { return append([]Key(nil), r.keys...) }

// Len is the number of keys.
func (r *Keyring) Len() int { return len(r.keys) }

// Lookup returns the key with the given id.
func (r *Keyring) Lookup(id string) (Key, bool) {
	for _, k := range r.keys {
		if k.id == id {
			return k, true
		}
	}
	return Key{}, false
}

// IDs returns the key ids in order.
func (r *Keyring) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// Fingerprint is a short hash of the ids and bytes of the keys, in order: equal keyrings have equal
// fingerprints, and it reveals nothing of a key, so it is safe in logs, status and annotations.
func (r *Keyring) Fingerprint() string { return r.fingerprint }

// Equal reports whether both keyrings hold the same keys in the same order. It compares the keys
// themselves (bytes in constant time), not just the 64-bit fingerprints. Two nil keyrings are not equal.
func (r *Keyring) Equal(o *Keyring) bool {
	if r == nil || o == nil || len(r.keys) != len(o.keys) || r.maxTokenTTL != o.maxTokenTTL {
		return false
	}
	eq := true
	for i := range r.keys {
		eq = r.keys[i].Equal(o.keys[i]) && eq
	}
	return eq
}

// MaxTokenTTL is the longest token lifetime the keyring's owner declared (the Secret's token-ttl,
// see TokenTTLDataKey), 0 when it declared none. The codecs refuse to seal longer tokens: the
// operator removes a key only that long after the last pod sealed with it.
func (r *Keyring) MaxTokenTTL() time.Duration { return r.maxTokenTTL }

// WithMaxTokenTTL returns a copy of r that declares d as the longest token lifetime (0: none).
func (r *Keyring) WithMaxTokenTTL(d time.Duration) *Keyring {
	c := *r
	c.maxTokenTTL = d
	return &c
}

// String prints ids and the fingerprint, never key bytes.
func (r *Keyring) String() string {
	if r == nil {
		return "Keyring(nil)"
	}
	return fmt.Sprintf("Keyring{ids: [%s], fingerprint: %s}", strings.Join(r.IDs(), " "), r.fingerprint)
}

// GoString keeps %#v as safe as %v.
func (r *Keyring) GoString() string { return r.String() }

// fingerprint hashes a domain tag, then each key as length-prefixed id and secret, and keeps 16 hex
// digits (64 bits): enough to tell keyrings apart, short enough for an annotation or a log line.
func fingerprint(keys []Key) string {
	h := sha256.New()
	h.Write([]byte("mrtr-keyring-fingerprint-v1\x00"))
	var n [4]byte
	for _, k := range keys {
		binary.BigEndian.PutUint32(n[:], uint32(len(k.id)))
		h.Write(n[:])
		h.Write([]byte(k.id))
		binary.BigEndian.PutUint32(n[:], uint32(k.Len()))
		h.Write(n[:])
		h.Write(k.bytes())
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
