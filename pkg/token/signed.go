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

// # Signed tokens: Snodo's wire format
//
// Signed writes and reads exactly the tokens of Snodo.MRTR.State (Elixir), so Go and Elixir
// replicas sharing keys open each other's state. The state is signed, not encrypted: a client can
// read it. With a keyring the first key seals and its id is written into the token (mrtr2); with a
// single secret there is no id (mrtr1). All base64 is base64url without padding.
//
//	binding = canonical([method, params without top-level "_meta", "requestState", "inputResponses", principal])
//	scope   = signedB64(HMAC-SHA256(secret, "snodo-mrtr-scope-v1:" + binding))
//	payload = canonical([version, issued, expires, scope, state])   version 1 (mrtr1) or 2 (mrtr2)
//	mrtr1   = "mrtr1." + signedB64(payload) + "." + signedB64(HMAC-SHA256(secret, "snodo-mrtr-token-v1:" + signedB64(payload)))
//	mrtr2   = "mrtr2." + kid + "." + signedB64(payload) + "." +
//	          signedB64(HMAC-SHA256(secret, "snodo-mrtr-token-v2:" + kid + "." + signedB64(payload)))
//
// canonical is JSON without whitespace, object members sorted by the UTF-8 bytes of their names,
// numbers that keep their type (1 and 1.0 bind differently; floats in Erlang's shortest layout, 1.0e3)
// and strings that escape only '"', '\\' and control bytes; see internal/canonical. issued and
// expires are Unix seconds, expires = issued + TTL.
//
// Open accepts a token of at most 16384 bytes whose MAC, compared as text in constant time, verifies
// with a key: the one its kid names (an mrtr2 token), or any key (an mrtr1 token). A Signed made with
// NewSignedSecret opens an mrtr2 token of any well-formed kid if its secret verifies it, so a
// deployment moves from a secret to the keyring [{"a", secret}] one replica at a time, in both
// directions. The payload must be a five-element array whose version matches the prefix, whose
// issued and expires are integers with 0 <= issued <= now < expires and expires-issued <= the
// opener's TTL (lowering the TTL caps old tokens at once; raising it never extends one), and whose
// scope equals the scope recomputed for the request with the key that verified the MAC.
//
// The MAC is verified before any work on the request's params, so a forged token costs two HMACs
// and no canonicalization.
//
// Snodo is lenient in three places that only a key holder can reach, and Signed follows it: the
// payload's base64 may carry padding and non-zero unused bits, its JSON may carry whitespace, and an
// object of the state may repeat a member name, of which the first occurrence counts (Elixir's
// JSON.decode keeps the first). Open returns the state as Snodo returns it: canonical JSON with each
// name once, the first occurrence's value, so a Go and an Elixir replica act on the same state.
package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// Limits of the Signed codec, Snodo's.
const (
	DefaultSignedTTL    = 300 * time.Second
	MaxSignedTokenBytes = 16384
	// MinSignedSecretBytes is the shortest secret NewSignedSecret accepts (keyring.MinSecretBytes).
	MinSignedSecretBytes = 32
)

const signedMACLen = 43 // base64url without padding of a SHA-256 MAC

var (
	signedTagScope = []byte("snodo-mrtr-scope-v1:")
	signedTagV1    = []byte("snodo-mrtr-token-v1:")
	signedTagV2    = []byte("snodo-mrtr-token-v2:")

	signedB64 = base64.RawURLEncoding
)

// SignedOption configures a Signed codec. An option that is not given keeps Snodo's default; an
// option that is given must be valid, so SignedTTL(0) is an error rather than "the default".
type SignedOption func(*signedConfig)

type signedConfig struct {
	ttl    time.Duration
	now    func() time.Time
	rec    metrics.Recorder
	errors []error
}

// SignedTTL sets the lifetime of sealed tokens: whole seconds from 1s to 15m; the default is 5m.
// On open it also caps tokens sealed with a longer lifetime.
func SignedTTL(d time.Duration) SignedOption {
	return func(c *signedConfig) {
		if err := checkTTL("SignedTTL", d); err != nil {
			c.errors = append(c.errors, err)
			return
		}
		c.ttl = d
	}
}

