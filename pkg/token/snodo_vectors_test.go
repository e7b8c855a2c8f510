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

package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// The interop test: vectors produced by running the real Snodo.MRTR.State under Elixir, every
// testdata/snodo/*.json (vectors.json, and vectors-casefold.json: member names that differ only by
// case, params with members beyond name and arguments, params that are not an object;
// vectors-shapes.json: arguments that are {}, null, hold a null or are absent, a tools/call with a
// uri and a resources/read with a name, which the SDK decodes alike and Snodo binds apart). Any file of
// the same schema must pass; MRTR_SNODO_VECTORS names another one to run instead.

const snodoSchemaPrefix = "snodo-mrtr-state-vectors/1"

type snodoVectors struct {
	Schema    string `json:"schema"`
	Constants struct {
		MaxTokenBytes int `json:"max_token_bytes"`
	} `json:"constants"`
	Samples struct {
		Numbers []struct {
			Input   string `json:"input"`
			Type    string `json:"type"`
			Encoded string `json:"encoded"`
		} `json:"numbers"`
		Strings []struct {
			InputHex   string `json:"input_hex"`
			EncodedHex string `json:"encoded_hex"`
		} `json:"strings"`
	} `json:"json_encoding_samples"`
	Seal    []snodoCase `json:"seal_vectors"`
	Open    []snodoCase `json:"open_vectors"`
	Crafted []snodoCase `json:"crafted_vectors"`
	Errors  []snodoCase `json:"seal_error_vectors"`
	// Decode are params and whether Snodo.JSONValue.decode, how Snodo reads a request, accepts them.
	Decode []struct {
		ID        string `json:"id"`
		Params    string `json:"params_json"`
		ParamsHex string `json:"params_hex"`
		Expected  struct {
			OK bool `json:"ok"`
		} `json:"expected"`
	} `json:"params_decode_vectors"`
}

type snodoCase struct {
	ID        string `json:"id"`
	Mode      string `json:"mode"`
	SecretHex string `json:"secret_hex"`
	Keys      []struct {
		ID        string `json:"id"`
		SecretHex string `json:"secret_hex"`
	} `json:"keys"`
	Principal     *string `json:"principal_json"`
	Method        string  `json:"method"`
	Params        string  `json:"params_json"`
	TTL           *int64  `json:"ttl"`
	Clock         int64   `json:"clock"`
	Data          *string `json:"data_json"`
	DataGenerator string  `json:"data_json_generator"`
	Token         string  `json:"token"`
	Expected      struct {
		// seal_vectors
		EffectiveTTL   *int64 `json:"effective_ttl"`
		Binding        string `json:"binding"`
		ScopeHMACInput string `json:"scope_hmac_input"`
		Scope          string `json:"scope"`
		SigningKeyID   string `json:"signing_key_id"`
		PayloadJSON    string `json:"payload_json"`
		PayloadB64     string `json:"payload_b64"`
		TokenHMACInput string `json:"token_hmac_input"`
		MAC            string `json:"mac"`
		Token          string `json:"token"`
		// open_vectors, crafted_vectors
		OK   *bool   `json:"ok"`
		Data *string `json:"data_json"`
		// seal_error_vectors
		Raises bool `json:"raises"`
	} `json:"expected"`
}

// snodoVectorFiles returns the vector files to run: MRTR_SNODO_VECTORS, or every file of
// testdata/snodo.
func snodoVectorFiles(t *testing.T) []string {
	t.Helper()
	if path := os.Getenv("MRTR_SNODO_VECTORS"); path != "" {
		return []string{path}
	}
	paths, err := filepath.Glob("testdata/snodo/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Snodo vectors in testdata/snodo (set MRTR_SNODO_VECTORS to choose a file): %v", err)
	}
	return paths
}

func loadSnodoVectors(t *testing.T, path string) *snodoVectors {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the Snodo vectors (set MRTR_SNODO_VECTORS to choose a file): %v", err)
	}
	var v snodoVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !strings.HasPrefix(v.Schema, snodoSchemaPrefix) {
		t.Fatalf("%s: schema %.60q, want %q", path, v.Schema, snodoSchemaPrefix)
	}
	if len(v.Seal)+len(v.Open)+len(v.Crafted)+len(v.Errors) == 0 {
		t.Fatalf("%s holds no cases", path)
	}
	if v.Constants.MaxTokenBytes != 0 && v.Constants.MaxTokenBytes != MaxSignedTokenBytes {
		t.Fatalf("%s: max_token_bytes %d, this codec has %d", path, v.Constants.MaxTokenBytes, MaxSignedTokenBytes)
	}
	return &v
}

