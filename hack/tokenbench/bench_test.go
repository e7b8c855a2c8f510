//go:build unix

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

package tokenbench

// The comparison benchmarks: the libraries a Go user might reach for instead of pkg/token, each used
// as its documentation shows and configured to bind what the codecs bind, on the fixture of pkg/token's
// benchmarks (pkg/token/testdata/bench/fixture.json) and with their loop. Every op is one seal and
// one open, as there:
//
//   - JOSEJWS: go-jose v4 JWS HS256 alone (integrity only, like Signed);
//   - JOSEJWE: go-jose v4 JWE dir + A256GCM alone (integrity and confidentiality, like Sealed);
//   - GolangJWT: golang-jwt/jwt/v5 HS256 (integrity only), its parser checking exp and aud;
//   - Tink: tink-go v2 AEAD from the AES256_GCM key template (a keyset handle and aead.New);
//   - JOSE: the JWS nested in the JWE, what a Go user would reach for to get both.
//
// Every alternative puts the bound data into its claims or plaintext: the server, protocol version,
// method, principal, issue and expiry times, the SHA-256 of [method, salient params] (joseDigest,
// recomputed by every seal and every open as the codecs recompute theirs) and the state; every open
// checks all of them. Keys are made once, outside the loop.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/tink"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// benchBinding and benchState are pkg/token's benchmark fixture, read as pkg/token reads it. A file
// that does not read is a mistake of the tree that no benchmark can run without.
var benchBinding, benchState = func() (token.Binding, json.RawMessage) {
	var f struct {
		Binding token.Binding
		State   json.RawMessage
	}
	if raw, err := os.ReadFile("../../pkg/token/testdata/bench/fixture.json"); err != nil || json.Unmarshal(raw, &f) != nil {
		panic(fmt.Sprint("the benchmark fixture: ", err))
	}
	return f.Binding, f.State
}()

