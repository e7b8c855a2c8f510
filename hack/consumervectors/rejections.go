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

package main

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// rejectionsFile is rejections.json: tokens of each format opened under a keyring at a clock, with
// the result the open counts (docs/consumers.md, "Metrics"), the cases where two results could
// apply included.
type rejectionsFile struct {
	Comment []string `json:"comment"`
	// Request is the request every Signed token is sealed for and opened with (its rs2Ad is the rs2
	// associated data of both).
	Request request `json:"request"`
	// OtherRequest is another request: the cases whose openedFor names it are opened with it.
	OtherRequest request           `json:"otherRequest"`
	Cases        []rejectionCase   `json:"cases"`
	Order        map[string]string `json:"order"`
}

type rejectionCase struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	// Keyring is the keyring.json in service when the token is opened.
	Keyring file `json:"keyring"`
	// Token is the token; with TokenPadTo, Token followed by "A" up to TokenPadTo characters.
	Token string `json:"token"`
	// OpenedFor is the request the token is opened with: "request" (the one it was sealed for) or
	// "otherRequest".
	OpenedFor  string `json:"openedFor"`
	TokenPadTo int    `json:"tokenPadTo,omitempty"`
	// NowMs is the opener's clock, Unix milliseconds (Signed and python-sdk use its whole seconds).
	NowMs int64 `json:"nowMs"`
	// TTLSeconds is the opener's TTL (Signed, rs2); python-sdk's codec has none.
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
	// AnyLaterTime says the result is the same at every clock from NowMs on: a consumer whose codec
	// reads the system clock (rmcp's) runs only these cases.
	AnyLaterTime bool           `json:"anyLaterTime"`
	Result       metrics.Result `json:"result"`
	// Check is the check of Go's Explain that ends the open (python-sdk: the same check of the
	// SDK's layout); "" when it opens.
	Check token.Check `json:"check"`
}

var rejectionsComment = []string{
	"Made by `go run ./hack/consumervectors` from pkg/token; do not edit. See docs/consumers.md, \"Metrics\".",
	"Each case opens `token` (with `tokenPadTo`: followed by \"A\" up to that many characters) in `format`",
	"with the keyring `keyring` (a keyring.json, standard base64 `data`) in service, at the clock `nowMs`",
	"(Unix milliseconds; Signed and python-sdk use whole seconds), with an opener TTL of `ttlSeconds`,",
	"and counts `result` in mrtr_consumer_tokens_opened_total. `check` is the check of Go's token.Explain",
	"that ends the open. Signed tokens are opened for the request `openedFor` names (`request`, the one",
	"they were sealed for, or `otherRequest`: method, params, principal); rs2 tokens with that request's",
	"`rs2Ad` as associated data; python-sdk tokens by the SDK's codec alone (KeyringCodec.unseal),",
	"the claims envelope's times read at `nowMs`. `anyLaterTime`: the result is the same at every clock",
	"from `nowMs` on, so a consumer whose codec reads the system clock (rmcp) runs those cases only.",
	"When two results could apply, the first check that fails decides, in the order `order` gives per",
	"format: the size before anything, the layout and the key id before the MAC, and the MAC before the",
	"payload and its times (a token is authenticated before its expiry is trusted). Signed, rs2: the",
	"results are what Go's token.Signed and token.RS2 count. python-sdk: what mcp 2.3's codec and claims",
	"envelope check in that order; the key id is the token's 4-byte kid against the keyring's Python kids.",
}

// rejectionsOrder is each format's order of checks, as Go's codecs (and mcp 2.3's) run them.
var rejectionsOrder = map[string]string{
	token.CodecSigned: "size (too_large); no keyring (unknown_key); format (malformed); key id (unknown_key); " +
		"mac (bad_mac); payload, then issue time not after expiry (malformed); not yet valid, expired, lifetime " +
		"(expired); params, binding (binding_mismatch)",
	token.CodecRS2: "size (too_large); prefix, parts and kid (malformed); key id (unknown_key); body and tag " +
		"base64 (malformed); mac (bad_mac); body shorter than the expiry (malformed); expired (expired); no " +
		"expiry, or beyond TTL and clock skew (expired)",
	token.CodecPythonSDK: "prefix, base64, length (malformed); kid (unknown_key); AES-GCM tag (bad_mac); claims " +
		"envelope (malformed); iat beyond 60 s in the future, exp (expired)",
}

