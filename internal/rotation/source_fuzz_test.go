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

package rotation

import (
	"bytes"
	"strings"
	"testing"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The source Secret is written by someone else: whatever its data and version annotation, a key
// is taken only with a valid id and 32 bytes or more, its bytes exactly, and what the keyring says
// of it (a refusal's message) never holds the bytes.
func FuzzObserveSource(f *testing.F) {
	f.Add(bytes.Repeat([]byte{'a'}, 32), "")
	f.Add(bytes.Repeat([]byte{0}, 31), "v1")
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "not an id")
	f.Add(bytes.Repeat([]byte{0xff}, 64), strings.Repeat("x", 33))
	f.Fuzz(func(t *testing.T, data []byte, version string) {
		ann := map[string]string{}
		if version != "" {
			ann[mrtrv1alpha1.KeyVersionAnnotation] = version
		}
		o := ObserveSource(true, "src", "key", map[string][]byte{"key": data}, ann)
		if o.State != SourceValid {
			if o.Key.Len() != 0 || o.Version != "" {
				t.Fatalf("state %v kept a key or an id (%q)", o.State, o.Version)
			}
			return
		}
		if len(data) < keyring.MinSecretBytes || keyring.ValidateID(o.Version) != nil || !bytes.Equal(o.Key.Secret(), data) || o.Key.ID() != o.Version {
			t.Fatalf("took %d bytes under id %q", len(data), o.Version)
		}
		if version == "" && o.Version != SourceKeyID(SourceDigest(data)) {
			t.Fatalf("id %q is not the digest's", o.Version)
		}
		// Against a keyring that holds other bytes under the same id: refused, with a message that
		// names the version and does not depend on the bytes (the same for other bytes).
		kr, err := keyring.New(keyring.NewKey(o.Version, append([]byte{1}, data...)))
		if err != nil {
			t.Fatal(err)
		}
		judge := func(o SourceObservation) sourceVerdict {
			return judgeSource(Input{Source: o, Settings: Settings{Source: true}}, mrtrv1alpha1.MRTRKeyringStatus{}, kr)
		}
		v := judge(o)
		if v.reason != mrtrv1alpha1.ReasonSourceVersionReused {
			t.Fatalf("a version naming other bytes: %+v", v)
		}
		flipped := append([]byte(nil), data...)
		flipped[0] ^= 0x80
		if o2 := ObserveSource(true, "src", "key", map[string][]byte{"key": flipped}, ann); o2.State == SourceValid && o2.Version == o.Version {
			if v2 := judge(o2); v2.message != v.message {
				t.Fatalf("the message depends on the key's bytes:\n%s\n%s", v.message, v2.message)
			}
		}
	})
}

// The RetiredKeysAnnotation is on a Secret anyone who may write it may edit: whatever it holds,
// only well-formed items are read, and writing them back reads the same.
func FuzzParseRetired(f *testing.F) {
	f.Add("v1:" + SourceDigest([]byte("a")))
	f.Add("v1:nothex,s-1:" + strings.Repeat("0", 24) + ", ,:")
	f.Add(strings.Repeat("a:b,", 100))
	f.Fuzz(func(t *testing.T, value string) {
		got := parseRetired(value)
		for _, r := range got {
			if keyring.ValidateID(r.Version) != nil || !validDigest(r.Digest) {
				t.Fatalf("read a malformed item %+v", r)
			}
		}
		again := parseRetired(formatRetired(&mrtrv1alpha1.KeySourceStatus{Retired: got}))
		if len(again) != len(got) {
			t.Fatalf("round trip: %d items, then %d", len(got), len(again))
		}
		for i := range got {
			if again[i] != got[i] {
				t.Fatalf("round trip changed item %d: %+v, then %+v", i, got[i], again[i])
			}
		}
	})
}
