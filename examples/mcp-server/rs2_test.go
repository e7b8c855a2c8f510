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
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// rustBinding is the associated data the Rust example server binds a get_weather call in
// mrtr-example to, for the location Paris, anonymous: examples/rust-server's test pins the same
// bytes, so that a token either server seals opens on the other.
const rustBinding = "mrtr-example\nanonymous\ntools/call\nget_weather\nParis"

func TestRS2CodecBindsAsTheRustServer(t *testing.T) {
	ring, err := keyring.New(keyring.NewKey("k1", bytes.Repeat([]byte{7}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	rs2, err := token.NewRS2(keyring.Static(ring), token.RS2TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c := rs2Codec{rs2: rs2, server: "mrtr-example"}
	b := token.Binding{Method: "tools/call", Principal: token.Anonymous,
		Params: json.RawMessage(`{"name":"get_weather","arguments":{"location":"Paris"}}`)}
	state := json.RawMessage(`{"location":"Paris","sealedBy":"go-0","sealKey":"k1"}`)
	tok, err := c.Seal(b, state)
	if err != nil {
		t.Fatal(err)
	}
	// What the Rust server opens with.
	if got, err := rs2.Open(tok, []byte(rustBinding)); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("open with the Rust server's binding = %s, %v", got, err)
	}
	// And the other way: a token sealed for those bytes opens here for that call only.
	rtok, err := rs2.Seal([]byte(rustBinding), state)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(b, rtok); err != nil {
		t.Errorf("a Rust-bound token does not open: %v", err)
	}
	other := b
	other.Params = json.RawMessage(`{"name":"get_weather","arguments":{"location":"Oslo"}}`)
	if _, err := c.Open(other, rtok); err == nil {
		t.Error("a token opened for another location")
	}
	otherTool := token.Binding{Method: "tools/call", Principal: token.Anonymous, Params: json.RawMessage(`{"name":"x"}`)}
	if _, err := c.Seal(otherTool, state); !token.IsConfigError(err) {
		t.Errorf("sealing another tool's state: %v, want a ConfigError", err)
	}
}