// The names of the cases every format has.
const (
	caseOpens      = "opens"
	caseUnknownKey = "unknown key"
	caseNotAToken  = "not a token"
	notAToken      = "not-a-token"
)

const (
	rejectionsNow = 1767225600 // 2026-01-01T00:00:00Z
	rejectionsTTL = 300
	// pythonSDK's layout (mcp 2.3, mcp.server.request_state).
	pySDKPrefix   = "v1."
	pySDKKidLen   = 4
	pySDKNonceLen = 12
	pySDKTagLen   = 16
	pySDKSkew     = 60
)

// rejectionsKeys are the keyring's keys: the one in service, and one the opener does not hold.
func rejectionsKeys() (held, other keyring.Key) {
	return keyring.NewKey("rej-held", secret(200, 32)), keyring.NewKey("rej-other", secret(201, 32))
}

func rejectionsVectors() (*rejectionsFile, error) {
	held, other := rejectionsKeys()
	ringHeld, err := keyring.New(held)
	if err != nil {
		return nil, err
	}
	ringOther, err := keyring.New(other)
	if err != nil {
		return nil, err
	}
	// The opener holds only held: other's tokens name a key its keyring does not hold.
	docHeld, err := keyring.Marshal(ringHeld)
	if err != nil {
		return nil, err
	}
	out := &rejectionsFile{Comment: rejectionsComment, Order: rejectionsOrder,
		Request: weather("get_weather", "Paris", "user:ada"), OtherRequest: weather("get_weather", "Rome", "user:ada")}
	g := &rejectionsGen{out: out, doc: newFile(docHeld, 0), ring: ringHeld, req: out.Request}
	if err := g.signed(ringHeld, ringOther, held); err != nil {
		return nil, err
	}
	if err := g.rs2(ringHeld, ringOther, held); err != nil {
		return nil, err
	}
	if err := g.pythonSDK(held, other); err != nil {
		return nil, err
	}
	return out, nil
}

type rejectionsGen struct {
	out  *rejectionsFile
	doc  file
	ring *keyring.Keyring
	req  request
}

// farLater is a clock a century after the file's: a result that is the same there and at the
// case's own clock is the same at every clock in between, as every check compares the clock with a
// fixed time once.
const farLater = 100 * 365 * 24 * time.Hour

func ms(sec int64) int64 { return sec * 1000 }

