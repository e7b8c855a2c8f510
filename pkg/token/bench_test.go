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

package token

// The benchmarks of issue 3, on one shared fixture: a realistic tools/call retry. Each op is a Seal
// followed by an Open of the token it produced.
//
//	go test ./pkg/token -run '^$' -bench . -benchmem -count 5
//
// The floors are the cryptography and base64 a codec's format cannot avoid, with everything else
// precomputed: FloorSigned and FloorSealed include the hashing of the binding that each format
// requires, FloorAEAD is the bare AES-256-GCM of the sealed codec without it. The alternatives a Go
// user would reach for instead (go-jose, golang-jwt, Tink) are benchmarked on the same fixture
// (testdata/bench/fixture.json) in the module hack/tokenbench, so that their libraries stay out of
// this module's graph. docs/benchmarks.md has the goals and the numbers, and `make bench-token` runs
// both with their ratios.
//
// Besides ns/op (wall time) every benchmark reports cpu-ns/op, the CPU time of the whole process
// (user and system, GC included) per op: on a shared machine wall time swings with the load of
// other processes, CPU time far less.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// benchBinding and benchState are the fixture, shared with hack/tokenbench.
var benchBinding, benchState = func() (Binding, json.RawMessage) {
	var f struct {
		Binding Binding
		State   json.RawMessage
	}
	raw, err := os.ReadFile("testdata/bench/fixture.json")
	if err == nil {
		err = json.Unmarshal(raw, &f) // raw values keep their bytes: the params as written
	}
	if err != nil {
		panic(err) // a mistake of the tree that no benchmark can run without
	}
	return f.Binding, f.State
}()

// benchRing is one 32-byte key, as the operator generates them.
func benchRing(b *testing.B) *keyring.Keyring {
	return testRing(b, keyring.NewKey("k2026-07", bytes.Repeat([]byte{0x5a}, 32)))
}