// SignedClock sets the clock, for tests; the default is time.Now. Only its Unix seconds are used.
func SignedClock(now func() time.Time) SignedOption {
	return func(c *signedConfig) {
		if now == nil {
			c.errors = append(c.errors, &ConfigError{Field: "SignedClock", Reason: reasonNil})
			return
		}
		c.now = now
	}
}

// SignedMetrics sets the Recorder that counts the tokens the codec seals and opens, each open by
// its result (metrics.Result, from the check that failed first); the default records nothing.
// Explain is diagnosis, not traffic: it records nothing.
func SignedMetrics(r metrics.Recorder) SignedOption {
	return func(c *signedConfig) {
		if r == nil {
			c.errors = append(c.errors, &ConfigError{Field: "SignedMetrics", Reason: reasonNil})
			return
		}
		c.rec = r
	}
}

// Signed is the Codec of Snodo's signed tokens. It is safe for concurrent use.
type Signed struct {
	src   keyring.Source // keys mode; nil in secret mode
	fixed *signedKeys    // secret mode
	cache atomic.Pointer[signedKeys]
	ttl   int64 // seconds
	now   func() time.Time
	rec   metrics.Recorder
}

var _ Codec = (*Signed)(nil)

// NewSigned returns a Signed codec that reads its keys from src on every call: it seals mrtr2 tokens
// with the keyring's first key, opens mrtr2 tokens with the key their kid names and mrtr1 tokens with
// any key.
func NewSigned(src keyring.Source, opts ...SignedOption) (*Signed, error) {
	if src == nil {
		return nil, &ConfigError{Field: fieldSrc, Reason: reasonNil}
	}
	if src.Keyring() == nil {
		return nil, &ConfigError{Field: fieldSrc, Reason: "has no keyring"}
	}
	s, err := newSigned(opts)
	if err != nil {
		return nil, err
	}
	s.src = src
	return s, nil
}

// NewSignedSecret returns a Signed codec with one secret and no key id (Snodo's :secret option): it
// seals mrtr1 tokens, opens mrtr1 tokens, and opens mrtr2 tokens of any well-formed kid that the
// secret verifies. secret is copied.
func NewSignedSecret(secret []byte, opts ...SignedOption) (*Signed, error) {
	if len(secret) < MinSignedSecretBytes {
		return nil, &ConfigError{Field: "secret",
			Reason: fmt.Sprintf("is %d bytes: at least %d are required", len(secret), MinSignedSecretBytes)}
	}
	s, err := newSigned(opts)
	if err != nil {
		return nil, err
	}
	s.fixed = &signedKeys{keys: []*signedKey{newSignedKey("", secret)}}
	return s, nil
}

func newSigned(opts []SignedOption) (*Signed, error) {
	c := signedConfig{ttl: DefaultSignedTTL, now: time.Now, rec: metrics.Nop{}}
	for _, o := range opts {
		if o == nil {
			return nil, &ConfigError{Field: "SignedOption", Reason: reasonNil}
		}
		o(&c)
	}
	if len(c.errors) > 0 {
		return nil, c.errors[0]
	}
	return &Signed{ttl: int64(c.ttl / time.Second), now: c.now, rec: c.rec}, nil
}

// String describes the codec without key material.
func (s *Signed) String() string {
	mode := "keyring"
	if s.fixed != nil {
		mode = "secret"
	}
	return fmt.Sprintf("Signed{mode: %s, ttl: %ds}", mode, s.ttl)
}

// GoString keeps %#v as safe as %v.
func (s *Signed) GoString() string { return s.String() }

// signedKeys is the state derived from one keyring: per key, a pool of HMAC states keyed with its
// secret, so that a MAC costs neither a key schedule nor an allocation. It is rebuilt only when the
// keyring changes.
type signedKeys struct {
	ring        *keyring.Keyring
	fingerprint string
	keys        []*signedKey // keys[0] seals
}

