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
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFileSourceKeyring is what every seal and open pays to get the keyring.
func BenchmarkFileSourceKeyring(b *testing.B) {
	_, data := testKeyring(b, "a", "b")
	path := filepath.Join(b.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := NewFileSource(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if s.Keyring() == nil {
				b.Fatal("nil keyring")
			}
		}
	})
}

// BenchmarkParse parses a full keyring of MaxKeys keys.
func BenchmarkParse(b *testing.B) {
	_, data := testKeyring(b, "a", "b", "c", "d", "e", "f", "g", "h")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReloadUnchanged is the cost of the periodic re-read when nothing changed.
func BenchmarkReloadUnchanged(b *testing.B) {
	_, data := testKeyring(b, "a", "b")
	path := filepath.Join(b.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := NewFileSource(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Reload(); err != nil {
			b.Fatal(err)
		}
	}
}
