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
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// The seal probe (docs/consumers.md, "Conformance"): the check writes "seal?", the consumer seals
// a token with the codec a server of its own would use, with the keyring in service, and answers
// "sealed <token>". A Signed token (Snodo's mrtr2, which pkg/token, the TypeScript package and
// Snodo write) is sealed for this binding, with any state; a python-sdk token for any binding; an
// rs2 token (rmcp's, which pkg/token and the Rust crate write) for the associated data ProbeRS2AD,
// with any payload.
var probeBinding = token.Binding{Method: "tools/call", Params: json.RawMessage(`{"name":"conformance"}`), Principal: token.Anonymous}

// ProbeRS2AD is the associated data an rs2 token answering "seal?" is bound to. The tag binds it
// and the token does not carry it, so the check must know it to verify the token.
const ProbeRS2AD = "mrtr-conformance"

// sealOutcome is what one seal probe found.
type sealOutcome struct {
	stage             string
	primary, inTTL    bool
	primaryWhy, ttlIs string
}

// openProbe opens tok with the keys of the keyring in service, want, and says which key sealed it
// and for how long. An rs2 token carries its expiry and no issue time: its lifetime is counted
// from received, when its answer arrived, which the seal preceded. The error says why the token is
// none of want's.
func openProbe(tok string, want []keyring.Key, received time.Time) (kid string, lifetime time.Duration, err error) {
	ring, err := keyring.New(want...) // without a token-ttl: the lifetime is checked here, not by Open
	if err != nil {
		return "", 0, err
	}
	switch {
	case token.IsSigned(tok):
		codec, err := token.NewSigned(keyring.Static(ring), token.SignedTTL(keyring.MaxTokenTTL))
		if err != nil {
			return "", 0, err
		}
		info, err := codec.Explain(probeBinding, tok)
		if err != nil {
			return info.KeyID, 0, err
		}
		if info.Version != 2 {
			return "", 0, errors.New("an mrtr1 token, which names no key")
		}
		return info.KeyID, info.Expires.Sub(info.Issued), nil
	case strings.HasPrefix(tok, keyring.PythonTokenPrefix):
		return openPython(tok, want)
	case token.IsRS2(tok):
		// The longest TTL, so that Explain refuses nothing for its lifetime: that is checked here.
		codec, err := token.NewRS2(keyring.Static(ring), token.RS2TTL(keyring.MaxTokenTTL))
		if err != nil {
			return "", 0, err
		}
		info, err := codec.Explain(tok, []byte(ProbeRS2AD))
		if err != nil {
			return info.KeyID, 0, err
		}
		return info.KeyID, info.Expires.Sub(received), nil
	}
	return "", 0, fmt.Errorf("a token of no format the check opens (Signed mrtr2, python-sdk v1., rs2): %.12q…", tok)
}

// openPython opens a python-sdk (mcp 2.3.0) token: "v1." and the unpadded base64url of kid (4),
// nonce (12) and the AES-256-GCM ciphertext with its tag, under HKDF-SHA256(secret, no salt,
// "mcp/request-state/v1/aes-256-gcm"), with "v1." and the kid as associated data; the plaintext is
// the SDK's claims, whose iat and exp are Unix seconds (docs/consumers.md, "A Python token names
// its key by a kid").
func openPython(tok string, want []keyring.Key) (kid string, lifetime time.Duration, err error) {
	kidHex, ok := keyring.PythonTokenKid(tok)
	if !ok {
		return "", 0, errors.New("a malformed python-sdk token")
	}
	var key *keyring.Key
	for i := range want {
		if want[i].PythonKid() == kidHex {
			key = &want[i]
			break
		}
	}
	if key == nil {
		return "python kid " + kidHex, 0, &token.RejectError{Codec: token.CodecPythonSDK, Check: token.CheckKeyID}
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, keyring.PythonTokenPrefix))
	if err != nil || len(raw) < 4+12+16 {
		return key.ID(), 0, errors.New("a malformed python-sdk token")
	}
	secret := key.Secret()
	defer clear(secret)
	aesKey, err := hkdf.Key(sha256.New, secret, nil, "mcp/request-state/v1/aes-256-gcm", 32)
	if err != nil {
		return key.ID(), 0, err
	}
	block, _ := aes.NewCipher(aesKey)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, raw[4:16], raw[16:], append([]byte(keyring.PythonTokenPrefix), raw[:4]...))
	if err != nil {
		return key.ID(), 0, &token.RejectError{Codec: token.CodecPythonSDK, Check: token.CheckAuthTag}
	}
	var claims struct{ Iat, Exp float64 }
	if err := json.Unmarshal(plain, &claims); err != nil || claims.Exp < claims.Iat || math.IsInf(claims.Exp, 0) {
		return key.ID(), 0, errors.New("a python-sdk token whose claims have no iat and exp")
	}
	return key.ID(), time.Duration((claims.Exp - claims.Iat) * float64(time.Second)), nil
}

// sealProbe asks the consumer to seal and checks the token against the snapshot it must serve:
// sealed with keys[0] of that keyring, for no longer than its token-ttl (the 15-minute ceiling when
// it declares none).
func (r *run) sealProbe(stage string, want snapshot) {
	keys := want.keys
	mark := r.rec.now()
	r.c.ask("seal?")
	var tok string
	var received time.Time
	answered := r.rec.await(r.opts.Timeout, func() bool {
		_, seals := r.c.output()
		for _, s := range seals {
			if s.at > mark {
				tok, received = s.token, time.Now()
				return true
			}
		}
		return false
	})
	o := sealOutcome{stage: stage}
	limit := keyring.MaxTokenTTL
	if want.ttl != "" {
		limit = time.Duration(mustAtoi(want.ttlWord())) * time.Second
	}
	if !answered {
		o.primaryWhy, o.ttlIs = "no \"sealed\" answer to seal?", "no token"
		r.seals = append(r.seals, o)
		return
	}
	kid, lifetime, err := openProbe(tok, keys, received)
	switch {
	case err != nil:
		o.primaryWhy = fmt.Sprintf("the token does not open with the keyring in service %s: %v", want.fingerprint, err)
		o.ttlIs = "not opened"
	default:
		o.primary = kid == keys[0].ID()
		o.primaryWhy = fmt.Sprintf("sealed with %q, keys[0] of %s is %q", kid, want.fingerprint, keys[0].ID())
		o.inTTL = lifetime <= limit
		o.ttlIs = fmt.Sprintf("lives %v, token-ttl %v", lifetime, limit)
	}
	r.seals = append(r.seals, o)
}

// sealResults decides the two seal checks over every probe.
func (r *run) sealResults() {
	primary, inTTL := len(r.seals) > 0, len(r.seals) > 0
	pd, td := make([]string, 0, len(r.seals)), make([]string, 0, len(r.seals))
	for _, o := range r.seals {
		primary = primary && o.primary
		inTTL = inTTL && o.inTTL
		pd = append(pd, o.stage+": "+o.primaryWhy)
		td = append(td, o.stage+": "+o.ttlIs)
	}
	r.result(CheckSealsWithPrimary, primary, "each token it seals opens with keys[0] of the keyring it serves (%s)", strings.Join(pd, "; "))
	r.result(CheckSealsWithinTTL, inTTL, "no token it seals outlives the token-ttl it serves (%s)", strings.Join(td, "; "))
}

func mustAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
