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
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// TestOpenProbeRS2: an rs2 answer to "seal?" opens with the keyring in service when it is bound to
// ProbeRS2AD, names the key that sealed it, and lives from its receipt to its expiry; bound to
// anything else, or sealed with a key the keyring lacks, it does not open.
func TestOpenProbeRS2(t *testing.T) {
	k1 := keyring.NewKey("k1", bytes.Repeat([]byte{1}, 32))
	k2 := keyring.NewKey("k2", bytes.Repeat([]byte{2}, 32))
	ring, err := keyring.New(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	sealedAt := time.Now().Truncate(time.Millisecond)
	codec, err := token.NewRS2(keyring.Static(ring), token.RS2TTL(90*time.Second),
		token.RS2Clock(func() time.Time { return sealedAt }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := codec.Seal([]byte(ProbeRS2AD), []byte(`{"probe":true}`))
	if err != nil {
		t.Fatal(err)
	}
	kid, lifetime, err := openProbe(tok, []keyring.Key{k2, k1}, sealedAt)
	if err != nil || kid != "k2" || lifetime != 90*time.Second {
		t.Errorf("openProbe = %q, %v, %v; want k2, 90s, nil", kid, lifetime, err)
	}
	if _, _, err := openProbe(tok, []keyring.Key{k1}, sealedAt); err == nil {
		t.Error("a token of a key the keyring lacks opened")
	}
	other, err := codec.Seal([]byte("another binding"), []byte(`{"probe":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := openProbe(other, []keyring.Key{k2, k1}, sealedAt); err == nil {
		t.Error("a token bound to other associated data opened")
	}
}
