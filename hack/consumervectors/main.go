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

// Command consumervectors writes testdata/consumers/, the vectors every keyring consumer, in every
// language, must agree with (docs/consumers.md): keyrings.json (keyring files with their
// fingerprints and Python kids, and invalid files with what is wrong), token-ttl.json (token-ttl
// contents and what they declare), swaps.json (kubelet ..data swap sequences, with what a
// consumer serves after each step), bindings.json (a token sealed for one request and opened for
// another, with the result each format counts) and rejections.json (tokens of each format that an
// open rejects, the cases where two results could apply included, with the result each counts).
// Every answer in them is computed by pkg/keyring and pkg/token themselves: Parse, Fingerprint,
// PythonKid, ParseTokenTTL, a FileSource reloading a real directory after each step of a swap, and
// the Signed, Sealed and RS2 codecs' own metrics (python-sdk's results in rejections.json follow
// mcp 2.3's checks, rejections.go). The output is deterministic; TestFresh fails when the committed files are stale.
//
//	go run ./hack/consumervectors            # rewrite testdata/consumers/
//	go run ./hack/consumervectors -out DIR   # write elsewhere
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "testdata/consumers", "the directory to write the vector files to")
	sealTTL := flag.String("seal-ttl", SealTTLPath, "the file to write the seal TTL vectors to")
	flag.Parse()
	files, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumervectors:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "consumervectors:", err)
		os.Exit(1)
	}
	for _, name := range Names {
		if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "consumervectors:", err)
			os.Exit(1)
		}
	}
	if err := os.WriteFile(*sealTTL, files[SealTTLPath], 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "consumervectors:", err)
		os.Exit(1)
	}
}

// Names are the files Generate makes, in the order they are written.
var Names = []string{"keyrings.json", "token-ttl.json", "swaps.json", "bindings.json", "rejections.json"}

// Generate returns the content of every vector file, by name, and of the seal TTL file by its path
// (SealTTLPath).
func Generate() (map[string][]byte, error) {
	kr, err := keyringVectors()
	if err != nil {
		return nil, err
	}
	ttl, err := tokenTTLVectors()
	if err != nil {
		return nil, err
	}
	sw, err := swapVectors()
	if err != nil {
		return nil, err
	}
	bd, err := bindingVectors()
	if err != nil {
		return nil, err
	}
	rj, err := rejectionsVectors()
	if err != nil {
		return nil, err
	}
	st, err := sealTTLVectors()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for name, v := range map[string]any{"keyrings.json": kr, "token-ttl.json": ttl, "swaps.json": sw,
		"bindings.json": bd, "rejections.json": rj, SealTTLPath: st} {
		b, err := encode(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// encode writes v as indented JSON without HTML escaping (the texts hold '<' and '&' as they are),
// with a final newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
