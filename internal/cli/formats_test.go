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

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// pythonSDKToken is a token the python-sdk sealed (mcp 2.3.0, testdata/python-sdk/gen.py), and the
// key id its text carries.
func pythonSDKToken(t *testing.T) (tok, kid string) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "python-sdk", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return read("v1.token"), read("v1.kid")
}

// Each format is recognised by its text, whichever comes first in tokenFormats: "v1." is a valid
// key id, but a python-sdk token reads as the python-sdk's unless the keyring holds a key v1.
func TestFormatOf(t *testing.T) {
	py, _ := pythonSDKToken(t)
	withV1 := mustRing(t, keyring.NewKey("v1", testSecret("v1", 4)))
	for _, tc := range []struct {
		name string
		tok  string
		ring *keyring.Keyring
		want string
	}{
		{"Signed mrtr2", signed(t), nil, token.CodecSigned},
		{"Signed mrtr1", signedV1(t), nil, token.CodecSigned},
		{"Sealed", sealed(t), nil, token.CodecSealed},
		{"python-sdk", py, nil, pythonSDKFormat.Name},
		{"python-sdk, a keyring without v1", py, mustRing(t, keyA), pythonSDKFormat.Name},
		{"a keyring that holds v1: Sealed", py, withV1, token.CodecSealed},
		{"v1. and two segments: neither the python-sdk's nor Sealed", "v1.e30.c2ln", nil, noFormat.Name},
		{"nothing known: no format, not Sealed", "hello", nil, noFormat.Name},
	} {
		if got := formatOf(tc.tok, tc.ring).Name; got != tc.want {
			t.Errorf("%s: read as %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A python-sdk token shows its format and key id; its times are the python-sdk's to read. Given a
// keyring, inspect says it checked nothing rather than that the token fails.
func TestInspectPythonSDK(t *testing.T) {
	py, kid := pythonSDKToken(t)
	r := inspect(t, now, py)
	if r.err != nil {
		t.Fatal(r.err)
	}
	golden(t, "inspect-python-sdk", r.out)
	if !strings.Contains(squash(r.out), "Key id: "+kid) {
		t.Errorf("the output does not show key id %s:\n%s", kid, r.out)
	}

	// A keyring without the token's key: the python-sdk would refuse the token.
	path := writeKeyring(t, keyA, keyB)
	r = inspect(t, now, append([]string{py}, requestArgs(path)...)...)
	if !errors.Is(r.err, errRejected) || !strings.Contains(r.out, "refuses a token of a key the keyring does not hold") {
		t.Fatalf("inspect --keyring: %v\n%s", r.err, r.out)
	}

	// The text of a Sealed token of a key v1: with that keyring, checked as one (and it fails).
	v1 := writeKeyring(t, keyring.NewKey("v1", testSecret("v1", 4)))
	r = inspect(t, now, append([]string{py}, requestArgs(v1)...)...)
	if !errors.Is(r.err, errRejected) || !strings.Contains(r.out, "Sealed (AES-256-GCM)") {
		t.Fatalf("inspect --keyring holding v1: %v\n%s", r.err, r.out)
	}

	r = inspect(t, now, "v1.AAAA")
	if !errors.Is(r.err, errRejected) || !strings.Contains(r.out, "python-sdk token rejected by the format check") {
		t.Fatalf("a malformed python-sdk token: %v\n%s", r.err, r.out)
	}
}
