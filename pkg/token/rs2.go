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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// CodecRS2 names the tokens of rmcp's keyed request-state codec (crates.io rmcp,
// rmcp::model::RequestStateCodec::new_with_keyring), which the RS2 codec writes and reads byte for
// byte, so that Go and Rust replicas behind one Service share one keyring:
//
//	"rs2." b64url(kid) "." b64url(i64be(expiry_ms) ‖ payload) "." b64url(tag)
//	tag = HMAC-SHA256(key, "rmcp/mrtr/request-state/v2" ‖ u64be(len kid) ‖ kid ‖ u64be(len ad) ‖ ad ‖ body)
//
// b64url is base64url without padding; body is the second part's bytes; an expiry of 0 is none.
// The payload is signed, not encrypted: anyone reads it (Inspect does).
const CodecRS2 = "rs2"

// Limits and defaults of the RS2 codec.
const (
	// MaxRS2TokenBytes is the longest token the RS2 codec reads; a longer one is rejected before
	// anything is decoded, and Seal refuses a payload that would make a token longer.
	MaxRS2TokenBytes = 64 << 10
	// DefaultRS2TTL is the lifetime of the tokens the RS2 codec seals.
	DefaultRS2TTL = 5 * time.Minute
)

const (
	rs2Prefix = "rs2."
	rs2Domain = "rmcp/mrtr/request-state/v2"
	// rs2MaxKidBytes is rmcp's limit on a kid (its MAX_KID_LEN). The keyring's ids are far shorter;
	// the limit matters to the format, which names any kid.
	rs2MaxKidBytes = 255
	rs2ExpiryLen   = 8
	rs2TagLen      = sha256.Size
)

// RS2Option configures an RS2 codec, as SealedOption does a Sealed one.
type RS2Option func(*rs2Config)

type rs2Config struct {
	ttl, skew time.Duration
	now       func() time.Time
	rec       metrics.Recorder
	errors    []error
}

// RS2TTL sets the lifetime of the tokens sealed: whole seconds from 1s to MaxTTL (15m); the default
// is DefaultRS2TTL (5m). On open it also caps the lifetime a token may have left, so lowering it
// takes effect at once.
func RS2TTL(d time.Duration) RS2Option {
	return func(c *rs2Config) {
		if err := checkTTL("RS2TTL", d); err != nil {
			c.errors = append(c.errors, err)
			return
		}
		c.ttl = d
	}
}

// RS2ClockSkew sets how much longer than the TTL a token may have left by the opener's clock, in
// whole seconds from 0 to 5m; the default is DefaultSealedClockSkew (30s). rs2 carries no issue
// time, so this is how a replica whose clock runs ahead is tolerated, and bounded.
func RS2ClockSkew(d time.Duration) RS2Option {
	return func(c *rs2Config) {
		if d < 0 || d > 5*time.Minute || d%time.Second != 0 {
			c.errors = append(c.errors, &ConfigError{Field: "RS2ClockSkew",
				Reason: fmt.Sprintf("is %v: it must be whole seconds from 0s to 5m0s", d)})
			return
		}
		c.skew = d
	}
}

// RS2Clock sets the clock, for tests; the default is time.Now. Its Unix milliseconds are used, as
// rmcp's.
func RS2Clock(now func() time.Time) RS2Option {
	return func(c *rs2Config) {
		if now == nil {
			c.errors = append(c.errors, &ConfigError{Field: "RS2Clock", Reason: reasonNil})
			return
		}
		c.now = now
	}
}

// RS2Metrics sets the Recorder that counts the tokens the codec seals and opens, as SignedMetrics
// does for a Signed codec; the default records nothing.
func RS2Metrics(r metrics.Recorder) RS2Option {
	return func(c *rs2Config) {
		if r == nil {
			c.errors = append(c.errors, &ConfigError{Field: "RS2Metrics", Reason: reasonNil})
			return
		}
		c.rec = r
	}
}

