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
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// Limits and defaults of the Sealed codec. The byte layout they apply to is in the package doc.
const (
	// MaxSealedTokenBytes is the longest token Open reads; a longer one is rejected before any decoding,
	// and Seal refuses state that would make a token longer.
	MaxSealedTokenBytes = 64 << 10
	// DefaultSealedTTL is the lifetime of a token bound to a principal.
	DefaultSealedTTL = 5 * time.Minute
	// DefaultSealedAnonymousTTL is the lifetime of a token bound to Anonymous.
	DefaultSealedAnonymousTTL = 60 * time.Second
	// DefaultSealedClockSkew is how far in the future a token's issue time may be, by the opener's
	// clock: the operator's default clockSkew.
	DefaultSealedClockSkew = 30 * time.Second
)

const (
	// sealedAADTag starts the associated data and names the format version (see the package doc).
	sealedAADTag = "mrtr-sealed-v1"
	// sealedKeyInfo is the HKDF info that derives the AES-256 key from a keyring secret.
	sealedKeyInfo = "mrtr-sealed-v1 aes-256-gcm key"
	// sealedDigestTag starts the bytes hashed into the payload's "d" member.
	sealedDigestTag = "mrtr-sealed-v1 binding\x00"

	ivLen     = 12
	tagLen    = 16
	digestB64 = 43 // base64url without padding of a SHA-256 digest
)

// sealedB64 is strict: trailing bits must be zero, so each token has exactly one spelling. Go's decoder
// also skips '\r' and '\n'; Open rejects those by requiring the canonical encoded length.
var sealedB64 = base64.RawURLEncoding.Strict()

// SealedOption configures a Sealed codec, as SignedOption does a Signed one: an option that is not
// given keeps its default, an option that is given must be valid.
type SealedOption func(*sealedConfig)

type sealedConfig struct {
	ttl, anonTTL, skew time.Duration
	now                func() time.Time
	rec                metrics.Recorder
	errors             []error
}

func (c *sealedConfig) fail(field, reason string) {
	c.errors = append(c.errors, &ConfigError{Field: field, Reason: reason})
}

// SealedTTL sets the lifetime of a token bound to a principal: whole seconds from 1s to MaxTTL (15m);
// the default is DefaultSealedTTL (5m). On open it also caps tokens sealed with a longer TTL, so
// lowering it takes effect at once.
func SealedTTL(d time.Duration) SealedOption {
	return func(c *sealedConfig) {
		if err := checkTTL("SealedTTL", d); err != nil {
			c.errors = append(c.errors, err)
			return
		}
		c.ttl = d
	}
}

// SealedAnonymousTTL sets the lifetime of a token bound to Anonymous: whole seconds from 1s up to the
// TTL; the default is DefaultSealedAnonymousTTL (60s), or the TTL if that is shorter.
func SealedAnonymousTTL(d time.Duration) SealedOption {
	return func(c *sealedConfig) {
		if err := checkTTL("SealedAnonymousTTL", d); err != nil {
			c.errors = append(c.errors, err)
			return
		}
		c.anonTTL = d
	}
}

// SealedClockSkew sets how far ahead of the opener's clock a token's issue time may be, in whole
// seconds from 0 to 5m; the default is DefaultSealedClockSkew (30s). A replica whose clock runs ahead
// by less than this still has its fresh tokens accepted everywhere; one that runs further ahead
// cannot mint tokens that honest replicas accept for longer than the TTL plus this skew.
func SealedClockSkew(d time.Duration) SealedOption {
	return func(c *sealedConfig) {
		if d < 0 || d > 5*time.Minute || d%time.Second != 0 {
			c.fail("SealedClockSkew", fmt.Sprintf("is %v: it must be whole seconds from 0s to 5m0s", d))
			return
		}
		c.skew = d
	}
}

// SealedClock sets the clock, for tests; the default is time.Now. Only its Unix seconds are used.
func SealedClock(now func() time.Time) SealedOption {
	return func(c *sealedConfig) {
		if now == nil {
			c.fail("SealedClock", reasonNil)
			return
		}
		c.now = now
	}
}

// SealedMetrics sets the Recorder that counts the tokens the codec seals and opens, as SignedMetrics
// does for a Signed codec; the default records nothing.
func SealedMetrics(r metrics.Recorder) SealedOption {
	return func(c *sealedConfig) {
		if r == nil {
			c.fail("SealedMetrics", reasonNil)
			return
		}
		c.rec = r
	}
}

