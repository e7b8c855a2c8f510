// Package keyring is the shared keyring that every replica of an MCP server seals and opens MRTR
// request state with: an ordered list of keys where the first one seals and every one opens.
//
// A Keyring is immutable and always valid: the only ways to get one (New, Parse, a Source) validate
// it. Key bytes never leave the package except as a copy for the token codecs, and no method that
// formats a Keyring or a Key (String, GoString, Format, MarshalJSON, MarshalLog, LogValue) prints
// them; ids and the Fingerprint are what is safe to show.
package keyring

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Limits shared by both token systems (see DESIGN.md: they satisfy Snodo and the sealed codec at once).
const (
	MaxKeys        = 8
	MinSecretBytes = 32
	MaxIDLength    = 32
)

// Key is one entry of a keyring: a public id and secret bytes.
type Key struct {
	id     string
	secret []byte
}

// NewKey returns a key with a copy of secret. It does not validate: New does, with the key's position.
func NewKey(id string, secret []byte) Key {
	return Key{id: id, secret: append([]byte(nil), secret...)}
}

// ID is the key's public identifier, written into tokens and status.
func (k Key) ID() string { return k.id }

// Secret returns a copy of the key bytes. Only the token codecs should need it.
func (k Key) Secret() []byte { return append([]byte(nil), k.secret...) }

// Len is the number of secret bytes.
func (k Key) Len() int { return len(k.secret) }

// String prints the id only.
func (k Key) String() string { return fmt.Sprintf("Key{id: %q, secret: <redacted %d bytes>}", k.id, len(k.secret)) }

// GoString keeps %#v as safe as %v.
func (k Key) GoString() string { return k.String() }

// Keyring is an ordered, validated set of keys. The zero value is not valid; use New or Parse.
type Keyring struct {
	keys        []Key
	fingerprint string
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
		if len(k.secret) < MinSecretBytes {
			return nil, fmt.Errorf("keyring: key %d (id %q): secret is %d bytes, at least %d are required",
				i, k.id, len(k.secret), MinSecretBytes)
		}
		own[i] = NewKey(k.id, k.secret)
	}
	return &Keyring{keys: own, fingerprint: fingerprint(own)}, nil
}

// ValidateID reports whether id is 1 to 32 characters of A-Za-z0-9_-.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("id is empty: ids are 1 to %d characters of A-Za-z0-9_-", MaxIDLength)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("id %.40q is %d characters long: at most %d are allowed", id, len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("id %q has %q at byte %d: only A-Za-z0-9_- are allowed", id, c, i)
		}
	}
	return nil
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

// Equal reports whether both keyrings hold the same keys in the same order.
func (r *Keyring) Equal(o *Keyring) bool {
	return r != nil && o != nil && r.fingerprint == o.fingerprint
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
		binary.BigEndian.PutUint32(n[:], uint32(len(k.secret)))
		h.Write(n[:])
		h.Write(k.secret)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
