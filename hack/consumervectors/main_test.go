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
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// repoVectors is testdata/consumers/ at the repository's root, seen from this package.
const repoVectors = "../../testdata/consumers"

// TestFresh fails when the committed vectors are not what the library makes now: after a change
// to pkg/keyring or to this generator, run `go run ./hack/consumervectors` and commit the result.
func TestFresh(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names {
		got, err := os.ReadFile(filepath.Join(repoVectors, name))
		if err != nil {
			t.Fatalf("%v: run go run ./hack/consumervectors", err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("testdata/consumers/%s is stale: run go run ./hack/consumervectors and commit it", name)
		}
	}
}

// TestDeterministic guards TestFresh itself: two runs make the same bytes.
func TestDeterministic(t *testing.T) {
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestKeyringVectorsRoundTrip reads keyrings.json as a consumer in another language would and
// checks every answer against pkg/keyring, so the file means what its comment says.
func TestKeyringVectorsRoundTrip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoVectors, "keyrings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v keyringsFile
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Valid) < 10 || len(v.Invalid) < 30 {
		t.Fatalf("%d valid and %d invalid vectors: too few", len(v.Valid), len(v.Invalid))
	}
	for _, c := range v.Valid {
		r, err := keyring.Parse(c.bytesOf())
		if err != nil {
			t.Errorf("valid %q: %v", c.Name, err)
			continue
		}
		if r.Fingerprint() != c.Fingerprint || r.Len() != len(c.Keys) {
			t.Errorf("valid %q: fingerprint %s, %d keys; the file says %s, %d", c.Name, r.Fingerprint(), r.Len(), c.Fingerprint, len(c.Keys))
			continue
		}
		for i, k := range r.Keys() {
			if !k.Equal(keyring.NewKey(c.Keys[i].ID, c.Keys[i].Secret)) || k.PythonKid() != c.Keys[i].PythonKid {
				t.Errorf("valid %q: keys[%d] differs from the file", c.Name, i)
			}
		}
	}
	for _, c := range v.Invalid {
		if _, err := keyring.Parse(c.bytesOf()); err == nil || err.Error() != c.Error {
			t.Errorf("invalid %q: Parse error %v; the file says %q", c.Name, err, c.Error)
		}
	}
}
