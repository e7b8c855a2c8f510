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
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The verbs of a rotation, in the manner of Tink's keyset manager (Add, SetPrimary, Delete), on
// the immutable Keyring: each returns a new keyring and leaves its receiver as it was, so that a
// rotation is a chain of named steps, each validated, instead of edits of a shared slice. The
// declared token lifetime (MaxTokenTTL) carries over.

// ErrFull is returned by Add on a keyring of MaxKeys keys.
var ErrFull = errors.New("keyring: full")

// Add returns r with k appended: every reader of the new keyring opens tokens sealed with k, and
// none seals with it. It refuses a keyring of MaxKeys keys (ErrFull), an id r holds, and an
// invalid key, as New does.
func (r *Keyring) Add(k Key) (*Keyring, error) {
	if r.Len() >= MaxKeys {
		return nil, fmt.Errorf("%w: it holds %d keys, the most allowed", ErrFull, r.Len())
	}
	return r.derive(append(r.Keys(), k))
}

// SetPrimary returns r with the key id first, so that it seals, and the others in their order.
// It refuses an id r does not hold.
func (r *Keyring) SetPrimary(id string) (*Keyring, error) {
	i := r.index(id)
	if i < 0 {
		return nil, fmt.Errorf("keyring: cannot make key %q primary: no such key (keys %s)", id, strings.Join(r.IDs(), ", "))
	}
	keys := append(make([]Key, 0, len(r.keys)), r.keys[i])
	keys = append(keys, r.keys[:i]...)
	return r.derive(append(keys, r.keys[i+1:]...))
}

// Delete returns r without the keys ids. Like Tink's, it refuses to delete the primary, which
// seals: make another key primary first. It refuses an id r does not hold.
func (r *Keyring) Delete(ids ...string) (*Keyring, error) {
	for _, id := range ids {
		switch i := r.index(id); {
		case i < 0:
			return nil, fmt.Errorf("keyring: cannot delete key %q: no such key (keys %s)", id, strings.Join(r.IDs(), ", "))
		case i == 0:
			return nil, fmt.Errorf("keyring: cannot delete key %q: it is the primary; make another key primary first", id)
		}
	}
	return r.derive(slices.DeleteFunc(r.Keys(), func(k Key) bool { return slices.Contains(ids, k.id) }))
}

// index is the position of the key id in r, -1 when r holds none.
func (r *Keyring) index(id string) int {
	return slices.IndexFunc(r.keys, func(k Key) bool { return k.id == id })
}

// derive validates keys as New does and keeps r's declared token lifetime.
func (r *Keyring) derive(keys []Key) (*Keyring, error) {
	next, err := New(keys...)
	if err != nil {
		return nil, err
	}
	next.maxTokenTTL = r.maxTokenTTL
	return next, nil
}
