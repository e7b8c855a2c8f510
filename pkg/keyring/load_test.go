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