// signed adds the Signed cases, each result what token.Signed counts.
func (g *rejectionsGen) signed(ringHeld, ringOther *keyring.Keyring, held keyring.Key) error {
	sealAt := func(ring *keyring.Keyring, at int64, ttl time.Duration) (string, error) {
		c, err := token.NewSigned(keyring.Static(ring), token.SignedClock(func() time.Time { return time.Unix(at, 0) }),
			token.SignedTTL(ttl))
		if err != nil {
			return "", err
		}
		return c.Seal(g.req.binding(), json.RawMessage(`{"step":1}`))
	}
	ok, err := sealAt(ringHeld, rejectionsNow, rejectionsTTL*time.Second)
	if err != nil {
		return err
	}
	long, err := sealAt(ringHeld, rejectionsNow, 900*time.Second)
	if err != nil {
		return err
	}
	// A token of the same layout naming a key the opener does not hold.
	foreign, err := sealAt(ringOther, rejectionsNow, rejectionsTTL*time.Second)
	if err != nil {
		return err
	}
	// An authentic token whose expiry is not after its issue time: a layout no codec seals.
	backwards := signedToken(held, fmt.Sprintf(`[2,%d,%d,"scope",{}]`, rejectionsNow, rejectionsNow-1))
	expiredAt := ms(rejectionsNow + rejectionsTTL + 1)
	for _, c := range []struct {
		name  string
		tok   string
		padTo int
		nowMs int64
		ttl   int64
		other bool
	}{
		{name: caseOpens, tok: ok, nowMs: ms(rejectionsNow + 10)},
		{name: "expired", tok: ok, nowMs: expiredAt},
		{name: "the expiry second itself is expired", tok: ok, nowMs: ms(rejectionsNow + rejectionsTTL)},
		{name: "issued in the future", tok: ok, nowMs: ms(rejectionsNow - 1)},
		{name: "lives longer than the opener's TTL", tok: long, nowMs: ms(rejectionsNow + 10)},
		{name: caseUnknownKey, tok: foreign, nowMs: ms(rejectionsNow + 10)},
		{name: "bad MAC", tok: flipMAC(ok), nowMs: ms(rejectionsNow + 10)},
		{name: caseNotAToken, tok: notAToken, nowMs: ms(rejectionsNow + 10)},
		{name: "another request: binding_mismatch", tok: ok, nowMs: ms(rejectionsNow + 10), other: true},
		{name: "oversized and unknown key: too_large", tok: "mrtr2.rej-nokey.", padTo: token.MaxSignedTokenBytes + 1,
			nowMs: ms(rejectionsNow + 10)},
		{name: "oversized and expired: too_large", tok: ok + ".", padTo: token.MaxSignedTokenBytes + 1, nowMs: expiredAt},
		{name: "unknown key and bad MAC: unknown_key", tok: flipMAC(foreign), nowMs: ms(rejectionsNow + 10)},
		{name: "expired and bad MAC: bad_mac", tok: flipMAC(ok), nowMs: expiredAt},
		{name: "issued in the future and bad MAC: bad_mac", tok: flipMAC(ok), nowMs: ms(rejectionsNow - 1)},
		{name: "malformed and expired: malformed", tok: strings.Replace(ok, ".", "..", 2), nowMs: expiredAt},
		{name: "authentic, expiry before issue, and expired: malformed", tok: backwards, nowMs: expiredAt},
		{name: "expired and another request: expired", tok: ok, nowMs: expiredAt, other: true},
	} {
		ttl := c.ttl
		if ttl == 0 {
			ttl = rejectionsTTL
		}
		open := g.req
		if c.other {
			open = g.out.OtherRequest
		}
		tok := pad(c.tok, c.padTo)
		at := func(nowMs int64) (metrics.Result, token.Check, error) {
			rec := &lastResult{}
			codec, err := token.NewSigned(keyring.Static(ringHeld), token.SignedTTL(time.Duration(ttl)*time.Second),
				token.SignedClock(func() time.Time { return time.UnixMilli(nowMs) }), token.SignedMetrics(rec))
			if err != nil {
				return "", "", err
			}
			_, err = codec.Open(open.binding(), tok)
			if (err == nil) != (rec.result == metrics.OK) {
				return "", "", fmt.Errorf("open returned %v and counted %q", err, rec.result)
			}
			_, err = codec.Explain(open.binding(), tok)
			return rec.result, checkOf(err), nil
		}
		if err := g.add(c.name, token.CodecSigned, c.tok, c.padTo, c.nowMs, ttl, c.other, at); err != nil {
			return err
		}
	}
	return nil
}

// add runs one case at its clock and a century later, and records it.
func (g *rejectionsGen) add(name, format, text string, padTo int, nowMs, ttl int64, other bool,
	at func(nowMs int64) (metrics.Result, token.Check, error)) error {
	res, check, err := at(nowMs)
	if err != nil {
		return fmt.Errorf("%s %q: %w", format, name, err)
	}
	later, _, err := at(nowMs + farLater.Milliseconds())
	if err != nil {
		return fmt.Errorf("%s %q: %w", format, name, err)
	}
	openedFor := "request"
	if other {
		openedFor = "otherRequest"
	}
	g.out.Cases = append(g.out.Cases, rejectionCase{Name: name, Format: format, Keyring: g.doc, Token: text,
		TokenPadTo: padTo, OpenedFor: openedFor, NowMs: nowMs, TTLSeconds: ttl, AnyLaterTime: later == res, Result: res, Check: check})
	return nil
}

func checkOf(err error) token.Check {
	if re, ok := errors.AsType[*token.RejectError](err); ok {
		return re.Check
	}
	return ""
}