func TestSnodoVectors(t *testing.T) {
	for _, path := range snodoVectorFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			v := loadSnodoVectors(t, path)
			if len(v.Samples.Numbers)+len(v.Samples.Strings) > 0 {
				t.Run("json_encoding_samples", func(t *testing.T) { checkEncodingSamples(t, v) })
			}
			for _, c := range v.Seal {
				t.Run("seal/"+c.ID, func(t *testing.T) { checkSealVector(t, c) })
			}
			for _, c := range append(append([]snodoCase(nil), v.Open...), v.Crafted...) {
				t.Run("open/"+c.ID, func(t *testing.T) { checkOpenVector(t, c) })
			}
			for _, c := range v.Errors {
				t.Run("seal-error/"+c.ID, func(t *testing.T) { checkSealErrorVector(t, c) })
			}
			for _, c := range v.Decode {
				t.Run("params-decode/"+c.ID, func(t *testing.T) {
					params := []byte(c.Params)
					if c.ParamsHex != "" {
						params = mustHex(t, c.ParamsHex)
					}
					// Params Snodo refuses to read are the client's mistake here: an *InputError.
					_, err := signedBindingOf(Binding{Method: "tools/call", Params: params, Principal: Anonymous})
					if c.Expected.OK != (err == nil) || err != nil && !IsInputError(err) {
						t.Fatalf("binding: %v; Snodo reads the params: %v", err, c.Expected.OK)
					}
				})
			}
		})
	}
}

func checkEncodingSamples(t *testing.T, v *snodoVectors) {
	for _, n := range v.Samples.Numbers {
		// The schema's rule: a literal with '.', 'e' or 'E' is a float, any other an integer.
		kind := "integer"
		if strings.ContainsAny(n.Input, ".eE") {
			kind = "float"
		}
		if kind != n.Type {
			t.Errorf("number %s is an %s by the schema's rule, Elixir says %q", n.Input, kind, n.Type)
		}
		if got, err := canonical.Append(nil, []byte(n.Input)); err != nil || string(got) != n.Encoded {
			t.Errorf("number %s encodes as %s (%v), Elixir as %s", n.Input, got, err, n.Encoded)
		}
	}
	for _, s := range v.Samples.Strings {
		in, want := mustHex(t, s.InputHex), mustHex(t, s.EncodedHex)
		got, err := canonical.AppendString(nil, string(in))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("string %x encodes as %x (%v), Elixir as %x", in, got, err, want)
		}
		d := canonical.GetDecoder(want)
		back, err := d.String(nil)
		if err == nil {
			err = d.End()
		}
		canonical.PutDecoder(d)
		if err != nil || string(back) != string(in) {
			t.Errorf("string %x does not decode back: %q, %v", want, back, err)
		}
	}
	if len(v.Samples.Numbers)+len(v.Samples.Strings) == 0 {
		t.Error("no json_encoding_samples")
	}
}

func checkSealVector(t *testing.T, c snodoCase) {
	s, err := c.codec(t)
	if err != nil {
		t.Fatalf("configuration rejected: %v", err)
	}
	b := c.binding()
	data := c.data(t)

	binding, err := signedBindingOf(b)
	if err != nil || string(binding) != c.Expected.Binding {
		t.Fatalf("binding\n got %s (%v)\nwant %s", binding, err, c.Expected.Binding)
	}
	secret, kid := c.signingKey(t)
	if kid != c.Expected.SigningKeyID {
		t.Fatalf("signing key %q, vector says %q", kid, c.Expected.SigningKeyID)
	}
	if want := string(signedTagScope) + c.Expected.Binding; c.Expected.ScopeHMACInput != want {
		t.Fatalf("the vector's scope_hmac_input is not the scope tag + binding")
	}
	if scope := hmacB64(secret, c.Expected.ScopeHMACInput); scope != c.Expected.Scope {
		t.Fatalf("scope %s, want %s", scope, c.Expected.Scope)
	}
	if c.Expected.EffectiveTTL != nil && *c.Expected.EffectiveTTL != s.ttl {
		t.Fatalf("ttl %d, want %d", s.ttl, *c.Expected.EffectiveTTL)
	}

	tok, err := s.Seal(b, data)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if tok != c.Expected.Token {
		// Erlang writes maps of more than 32 keys in hash order, which no other implementation
		// reproduces: there, and only there, the data may come in another order.
		if maxMembers(t, data) <= 32 {
			t.Fatalf("token\n got %s\nwant %s", tok, c.Expected.Token)
		}
		checkSameTokenButDataOrder(t, c, secret, kid, tok)
	}

	got, err := s.Open(b, tok)
	if err != nil {
		t.Fatalf("Open of the sealed token: %v", err)
	}
	if want := mustCanonical(t, data); string(got) != want {
		t.Fatalf("opened data\n got %s\nwant %s", got, want)
	}
}