// benchCodec runs one seal and one open of the fixture per op, reporting allocations and cpu-ns/op
// (the CPU time of the whole process, GC included) as pkg/token's benchmarks do.
func benchCodec(b *testing.B, c token.Codec) {
	b.ReportAllocs()
	n, start := 0, processCPU(b)
	for b.Loop() {
		tok, err := c.Seal(benchBinding, benchState)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Open(benchBinding, tok); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op")
}

// processCPU is the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const benchServer = "https://mcp.example.com/mcp"

// Every alternative is a token.Codec, measured as the codecs are.
func BenchmarkJOSEJWS(b *testing.B)   { benchCodec(b, newJWSAlt(b)) }
func BenchmarkJOSEJWE(b *testing.B)   { benchCodec(b, newJWEAlt(b)) }
func BenchmarkGolangJWT(b *testing.B) { benchCodec(b, newGolangJWTAlt()) }
func BenchmarkTink(b *testing.B)      { benchCodec(b, newTinkAlt(b)) }

// newAltClaims are the claims of a seal of state bound to bd, for server.
func newAltClaims(server string, bd token.Binding, state json.RawMessage) ([]byte, error) {
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	return json.Marshal(joseClaims{Server: server, ProtocolVersion: bd.ProtocolVersion, Method: bd.Method,
		Principal: bd.Principal, IssuedAt: now, Expiry: now + 300, Digest: dig, State: state})
}

// openAltClaims parses claims and returns their state if they bind bd for server and have not
// expired.
func openAltClaims(server string, bd token.Binding, claims []byte) (json.RawMessage, error) {
	var cl joseClaims
	if err := json.Unmarshal(claims, &cl); err != nil {
		return nil, token.ErrInvalid
	}
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil || cl.Server != server || cl.ProtocolVersion != bd.ProtocolVersion || cl.Method != bd.Method ||
		!bytes.Equal(cl.Principal, bd.Principal) || !hmac.Equal(cl.Digest, dig) || time.Now().Unix() >= cl.Expiry {
		return nil, token.ErrInvalid
	}
	return cl.State, nil
}

// jwsAlt is a go-jose JWS HS256 in compact serialization.
type jwsAlt struct {
	key    []byte
	signer jose.Signer
}

func newJWSAlt(tb testing.TB) *jwsAlt {
	c := &jwsAlt{key: bytes.Repeat([]byte{0x5a}, 32)}
	var err error
	if c.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: c.key},
		(&jose.SignerOptions{}).WithType("JWT")); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c *jwsAlt) Seal(bd token.Binding, state json.RawMessage) (string, error) {
	claims, err := newAltClaims(benchServer, bd, state)
	if err != nil {
		return "", err
	}
	jws, err := c.signer.Sign(claims)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

func (c *jwsAlt) Open(bd token.Binding, tok string) (json.RawMessage, error) {
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil {
		return nil, token.ErrInvalid
	}
	claims, err := jws.Verify(c.key)
	if err != nil {
		return nil, token.ErrInvalid
	}
	return openAltClaims(benchServer, bd, claims)
}

// jweAlt is a go-jose JWE with a direct 256-bit key and A256GCM, in compact serialization.
type jweAlt struct {
	key       []byte
	encrypter jose.Encrypter
}

func newJWEAlt(tb testing.TB) *jweAlt {
	c := &jweAlt{key: bytes.Repeat([]byte{0xa5}, 32)}
	var err error
	if c.encrypter, err = jose.NewEncrypter(jose.A256GCM, jose.Recipient{Algorithm: jose.DIRECT, Key: c.key},
		(&jose.EncrypterOptions{}).WithType("JWT")); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c *jweAlt) Seal(bd token.Binding, state json.RawMessage) (string, error) {
	claims, err := newAltClaims(benchServer, bd, state)
	if err != nil {
		return "", err
	}
	jwe, err := c.encrypter.Encrypt(claims)
	if err != nil {
		return "", err
	}
	return jwe.CompactSerialize()
}

func (c *jweAlt) Open(bd token.Binding, tok string) (json.RawMessage, error) {
	claims, err := decryptJWE(tok, c.key)
	if err != nil {
		return nil, err
	}
	return openAltClaims(benchServer, bd, claims)
}

// golangJWTClaims are joseClaims as golang-jwt spells them: the registered claims (aud, iat, exp)
// in jwt.RegisteredClaims, which its parser validates, the rest beside them.
type golangJWTClaims struct {
	ProtocolVersion string          `json:"ver"`
	Method          string          `json:"mth"`
	Principal       json.RawMessage `json:"prn"`
	Digest          []byte          `json:"dig"`
	State           json.RawMessage `json:"state"`
	jwt.RegisteredClaims
}

// golangJWTAlt is a golang-jwt HS256 token.
type golangJWTAlt struct {
	key    []byte
	parser *jwt.Parser
}

func newGolangJWTAlt() *golangJWTAlt {
	return &golangJWTAlt{key: bytes.Repeat([]byte{0x5a}, 32), parser: jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithAudience(benchServer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())}
}

func (c *golangJWTAlt) Seal(bd token.Binding, state json.RawMessage) (string, error) {
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil {
		return "", err
	}
	now := time.Now().Truncate(time.Second)
	return jwt.NewWithClaims(jwt.SigningMethodHS256, golangJWTClaims{
		ProtocolVersion: bd.ProtocolVersion, Method: bd.Method, Principal: bd.Principal, Digest: dig, State: state,
		RegisteredClaims: jwt.RegisteredClaims{Audience: jwt.ClaimStrings{benchServer},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute))},
	}).SignedString(c.key)
}

func (c *golangJWTAlt) Open(bd token.Binding, tok string) (json.RawMessage, error) {
	var cl golangJWTClaims
	if _, err := c.parser.ParseWithClaims(tok, &cl, func(*jwt.Token) (any, error) { return c.key, nil }); err != nil {
		return nil, token.ErrInvalid
	}
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil || cl.ProtocolVersion != bd.ProtocolVersion || cl.Method != bd.Method ||
		!bytes.Equal(cl.Principal, bd.Principal) || !hmac.Equal(cl.Digest, dig) {
		return nil, token.ErrInvalid
	}
	return cl.State, nil
}

