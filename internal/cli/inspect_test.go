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
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// The inspect tests seal tokens with pkg/token itself, under a test keyring, and read them back
// through the command as a user would: with the keyring file the Secret holds.

const (
	testServer   = "https://payments.example.com/mcp"
	stateMarker  = "STATE-MARKER-7f3a" // in every token's state: no output may show it
	testParams   = `{"name":"get_weather","arguments":{"city":"Paris"}}`
	testMethod   = "tools/call"
	testVersion  = "2025-06-18"
	principalAda = `"user:ada"`
)

// sealedAt is when the tokens were sealed: two minutes before the tests' clock, so they expire in
// three minutes at the default 5m TTL.
var sealedAt = now.Add(-2 * time.Minute)

// testSecret is the bytes of test key id; fill tells two keys of the same id apart.
func testSecret(id string, fill byte) []byte {
	s := sha256.Sum256([]byte{fill, 'k', 'e', 'y', ':', id[0], id[len(id)-1]})
	return append(s[:], id...) // 32 bytes and more
}

// writeKeyring writes a keyring.json of keys into a fresh folder and returns its path.
func writeKeyring(t *testing.T, keys ...keyring.Key) string {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := keyring.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keyring.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	keyA = keyring.NewKey("key-a", testSecret("key-a", 1))
	keyB = keyring.NewKey("key-b", testSecret("key-b", 2))
	// keyAOther has key-a's id and other bytes: a keyring that never sealed the tokens.
	keyAOther = keyring.NewKey("key-a", testSecret("key-a", 3))
)

func testBinding() token.Binding {
	return token.Binding{Method: testMethod, Params: json.RawMessage(testParams),
		Principal: json.RawMessage(principalAda), ProtocolVersion: testVersion}
}