func pad(tok string, padTo int) string {
	if padTo <= len(tok) {
		return tok
	}
	return tok + strings.Repeat("A", padTo-len(tok))
}

// flipMAC changes one character in the middle of a token's last part (its MAC or tag), keeping the
// layout: an A becomes a B, anything else an A.
func flipMAC(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 10
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// signedToken is an mrtr2 token of payload (its JSON text) MACed with k: the layout Snodo writes,
// for the payloads no Seal writes.
func signedToken(k keyring.Key, payload string) string {
	enc := base64.RawURLEncoding.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, k.Secret())
	m.Write([]byte("snodo-mrtr-token-v2:" + k.ID() + "." + enc))
	return "mrtr2." + k.ID() + "." + enc + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// rs2 adds the rs2 cases, each result what token.RS2 counts.
func (g *rejectionsGen) rs2(ringHeld, ringOther *keyring.Keyring, held keyring.Key) error {
	ad := []byte(g.req.RS2AD)
	sealAt := func(ring *keyring.Keyring, at int64, ttl time.Duration) (string, error) {
		c, err := token.NewRS2(keyring.Static(ring), token.RS2Clock(func() time.Time { return time.Unix(at, 0) }),
			token.RS2TTL(ttl))
		if err != nil {
			return "", err
		}
		return c.Seal(ad, []byte(`{"step":1}`))
	}
	ok, err := sealAt(ringHeld, rejectionsNow, rejectionsTTL*time.Second)
	if err != nil {
		return err
	}
	long, err := sealAt(ringHeld, rejectionsNow, 900*time.Second)
	if err != nil {
		return err
	}
	foreign, err := sealAt(ringOther, rejectionsNow, rejectionsTTL*time.Second)
	if err != nil {
		return err
	}
	expiry := ms(rejectionsNow + rejectionsTTL)
	noExpiry := rs2Token(held, ad, binary.BigEndian.AppendUint64(nil, 0))
	short := rs2Token(held, ad, []byte{1, 2, 3})
	// An undecodable body ('!' is no base64url) in a token that is otherwise laid out.
	badBody := func(tok string) string {
		parts := strings.Split(tok, ".")
		parts[2] = "!" + parts[2][1:]
		return strings.Join(parts, ".")
	}
	for _, c := range []struct {
		name  string
		tok   string
		padTo int
		nowMs int64
		other bool
	}{
		{name: caseOpens, tok: ok, nowMs: ms(rejectionsNow + 10)},
		{name: "the expiry instant itself opens", tok: ok, nowMs: expiry},
		{name: "expired", tok: ok, nowMs: expiry + 1},
		{name: "lives longer than the opener's TTL", tok: long, nowMs: ms(rejectionsNow + 10)},
		{name: "authentic, without expiry", tok: noExpiry, nowMs: ms(rejectionsNow + 10)},
		{name: caseUnknownKey, tok: foreign, nowMs: ms(rejectionsNow + 10)},
		{name: "bad MAC", tok: flipMAC(ok), nowMs: ms(rejectionsNow + 10)},
		{name: caseNotAToken, tok: notAToken, nowMs: ms(rejectionsNow + 10)},
		{name: "another request: bad_mac", tok: ok, nowMs: ms(rejectionsNow + 10), other: true},
		{name: "oversized and unknown key: too_large", tok: "rs2.cmVqLW5va2V5.", padTo: token.MaxRS2TokenBytes + 1,
			nowMs: ms(rejectionsNow + 10)},
		{name: "unknown key and bad MAC: unknown_key", tok: flipMAC(foreign), nowMs: ms(rejectionsNow + 10)},
		{name: "unknown key and an undecodable body: unknown_key", tok: badBody(foreign), nowMs: ms(rejectionsNow + 10)},
		{name: "expired and bad MAC: bad_mac", tok: flipMAC(ok), nowMs: expiry + 1},
		{name: "malformed and expired: malformed", tok: badBody(ok), nowMs: expiry + 1},
		{name: "authentic, body shorter than its expiry: malformed", tok: short, nowMs: ms(rejectionsNow + 10)},
		{name: "expired and another request: bad_mac", tok: ok, nowMs: expiry + 1, other: true},
	} {
		tok := pad(c.tok, c.padTo)
		openAD := ad
		if c.other {
			openAD = []byte(g.out.OtherRequest.RS2AD)
		}
		at := func(nowMs int64) (metrics.Result, token.Check, error) {
			rec := &lastResult{}
			codec, err := token.NewRS2(keyring.Static(ringHeld), token.RS2TTL(rejectionsTTL*time.Second),
				token.RS2Clock(func() time.Time { return time.UnixMilli(nowMs) }), token.RS2Metrics(rec))
			if err != nil {
				return "", "", err
			}
			_, err = codec.Open(tok, openAD)
			if (err == nil) != (rec.result == metrics.OK) {
				return "", "", fmt.Errorf("open returned %v and counted %q", err, rec.result)
			}
			_, err = codec.Explain(tok, openAD)
			return rec.result, checkOf(err), nil
		}
		if err := g.add(c.name, token.CodecRS2, c.tok, c.padTo, c.nowMs, rejectionsTTL, c.other, at); err != nil {
			return err
		}
	}
	return nil
}

// rs2Token is the rs2 token of body under k for ad: the layout rmcp writes, for the bodies no Seal
// writes.
func rs2Token(k keyring.Key, ad, body []byte) string {
	m := hmac.New(sha256.New, k.Secret())
	var n [8]byte
	m.Write([]byte("rmcp/mrtr/request-state/v2"))
	binary.BigEndian.PutUint64(n[:], uint64(len(k.ID())))
	m.Write(n[:])
	m.Write([]byte(k.ID()))
	binary.BigEndian.PutUint64(n[:], uint64(len(ad)))
	m.Write(n[:])
	m.Write(ad)
	m.Write(body)
	e := base64.RawURLEncoding
	return "rs2." + e.EncodeToString([]byte(k.ID())) + "." + e.EncodeToString(body) + "." + e.EncodeToString(m.Sum(nil))
}

// pythonSDK adds the python-sdk cases. Go has no python-sdk codec: the tokens are sealed here in
// mcp 2.3's layout, with fixed nonces, and each result is what that SDK's codec and claims envelope
// check, in their order, with the key id decided by the token's kid (pySDKOpenResult).
func (g *rejectionsGen) pythonSDK(held, other keyring.Key) error {
	claims := func(iat, exp int64) string {
		return fmt.Sprintf(`{"v":1,"iat":%d,"exp":%d,"m":"tools/call","t":"get_weather","a":"x","s":"{}"}`, iat, exp)
	}
	good := claims(rejectionsNow, rejectionsNow+rejectionsTTL)
	ok, err := pySDKSeal(held, 1, good)
	if err != nil {
		return err
	}
	foreign, err := pySDKSeal(other, 2, good)
	if err != nil {
		return err
	}
	future, err := pySDKSeal(held, 3, claims(rejectionsNow+pySDKSkew+1, rejectionsNow+pySDKSkew+rejectionsTTL))
	if err != nil {
		return err
	}
	notEnvelope, err := pySDKSeal(held, 4, fmt.Sprintf(`{"v":2,"iat":%d,"exp":%d,"s":"{}"}`, rejectionsNow-600, rejectionsNow-300))
	if err != nil {
		return err
	}
	// A kid the keyring does not hold, and fewer bytes than a nonce and a tag need.
	shortForeign := pySDKPrefix + base64.RawURLEncoding.EncodeToString(append(mustHex(other.PythonKid()), make([]byte, 20)...))
	expiredAt := ms(rejectionsNow + rejectionsTTL)
	for _, c := range []struct {
		name  string
		tok   string
		nowMs int64
	}{
		{caseOpens, ok, ms(rejectionsNow + 10)},
		{"expired (exp is not after now)", ok, expiredAt},
		{"issued beyond the 60 s future skew", future, ms(rejectionsNow)},
		{caseUnknownKey, foreign, ms(rejectionsNow + 10)},
		{"bad tag", flipMAC(ok), ms(rejectionsNow + 10)},
		{caseNotAToken, notAToken, ms(rejectionsNow + 10)},
		{"unknown key and bad tag: unknown_key", flipMAC(foreign), ms(rejectionsNow + 10)},
		{"expired and bad tag: bad_mac", flipMAC(ok), expiredAt},
		{"too short, with an unknown kid: malformed", shortForeign, ms(rejectionsNow + 10)},
		{"authentic, not the claims envelope, and expired: malformed", notEnvelope, ms(rejectionsNow + 10)},
	} {
		at := func(nowMs int64) (metrics.Result, token.Check, error) {
			r, check := pySDKOpenResult([]keyring.Key{held}, c.tok, nowMs/1000)
			return r, check, nil
		}
		if err := g.add(c.name, token.CodecPythonSDK, c.tok, 0, c.nowMs, 0, false, at); err != nil {
			return err
		}
	}
	return nil
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		if _, err := fmt.Sscanf(s[2*i:2*i+2], "%02x", &b[i]); err != nil {
			panic(err)
		}
	}
	return b
}