// Sealed is the AES-256-GCM codec: the state is confidential and the token is bound to the protocol
// version, method, server, principal and salient params of the request. It is safe for concurrent use.
type Sealed struct {
	src                keyring.Source
	server             string
	ttl, anonTTL, skew int64 // seconds
	now                func() time.Time
	rec                metrics.Recorder
	keys               atomic.Pointer[sealedKeys]
}

var _ Codec = (*Sealed)(nil)

// NewSealed returns a Sealed codec that reads its keys from src on every call. server is the identity
// of the endpoint that handles the requests (e.g. its canonical URL); it is bound into every token,
// so a token sealed for one server never opens on another that shares the keyring. Bad arguments
// are a *ConfigError.
func NewSealed(src keyring.Source, server string, opts ...SealedOption) (*Sealed, error) {
	if src == nil {
		return nil, &ConfigError{Field: fieldSrc, Reason: "is nil: the Sealed codec needs a keyring source"}
	}
	if server == "" {
		return nil, &ConfigError{Field: "server", Reason: "is empty: name the server identity every token is bound to"}
	}
	c := sealedConfig{ttl: DefaultSealedTTL, skew: DefaultSealedClockSkew, now: time.Now, rec: metrics.Nop{}}
	for _, o := range opts {
		if o == nil {
			return nil, &ConfigError{Field: "SealedOption", Reason: reasonNil}
		}
		o(&c)
	}
	if len(c.errors) > 0 {
		return nil, c.errors[0]
	}
	if c.anonTTL == 0 {
		c.anonTTL = min(DefaultSealedAnonymousTTL, c.ttl)
	} else if c.anonTTL > c.ttl {
		return nil, &ConfigError{Field: "SealedAnonymousTTL",
			Reason: fmt.Sprintf("is %v: it must not be longer than the TTL, %v", c.anonTTL, c.ttl)}
	}
	return &Sealed{
		src:     src,
		server:  server,
		ttl:     int64(c.ttl / time.Second),
		anonTTL: int64(c.anonTTL / time.Second),
		skew:    int64(c.skew / time.Second),
		now:     c.now,
		rec:     c.rec,
	}, nil
}

// String describes the codec without key material.
func (s *Sealed) String() string {
	return fmt.Sprintf("Sealed{server: %q, ttl: %ds, anonymousTTL: %ds, clockSkew: %ds}", s.server, s.ttl, s.anonTTL, s.skew)
}

// GoString keeps %#v as safe as %v.
func (s *Sealed) GoString() string { return s.String() }

// Seal returns a token carrying state bound to b. state must be one JSON value; it is sealed, and
// Open returns it, in canonical form (the same value: members sorted, no whitespace, numbers keep
// their type). b needs a Method and a Principal (Anonymous for none). Params that cannot be bound
// (see Binding.Params) are an *InputError, the client's mistake; every other error is a
// *ConfigError, the server's.
func (s *Sealed) Seal(b Binding, state json.RawMessage) (string, error) {
	if b.Method == "" {
		return "", &ConfigError{Field: fieldMethod, Reason: reasonEmpty}
	}
	if err := checkParamsObject(b.Params); err != nil {
		return "", err
	}
	ring := s.src.Keyring()
	if ring == nil {
		return "", &ConfigError{Field: fieldKeyring, Reason: "the source has no keyring: nothing can be sealed"}
	}
	ks := s.keysFor(ring)

	sc := getScratch()
	defer putScratch(sc)
	if err := s.canonicalPrincipal(sc, b.Principal); err != nil {
		return "", err
	}
	ttl := s.ttlFor(sc.principal)
	if err := checkDeclaredTTL("SealedTTL", ttl, ring); err != nil {
		return "", err
	}
	issued, expires, err := sealTimes("SealedClock", s.now(), ttl)
	if err != nil {
		return "", err
	}
	digest, err := s.digest(sc, b.Method, b.Params)
	if err != nil {
		return "", err
	}

	p := append(sc.payload[:0], `{"i":`...)
	p = strconv.AppendInt(p, issued, 10)
	p = append(p, `,"e":`...)
	p = strconv.AppendInt(p, expires, 10)
	p = append(p, `,"d":"`...)
	p = sealedB64.AppendEncode(p, digest[:])
	p = append(p, `","p":`...)
	p = append(p, sc.principal...)
	p = append(p, `,"s":`...)
	p, err = sc.dec.Append(p, state) // validates and writes in one pass
	sc.payload = p
	if err != nil {
		return "", &ConfigError{Field: fieldState, Reason: "is not a JSON value: " + err.Error()}
	}
	p = append(p, '}')
	sc.payload = p

	kid := ks.primary.id
	size := len(kid) + 1 + sealedB64.EncodedLen(ivLen+tagLen+len(p))
	if size > MaxSealedTokenBytes {
		return "", &ConfigError{Field: fieldState, Reason: fmt.Sprintf(
			"is too large: the token would be %d bytes, more than the %d Open accepts", size, MaxSealedTokenBytes)}
	}
	sc.aad = appendAAD(sc.aad[:0], kid, b.ProtocolVersion, b.Method, s.server)

	// Go's GCM writes ciphertext||tag; the token carries iv||tag||ciphertext. Seal after the IV, then
	// move the tag in front of the ciphertext.
	raw := grow(sc.raw[:0], ivLen+tagLen+len(p))
	sc.raw = raw
	iv := raw[:ivLen]
	_, _ = rand.Read(iv) // never fails (crypto/rand since Go 1.24)
	ks.primary.aead.Seal(raw[ivLen:ivLen], iv, p, sc.aad)
	var tag [tagLen]byte
	copy(tag[:], raw[ivLen+len(p):])
	copy(raw[ivLen+tagLen:], raw[ivLen:ivLen+len(p)])
	copy(raw[ivLen:], tag[:])

	var out strings.Builder
	out.Grow(size)
	out.WriteString(kid)
	out.WriteByte('.')
	enc := sealedB64.AppendEncode(sc.enc[:0], raw)
	sc.enc = enc
	out.Write(enc)
	s.rec.TokenSealed(CodecSealed)
	return out.String(), nil
}

