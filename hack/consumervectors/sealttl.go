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
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// SealTTLPath is where sealTTLVectors' file lives, from the repository's root: in pkg/token's own
// testdata, because pkg is a module of its own whose tests read nothing outside it (a module
// downloaded from the proxy has no testdata/consumers), and pkg/token's rs2 test runs it. The other
// consumers read it there; TestFresh covers it as it covers testdata/consumers.
const SealTTLPath = "pkg/token/testdata/rs2/token-ttl.json"

// sealTTLFile is pkg/token/testdata/rs2/token-ttl.json: a codec's TTL against the token-ttl its
// keyring declares. Its field names are the ones the consumers' tests have read since the file was
// written by hand.
type sealTTLFile struct {
	Comment string        `json:"comment"`
	Cases   []sealTTLCase `json:"cases"`
}

type sealTTLCase struct {
	Name     string `json:"name"`
	TTL      int64  `json:"ttl_s"`
	TokenTTL *int64 `json:"token_ttl_s"`
	Seals    bool   `json:"seals"`
}

const sealTTLComment = "Made by `go run ./hack/consumervectors` from pkg/token (RS2.Seal); do not edit. " +
	"A codec's TTL against the token-ttl the keyring declares (docs/consumers.md, \"token-ttl\"): a codec whose TTL " +
	"is no longer than token-ttl, or under a keyring that declares none, seals tokens that expire exactly the TTL " +
	"after the seal; one whose TTL is longer refuses to seal, with an error that names the MRTRKeyring's tokenTTL, " +
	"and never gives a shorter lifetime in its place. Opening is unaffected. Go's token.RS2 " +
	"(pkg/token/rs2_test.go), the Rust crate's Rs2Codec (clients/rust/tests/rs2.rs), the Python package's " +
	"request_state_security and the TypeScript package's SignedCodec run these cases. ttl_s: the codec's TTL in " +
	"seconds; token_ttl_s: the keyring's declared token-ttl, null for none."

func sealTTLVectors() (*sealTTLFile, error) {
	out := &sealTTLFile{Comment: sealTTLComment}
	for _, c := range []struct {
		name     string
		ttl      int64
		tokenTTL int64 // 0: none declared
	}{
		{"TTL shorter than token-ttl", 60, 120},
		{"TTL equal to token-ttl", 120, 120},
		{"TTL one second beyond token-ttl", 121, 120},
		{"default TTL (5 minutes) beyond a token-ttl of 2 minutes", 300, 120},
		{"the ceiling, 15 minutes, under the ceiling", 900, 900},
		{"the shortest TTL under the shortest token-ttl", 1, 1},
		{"no token-ttl declared: the ceiling seals", 900, 0},
	} {
		ring, err := keyring.New(keyring.NewKey("a", secret(300, 32)))
		if err != nil {
			return nil, err
		}
		v := sealTTLCase{Name: c.name, TTL: c.ttl}
		if c.tokenTTL > 0 {
			ring = ring.WithMaxTokenTTL(time.Duration(c.tokenTTL) * time.Second)
			v.TokenTTL = &c.tokenTTL
		}
		codec, err := token.NewRS2(keyring.Static(ring), token.RS2TTL(time.Duration(c.ttl)*time.Second))
		if err != nil {
			return nil, err
		}
		_, err = codec.Seal([]byte("ad"), []byte("state"))
		v.Seals = err == nil
		out.Cases = append(out.Cases, v)
	}
	return out, nil
}