// tinkAlt is a Tink AEAD (AES256_GCM key template, so a Tink-prefixed ciphertext) over the JSON
// claims, base64url without padding as the token; the associated data is the server identity.
type tinkAlt struct{ aead tink.AEAD }

func newTinkAlt(tb testing.TB) *tinkAlt {
	h, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		tb.Fatal(err)
	}
	a, err := aead.New(h)
	if err != nil {
		tb.Fatal(err)
	}
	return &tinkAlt{aead: a}
}

func (c *tinkAlt) Seal(bd token.Binding, state json.RawMessage) (string, error) {
	claims, err := newAltClaims(benchServer, bd, state)
	if err != nil {
		return "", err
	}
	ct, err := c.aead.Encrypt(claims, []byte(benchServer))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(ct), nil
}

func (c *tinkAlt) Open(bd token.Binding, tok string) (json.RawMessage, error) {
	ct, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, token.ErrInvalid
	}
	claims, err := c.aead.Decrypt(ct, []byte(benchServer))
	if err != nil {
		return nil, token.ErrInvalid
	}
	return openAltClaims(benchServer, bd, claims)
}

// The alternatives must really bind what they claim to, or their numbers would flatter them.
func TestBenchAlternatives(t *testing.T) {
	for name, c := range map[string]token.Codec{
		"JOSEJWS":   newJWSAlt(t),
		"JOSEJWE":   newJWEAlt(t),
		"GolangJWT": newGolangJWTAlt(),
		"Tink":      newTinkAlt(t),
	} {
		t.Run(name, func(t *testing.T) {
			tok, err := c.Seal(benchBinding, benchState)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.Open(benchBinding, tok); err != nil || !bytes.Equal(got, benchState) {
				t.Fatalf("Open = %s, %v", got, err)
			}
			for what, other := range map[string]func(*token.Binding){
				"params":           func(b *token.Binding) { b.Params = bytes.Replace(b.Params, []byte(`"qty":3`), []byte(`"qty":4`), 1) },
				"method":           func(b *token.Binding) { b.Method = "prompts/get" },
				"principal":        func(b *token.Binding) { b.Principal = json.RawMessage(`"user:bob"`) },
				"protocol version": func(b *token.Binding) { b.ProtocolVersion = "2026-08-01" },
			} {
				bd := benchBinding
				other(&bd)
				if _, err := c.Open(bd, tok); !errors.Is(err, token.ErrInvalid) {
					t.Errorf("Open with other %s = %v", what, err)
				}
			}
			i, flip := len(tok)-5, byte('A') // inside the MAC or the GCM tag, clear of unused low bits
			if tok[i] == flip {
				flip = 'B'
			}
			if _, err := c.Open(benchBinding, tok[:i]+string(flip)+tok[i+1:]); !errors.Is(err, token.ErrInvalid) {
				t.Errorf("Open of an altered token = %v", err)
			}
		})
	}
}

// joseClaims is the payload of the JOSE alternative: what the sealed codec binds, as a Go user
// would write it with encoding/json.
type joseClaims struct {
	Server          string          `json:"aud"`
	ProtocolVersion string          `json:"ver"`
	Method          string          `json:"mth"`
	Principal       json.RawMessage `json:"sub"`
	IssuedAt        int64           `json:"iat"`
	Expiry          int64           `json:"exp"`
	Digest          []byte          `json:"dig"`
	State           json.RawMessage `json:"state"`
}

// joseDigest is SHA-256 of [method, salient params] made with encoding/json (a map marshals with
// sorted keys; nested objects keep the client's member order, which is all encoding/json offers).
func joseDigest(method string, params json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, err
	}
	delete(m, "_meta")
	delete(m, "requestState")
	delete(m, "inputResponses")
	j, err := json.Marshal([]any{method, m})
	if err != nil {
		return nil, err
	}
	d := sha256.Sum256(j)
	return d[:], nil
}

