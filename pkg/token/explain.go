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
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// Check names one of the checks by which Open rejects a token, in the order the codecs run them
// (see the package doc and the Signed codec's doc): a *RejectError carries the first that failed.
type Check string

// The checks. Not every codec runs every check: only Sealed checks the principal on its own (Signed
// binds it into the scope with the method and params) and only Signed verifies a MAC (Sealed
// authenticates with its GCM tag).
const (
	// CheckSize: the token is longer than the codec reads (MaxSignedTokenBytes, MaxSealedTokenBytes).
	CheckSize Check = "size"
	// CheckFormat: the token is not laid out as the codec writes it (prefix, parts, key id, base64).
	CheckFormat Check = "format"
	// CheckKeyID: no key of the current keyring has the id the token names.
	CheckKeyID Check = "key id"
	// CheckMAC (Signed, rs2): the MAC does not verify with the key the token names (mrtr2) or with any
	// key (mrtr1): the token was altered, or sealed with another key of that id.
	CheckMAC Check = "mac"
	// CheckAuthTag (Sealed): AES-256-GCM does not open the token: it was altered, sealed with
	// another key of that id, or sealed for another protocol version, method or server (the
	// associated data).
	CheckAuthTag Check = "auth tag"
	// CheckPayload: the token is authentic but its payload is not the codec's layout, or its times
	// are not a lifetime. Only a key holder can write one.
	CheckPayload Check = "payload"
	// CheckPrincipal (Sealed): the token was sealed for another principal.
	CheckPrincipal Check = "principal"
	// CheckExpired: now is at or past the token's expiry.
	CheckExpired Check = "expired"
	// CheckNotYetValid: the token was issued later than now (Sealed: by more than its clock skew).
	CheckNotYetValid Check = "not yet valid"
	// CheckLifetime: the token lives longer (expiry minus issue time) than the opener's TTL.
	CheckLifetime Check = "lifetime"
	// CheckParams: the request's params cannot be bound (see Binding.Params), so no token can have
	// been sealed for them.
	CheckParams Check = "params"
	// CheckBinding: the token was sealed for another request. Sealed: other params (the method is
	// checked with the auth tag, the principal before). Signed: another method, params or principal,
	// which its scope binds together.
	CheckBinding Check = "binding"
)

// Result is the metrics.Result that an open ending with this check counts under (the empty Check:
// the token opened). Several checks share a result: the result names what went wrong for whoever
// watches a fleet, the check where the codec saw it.
func (c Check) Result() metrics.Result {
	switch c {
	case "":
		return metrics.OK
	case CheckSize:
		return metrics.TooLarge
	case CheckKeyID:
		return metrics.UnknownKey
	case CheckMAC, CheckAuthTag:
		return metrics.BadMAC
	case CheckExpired, CheckNotYetValid, CheckLifetime:
		return metrics.Expired
	case CheckPrincipal, CheckParams, CheckBinding:
		return metrics.BindingMismatch
	default: // CheckFormat, CheckPayload
		return metrics.Malformed
	}
}

// The codec names of Info.Codec and RejectError.Codec.
const (
	CodecSigned = "Signed"
	CodecSealed = "Sealed"
)

// RejectError is Explain's answer for a token that Open rejects: which check failed first.
// errors.Is(err, ErrInvalid) holds. It is for the server's logs and for diagnosis; never send it to
// a client, which Open answers with ErrInvalid alone, so that a forger learns nothing.
type RejectError struct {
	Codec string // CodecSigned, CodecSealed, CodecRS2, CodecPythonSDK; "" for a text of no format's shape
	Check Check
}

func (e *RejectError) Error() string {
	if e.Codec == "" {
		return "token: rejected by the " + string(e.Check) + " check: the text has the shape of no token format (Signed, rs2, python-sdk, Sealed)"
	}
	return "token: " + e.Codec + " token rejected by the " + string(e.Check) + " check: " + e.reason()
}

// Is makes a *RejectError match ErrInvalid.
func (e *RejectError) Is(target error) bool { return target == ErrInvalid }

func (e *RejectError) reason() string {
	switch e.Check {
	case CheckSize:
		return "the token is longer than the codec reads"
	case CheckFormat:
		return "the token is not laid out as the codec writes it"
	case CheckKeyID:
		return "no key of the keyring has the token's key id"
	case CheckMAC:
		if e.Codec == CodecRS2 {
			return "the MAC does not verify: the token was altered, sealed with another key, " +
				"or sealed for other associated data (another request or principal)"
		}
		return "the MAC does not verify: the token was altered, or sealed with another key"
	case CheckAuthTag:
		return "AES-256-GCM does not open it: the token was altered, sealed with another key, " +
			"or sealed for another protocol version, method or server"
	case CheckPayload:
		return "the token is authentic but its payload is malformed"
	case CheckPrincipal:
		return "the token was sealed for another principal"
	case CheckExpired:
		return "the token has expired"
	case CheckNotYetValid:
		return "the token was issued later than now allows: a clock runs ahead"
	case CheckLifetime:
		if e.Codec == CodecRS2 {
			return "the token has no expiry, or expires later than the opener's TTL (and clock skew) from now"
		}
		return "the token lives longer than the opener's TTL"
	case CheckParams:
		return "the request's params cannot be bound"
	case CheckBinding:
		if e.Codec == CodecSealed {
			return "the token was sealed for other params"
		}
		return "the token was sealed for another method, params or principal"
	}
	return "unknown check"
}