type signedKey struct {
	id    string // "" for the secret of NewSignedSecret
	idDot []byte // id + "."
	macs  sync.Pool
}

// signedMAC is one HMAC-SHA256 keyed with a key's secret, with room for its sum.
type signedMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newSignedKey(id string, secret []byte) *signedKey {
	secret = bytes.Clone(secret)
	k := &signedKey{id: id, idDot: []byte(id + ".")}
	k.macs.New = func() any { return &signedMAC{h: hmac.New(sha256.New, secret)} }
	return k
}

// mac writes signedB64(HMAC(secret, tag + a + b)) to out.
func (k *signedKey) mac(out *[signedMACLen]byte, tag, a, b []byte) {
	m := k.macs.Get().(*signedMAC)
	m.h.Reset()
	m.h.Write(tag)
	m.h.Write(a)
	m.h.Write(b)
	signedB64.Encode(out[:], m.h.Sum(m.sum[:0]))
	k.macs.Put(m)
}

func (s *Signed) keyset() *signedKeys {
	if s.fixed != nil {
		return s.fixed
	}
	r := s.src.Keyring()
	if r == nil {
		return nil
	}
	if ks := s.cache.Load(); ks != nil && (ks.ring == r || ks.fingerprint == r.Fingerprint() && ks.ring.MaxTokenTTL() == r.MaxTokenTTL()) {
		return ks
	}
	ks := &signedKeys{ring: r, fingerprint: r.Fingerprint()}
	for _, k := range r.Keys() {
		secret := k.Secret()
		ks.keys = append(ks.keys, newSignedKey(k.ID(), secret)) // keeps its own copy
		clear(secret)
	}
	s.cache.Store(ks)
	return ks
}

func (s *Signed) unixNow() (int64, error) {
	now, _, err := sealTimes("SignedClock", s.now(), 0)
	return now, err
}

// signedScratch is the working memory of one Seal or Open, the canonical encoder's included: one
// Decoder serves every text a call reads.
type signedScratch struct {
	principal, binding, payload, enc, tok, scope []byte
	dec                                          canonical.Decoder
}

var signedScratchPool = sync.Pool{New: func() any { return new(signedScratch) }}

func getSignedScratch() *signedScratch { return signedScratchPool.Get().(*signedScratch) }

func putSignedScratch(sc *signedScratch) {
	// Keep buffers up to the token limit; drop the rare larger ones (a huge Params).
	if !sc.dec.Release() || cap(sc.binding) > 4*MaxSignedTokenBytes || cap(sc.payload) > 4*MaxSignedTokenBytes {
		return
	}
	signedScratchPool.Put(sc)
}

// signedPrincipal writes the canonical principal of b to sc.principal. It also checks the method
// and the shape of the params: the method, the principal and which bytes are the params are the
// server's, so a mistake in them is a *ConfigError whatever the params' content or the token.
func signedPrincipal(sc *signedScratch, b Binding) error {
	if err := checkParamsObject(b.Params); err != nil {
		return err
	}
	if b.Method == "" {
		return &ConfigError{Field: fieldMethod, Reason: reasonEmpty}
	}
	if !utf8.ValidString(b.Method) {
		return &ConfigError{Field: fieldMethod, Reason: "is not valid UTF-8"}
	}
	if len(b.Principal) == 0 {
		return &ConfigError{Field: fieldPrincipal,
			Reason: "is empty: bind the authenticated caller, or token.Anonymous for a request that has none"}
	}
	var err error
	if sc.principal, err = sc.dec.Append(sc.principal[:0], b.Principal); err != nil {
		return &ConfigError{Field: fieldPrincipal, Reason: err.Error()}
	}
	return nil
}