// Open returns the state of token if it was sealed for an equal binding, by this server, under a key
// of the current keyring, and has not expired (the checks, in order, are in the package doc). Every
// failure of the token or of the client's params is ErrInvalid; only a Binding the server itself got
// wrong (no Method; a Principal that is empty or not JSON) is a *ConfigError. Explain says which
// check failed.
func (s *Sealed) Open(b Binding, token string) (json.RawMessage, error) {
	sc := getScratch()
	defer putScratch(sc)
	r, err := s.open(sc, b, token)
	if err != nil {
		return nil, err // the server's own mistake, no token's result
	}
	s.rec.TokenOpened(CodecSealed, r.check.Result())
	if r.check != "" {
		return nil, ErrInvalid
	}
	return json.RawMessage(bytes.Clone(r.state)), nil
}

// sealedOpened is what open learnt of a token: the first check it failed ("" when it opens) and,
// once a key authenticated it and its payload has the layout, its times.
type sealedOpened struct {
	check           Check
	authentic       bool
	issued, expires int64
	state           []byte // in the scratch's memory
}

// open runs Open's checks in order and stops at the first that fails. It returns an error only for
// the server's own mistakes (a *ConfigError), and never allocates for a token that is not authentic.
func (s *Sealed) open(sc *scratch, b Binding, token string) (sealedOpened, error) {
	if b.Method == "" {
		return sealedOpened{}, &ConfigError{Field: fieldMethod, Reason: reasonEmpty}
	}
	if err := checkParamsObject(b.Params); err != nil {
		return sealedOpened{}, err
	}
	// The principal comes from the server, not the client: a bad one is the caller's mistake,
	// reported whatever the token.
	if err := s.canonicalPrincipal(sc, b.Principal); err != nil {
		return sealedOpened{}, err
	}
	// Cheapest checks first, the binding's canonical form (the costly part) only once the token is
	// authentic: a forged token costs a failed GCM open at most.
	if len(token) > MaxSealedTokenBytes {
		return sealedOpened{check: CheckSize}, nil
	}
	kid, enc, ok := strings.Cut(token, ".")
	if !ok {
		return sealedOpened{check: CheckFormat}, nil
	}
	ring := s.src.Keyring()
	if ring == nil {
		return sealedOpened{check: CheckKeyID}, nil
	}
	key := s.keysFor(ring).lookup(kid)
	if key == nil {
		return sealedOpened{check: CheckKeyID}, nil
	}

	raw := grow(sc.raw[:0], sealedB64.DecodedLen(len(enc)))
	n, err := sealedB64.Decode(raw, []byte(enc))
	if err != nil || sealedB64.EncodedLen(n) != len(enc) || n < ivLen+tagLen {
		return sealedOpened{check: CheckFormat}, nil
	}
	raw = raw[:n]
	sc.raw = raw

	// Back to Go's order, ciphertext||tag, in a second buffer, and decrypt in place.
	box := append(append(sc.payload[:0], raw[ivLen+tagLen:]...), raw[ivLen:ivLen+tagLen]...)
	sc.payload = box
	sc.aad = appendAAD(sc.aad[:0], kid, b.ProtocolVersion, b.Method, s.server)
	p, err := key.aead.Open(box[:0], raw[:ivLen], box, sc.aad)
	if err != nil {
		return sealedOpened{check: CheckAuthTag}, nil
	}

	r := sealedOpened{authentic: true}
	pl, ok := parsePayload(p)
	if !ok {
		r.check = CheckPayload
		return r, nil
	}
	r.issued, r.expires = pl.issued, pl.expires
	state, ok := pl.state(sc.principal)
	if !ok {
		r.check = CheckPrincipal
		return r, nil
	}
	// Expiry is exclusive. The issue time may be ahead of now by the clock skew, no more: a replica
	// whose clock runs a little ahead still has its fresh tokens accepted, and one that runs far
	// ahead cannot mint tokens that live longer than TTL + skew here. expires-issued <= TTL bounds
	// the lifetime, and the opener's TTL caps tokens sealed with a longer one.
	switch now := s.now().Unix(); {
	case now >= pl.expires:
		r.check = CheckExpired
	case pl.issued-s.skew > now:
		r.check = CheckNotYetValid
	case pl.expires-pl.issued > s.ttlFor(sc.principal):
		r.check = CheckLifetime
	}
	if r.check != "" {
		return r, nil
	}
	digest, err := s.digest(sc, b.Method, b.Params)
	if err != nil {
		r.check = CheckParams // the retry's params are untrusted input
		return r, nil
	}
	var want [digestB64]byte
	sealedB64.Encode(want[:], digest[:])
	if subtle.ConstantTimeCompare(want[:], pl.digest) != 1 {
		r.check = CheckBinding
		return r, nil
	}
	r.state = state
	return r, nil
}

