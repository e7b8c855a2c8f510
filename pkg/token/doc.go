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

// Package token seals and opens MCP multi round-trip (MRTR) request state with a shared keyring.
//
// Two codecs implement Codec:
//   - Signed: Snodo's wire format (mrtr1/mrtr2, HMAC-SHA256). Integrity only: the client can read the
//     state. Byte-compatible with the Elixir library Snodo.
//   - Sealed: AES-256-GCM. Integrity and confidentiality.
//
// Both bind a token to the request that produced it (Binding), expire it, and read their keys from a
// keyring.Source on every call, so a hot-reloaded keyring applies to the next call.
//
// A third codec, RS2, writes and reads rmcp's rs2 tokens (the Rust SDK's keyed request-state
// format, see CodecRS2) byte for byte, so that Go and Rust replicas share one keyring. It takes
// rmcp's arguments, a payload and associated data, not a Binding and a JSON state.
//
// Errors come in three kinds that never mix. Every failure to open an untrusted token is ErrInvalid,
// whatever the cause, so a client learns nothing from the error; the cause is for logs and metrics
// only: Explain runs the same checks and names the first that fails (a *RejectError with its
// Check), and Inspect reads what a token's text says (codec, format version, key id, a Signed
// token's times) without keys. Request params that Seal cannot bind (see Binding.Params) are an
// *InputError: the client's mistake, to be answered as invalid params with a fixed message. A
// mistake of the server or its configuration (bad options, a missing principal, params that are not
// a JSON object, state that is not JSON, a clock out of range) is a *ConfigError.
//
// Both codecs are configured the same way: required arguments are arguments, everything else a
// functional option (SignedTTL, SealedTTL, ...) that keeps its default when it is not given and
// must be valid when it is. No token lives longer than MaxTTL (15 minutes), the ceiling of MRTR,
// of Snodo and of the operator's tokenTTL, whose rotation waits out that lifetime.
//
// Neither codec reads a request's params before the token is authentic: a forged token costs a MAC
// or a failed GCM open and nothing else. Canonical JSON costs O(n log n) in the size of the params
// whatever their order or depth; params already in canonical order (sorted members, no whitespace)
// take a one-pass fast path.
//
// Neither codec makes a token single-use: a token opens, for an equal binding, until it expires. A
// server that needs at-most-once semantics must enforce them itself.
//
// # Sealed tokens, format version 1
//
// This is the complete byte layout; another language can seal and open these tokens from it alone
// (TestSealedLayout does exactly that with Go's standard library). B64 is base64url without padding
// (RFC 4648 section 5). canonical(v) is the canonical JSON the Signed codec binds with (Snodo's):
// object members sorted by the UTF-8 bytes of their names, no whitespace, integers as their digits,
// floats in Erlang's shortest round-trip layout, strings escaping only '"', '\' and bytes below 0x20.
//
// Key. The AES-256 key of a keyring entry (id, secret), where the secret has 32 bytes or more, is
//
//	key = HKDF-SHA256(secret, salt: none, info: "mrtr-sealed-v1 aes-256-gcm key", length: 32)
//
// (RFC 5869; no salt means 32 zero bytes). It is derived whatever the secret's length, so a 32-byte
// secret and a longer one get one treatment, and the AES key is never the HMAC key that the Signed
// codec makes of the same secret.
//
// Token. ASCII, at most MaxSealedTokenBytes (65536) bytes:
//
//	token = kid "." B64(iv || tag || ciphertext)
//
// kid is the id of the sealing key (1 to 32 of A-Za-z0-9_-, so it never holds a '.'). iv is 12 bytes
// from a CSPRNG, fresh for every seal. ciphertext is the AES-256-GCM encryption of the payload (as
// long as the payload) and tag its 16-byte authentication tag. Go's cipher.AEAD writes
// ciphertext || tag; the token puts the tag first, as conduit_mcp does. The B64 text must be
// canonical: unused low bits of the last character zero, no line breaks, nothing else.
//
// Associated data. Bytes, each field a 4-byte big-endian length and the field's bytes:
//
//	aad = "mrtr-sealed-v1" || L(kid) || L(protocol version) || L(method) || L(server)
//	L(x) = uint32_be(len(x)) || x
//
// "mrtr-sealed-v1" is the format version. The protocol version and method are those of the request
// (Binding.ProtocolVersion, Binding.Method), server is NewSealed's server argument. Binding the kid means a
// token cannot be moved under another key id.
//
// Payload. JSON in exactly this form: these members, in this order, no whitespace:
//
//	{"i":<issued>,"e":<expires>,"d":"<digest>","p":<principal>,"s":<state>}
//
//	issued    Unix seconds of the seal: a decimal integer, no sign, no leading zeros
//	expires   issued + TTL, or issued + the anonymous TTL when the principal is null; same form
//	digest    B64(SHA-256("mrtr-sealed-v1 binding" || 0x00 || canonical([method, salient params])))
//	principal canonical(Binding.Principal); null for Anonymous
//	state     canonical(state)
//
// The salient params are the params object without its top-level "_meta", "requestState" and
// "inputResponses" (the same names nested deeper stay); absent params count as {}. So a token binds
// the tool name and arguments, the resource URI or the prompt name and arguments, whatever the
// client sends in _meta or in which order it writes members.
//
// Open. Every check that fails gives ErrInvalid, in this order (cheap before costly, and no
// attacker-chosen work before authentication but the GCM open itself); Explain names the Check:
//
//  1. the token is at most 65536 bytes (CheckSize);
//  2. the text before the first '.' (CheckFormat) is the id of a key in the current keyring
//     (CheckKeyID);
//  3. the rest is canonical B64 of at least 28 bytes (CheckFormat);
//  4. AES-256-GCM opens it with that key and the associated data of this request: protocol version,
//     method, server and kid are equal, and nothing was altered (CheckAuthTag);
//  5. the payload has the layout above (CheckPayload) and its principal is
//     canonical(Binding.Principal) (CheckPrincipal);
//  6. now < expires (expiry is exclusive; CheckExpired); issued <= now + the clock skew
//     (SealedClockSkew, default 30s; CheckNotYetValid), so a sealing replica whose clock runs
//     slightly ahead still has its fresh tokens accepted, and one far ahead cannot mint tokens that
//     outlive TTL + skew; and expires - issued is at most the opener's TTL (the anonymous TTL for a
//     null principal; CheckLifetime), so lowering a TTL caps tokens already issued;
//  7. the digest recomputed from this request's method and params is equal (constant-time;
//     CheckBinding). Params that cannot be bound (see Binding.Params) fail here (CheckParams).
//
// Open then returns the canonical state. Time is whole Unix seconds, from SealedClock. Seal refuses
// a clock before 1970, or one so late that the expiry would not fit an int64: it never writes a
// token that Open cannot read.
//
// Keys. The first key of the keyring seals, the kid picks the key that opens. Rotate as the operator
// does: [A] → [A,B] → [B,A] → wait the longest TTL → [B]; a key dropped from the ring stops opening
// its tokens at once. Random 96-bit IVs bound each key to well under 2^32 seals (NIST SP 800-38D);
// rotate long before.
package token