// signedBinding writes canonical([method, salient params, principal]) to sc.binding given the
// canonical principal in sc.principal (signedPrincipal, which checked the method). Bad params are
// an *InputError.
func signedBinding(sc *signedScratch, b Binding) error {
	dst := append(sc.binding[:0], '[')
	dst, _ = canonical.AppendString(dst, b.Method) // signedPrincipal checked it
	dst = append(dst, ',')
	if len(b.Params) == 0 {
		dst = append(dst, '{', '}') // JSON-RPC params left out: nothing to bind
	} else {
		var err error
		dst, err = sc.dec.AppendParams(dst, b.Params, unboundParams...)
		sc.binding = dst
		if err != nil {
			return &InputError{Reason: err.Error()}
		}
	}
	dst = append(dst, ',')
	dst = append(dst, sc.principal...)
	sc.binding = append(dst, ']')
	return nil
}

// Seal returns a token carrying state, a JSON value, bound to b. Params that cannot be bound (see
// Binding.Params) are an *InputError, the client's mistake. Every other error is a *ConfigError: a
// binding without method or principal, state that is not JSON, a token that would exceed
// MaxSignedTokenBytes, a clock outside what a token can carry.
func (s *Signed) Seal(b Binding, state json.RawMessage) (string, error) {
	now, expires, err := sealTimes("SignedClock", s.now(), s.ttl)
	if err != nil {
		return "", err
	}
	ks := s.keyset()
	if ks == nil {
		return "", &ConfigError{Field: fieldSrc, Reason: "has no keyring"}
	}
	if err := checkDeclaredTTL("SignedTTL", s.ttl, ks.ring); err != nil {
		return "", err
	}
	key := ks.keys[0]
	sc := getSignedScratch()
	defer putSignedScratch(sc)

	if err = signedPrincipal(sc, b); err != nil {
		return "", err
	}
	if err = signedBinding(sc, b); err != nil {
		return "", err
	}
	var scope [signedMACLen]byte
	key.mac(&scope, signedTagScope, sc.binding, nil)

	version, prefix, tag := byte('1'), "mrtr1.", signedTagV1
	if key.id != "" {
		version, prefix, tag = '2', "mrtr2.", signedTagV2
	}
	p := append(sc.payload[:0], '[', version, ',')
	p = strconv.AppendInt(p, now, 10)
	p = append(p, ',')
	p = strconv.AppendInt(p, expires, 10)
	p = append(p, ',', '"')
	p = append(p, scope[:]...)
	p = append(p, '"', ',')
	if p, err = sc.dec.Append(p, state); err != nil {
		return "", &ConfigError{Field: fieldState, Reason: err.Error()}
	}
	p = append(p, ']')
	sc.payload = p

	kidDot := key.idDot[:0]
	if key.id != "" {
		kidDot = key.idDot
	}
	size := len(prefix) + len(kidDot) + signedB64.EncodedLen(len(p)) + 1 + signedMACLen
	if size > MaxSignedTokenBytes {
		return "", &ConfigError{Field: fieldState,
			Reason: fmt.Sprintf("the token would be %d bytes, over the %d-byte limit", size, MaxSignedTokenBytes)}
	}
	sc.enc = signedB64.AppendEncode(sc.enc[:0], p)
	var mac [signedMACLen]byte
	key.mac(&mac, tag, kidDot, sc.enc)

	var t strings.Builder
	t.Grow(size)
	t.WriteString(prefix)
	t.Write(kidDot)
	t.Write(sc.enc)
	t.WriteByte('.')
	t.Write(mac[:])
	s.rec.TokenSealed(CodecSigned)
	return t.String(), nil
}

// Open returns the state of a token sealed for an equal binding, in canonical form (see the package
// comment). Every failure of the token is ErrInvalid, and so are params that cannot be bound (no
// token can have been sealed for them). A binding without method or principal, or a bad clock, is
// a *ConfigError. Explain says which check failed.
func (s *Signed) Open(b Binding, tok string) (json.RawMessage, error) {
	sc := getSignedScratch()
	defer putSignedScratch(sc)
	r, err := s.openBound(sc, b, tok)
	if err != nil {
		return nil, err // the server's own mistake, no token's result
	}
	s.rec.TokenOpened(CodecSigned, r.check.Result())
	if r.check != "" {
		return nil, ErrInvalid
	}
	// Snodo returns the state as Elixir decodes it: the first of repeated names wins.
	state, err := sc.dec.AppendFirstWins(make([]byte, 0, len(r.state)), r.state)
	if err != nil {
		return nil, ErrInvalid // SkipValue checked the syntax; unreachable but for a bug
	}
	return state, nil
}