// loop runs op b.N times (via b.Loop) and reports allocations and cpu-ns/op.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	n, start := 0, processCPU(b)
	for b.Loop() {
		op()
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

func benchCodec(b *testing.B, c Codec) { benchCodecWith(b, c, benchBinding) }

func benchCodecWith(b *testing.B, c Codec, bind Binding) {
	loop(b, func() {
		tok, err := c.Seal(bind, benchState)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Open(bind, tok); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkSigned(b *testing.B) {
	s, err := NewSigned(keyring.Static(benchRing(b)))
	if err != nil {
		b.Fatal(err)
	}
	benchCodec(b, s)
}

func BenchmarkSealed(b *testing.B) {
	s, err := NewSealed(keyring.Static(benchRing(b)), "https://mcp.example.com/mcp")
	if err != nil {
		b.Fatal(err)
	}
	benchCodec(b, s)
}

// The same retry with its salient params already in canonical order, as a Go client writes map
// arguments (encoding/json sorts map keys) and mcpstate lays out the params it binds: the encoders
// take their one-pass fast path.
func BenchmarkSignedCanonicalParams(b *testing.B) {
	s, err := NewSigned(keyring.Static(benchRing(b)))
	if err != nil {
		b.Fatal(err)
	}
	benchCodecWith(b, s, canonicalBenchBinding(b))
}

func BenchmarkSealedCanonicalParams(b *testing.B) {
	s, err := NewSealed(keyring.Static(benchRing(b)), "https://mcp.example.com/mcp")
	if err != nil {
		b.Fatal(err)
	}
	benchCodecWith(b, s, canonicalBenchBinding(b))
}

// canonicalBenchBinding is benchBinding with its salient params in canonical form and the per-round
// members dropped, as mcpstate binds them.
func canonicalBenchBinding(b *testing.B) Binding {
	params, err := canonical.AppendParams(nil, benchBinding.Params, unboundParams...)
	if err != nil {
		b.Fatal(err)
	}
	cb := benchBinding
	cb.Params = params
	return cb
}

// BenchmarkFloorSigned is the signed codec's unavoidable work for one seal and one open, with the
// canonical binding and the payload precomputed: the scope and token HMACs of the seal, the token
// and scope HMACs of the open, and base64 of the payload and the MACs in both directions.
func BenchmarkFloorSigned(b *testing.B) {
	binding, err := signedBindingOf(benchBinding)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(`[2,1785233700,1785234000,"` + string(make43('s')) + `",` + benchCanonicalState(b) + `]`)
	h := hmac.New(sha256.New, bytes.Repeat([]byte{0x5a}, 32))
	sum := make([]byte, 0, sha256.Size) // outside the loop: a stack array would escape into Sum
	mac := func(out *[43]byte, tag, msg []byte) {
		h.Reset()
		h.Write(tag)
		h.Write(msg)
		signedB64.Encode(out[:], h.Sum(sum[:0]))
	}
	kidDot := []byte("k2026-07.")
	var enc, signed, dec []byte
	loop(b, func() {
		// Seal.
		var scope, tokMAC [43]byte
		mac(&scope, signedTagScope, binding)
		enc = signedB64.AppendEncode(enc[:0], payload)
		signed = append(append(signed[:0], kidDot...), enc...)
		mac(&tokMAC, signedTagV2, signed)
		// Open.
		var want [43]byte
		mac(&want, signedTagV2, signed)
		dec, err = signedB64.AppendDecode(dec[:0], enc)
		if err != nil || subtle.ConstantTimeCompare(want[:], tokMAC[:]) != 1 {
			b.Fatal("floor: token MAC")
		}
		mac(&want, signedTagScope, binding)
		if subtle.ConstantTimeCompare(want[:], scope[:]) != 1 {
			b.Fatal("floor: scope")
		}
	})
}

// BenchmarkFloorSealed is the sealed codec's unavoidable work for one seal and one open, with the
// canonical binding and the payload precomputed: BenchmarkFloorAEAD's work plus what the format's
// digest requires on each side, SHA-256 of the binding bytes (the digest tag and the canonical
// [method, salient params], the bytes Sealed hashes) and the digest's base64, written into the
// payload on the seal and compared in constant time with the opened payload's on the open.
func BenchmarkFloorSealed(b *testing.B) {
	aead := benchFloorAEAD(b)
	binding := benchSealedBinding(b)
	prefix := `{"i":1785233700,"e":1785234000,"d":"`
	payload := []byte(prefix + string(make43('d')) + `","p":` + string(benchBinding.Principal) + `,"s":` +
		benchCanonicalState(b) + `}`)
	digest := payload[len(prefix) : len(prefix)+digestB64]
	aad := appendAAD(nil, "k2026-07", benchBinding.ProtocolVersion, benchBinding.Method, "https://mcp.example.com/mcp")
	var raw, enc, dec, opened []byte
	var err error
	loop(b, func() {
		// Seal.
		sum := sha256.Sum256(binding)
		sealedB64.Encode(digest, sum[:])
		raw = grow(raw[:0], ivLen)
		_, _ = rand.Read(raw)
		raw = aead.Seal(raw, raw[:ivLen], payload, aad)
		enc = sealedB64.AppendEncode(enc[:0], raw)
		// Open.
		dec, err = sealedB64.AppendDecode(dec[:0], enc)
		if err != nil {
			b.Fatal(err)
		}
		if opened, err = aead.Open(opened[:0], dec[:ivLen], dec[ivLen:], aad); err != nil {
			b.Fatal(err)
		}
		sum = sha256.Sum256(binding)
		var want [digestB64]byte
		sealedB64.Encode(want[:], sum[:])
		if subtle.ConstantTimeCompare(want[:], opened[len(prefix):len(prefix)+digestB64]) != 1 {
			b.Fatal("floor: digest")
		}
	})
}

// BenchmarkFloorAEAD is the bare AEAD floor of the sealed codec, one seal and one open without the
// binding's digest: a random IV, AES-256-GCM seal and open of the same payload with the same
// associated data, and base64 of the sealed bytes in both directions.
func BenchmarkFloorAEAD(b *testing.B) {
	aead := benchFloorAEAD(b)
	payload := []byte(`{"i":1785233700,"e":1785234000,"d":"` + string(make43('d')) + `","p":` +
		string(benchBinding.Principal) + `,"s":` + benchCanonicalState(b) + `}`)
	aad := appendAAD(nil, "k2026-07", benchBinding.ProtocolVersion, benchBinding.Method, "https://mcp.example.com/mcp")
	var raw, enc, dec, opened []byte
	var err error
	loop(b, func() {
		raw = grow(raw[:0], ivLen)
		_, _ = rand.Read(raw)
		raw = aead.Seal(raw, raw[:ivLen], payload, aad)
		enc = sealedB64.AppendEncode(enc[:0], raw)
		dec, err = sealedB64.AppendDecode(dec[:0], enc)
		if err != nil {
			b.Fatal(err)
		}
		if opened, err = aead.Open(opened[:0], dec[:ivLen], dec[ivLen:], aad); err != nil {
			b.Fatal(err)
		}
	})
}

// benchFloorAEAD is AES-256-GCM under the bench key (used directly, not derived: the floors leave out
// the per-keyring setup that the codec does once).
func benchFloorAEAD(b *testing.B) cipher.AEAD {
	block, err := aes.NewCipher(bytes.Repeat([]byte{0x5a}, 32))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	return aead
}

// benchSealedBinding is what the Sealed codec hashes into a token's digest for benchBinding (see
// "Sealed tokens" in the package doc): the digest tag, then canonical([method, salient params]).
func benchSealedBinding(b *testing.B) []byte {
	c := append([]byte(sealedDigestTag), '[')
	c, err := canonical.AppendString(c, benchBinding.Method)
	if err != nil {
		b.Fatal(err)
	}
	c = append(c, ',')
	if c, err = canonical.AppendParams(c, benchBinding.Params, unboundParams...); err != nil {
		b.Fatal(err)
	}
	return append(c, ']')
}

func make43(c byte) []byte { return bytes.Repeat([]byte{c}, 43) }

// benchCanonicalState is benchState as both codecs put it into their payloads.
func benchCanonicalState(b *testing.B) string {
	s, err := canonical.Append(nil, benchState)
	if err != nil {
		b.Fatal(err)
	}
	return string(s)
}