// Info is what a token says about itself.
type Info struct {
	Codec   string // CodecSigned, CodecSealed, CodecRS2 or CodecPythonSDK
	Version int    // Signed: 1 (mrtr1, no key id) or 2 (mrtr2); Sealed: 1 (mrtr-sealed-v1); rs2: 2
	KeyID   string // the id of the key the token names; "" for mrtr1
	// Issued and Expires are the token's times, zero when they are not known: a Sealed token
	// carries them inside the ciphertext, so only Explain reads them, with the key. A Signed token's
	// payload is signed, not encrypted, so Inspect reads its times without a key.
	Issued, Expires time.Time
	// Verified is true when a key of the keyring authenticated the token (Explain only): its times
	// are then those its sealer wrote. Inspect proves nothing: anyone can write a token's text.
	Verified bool
}

// Inspect reads what a token's text says without keys: its codec (the first of Formats whose shape
// it has), format version, key id and, for a Signed token, its times (an rs2 token's expiry),
// unverified. A token no format reads is a *RejectError (CheckSize or CheckFormat), of the format
// whose shape it has, or of none (Codec ""); Info then holds what was read before the failure. Its
// work is linear in the token's length and bounded by the codecs' size limits, so it is safe on
// untrusted input.
func Inspect(tok string) (Info, error) {
	for _, f := range Formats() {
		if f.Is(tok) {
			return f.Inspect(tok)
		}
	}
	return Info{}, &RejectError{Check: CheckFormat}
}

func inspectSigned(tok string) (Info, error) {
	info := Info{Codec: CodecSigned, Version: int(tok[len("mrtr")] - '0')}
	reject := func(c Check) (Info, error) { return info, &RejectError{Codec: CodecSigned, Check: c} }
	if len(tok) > MaxSignedTokenBytes {
		return reject(CheckSize)
	}
	p, ok := splitSigned([]byte(tok))
	if !ok {
		return reject(CheckFormat)
	}
	info.KeyID = string(p.kid)
	sc := new(signedScratch) // not pooled: Inspect is not on a server's hot path
	payload, ok := decodeSignedB64(nil, p.enc)
	if !ok {
		return reject(CheckFormat)
	}
	issued, expires, _, ok := readSignedPayload(sc, payload, p.version)
	if !ok {
		return reject(CheckFormat)
	}
	info.Issued, info.Expires = time.Unix(issued, 0).UTC(), time.Unix(expires, 0).UTC()
	return info, nil
}

func inspectSealed(tok string) (Info, error) {
	info := Info{Codec: CodecSealed, Version: 1}
	reject := func(c Check) (Info, error) { return info, &RejectError{Codec: CodecSealed, Check: c} }
	if len(tok) > MaxSealedTokenBytes {
		return reject(CheckSize)
	}
	kid, enc, _ := strings.Cut(tok, ".")
	if !IsSealed(tok) {
		return reject(CheckFormat)
	}
	info.KeyID = kid
	raw := make([]byte, sealedB64.DecodedLen(len(enc)))
	n, err := sealedB64.Decode(raw, []byte(enc))
	if err != nil || sealedB64.EncodedLen(n) != len(enc) || n < ivLen+tagLen {
		return reject(CheckFormat)
	}
	return info, nil
}

// Explain runs Open's checks on token for binding b and says how they end: nil when Open would
// return the state, a *RejectError naming the first check that fails, or the *ConfigError Open
// returns for the server's own mistakes. Info is what Inspect reads, with Issued, Expires and
// Verified from the key once it authenticated the token. It never returns the state.
//
// Explain is for diagnosis (logs, metrics, kubectl mrtr inspect): a server answers clients with
// Open, whose ErrInvalid tells a forger nothing.
func (s *Sealed) Explain(b Binding, token string) (Info, error) {
	sc := getScratch()
	defer putScratch(sc)
	r, err := s.open(sc, b, token)
	if err != nil {
		return Info{}, err
	}
	info, _ := inspectSealed(token) // the codec's own reading: a key named v1 seals Sealed tokens too
	if r.authentic {
		info.Verified = true
		if r.check != CheckPayload {
			info.Issued, info.Expires = time.Unix(r.issued, 0).UTC(), time.Unix(r.expires, 0).UTC()
		}
	}
	if r.check != "" {
		return info, &RejectError{Codec: CodecSealed, Check: r.check}
	}
	return info, nil
}

// Explain runs Open's checks on token for binding b and says how they end: nil when Open would
// return the state, a *RejectError naming the first check that fails, or the *ConfigError Open
// returns for the server's own mistakes. Info is what Inspect reads (a Signed token's times are
// readable without a key), Verified once a key's MAC verified the token. It never returns the state.
//
// Explain is for diagnosis (logs, metrics, kubectl mrtr inspect): a server answers clients with
// Open, whose ErrInvalid tells a forger nothing.
func (s *Signed) Explain(b Binding, tok string) (Info, error) {
	sc := getSignedScratch()
	defer putSignedScratch(sc)
	r, err := s.openBound(sc, b, tok)
	if err != nil {
		return Info{}, err
	}
	info := Info{Codec: CodecSigned}
	if IsSigned(tok) { // the codec's own reading, of a text of its shape
		info, _ = inspectSigned(tok)
	}
	info.Verified = r.signer != nil
	if r.check != "" {
		return info, &RejectError{Codec: CodecSigned, Check: r.check}
	}
	return info, nil
}