// RS2 is rmcp's rs2 codec over a keyring: the keyring's key ids are the tokens' kids, its first key
// seals, and every key opens the tokens that name it. Seal and Open take rmcp's arguments, a payload
// and associated data (ad) that the tag binds but the token does not carry: bind the request and
// its principal there, as the Rust side does, or a token opens for any request.
//
// It is stricter than rmcp on open in one respect: a token must expire, and not later than the TTL
// (plus the clock skew) from now. rmcp seals tokens without an expiry when asked to; a keyring's
// consumer never does, since the operator drops a key once the declared token lifetime has passed
// (the Rust crate mrtr-keyring enforces the same). It is safe for concurrent use.
type RS2 struct {
	src       keyring.Source
	ttl, skew int64 // milliseconds
	now       func() time.Time
	rec       metrics.Recorder
	keys      atomic.Pointer[rs2Keys]
}

// NewRS2 returns an RS2 codec that reads its keys from src on every call. Bad arguments are a
// *ConfigError.
func NewRS2(src keyring.Source, opts ...RS2Option) (*RS2, error) {
	if src == nil {
		return nil, &ConfigError{Field: fieldSrc, Reason: "is nil: the RS2 codec needs a keyring source"}
	}
	c := rs2Config{ttl: DefaultRS2TTL, skew: DefaultSealedClockSkew, now: time.Now, rec: metrics.Nop{}}
	for _, o := range opts {
		if o == nil {
			return nil, &ConfigError{Field: "RS2Option", Reason: reasonNil}
		}
		o(&c)
	}
	if len(c.errors) > 0 {
		return nil, c.errors[0]
	}
	return &RS2{src: src, ttl: c.ttl.Milliseconds(), skew: c.skew.Milliseconds(), now: c.now, rec: c.rec}, nil
}

// String describes the codec without key material.
func (c *RS2) String() string {
	return fmt.Sprintf("RS2{ttl: %dms, clockSkew: %dms}", c.ttl, c.skew)
}

// GoString keeps %#v as safe as %v.
func (c *RS2) GoString() string { return c.String() }

// Seal returns the rs2 token of payload, bound to ad, sealed with the keyring's first key and
// expiring the TTL from now: rmcp's seal_with(payload, SealOptions::new().associated_data(ad).ttl(TTL)).
// Every error is a *ConfigError.
func (c *RS2) Seal(ad, payload []byte) (string, error) {
	ring := c.src.Keyring()
	if ring == nil {
		return "", &ConfigError{Field: fieldKeyring, Reason: "the source has no keyring: nothing can be sealed"}
	}
	if err := checkDeclaredTTL("RS2TTL", c.ttl/1000, ring); err != nil {
		return "", err
	}
	now := c.now().UnixMilli()
	if now < 0 || now > math.MaxInt64-c.ttl {
		return "", &ConfigError{Field: "RS2Clock", Reason: "returned a time before 1970 or too late for an expiry in Unix milliseconds"}
	}
	k := c.keysFor(ring).all[0]
	if size := rs2TokenLen(len(k.id), len(payload)); size > MaxRS2TokenBytes {
		return "", &ConfigError{Field: "payload", Reason: fmt.Sprintf(
			"is too large: the token would be %d bytes, more than the %d Open accepts", size, MaxRS2TokenBytes)}
	}
	tok := string(appendRS2(k.id, k.secret, ad, payload, now+c.ttl))
	c.rec.TokenSealed(CodecRS2)
	return tok, nil
}

// Open returns the payload of an rs2 token that a key of the current keyring sealed for ad, if it
// has not expired and does not outlive the TTL. Every failure is ErrInvalid; Explain says which
// check failed.
func (c *RS2) Open(token string, ad []byte) ([]byte, error) {
	r := c.open(token, ad)
	c.rec.TokenOpened(CodecRS2, r.check.Result())
	if r.check != "" {
		return nil, ErrInvalid
	}
	return r.payload, nil
}

// Explain runs Open's checks on token for ad and says how they end: nil when Open would return the
// payload, or a *RejectError naming the first check that fails. Info is what Inspect reads, Verified
// once a key's MAC verified the token. It never returns the payload.
func (c *RS2) Explain(token string, ad []byte) (Info, error) {
	r := c.open(token, ad)
	info, _ := inspectRS2(token)
	info.Verified = r.authentic
	if r.check != "" {
		return info, &RejectError{Codec: CodecRS2, Check: r.check}
	}
	return info, nil
}

