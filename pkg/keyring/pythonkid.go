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
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// The derivation of python-sdk's built-in request-state codec (mcp 2.3.0,
// src/mcp/server/request_state.py, AESGCMRequestStateCodec): the AES-256-GCM key is
// HKDF-SHA256(secret, no salt, pythonKDFInfo, 32 bytes), and the kid its tokens carry is the
// first 4 bytes of SHA-256(pythonKidInfo || that key).
const (
	pythonKDFInfo = "mcp/request-state/v1/aes-256-gcm"
	pythonKidInfo = "mcp/request-state/v1/kid:"
	pythonKidLen  = 4
)

// PythonKid is the kid that python-sdk (mcp 2.3.0) writes into every token it seals with this key,
// as 8 lowercase hex digits. Python tokens are "v1." + base64url(kid || nonce || ciphertext || tag)
// with the kid as the first 4 bytes, and the SDK derives the kid from the key instead of taking an
// id: this is how a Python token is traced back to the key id. It is a hash of a hash of the
// secret, as safe to show as the Fingerprint; "" for the zero Key.
func (k Key) PythonKid() string {
	if k.secret == nil {
		return ""
	}
	// hkdf.Key fails only for a length beyond 255 hash blocks; 32 bytes never does.
	aesKey, err := hkdf.Key(sha256.New, k.bytes(), nil, pythonKDFInfo, 32)
	if err != nil {
		panic("keyring: HKDF-SHA256 of 32 bytes failed: " + err.Error())
	}
	sum := sha256.Sum256(append([]byte(pythonKidInfo), aesKey...))
	clear(aesKey)
	return hex.EncodeToString(sum[:pythonKidLen])
}

// PythonTokenPrefix starts every token that python-sdk's built-in codec seals.
const PythonTokenPrefix = "v1."

// PythonTokenKid returns the kid of a token sealed by python-sdk's built-in codec, as PythonKid
// prints it, so that the token can be matched to a key; ok is false if token does not have that
// format (the prefix, then canonical unpadded base64url of at least kid, nonce and tag). It opens
// nothing: the kid is the one part of the token that is not encrypted.
func PythonTokenKid(token string) (kid string, ok bool) {
	body, found := strings.CutPrefix(token, PythonTokenPrefix)
	if !found {
		return "", false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	// The SDK accepts only the canonical encoding; so does this.
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != body || len(raw) < pythonKidLen+12+16 {
		return "", false
	}
	return hex.EncodeToString(raw[:pythonKidLen]), true
}