// openBound runs every check of Open in order and stops at the first that fails. It returns an
// error only for the server's own mistakes (a *ConfigError).
func (s *Signed) openBound(sc *signedScratch, b Binding, tok string) (signedOpened, error) {
	now, err := s.unixNow()
	if err != nil {
		return signedOpened{}, err
	}
	if err = signedPrincipal(sc, b); err != nil {
		return signedOpened{}, err
	}
	if len(tok) > MaxSignedTokenBytes {
		return signedOpened{check: CheckSize}, nil
	}
	ks := s.keyset()
	if ks == nil {
		return signedOpened{check: CheckKeyID}, nil
	}
	r := s.open(ks, sc, now, tok)
	if r.check != "" {
		return r, nil
	}
	// Only now, with the token authentic and current, is the request's binding worth its cost.
	if err = signedBinding(sc, b); err != nil {
		r.check = CheckParams // params no token can have been sealed for
		return r, nil
	}
	var want [signedMACLen]byte
	r.signer.mac(&want, signedTagScope, sc.binding, nil)
	if subtle.ConstantTimeCompare(want[:], sc.scope) != 1 {
		r.check = CheckBinding
	}
	return r, nil
}

// signedOpened is what open learnt of a token: the first check it failed ("" when it passed them
// all) and, once a key verified its MAC, that key and, if the checks pass, the state.
type signedOpened struct {
	check  Check
	signer *signedKey // nil until the MAC verified
	state  []byte     // as written, in sc's memory
}

// open checks tok's MAC, payload and times; the scope is left in sc.scope for the caller to check
// against the request.
func (s *Signed) open(ks *signedKeys, sc *signedScratch, now int64, tok string) signedOpened {
	t := append(sc.tok[:0], tok...)
	sc.tok = t

	p, ok := splitSigned(t)
	if !ok {
		return signedOpened{check: CheckFormat}
	}
	signer, tried := ks.signer(&p)
	switch {
	case signer == nil && tried == 0:
		return signedOpened{check: CheckKeyID}
	case signer == nil:
		return signedOpened{check: CheckMAC}
	}
	r := signedOpened{signer: signer, check: CheckPayload}
	payload, ok := decodeSignedB64(sc.payload[:0], p.enc)
	sc.payload = payload
	if !ok {
		return r
	}
	issued, expires, data, ok := readSignedPayload(sc, payload, p.version)
	if !ok {
		return r
	}
	// Integers beyond int64 failed signedReadInt above (CheckPayload): each would fail one of these
	// checks anyway.
	switch {
	case issued < 0 || expires <= issued:
		r.check = CheckPayload
	case issued > now:
		r.check = CheckNotYetValid
	case expires <= now:
		r.check = CheckExpired
	case expires-issued > s.ttl:
		r.check = CheckLifetime
	default:
		r.check, r.state = "", data
	}
	return r
}

// signedParts is a token split into its parts; every slice points into the token.
type signedParts struct {
	version byte   // '1' or '2'
	tag     []byte // the MAC domain tag of the version
	kid     []byte // mrtr2 only
	signed  []byte // what the MAC covers: the payload (mrtr1), or kid "." payload (mrtr2)
	enc     []byte // the base64 payload
	mac     []byte
}