func (c *RS2) open(token string, ad []byte) rs2Opened {
	var ks *rs2Keys
	if ring := c.src.Keyring(); ring != nil {
		ks = c.keysFor(ring)
	}
	now := c.now().UnixMilli()
	r := openRS2(token, ad, now, func(kid string) []byte {
		if ks == nil {
			return nil
		}
		return ks.lookup(kid)
	})
	if r.check != "" {
		return r
	}
	// rmcp opens a token without an expiry, or with any; a keyring's tokens must expire before the
	// operator drops their key.
	if r.expiry == 0 || r.expiry-now > c.ttl+c.skew {
		r.check, r.payload = CheckLifetime, nil
	}
	return r
}

// rs2Opened is what openRS2 learnt of a token: the first check it failed ("" when it opens), whether
// a key authenticated it, and then its expiry and payload.
type rs2Opened struct {
	check     Check
	authentic bool
	expiry    int64
	payload   []byte
}

// openRS2 opens token as rmcp's open_at does (the same checks, the same order, the same answers),
// with key giving the key of a kid (nil: none). Its work before the MAC is verified is linear in
// the token's length, which is bounded first.
func openRS2(token string, ad []byte, nowMs int64, key func(kid string) []byte) rs2Opened {
	p, check := parseRS2(token)
	if check != "" {
		return rs2Opened{check: check}
	}
	secret := key(p.kid)
	if secret == nil {
		return rs2Opened{check: CheckKeyID}
	}
	body, ok := decodeRS2B64(p.body)
	if !ok {
		return rs2Opened{check: CheckFormat}
	}
	tag, ok := decodeRS2B64(p.tag)
	if !ok {
		return rs2Opened{check: CheckFormat}
	}
	want := rs2MAC(secret, p.kid, ad, body)
	if !hmac.Equal(want[:], tag) { // constant time; a tag of another length fails at once, as in rmcp
		return rs2Opened{check: CheckMAC}
	}
	r := rs2Opened{authentic: true}
	if len(body) < rs2ExpiryLen {
		r.check = CheckPayload
		return r
	}
	r.expiry = int64(binary.BigEndian.Uint64(body))
	if r.expiry != 0 && nowMs > r.expiry { // rmcp: the expiry instant itself still opens
		r.check = CheckExpired
		return r
	}
	r.payload = body[rs2ExpiryLen:]
	return r
}

// rs2Parts are a token's kid (decoded) and its body and tag (base64url, not yet decoded).
type rs2Parts struct {
	kid       string
	body, tag string
}

// parseRS2 splits token into its parts and decodes the kid: CheckSize, CheckFormat, or "".
func parseRS2(token string) (rs2Parts, Check) {
	if len(token) > MaxRS2TokenBytes {
		return rs2Parts{}, CheckSize
	}
	rest, ok := strings.CutPrefix(token, rs2Prefix)
	if !ok {
		return rs2Parts{}, CheckFormat
	}
	kidB64, rest, ok1 := strings.Cut(rest, ".")
	body, tag, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(tag, ".") {
		return rs2Parts{}, CheckFormat
	}
	// rmcp bounds the encoded kid before decoding it, then wants 1 to 255 bytes of UTF-8.
	if len(kidB64) > rs2MaxKidB64 {
		return rs2Parts{}, CheckFormat
	}
	kid, ok := decodeRS2B64(kidB64)
	if !ok || len(kid) == 0 || len(kid) > rs2MaxKidBytes || !utf8.Valid(kid) {
		return rs2Parts{}, CheckFormat
	}
	return rs2Parts{kid: string(kid), body: body, tag: tag}, ""
}

// rs2MaxKidB64 is the longest base64url of a 255-byte kid (rmcp's MAX_ENCODED_KID_LEN).
const rs2MaxKidB64 = (rs2MaxKidBytes*8 + 5) / 6

// decodeRS2B64 decodes base64url without padding, strictly, as rmcp's base64 engine does: no
// padding, no other alphabet, zero unused bits, and (unlike Go's decoder alone) no '\r' or '\n'.
func decodeRS2B64(s string) ([]byte, bool) {
	b, err := sealedB64.DecodeString(s)
	if err != nil || sealedB64.EncodedLen(len(b)) != len(s) {
		return nil, false
	}
	return b, true
}