func (s *Sealed) ttlFor(canonicalPrincipal []byte) int64 {
	if string(canonicalPrincipal) == "null" {
		return s.anonTTL
	}
	return s.ttl
}

// canonicalPrincipal writes the canonical JSON of principal to sc.principal.
func (s *Sealed) canonicalPrincipal(sc *scratch, principal json.RawMessage) error {
	if len(principal) == 0 {
		return &ConfigError{Field: fieldPrincipal, Reason: "is empty: use token.Anonymous for a request without a principal"}
	}
	var err error
	if sc.principal, err = sc.dec.Append(sc.principal[:0], principal); err != nil {
		return &ConfigError{Field: fieldPrincipal, Reason: "is not a JSON value: " + err.Error()}
	}
	return nil
}

// digest is SHA-256 over the digest tag and the canonical JSON of [method, salient params], where
// the salient params are the params object without its top-level "_meta", "requestState" and
// "inputResponses", and absent params count as {} (the rule of the Signed codec). A bad method is a
// *ConfigError, bad params an *InputError.
func (s *Sealed) digest(sc *scratch, method string, params json.RawMessage) ([sha256.Size]byte, error) {
	c := append(sc.canon[:0], sealedDigestTag...)
	c = append(c, '[')
	c, err := canonical.AppendString(c, method)
	sc.canon = c
	if err != nil {
		return [sha256.Size]byte{}, &ConfigError{Field: fieldMethod, Reason: err.Error()}
	}
	c = append(c, ',')
	if len(params) == 0 {
		c = append(c, '{', '}')
	} else {
		c, err = sc.dec.AppendParams(c, params, unboundParams...)
	}
	c = append(c, ']')
	sc.canon = c
	if err != nil {
		return [sha256.Size]byte{}, &InputError{Reason: err.Error()}
	}
	return sha256.Sum256(c), nil
}