// splitSigned splits t, as Snodo does, into exactly two (mrtr1) or three (mrtr2) dot-separated parts
// after the version prefix.
func splitSigned(t []byte) (signedParts, bool) {
	var p signedParts
	switch {
	case bytes.HasPrefix(t, []byte("mrtr1.")):
		p.version, p.tag, p.signed = '1', signedTagV1, t[len("mrtr1."):]
	case bytes.HasPrefix(t, []byte("mrtr2.")):
		p.version, p.tag, p.signed = '2', signedTagV2, t[len("mrtr2."):]
	default:
		return p, false
	}
	i := bytes.LastIndexByte(p.signed, '.')
	if i < 0 {
		return p, false
	}
	p.signed, p.mac = p.signed[:i], p.signed[i+1:]
	p.enc = p.signed
	if p.version == '2' {
		j := bytes.IndexByte(p.signed, '.')
		if j < 0 || !keyring.ValidID(p.signed[:j]) {
			return p, false
		}
		p.kid, p.enc = p.signed[:j], p.signed[j+1:]
	}
	if bytes.IndexByte(p.enc, '.') >= 0 || len(p.mac) != signedMACLen {
		return p, false
	}
	return p, true
}

// signer returns the key whose MAC over p matches, or nil, and how many keys it tried (0: no key
// has the token's kid). Every candidate key is tried, so the time taken does not tell which one
// matched.
func (ks *signedKeys) signer(p *signedParts) (signer *signedKey, tried int) {
	var want [signedMACLen]byte
	for _, k := range ks.keys {
		if p.version == '2' && k.id != "" && k.id != string(p.kid) {
			continue
		}
		tried++
		k.mac(&want, p.tag, p.signed, nil)
		if subtle.ConstantTimeCompare(want[:], p.mac) == 1 && signer == nil {
			signer = k
		}
	}
	return signer, tried
}

// readSignedPayload reads the verified payload [version, issued, expires, scope, state]: the scope
// into sc.scope, and the state as written, pointing into payload.
func readSignedPayload(sc *signedScratch, payload []byte, version byte) (issued, expires int64, data []byte, ok bool) {
	d := &sc.dec
	d.Reset(payload)
	if !d.Consume('[') {
		return 0, 0, nil, false
	}
	v, err := d.Integer()
	if err != nil || len(v) != 1 || v[0] != version || !d.Consume(',') {
		return 0, 0, nil, false
	}
	if issued, ok = signedReadInt(d); !ok || !d.Consume(',') {
		return 0, 0, nil, false
	}
	if expires, ok = signedReadInt(d); !ok || !d.Consume(',') {
		return 0, 0, nil, false
	}
	if sc.scope, err = d.String(sc.scope[:0]); err != nil || !d.Consume(',') {
		return 0, 0, nil, false
	}
	// The MAC verified, so a key holder wrote the data: what is left before the closing bracket must
	// be one JSON value, which Open checks when it makes its canonical form, once the request's
	// binding matched (Snodo rejects only what its decoder cannot read, and repeated names are not
	// among that).
	d.SkipSpace()
	data = bytes.TrimRight(payload[d.Offset():], " \t\r\n")
	if len(data) < 2 || data[len(data)-1] != ']' {
		return 0, 0, nil, false
	}
	return issued, expires, data[:len(data)-1], true
}

func signedReadInt(d *canonical.Decoder) (int64, bool) {
	lit, err := d.Integer()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil
}

// decodeSignedB64 decodes src as Elixir's Base.url_decode64(src, padding: false) does: the URL alphabet,
// optional but correct padding, and unused low bits of the last character ignored. Unlike Go's
// decoder it does not skip CR and LF.
func decodeSignedB64(dst, src []byte) ([]byte, bool) {
	if bytes.IndexByte(src, '\r') >= 0 || bytes.IndexByte(src, '\n') >= 0 {
		return dst, false
	}
	if len(src)%4 == 0 {
		src = bytes.TrimSuffix(src, []byte("="))
		if len(src)%4 == 3 {
			src = bytes.TrimSuffix(src, []byte("="))
		}
	}
	dst = slices.Grow(dst[:0], signedB64.DecodedLen(len(src)))
	n, err := signedB64.Decode(dst[:cap(dst)], src)
	return dst[:n], err == nil
}
