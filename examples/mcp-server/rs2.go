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
	"errors"
	"fmt"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// rs2Codec is the get_weather state in rmcp's rs2 format (token.RS2), bound to the same
// associated data as the Rust example server's (examples/rust-server, binding()): the server
// identity, the principal, the method, the tool and its location, one per line. rs2 binds opaque
// bytes, not a request; the two servers agree on these, so that a Go replica and a Rust replica
// behind one Service open each other's state. A bound argument must spell alike in both, which a
// string does; the tool's one argument is a string.
type rs2Codec struct {
	rs2    *token.RS2
	server string
}

var _ token.Codec = rs2Codec{}

// ad is the associated data of a get_weather call with binding b.
func (c rs2Codec) ad(b token.Binding) ([]byte, error) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Location *string `json:"location"`
		} `json:"arguments"`
	}
	if b.Method != "tools/call" || json.Unmarshal(b.Params, &p) != nil || p.Name != "get_weather" || p.Arguments.Location == nil {
		return nil, errors.New("rs2: only get_weather's state is bound (a tools/call with a string location)")
	}
	principal := "anonymous"
	if !bytes.Equal(b.Principal, token.Anonymous) {
		principal = string(b.Principal)
	}
	return fmt.Appendf(nil, "%s\n%s\ntools/call\nget_weather\n%s", c.server, principal, *p.Arguments.Location), nil
}

// Seal seals state for b.
func (c rs2Codec) Seal(b token.Binding, state json.RawMessage) (string, error) {
	ad, err := c.ad(b)
	if err != nil {
		return "", &token.ConfigError{Field: "params", Reason: err.Error()}
	}
	return c.rs2.Seal(ad, state)
}

// Open opens a state sealed for b.
func (c rs2Codec) Open(b token.Binding, tok string) (json.RawMessage, error) {
	ad, err := c.ad(b)
	if err != nil {
		return nil, token.ErrInvalid
	}
	return c.rs2.Open(tok, ad)
}