// pySDKAEAD is mcp 2.3's AES-256-GCM of a key: HKDF-SHA256(secret, no salt,
// "mcp/request-state/v1/aes-256-gcm") (docs/consumers.md, "A Python token names its key by a kid").
func pySDKAEAD(k keyring.Key) (cipher.AEAD, []byte, error) {
	key, err := hkdf.Key(sha256.New, k.Secret(), nil, "mcp/request-state/v1/aes-256-gcm", 32)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	return aead, mustHex(k.PythonKid()), err
}

// pySDKSeal seals claims under k as mcp 2.3's AESGCMRequestStateCodec does, with the nonce n
// repeated (deterministic vectors; the SDK draws a random one).
func pySDKSeal(k keyring.Key, n byte, claims string) (string, error) {
	aead, kid, err := pySDKAEAD(k)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, pySDKNonceLen)
	for i := range nonce {
		nonce[i] = n
	}
	sealed := aead.Seal(nil, nonce, []byte(claims), append([]byte(pySDKPrefix), kid...))
	raw := append(append(kid, nonce...), sealed...)
	return pySDKPrefix + base64.RawURLEncoding.EncodeToString(raw), nil
}

// pySDKOpenResult is what a python-sdk consumer counts for tok under keys at now (Unix seconds):
// mcp 2.3's codec checks (the layout, the kid, the tag) and then its claims envelope (the layout,
// the issue time within 60 s, the expiry), the first that fails deciding.
func pySDKOpenResult(keys []keyring.Key, tok string, now int64) (metrics.Result, token.Check) {
	body, found := strings.CutPrefix(tok, pySDKPrefix)
	if !found {
		return metrics.Malformed, token.CheckFormat
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < pySDKKidLen+pySDKNonceLen+pySDKTagLen {
		return metrics.Malformed, token.CheckFormat
	}
	kid := raw[:pySDKKidLen]
	for _, k := range keys {
		aead, kk, err := pySDKAEAD(k)
		if err != nil || string(kk) != string(kid) {
			continue
		}
		nonce, sealed := raw[pySDKKidLen:pySDKKidLen+pySDKNonceLen], raw[pySDKKidLen+pySDKNonceLen:]
		claims, err := aead.Open(nil, nonce, sealed, append([]byte(pySDKPrefix), kid...))
		if err != nil {
			return metrics.BadMAC, token.CheckAuthTag
		}
		var env struct {
			V   *int     `json:"v"`
			IAT *float64 `json:"iat"`
			Exp *float64 `json:"exp"`
			S   *string  `json:"s"`
		}
		if json.Unmarshal(claims, &env) != nil || env.V == nil || *env.V != 1 || env.IAT == nil || env.Exp == nil || env.S == nil {
			return metrics.Malformed, token.CheckPayload
		}
		if !(*env.IAT <= float64(now+pySDKSkew)) {
			return metrics.Expired, token.CheckNotYetValid
		}
		if !(float64(now) < *env.Exp) {
			return metrics.Expired, token.CheckExpired
		}
		return metrics.OK, ""
	}
	return metrics.UnknownKey, token.CheckKeyID
}
