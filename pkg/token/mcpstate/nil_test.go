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

package mcpstate_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// A nil argument is the server's mistake: a *token.ConfigError from every method, never a panic.
func TestNilArgumentsAreConfigErrors(t *testing.T) {
	codec := sealedCodec(t)
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(`{}`)}}
	state := json.RawMessage(`1`)
	guards := map[string]*mcpstate.Guard{
		"nil codec":           mcpstate.New(nil, mcpstate.Anonymous),
		"nil principal":       mcpstate.New(codec, nil),
		"nil option":          mcpstate.New(codec, mcpstate.Anonymous, nil),
		"nil PrincipalOption": mcpstate.New(codec, mcpstate.PrincipalFromTokenInfo(nil)),
	}
	for name, g := range guards {
		t.Run(name, func(t *testing.T) {
			_, bindErr := g.Bind(req)
			_, sealErr := g.Seal(req, state)
			_, openErr := g.Open(req)
			_, callErr := g.CallToolInputRequired(req, state, nil)
			for what, err := range map[string]error{"Bind": bindErr, "Seal": sealErr, "Open": openErr, "CallToolInputRequired": callErr} {
				if !token.IsConfigError(err) {
					t.Errorf("%s: %v, want a *token.ConfigError", what, err)
				}
			}
		})
	}
	g := mcpstate.New(codec, mcpstate.Anonymous)
	var nilCall *mcp.CallToolRequest
	var nilRead *mcp.ReadResourceRequest
	var nilPrompt *mcp.GetPromptRequest
	for name, f := range map[string]func() error{
		"Bind(nil)":                      func() error { _, err := g.Bind(nil); return err },
		"Seal(nil)":                      func() error { _, err := g.Seal(nil, state); return err },
		"Open(nil)":                      func() error { _, err := g.Open(nil); return err },
		"CallToolInputRequired(nil)":     func() error { _, err := g.CallToolInputRequired(nilCall, state, nil); return err },
		"ReadResourceInputRequired(nil)": func() error { _, err := g.ReadResourceInputRequired(nilRead, state, nil); return err },
		"GetPromptInputRequired(nil)":    func() error { _, err := g.GetPromptInputRequired(nilPrompt, state, nil); return err },
		"Open(a request without params)": func() error { _, err := g.Open(&mcp.CallToolRequest{}); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := f(); err == nil {
				t.Error("no error")
			}
		})
	}
	for name, f := range map[string]func() error{
		"Bind(nil)": func() error { _, err := g.Bind(nil); return err },
		"Seal(nil)": func() error { _, err := g.Seal(nil, state); return err },
	} {
		if err := f(); !token.IsConfigError(err) {
			t.Errorf("%s: %v, want a *token.ConfigError", name, err)
		}
	}
}