// rs2MAC is the tag of body under key for kid and ad.
func rs2MAC(key []byte, kid string, ad, body []byte) [rs2TagLen]byte {
	m := hmac.New(sha256.New, key)
	var n [8]byte
	m.Write([]byte(rs2Domain))
	binary.BigEndian.PutUint64(n[:], uint64(len(kid)))
	m.Write(n[:])
	m.Write([]byte(kid))
	binary.BigEndian.PutUint64(n[:], uint64(len(ad)))
	m.Write(n[:])
	m.Write(ad)
	m.Write(body)
	var tag [rs2TagLen]byte
	m.Sum(tag[:0])
	return tag
}

// appendRS2 returns the rs2 token of payload under (kid, key), bound to ad, expiring at expiryMs
// (0: never), as rmcp's seal_rs2 writes it.
func appendRS2(kid string, key, ad, payload []byte, expiryMs int64) []byte {
	body := binary.BigEndian.AppendUint64(make([]byte, 0, rs2ExpiryLen+len(payload)), uint64(expiryMs))
	body = append(body, payload...)
	tag := rs2MAC(key, kid, ad, body)
	dst := make([]byte, 0, rs2TokenLen(len(kid), len(payload)))
	dst = append(dst, rs2Prefix...)
	dst = sealedB64.AppendEncode(dst, []byte(kid))
	dst = append(dst, '.')
	dst = sealedB64.AppendEncode(dst, body)
	dst = append(dst, '.')
	return sealedB64.AppendEncode(dst, tag[:])
}

// rs2TokenLen is the length of the token of a kid of k bytes and a payload of n.
func rs2TokenLen(k, n int) int {
	return len(rs2Prefix) + sealedB64.EncodedLen(k) + 1 + sealedB64.EncodedLen(rs2ExpiryLen+n) + 1 + sealedB64.EncodedLen(rs2TagLen)
}

// IsRS2 reports whether tok has the rs2 shape: "rs2." and more than one '.'. (A Sealed token has
// exactly one, so a Sealed key id "rs2" does not make its token rs2.)
func IsRS2(tok string) bool {
	return strings.HasPrefix(tok, rs2Prefix) && strings.Count(tok, ".") > 1
}

// inspectRS2 reads an rs2 token's kid and expiry: its body is signed, not encrypted. It decodes the
// body only to read the expiry, and only once the token's length is bounded.
func inspectRS2(tok string) (Info, error) {
	info := Info{Codec: CodecRS2, Version: 2}
	reject := func(c Check) (Info, error) { return info, &RejectError{Codec: CodecRS2, Check: c} }
	p, check := parseRS2(tok)
	if check != "" {
		return reject(check)
	}
	info.KeyID = p.kid
	body, ok := decodeRS2B64(p.body)
	if !ok {
		return reject(CheckFormat)
	}
	if _, ok := decodeRS2B64(p.tag); !ok {
		return reject(CheckFormat)
	}
	if len(body) < rs2ExpiryLen { // a text no rmcp seals (only a key holder could make it authentic)
		return reject(CheckFormat)
	}
	if e := int64(binary.BigEndian.Uint64(body)); e != 0 {
		info.Expires = time.UnixMilli(e).UTC()
	}
	return info, nil
}

// rs2Keys are the secrets of one keyring, copied once per keyring fingerprint.
type rs2Keys struct {
	fingerprint string
	all         []rs2Key
}

type rs2Key struct {
	id     string
	secret []byte
}

func (k *rs2Keys) lookup(id string) []byte {
	for i := range k.all {
		if k.all[i].id == id {
			return k.all[i].secret
		}
	}
	return nil
}

// keysFor returns the secrets of ring, copying them only when the keyring changed.
func (c *RS2) keysFor(ring *keyring.Keyring) *rs2Keys {
	if k := c.keys.Load(); k != nil && k.fingerprint == ring.Fingerprint() {
		return k
	}
	keys := ring.Keys()
	k := &rs2Keys{fingerprint: ring.Fingerprint(), all: make([]rs2Key, len(keys))}
	for i, key := range keys {
		k.all[i] = rs2Key{id: key.ID(), secret: key.Secret()}
	}
	c.keys.Store(k)
	return k
}