// sealed seals a Sealed token under [key-a, key-b] at sealedAt.
func sealed(t *testing.T) string {
	t.Helper()
	c, err := token.NewSealed(keyring.Static(mustRing(t, keyA, keyB)), testServer,
		token.SealedClock(func() time.Time { return sealedAt }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Seal(testBinding(), json.RawMessage(`{"marker":"`+stateMarker+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signed seals a Signed token (mrtr2, kid key-a) under [key-a, key-b] at sealedAt.
func signed(t *testing.T) string {
	t.Helper()
	c, err := token.NewSigned(keyring.Static(mustRing(t, keyA, keyB)), token.SignedClock(func() time.Time { return sealedAt }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Seal(testBinding(), json.RawMessage(`{"marker":"`+stateMarker+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signedV1 seals an mrtr1 token, Snodo's without key id, with key-a's bytes.
func signedV1(t *testing.T) string {
	t.Helper()
	c, err := token.NewSignedSecret(keyA.Secret(), token.SignedClock(func() time.Time { return sealedAt }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Seal(testBinding(), json.RawMessage(`{"marker":"`+stateMarker+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rs2AD is the associated data the rs2 tokens are bound to: what a Rust server binds (see
// clients/rust), here a principal and a request digest.
const rs2AD = "user:ada|tools/call|sha256:4f2e"

// rs2 seals an rs2 token (kid key-a) under [key-a, key-b] at sealedAt, bound to rs2AD, with the
// marker in its payload.
func rs2(t *testing.T) string {
	t.Helper()
	c, err := token.NewRS2(keyring.Static(mustRing(t, keyA, keyB)), token.RS2Clock(func() time.Time { return sealedAt }))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Seal([]byte(rs2AD), []byte(`{"marker":"`+stateMarker+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mustRing(t *testing.T, keys ...keyring.Key) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// requestArgs are the flags of the request the tokens were sealed for.
func requestArgs(path string) []string {
	return []string{"--keyring", path, "--method", testMethod, "--params", testParams, "--principal", principalAda,
		"--protocol-version", testVersion, "--server", testServer}
}

// inspect runs kubectl mrtr inspect at the clock given and checks that its output shows no key
// bytes and no state, whatever it says.
func inspect(t *testing.T, at time.Time, args ...string) result {
	t.Helper()
	r := run(t, Options{Now: func() time.Time { return at }}, "", append([]string{"inspect"}, args...)...)
	assertNoSecrets(t, r.out+r.errOut+errText(r.err))
	return r
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// assertNoSecrets fails if out holds any spelling of a test key's bytes, or the tokens' state.
func assertNoSecrets(t *testing.T, out string) {
	t.Helper()
	for _, k := range []keyring.Key{keyA, keyB, keyAOther} {
		b := k.Secret()
		for _, spelling := range []string{string(b), base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.RawURLEncoding.EncodeToString(b), hex.EncodeToString(b), string(b[:16]), hex.EncodeToString(b[:8])} {
			if strings.Contains(out, spelling) {
				t.Fatalf("the output shows bytes of key %s:\n%s", k.ID(), out)
			}
		}
	}
	if strings.Contains(out, stateMarker) {
		t.Fatalf("the output shows the token's state:\n%s", out)
	}
}

func TestInspectGolden(t *testing.T) {
	path := writeKeyring(t, keyA, keyB)
	for _, tc := range []struct {
		golden string
		at     time.Time
		args   []string
		opens  bool
	}{
		{"inspect-sealed", now, []string{sealed(t)}, true},
		{"inspect-signed", now, []string{signed(t)}, true},
		{"inspect-signed-mrtr1", now, []string{signedV1(t)}, true},
		{"inspect-sealed-opens", now, append([]string{sealed(t)}, requestArgs(path)...), true},
		{"inspect-signed-opens", now, append([]string{signed(t)}, requestArgs(path)...), true},
		{"inspect-sealed-expired", now.Add(10 * time.Minute), append([]string{sealed(t)}, requestArgs(path)...), false},
		{"inspect-signed-principal", now, append([]string{signed(t)}, append(requestArgs(path), "--principal", `"user:bob"`)...), false},
		{"inspect-malformed", now, []string{"mrtr2.key-a.not-base64!.mac"}, false},
		{"inspect-rs2", now, []string{rs2(t)}, true},
		{"inspect-rs2-opens", now, []string{rs2(t), "--keyring", path, "--associated-data", rs2AD}, true},
		{"inspect-rs2-known-answer", now, []string{"rs2.cm90YXRpb24ta2V5LTIwMjYtMDg.AAABi8_mx5BzdGVwPTI.twv2acu7lKXqebyrmit-JrHHZm-BkKlBQEMMtL3lHk8"}, true},
		{"inspect-rs2-other-data", now, []string{rs2(t), "--keyring", path, "--associated-data", "user:bob|tools/call|sha256:4f2e"}, false},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := inspect(t, tc.at, tc.args...)
			if tc.opens != (r.err == nil) || (r.err != nil && !errors.Is(r.err, errRejected)) {
				t.Fatalf("inspect: %v; want it to open: %v", r.err, tc.opens)
			}
			golden(t, tc.golden, strings.ReplaceAll(r.out, filepath.Dir(path), "$TMP"))
		})
	}
}

// Without the keyring, a Sealed token shows only what is outside its ciphertext: no times.
func TestInspectSealedWithoutKeyringShowsNothingEncrypted(t *testing.T) {
	r := inspect(t, now, sealed(t))
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, leak := range []string{sealedAt.Format(time.RFC3339), sealedAt.Add(5 * time.Minute).Format(time.RFC3339), "Paris", "user:ada"} {
		if strings.Contains(r.out, leak) {
			t.Errorf("the output shows %q, which only the ciphertext holds:\n%s", leak, r.out)
		}
	}
	if !strings.Contains(squash(r.out), "Key id: key-a") || strings.Count(r.out, "encrypted:") != 2 {
		t.Errorf("the output does not show the key id and say the times are encrypted:\n%s", r.out)
	}
}

// Each check that rejects a token is named, for every format.
func TestInspectNamesTheFailedCheck(t *testing.T) {
	good := writeKeyring(t, keyA, keyB)
	onlyB := writeKeyring(t, keyB)
	otherA := writeKeyring(t, keyAOther, keyB)
	with := func(path string, extra ...string) []string { return append(requestArgs(path), extra...) }
	for _, tc := range []struct {
		name  string
		tok   func(*testing.T) string
		at    time.Time
		args  []string
		check token.Check
	}{
		{"Sealed: key id", sealed, now, with(onlyB), token.CheckKeyID},
		{"Sealed: another key of that id", sealed, now, with(otherA), token.CheckAuthTag},
		{"Sealed: method", sealed, now, with(good, "--method", "prompts/get"), token.CheckAuthTag},
		{"Sealed: server", sealed, now, with(good, "--server", "https://other.example.com/mcp"), token.CheckAuthTag},
		{"Sealed: protocol version", sealed, now, with(good, "--protocol-version", "2025-03-26"), token.CheckAuthTag},
		{"Sealed: principal", sealed, now, with(good, "--principal", `"user:bob"`), token.CheckPrincipal},
		{"Sealed: params", sealed, now, with(good, "--params", `{"name":"get_weather","arguments":{"city":"Oslo"}}`), token.CheckBinding},
		{"Sealed: unbindable params", sealed, now, with(good, "--params", `{"a":1,"a":2}`), token.CheckParams},
		{"Sealed: expired", sealed, now.Add(3 * time.Minute), with(good), token.CheckExpired},
		{"Sealed: not yet valid", sealed, sealedAt.Add(-31 * time.Second), with(good), token.CheckNotYetValid},
		{"Sealed: lifetime", sealed, now, with(good, "--ttl", "1m"), token.CheckLifetime},
		{"Sealed: format", func(*testing.T) string { return "key-a." + strings.Repeat("A", 36) }, now, with(good), token.CheckFormat},
		// A text of no format's shape is said to be none, not a Sealed token of a bad layout.
		{"no format", func(*testing.T) string { return "key-a" }, now, with(good), token.CheckFormat},
		// Given a keyring, a python-sdk text that does not parse is rejected, as without one.
		{"python-sdk: format", func(*testing.T) string { return keyring.PythonTokenPrefix + "AAAA" }, now, with(good), token.CheckFormat},
		{"Sealed: size", func(*testing.T) string { return "key-a." + strings.Repeat("A", token.MaxSealedTokenBytes) }, now,
			with(good), token.CheckSize},
		{"Signed: key id", signed, now, with(onlyB), token.CheckKeyID},
		{"Signed: MAC", signed, now, with(otherA), token.CheckMAC},
		{"Signed: mrtr1 MAC", signedV1, now, with(writeKeyring(t, keyAOther)), token.CheckMAC},
		{"Signed: method", signed, now, with(good, "--method", "prompts/get"), token.CheckBinding},
		{"Signed: principal", signed, now, with(good, "--principal", "null"), token.CheckBinding},
		{"Signed: params", signed, now, with(good, "--params", `{}`), token.CheckBinding},
		{"Signed: expired", signed, now.Add(3 * time.Minute), with(good), token.CheckExpired},
		{"Signed: not yet valid", signed, sealedAt.Add(-time.Second), with(good), token.CheckNotYetValid},
		{"Signed: lifetime", signed, now, with(good, "--ttl", "1m"), token.CheckLifetime},
		{"rs2: key id", rs2, now, []string{"--keyring", onlyB, "--associated-data", rs2AD}, token.CheckKeyID},
		{"rs2: another key of that id", rs2, now, []string{"--keyring", otherA, "--associated-data", rs2AD}, token.CheckMAC},
		{"rs2: associated data", rs2, now, []string{"--keyring", good}, token.CheckMAC},
		{"rs2: expired", rs2, now.Add(3*time.Minute + time.Millisecond), []string{"--keyring", good, "--associated-data", rs2AD}, token.CheckExpired},
		{"rs2: lifetime", rs2, now, []string{"--keyring", good, "--associated-data", rs2AD, "--ttl", "1m"}, token.CheckLifetime},
		{"rs2: format", func(*testing.T) string { return "rs2.a2V5LWE.AAAA.AAAA.AAAA" }, now, []string{"--keyring", good}, token.CheckFormat},
		{"rs2: size", func(*testing.T) string { return "rs2.a2V5LWE.AAAA." + strings.Repeat("A", token.MaxRS2TokenBytes) }, now,
			[]string{"--keyring", good}, token.CheckSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := inspect(t, tc.at, append([]string{tc.tok(t)}, tc.args...)...)
			if !errors.Is(r.err, errRejected) {
				t.Fatalf("inspect: %v; want the token rejected\n%s", r.err, r.out)
			}
			if want := "rejected by the " + string(tc.check) + " check"; !strings.Contains(r.out, want) {
				t.Fatalf("the output does not say %q:\n%s", want, r.out)
			}
		})
	}
	t.Run("Signed mrtr1 opens with any key", func(t *testing.T) {
		r := inspect(t, now, append([]string{signedV1(t)}, requestArgs(writeKeyring(t, keyB, keyA))...)...)
		if r.err != nil || !strings.Contains(r.out, "opens: authentic, current and bound to this request") {
			t.Fatalf("inspect: %v\n%s", r.err, r.out)
		}
	})
}

func TestInspectInputs(t *testing.T) {
	path := writeKeyring(t, keyA, keyB)
	t.Run("the token from standard input", func(t *testing.T) {
		r := run(t, Options{}, sealed(t)+"\n", append([]string{"inspect", "-"}, requestArgs(path)...)...)
		if r.err != nil || !strings.Contains(r.out, "opens") {
			t.Fatalf("inspect -: %v\n%s", r.err, r.out)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"request flags without a keyring", []string{sealed(t), "--method", testMethod}, "--method needs --keyring"},
		{"no method", []string{sealed(t), "--keyring", path, "--server", testServer}, "--method is required with --keyring"},
		{"Sealed without server", []string{sealed(t), "--keyring", path, "--method", testMethod}, "--server is required for a Sealed token"},
		{"TTL out of range", append([]string{signed(t)}, append(requestArgs(path), "--ttl", "20m")...), "--ttl is 20m0s: it must be between 1s and 15m0s"},
		{"principal not JSON", append([]string{signed(t)}, append(requestArgs(path), "--principal", "ada")...), "--principal"},
		{"no keyring file", append([]string{sealed(t)}, requestArgs(filepath.Join(t.TempDir(), "missing.json"))...), "missing.json: no such file"},
		{"no token", nil, "accepts 1 arg(s), received 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := inspect(t, now, tc.args...)
			if r.err == nil || errors.Is(r.err, errRejected) || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("inspect: %v; want an error that says %q", r.err, tc.want)
			}
		})
	}
}