// checkSameTokenButDataOrder checks that tok is the expected token but for the order of members of
// the data: same prefix and kid, same payload fields, same data as a value, a MAC that verifies.
func checkSameTokenButDataOrder(t *testing.T, c snodoCase, secret []byte, kid, tok string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	wantParts := strings.Split(c.Expected.Token, ".")
	if len(parts) != len(wantParts) || parts[0] != wantParts[0] || (kid != "" && parts[1] != kid) {
		t.Fatalf("token layout\n got %s\nwant %s", tok, c.Expected.Token)
	}
	enc, mac := parts[len(parts)-2], parts[len(parts)-1]
	signed := enc
	tag := signedTagV1
	if kid != "" {
		signed, tag = kid+"."+enc, signedTagV2
	}
	if hmacB64(secret, string(tag)+signed) != mac {
		t.Fatal("MAC does not verify")
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []json.RawMessage
	if json.Unmarshal(payload, &got) != nil || json.Unmarshal([]byte(c.Expected.PayloadJSON), &want) != nil ||
		len(got) != 5 || len(want) != 5 {
		t.Fatalf("payload\n got %s\nwant %s", payload, c.Expected.PayloadJSON)
	}
	for i := range 4 {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("payload field %d: got %s, want %s", i, got[i], want[i])
		}
	}
	if mustCanonical(t, got[4]) != mustCanonical(t, want[4]) {
		t.Fatalf("payload data differs beyond member order\n got %s\nwant %s", got[4], want[4])
	}
}