type joseCodec struct {
	server         string
	macKey, encKey []byte
	signer         jose.Signer
	encrypter      jose.Encrypter
}

func newJOSECodec(b testing.TB) *joseCodec {
	c := &joseCodec{server: benchServer, macKey: bytes.Repeat([]byte{0x5a}, 32),
		encKey: bytes.Repeat([]byte{0xa5}, 32)}
	var err error
	if c.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: c.macKey}, nil); err != nil {
		b.Fatal(err)
	}
	if c.encrypter, err = jose.NewEncrypter(jose.A256GCM, jose.Recipient{Algorithm: jose.DIRECT, Key: c.encKey},
		(&jose.EncrypterOptions{}).WithContentType("JWT")); err != nil {
		b.Fatal(err)
	}
	return c
}

func (c *joseCodec) Seal(bd token.Binding, state json.RawMessage) (string, error) {
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil {
		return "", err
	}
	now := time.Now().Unix()
	payload, err := json.Marshal(joseClaims{Server: c.server, ProtocolVersion: bd.ProtocolVersion,
		Method: bd.Method, Principal: bd.Principal, IssuedAt: now, Expiry: now + 300, Digest: dig, State: state})
	if err != nil {
		return "", err
	}
	jws, err := c.signer.Sign(payload)
	if err != nil {
		return "", err
	}
	inner, err := jws.CompactSerialize()
	if err != nil {
		return "", err
	}
	jwe, err := c.encrypter.Encrypt([]byte(inner))
	if err != nil {
		return "", err
	}
	return jwe.CompactSerialize()
}

// decryptJWE opens a compact dir + A256GCM JWE with key; every failure is token.ErrInvalid.
func decryptJWE(tok string, key []byte) ([]byte, error) {
	jwe, err := jose.ParseEncryptedCompact(tok, []jose.KeyAlgorithm{jose.DIRECT}, []jose.ContentEncryption{jose.A256GCM})
	if err != nil {
		return nil, token.ErrInvalid
	}
	plain, err := jwe.Decrypt(key)
	if err != nil {
		return nil, token.ErrInvalid
	}
	return plain, nil
}

func (c *joseCodec) Open(bd token.Binding, tok string) (json.RawMessage, error) {
	inner, err := decryptJWE(tok, c.encKey)
	if err != nil {
		return nil, err
	}
	jws, err := jose.ParseSignedCompact(string(inner), []jose.SignatureAlgorithm{jose.HS256})
	if err != nil {
		return nil, token.ErrInvalid
	}
	payload, err := jws.Verify(c.macKey)
	if err != nil {
		return nil, token.ErrInvalid
	}
	var cl joseClaims
	if err := json.Unmarshal(payload, &cl); err != nil {
		return nil, token.ErrInvalid
	}
	dig, err := joseDigest(bd.Method, bd.Params)
	if err != nil || cl.Server != c.server || cl.ProtocolVersion != bd.ProtocolVersion || cl.Method != bd.Method ||
		!bytes.Equal(cl.Principal, bd.Principal) || !hmac.Equal(cl.Digest, dig) || time.Now().Unix() >= cl.Expiry {
		return nil, token.ErrInvalid
	}
	return cl.State, nil
}

func BenchmarkJOSE(b *testing.B) { benchCodec(b, newJOSECodec(b)) }

// The JOSE stand-in must really bind what it claims to, or its numbers would flatter it.
func TestJOSEBenchCodec(t *testing.T) {
	c := newJOSECodec(t)
	tok, err := c.Seal(benchBinding, benchState)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Open(benchBinding, tok); err != nil || !bytes.Equal(got, benchState) {
		t.Fatalf("Open = %s, %v", got, err)
	}
	other := benchBinding
	other.Params = bytes.Replace(other.Params, []byte(`"qty":3`), []byte(`"qty":4`), 1)
	if _, err := c.Open(other, tok); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("Open with other params = %v", err)
	}
}
