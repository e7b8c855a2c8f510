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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKeyring returns a valid keyring and its keyring.json; each id gets distinct random bytes.
func testKeyring(t testing.TB, ids ...string) (*Keyring, []byte) {
	t.Helper()
	keys := make([]Key, len(ids))
	for i, id := range ids {
		k, err := GenerateKey(id, MinSecretBytes)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	r, err := New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, data
}

func TestFromEnv(t *testing.T) {
	want, data := testKeyring(t, "a", "b")
	t.Setenv(EnvVar, string(data))
	got, err := FromEnv()
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	if !got.Equal(want) {
		t.Errorf("FromEnv = %v, want %v", got, want)
	}

	t.Setenv(EnvVar, "")
	if _, err := FromEnv(); err == nil || errors.Is(err, ErrEnvUnset) || !strings.Contains(err.Error(), "$"+EnvVar) {
		t.Errorf("FromEnv with an empty variable: error = %v, want a parse error naming $%s", err, EnvVar)
	}

	// t.Setenv above restores the original value when the test ends.
	if err := os.Unsetenv(EnvVar); err != nil {
		t.Fatal(err)
	}
	if _, err := FromEnv(); !errors.Is(err, ErrEnvUnset) {
		t.Errorf("FromEnv with no variable: error = %v, want ErrEnvUnset", err)
	}
}

func TestLoadFile(t *testing.T) {
	want, data := testKeyring(t, "a")
	dir := t.TempDir()
	path := filepath.Join(dir, SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if !got.Equal(want) {
		t.Errorf("LoadFile = %v, want %v", got, want)
	}

	if _, err := LoadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) error = %v, want one wrapping os.ErrNotExist", err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"keys" is empty`) {
		t.Errorf("LoadFile(bad) error = %v, want the path and the reason", err)
	}

	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 2*MaxDocumentBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("LoadFile(big) error = %v, want a size error", err)
	}
}

// A nil argument is the caller's mistake: an error or a documented no-op, never a panic.
func TestNilArguments(t *testing.T) {
	if r := Static(nil).Keyring(); r != nil {
		t.Errorf("Static(nil).Keyring() = %v, want nil (which the codecs refuse)", r)
	}
	var nilSource *FileSource
	if r := nilSource.Keyring(); r != nil {
		t.Errorf("a nil *FileSource's Keyring() = %v, want nil", r)
	}
	if _, err := Marshal(nil); err == nil {
		t.Error("Marshal(nil): no error")
	}
	_, data := testKeyring(t, "a")
	path := filepath.Join(t.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFileSource(path, nil); err == nil || !strings.Contains(err.Error(), "nil FileOption") {
		t.Errorf("NewFileSource with a nil option: %v, want an error naming it", err)
	}
	s, err := NewFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	s.OnChange(nil) // ignored: the reload below must not call it
	_, next := testKeyring(t, "b")
	if err := os.WriteFile(path, next, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil || s.Keyring().IDs()[0] != "b" {
		t.Fatalf("Reload after OnChange(nil): %v, %v", err, s.Keyring())
	}
}