func checkOpenVector(t *testing.T, c snodoCase) {
	s, err := c.codec(t)
	if err != nil {
		t.Fatalf("configuration rejected: %v", err)
	}
	if c.Expected.OK == nil {
		t.Fatal("vector has no expected.ok")
	}
	got, err := s.Open(c.binding(), c.Token)
	if !*c.Expected.OK {
		if err != ErrInvalid {
			t.Fatalf("Open = %s, %v; want ErrInvalid", got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if c.Expected.Data == nil {
		t.Fatal("vector has no expected data_json")
	}
	// Open returns the data as the token carries it; Snodo returns a term, which the vector shows
	// as Elixir encodes it. Both must be the same value: canonically, the same bytes, which for
	// objects of at most 32 members are Elixir's own.
	want := []byte(*c.Expected.Data)
	if maxMembers(t, want) > 32 {
		want = []byte(mustCanonical(t, want)) // Erlang's hash order: compare as values
	}
	if canon := mustCanonical(t, got); canon != string(want) {
		t.Fatalf("data\n got %s\nwant %s", canon, want)
	}
}

func checkSealErrorVector(t *testing.T, c snodoCase) {
	if !c.Expected.Raises {
		t.Fatal("seal-error vector does not expect an error")
	}
	s, err := c.codec(t)
	if err != nil {
		var kerr *keyringError
		if errors.As(err, &kerr) || IsConfigError(err) {
			return // rejected as configuration, by the keyring or by the codec
		}
		t.Fatalf("configuration rejected with %T %v, want a *ConfigError", err, err)
	}
	tok, err := s.Seal(c.binding(), c.data(t))
	if !IsConfigError(err) {
		t.Fatalf("Seal = %.60q, %v; want a *ConfigError", tok, err)
	}
}

// keyringError marks a keyring that keyring.New refused: for the "keys" mode that is where Snodo's
// option checks (count, ids, secret lengths) live in Go.
type keyringError struct{ err error }

func (e *keyringError) Error() string { return "keyring: " + e.err.Error() }

func (c snodoCase) codec(t *testing.T) (*Signed, error) {
	t.Helper()
	var opts []SignedOption
	if c.TTL != nil {
		opts = append(opts, SignedTTL(time.Duration(*c.TTL)*time.Second))
	}
	clock := c.Clock
	opts = append(opts, SignedClock(func() time.Time { return time.Unix(clock, 0) }))
	switch c.Mode {
	case "secret":
		return NewSignedSecret(mustHex(t, c.SecretHex), opts...)
	case "keys":
		keys := make([]keyring.Key, len(c.Keys))
		for i, k := range c.Keys {
			keys[i] = keyring.NewKey(k.ID, mustHex(t, k.SecretHex))
		}
		r, err := keyring.New(keys...)
		if err != nil {
			return nil, &keyringError{err}
		}
		return NewSigned(keyring.Static(r), opts...)
	default:
		t.Fatalf("unknown mode %q", c.Mode)
		return nil, nil
	}
}

func (c snodoCase) signingKey(t *testing.T) (secret []byte, kid string) {
	if c.Mode == "keys" {
		return mustHex(t, c.Keys[0].SecretHex), c.Keys[0].ID
	}
	return mustHex(t, c.SecretHex), ""
}

func (c snodoCase) binding() Binding {
	b := Binding{Method: c.Method, Params: json.RawMessage(c.Params)}
	if c.Principal != nil {
		b.Principal = json.RawMessage(*c.Principal)
	}
	return b
}

// generatorPattern reads the one data_json_generator form of the schema: "JSON string of 12177 'x'
// characters".
var generatorPattern = regexp.MustCompile(`^JSON string of (\d+) '(.+)' characters?$`)

func (c snodoCase) data(t *testing.T) json.RawMessage {
	t.Helper()
	switch {
	case c.Data != nil:
		return json.RawMessage(*c.Data)
	case c.DataGenerator != "":
		m := generatorPattern.FindStringSubmatch(c.DataGenerator)
		if m == nil {
			t.Fatalf("data_json_generator %q is not a form this test knows", c.DataGenerator)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		s, err := canonical.AppendString(nil, strings.Repeat(m[2], n))
		if err != nil {
			t.Fatal(err)
		}
		return s
	default:
		t.Fatal("vector has neither data_json nor data_json_generator")
		return nil
	}
}

// signedBindingOf is the canonical binding the Signed codec computes for b.
func signedBindingOf(b Binding) ([]byte, error) {
	var sc signedScratch
	if err := signedPrincipal(&sc, b); err != nil {
		return nil, err
	}
	if err := signedBinding(&sc, b); err != nil {
		return nil, err
	}
	return sc.binding, nil
}

// maxMembers returns the largest number of members of any object in the JSON text b, at any depth.
// The vectors' data repeats no name, so encoding/json's maps count them all.
func maxMembers(t *testing.T, b []byte) int {
	t.Helper()
	// UseNumber: the state may hold integers beyond float64's range, which Snodo opens and Open
	// returns as they are; only the shape matters here.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("data %.80s: %v", b, err)
	}
	var walk func(v any) int
	walk = func(v any) int {
		n := 0
		switch v := v.(type) {
		case map[string]any:
			n = len(v)
			for _, e := range v {
				n = max(n, walk(e))
			}
		case []any:
			for _, e := range v {
				n = max(n, walk(e))
			}
		}
		return n
	}
	return walk(v)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func mustCanonical(t *testing.T, b []byte) string {
	t.Helper()
	c, err := canonical.Append(nil, b)
	if err != nil {
		t.Fatalf("canonical %.80s: %v", b, err)
	}
	return string(c)
}

func hmacB64(secret []byte, msg string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// The schema's one exception, data of more than 32 members written in Erlang's hash order, must be
// recognised as such and still be checked: a synthetic vector with the members reversed.
func TestSnodoVectorHashOrderData(t *testing.T) {
	secret := []byte("snodo-interop-secret-A-0123456789abcdef")
	fwd := make([]string, 0, 40)
	for i := range 40 {
		fwd = append(fwd, `"k`+strconv.Itoa(100+i)+`":`+strconv.Itoa(i))
	}
	rev := slices.Clone(fwd)
	slices.Reverse(rev)
	data := "{" + strings.Join(fwd, ",") + "}"
	hashOrder := "{" + strings.Join(rev, ",") + "}"
	p := `"u"`
	c := snodoCase{ID: "synthetic", Mode: "secret", SecretHex: hex.EncodeToString(secret), Principal: &p,
		Method: "tools/call", Params: `{"name":"x"}`, Clock: 1000, Data: &data}
	c.Expected.Binding = `["tools/call",{"name":"x"},"u"]`
	c.Expected.ScopeHMACInput = string(signedTagScope) + c.Expected.Binding
	c.Expected.Scope = hmacB64(secret, c.Expected.ScopeHMACInput)
	c.Expected.PayloadJSON = `[1,1000,1300,"` + c.Expected.Scope + `",` + hashOrder + `]`
	enc := base64.RawURLEncoding.EncodeToString([]byte(c.Expected.PayloadJSON))
	c.Expected.Token = "mrtr1." + enc + "." + hmacB64(secret, string(signedTagV1)+enc)
	checkSealVector(t, c)

	ok := true
	c.Token, c.Expected.OK, c.Expected.Data = c.Expected.Token, &ok, &hashOrder
	checkOpenVector(t, c)
}

// The interop test reads the expected state of every vector, integers beyond float64's range
// included (Snodo seals and opens them).
func TestMaxMembersReadsBigIntegers(t *testing.T) {
	big := "1" + strings.Repeat("0", 400)
	if n := maxMembers(t, []byte(`{"a":[{"b":`+big+`,"c":1}],"d":-`+big+`}`)); n != 2 {
		t.Errorf("maxMembers = %d, want 2", n)
	}
}