// appendAAD writes the associated data: the format tag, then kid, protocol version, method and
// server, each as a 4-byte big-endian length and the bytes.
func appendAAD(dst []byte, kid, version, method, server string) []byte {
	dst = append(dst, sealedAADTag...)
	for _, f := range [...]string{kid, version, method, server} {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

// payload is a decrypted payload's members, as slices of it.
type payload struct {
	issued, expires int64
	digest          []byte
	rest            []byte // <principal>,"s":<state>}
}

// parsePayload reads the exact layout Seal writes, up to the principal:
//
//	{"i":<issued>,"e":<expires>,"d":"<43 chars>","p":<principal>,"s":<state>}
//
// The payload is authentic when this runs, so it checks the layout, not the JSON grammar of the
// principal and the state: payload.state compares the principal byte for byte with the binding's,
// and the state was validated when it was sealed.
func parsePayload(p []byte) (payload, bool) {
	var pl payload
	var ok bool
	if p, ok = cut(p, `{"i":`); !ok {
		return pl, false
	}
	if pl.issued, p, ok = cutInt(p); !ok {
		return pl, false
	}
	if p, ok = cut(p, `,"e":`); !ok {
		return pl, false
	}
	if pl.expires, p, ok = cutInt(p); !ok {
		return pl, false
	}
	if p, ok = cut(p, `,"d":"`); !ok || len(p) < digestB64 {
		return pl, false
	}
	pl.digest, p = p[:digestB64], p[digestB64:]
	if pl.rest, ok = cut(p, `","p":`); !ok {
		return pl, false
	}
	return pl, true
}

// state returns the state if the payload's principal is exactly principal (canonical JSON). Both are
// complete JSON values, and no JSON value is a proper prefix of another followed by a comma, so
// matching principal followed by `,"s":` cannot be fooled by a principal that contains `,"s":`.
func (pl *payload) state(principal []byte) ([]byte, bool) {
	if !bytes.HasPrefix(pl.rest, principal) {
		return nil, false
	}
	p, ok := cut(pl.rest[len(principal):], `,"s":`)
	if !ok || len(p) < 2 || p[len(p)-1] != '}' {
		return nil, false
	}
	return p[:len(p)-1], true
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

// cutInt reads a non-negative JSON integer without leading zeros that fits an int64 (any time
// sealTimes lets Seal write).
func cutInt(p []byte) (int64, []byte, bool) {
	n := 0
	for n < len(p) && p[n] >= '0' && p[n] <= '9' {
		n++
	}
	if n == 0 || n > 19 || (n > 1 && p[0] == '0') {
		return 0, p, false
	}
	v, err := strconv.ParseInt(string(p[:n]), 10, 64)
	return v, p[n:], err == nil
}

// sealedKeys is the AEAD of every key of one keyring, built once per keyring fingerprint.
type sealedKeys struct {
	fingerprint string
	primary     *sealedKey
	all         []sealedKey
}

type sealedKey struct {
	id   string
	aead cipher.AEAD
}

func (k *sealedKeys) lookup(id string) *sealedKey {
	for i := range k.all {
		if k.all[i].id == id {
			return &k.all[i]
		}
	}
	return nil
}

// keysFor returns the AEADs of ring, rebuilding them only when the keyring changed. Two callers that
// see a new keyring at once may both build; either result is correct.
func (s *Sealed) keysFor(ring *keyring.Keyring) *sealedKeys {
	if k := s.keys.Load(); k != nil && k.fingerprint == ring.Fingerprint() {
		return k
	}
	k := newSealedKeys(ring)
	s.keys.Store(k)
	return k
}

func newSealedKeys(ring *keyring.Keyring) *sealedKeys {
	keys := ring.Keys()
	k := &sealedKeys{fingerprint: ring.Fingerprint(), all: make([]sealedKey, len(keys))}
	for i, key := range keys {
		k.all[i] = sealedKey{id: key.ID(), aead: newSealedAEAD(key)}
	}
	k.primary = &k.all[0]
	return k
}

// newSealedAEAD derives the AES-256 key of a keyring key with HKDF-SHA256 (no salt, info
// sealedKeyInfo), whatever the secret's length (keyrings hold 32 bytes or more). Deriving rather than
// using the bytes directly gives every secret, of any length, one treatment, and keeps the AES key
// apart from the HMAC key the Signed codec makes of the same secret.
func newSealedAEAD(key keyring.Key) cipher.AEAD {
	secret := key.Secret()
	aesKey, err := hkdf.Key(sha256.New, secret, nil, sealedKeyInfo, 32)
	clear(secret)
	if err != nil {
		panic("token: HKDF-SHA256 of a keyring secret failed: " + err.Error()) // only for a >8160-byte output
	}
	block, err := aes.NewCipher(aesKey)
	clear(aesKey)
	if err != nil {
		panic("token: AES-256 rejected a 32-byte key: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("token: GCM over AES failed: " + err.Error())
	}
	return aead
}

// scratch holds the buffers of one Seal or Open, pooled so the hot path does not allocate them, and
// the canonical encoder's Decoder, which serves every text the call reads.
type scratch struct {
	canon, principal, payload, aad, raw, enc []byte
	dec                                      canonical.Decoder
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

// putScratch returns sc to the pool unless a large token made it big: pooled memory stays small.
func putScratch(sc *scratch) {
	const keep = 16 << 10
	if !sc.dec.Release() || cap(sc.canon) > keep || cap(sc.payload) > keep || cap(sc.raw) > keep || cap(sc.enc) > keep ||
		cap(sc.principal) > keep || cap(sc.aad) > keep {
		return
	}
	scratchPool.Put(sc)
}

// grow returns b resliced to n bytes, reallocating only when its capacity is too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
