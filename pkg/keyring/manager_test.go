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

package keyring_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

func managerKey(id string) keyring.Key {
	return keyring.NewKey(id, bytes.Repeat([]byte(id+"."), keyring.MinSecretBytes)[:keyring.MinSecretBytes])
}

func managerRing(t *testing.T, ids ...string) *keyring.Keyring {
	t.Helper()
	keys := make([]keyring.Key, len(ids))
	for i, id := range ids {
		keys[i] = managerKey(id)
	}
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestManagerVerbs(t *testing.T) {
	type verb func(*keyring.Keyring) (*keyring.Keyring, error)
	cases := map[string]struct {
		ring    []string
		verb    verb
		want    []string
		wantErr string
	}{
		"Add appends a key that does not seal": {
			ring: []string{"a"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Add(managerKey("b")) },
			want: []string{"a", "b"},
		},
		"Add refuses an id the keyring holds": {
			ring: []string{"a", "b"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Add(managerKey("a")) },
			wantErr: "id already used",
		},
		"Add refuses a key too short": {
			ring: []string{"a"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Add(keyring.NewKey("b", []byte("short"))) },
			wantErr: "secret is 5 bytes",
		},
		"SetPrimary moves the key first and keeps the others in their order": {
			ring: []string{"a", "b", "c"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.SetPrimary("c") },
			want: []string{"c", "a", "b"},
		},
		"SetPrimary of the primary changes nothing": {
			ring: []string{"a", "b"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.SetPrimary("a") },
			want: []string{"a", "b"},
		},
		"SetPrimary refuses an id the keyring lacks, naming it": {
			ring: []string{"a", "b"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.SetPrimary("z") },
			wantErr: `cannot make key "z" primary: no such key (keys a, b)`,
		},
		"Delete drops the keys and keeps the others in their order": {
			ring: []string{"a", "b", "c", "d"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Delete("d", "b") },
			want: []string{"a", "c"},
		},
		"Delete refuses the primary": {
			ring: []string{"a", "b"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Delete("b", "a") },
			wantErr: `cannot delete key "a": it is the primary`,
		},
		"Delete refuses an id the keyring lacks, naming it": {
			ring: []string{"a", "b"}, verb: func(r *keyring.Keyring) (*keyring.Keyring, error) { return r.Delete("z") },
			wantErr: `cannot delete key "z": no such key`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := managerRing(t, tc.ring...)
			before := r.Fingerprint()
			got, err := tc.verb(r)
			if r.Fingerprint() != before || !slices.Equal(r.IDs(), tc.ring) {
				t.Errorf("the receiver changed: %v", r.IDs())
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.IDs(), tc.want) {
				t.Errorf("ids = %v, want %v", got.IDs(), tc.want)
			}
			if want := managerRing(t, tc.want...).Fingerprint(); got.Fingerprint() != want {
				t.Errorf("fingerprint %s, want %s (that of a keyring built from the same keys)", got.Fingerprint(), want)
			}
		})
	}
}

func TestManagerAddRefusesAFullKeyring(t *testing.T) {
	ids := make([]string, keyring.MaxKeys)
	for i := range ids {
		ids[i] = fmt.Sprintf("k%d", i)
	}
	_, err := managerRing(t, ids...).Add(managerKey("one-more"))
	if !errors.Is(err, keyring.ErrFull) {
		t.Fatalf("Add to a keyring of %d keys: %v, want ErrFull", keyring.MaxKeys, err)
	}
}

func TestManagerVerbsKeepTheDeclaredTokenTTL(t *testing.T) {
	r := managerRing(t, "a", "b").WithMaxTokenTTL(5 * time.Minute)
	added, err := r.Add(managerKey("c"))
	if err != nil {
		t.Fatal(err)
	}
	promoted, err := added.SetPrimary("c")
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := promoted.Delete("a")
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*keyring.Keyring{added, promoted, deleted} {
		if got.MaxTokenTTL() != 5*time.Minute {
			t.Errorf("%v declares %v, want 5m0s", got, got.MaxTokenTTL())
		}
	}
}
