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
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// sealedCodec is the real AES-GCM codec over a fresh one-key keyring.
func sealedCodec(t *testing.T) *token.Sealed {
	t.Helper()
	k, err := keyring.GenerateKey("k1", 32)
	if err != nil {
		t.Fatal(err)
	}
	r, err := keyring.New(k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := token.NewSealed(keyring.Static(r), "mcpstate-test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countingServer has a two-round tool "lookup" and prompt "brief" sealing with guard; calls counts
// how many times a handler ran.
func countingServer(guard *mcpstate.Guard, calls *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	login := mcp.InputRequestMap{"login": &mcp.ElicitParams{
		Message:         "Your login?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}}
	state := json.RawMessage(`{"step":1}`)
	s.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			if req.Params.RequestState == "" {
				return guard.CallToolInputRequired(req, state, login)
			}
			st, err := guard.Open(req)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(st)}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "brief"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			calls.Add(1)
			if req.Params.RequestState == "" {
				return guard.GetPromptInputRequired(req, state, login)
			}
			st, err := guard.Open(req)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: string(st)}}}}, nil
		})
	return s
}

// connectInMemory connects a real client (automatic MRTR retries, answering every elicitation) to s
// over the SDK's in-memory transport. Unlike streamable HTTP it sends no Mcp-Name header, which the
// SDK's client cannot compute for arguments holding 1e400, so every case reaches the server.
func connectInMemory(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// checkInvalidParams fails unless err is exactly the fixed invalid-params error and nothing the
// client sees of it (message, data, the error's text) contains one of names, in any case.
func checkInvalidParams(t *testing.T, err error, names ...string) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("err = %v (%T), want a *jsonrpc.Error", err, err)
	}
	if je.Code != jsonrpc.CodeInvalidParams || je.Message != mcpstate.InvalidParamsMessage ||
		string(je.Data) != `{"reason":"invalid_params"}` {
		t.Errorf("error = %d %q %s, want -32602 %q {\"reason\":\"invalid_params\"}",
			je.Code, je.Message, je.Data, mcpstate.InvalidParamsMessage)
	}
	if !mcpstate.IsInvalidParams(err) || mcpstate.IsInvalidRequestState(err) {
		t.Errorf("IsInvalidParams = %v, IsInvalidRequestState = %v; want true, false",
			mcpstate.IsInvalidParams(err), mcpstate.IsInvalidRequestState(err))
	}
	seen := strings.ToLower(je.Message + " " + string(je.Data) + " " + err.Error())
	for _, n := range names {
		if strings.Contains(seen, strings.ToLower(n)) {
			t.Errorf("the client sees its member name %q: %s", n, seen)
		}
	}
}

// TestUnbindableArgumentsAreInvalidParams sends, through the official SDK, arguments that are valid
// JSON and that the SDK hands to the tool but that no token can bind. Each must come back as
// -32602 with the one fixed message, naming none of the client's members, and leave the session
// usable.
func TestUnbindableArgumentsAreInvalidParams(t *testing.T) {
	var calls atomic.Int64
	cs := connectInMemory(t, countingServer(mcpstate.New(sealedCodec(t), mcpstate.Anonymous), &calls))
	ctx := context.Background()
	cases := []struct {
		name, args string
		names      []string // the member names the client wrote
	}{
		{"repeated name", `{"zq_secret":"a","zq_secret":"b"}`, []string{"zq_secret"}},
		{"repeated nested name", `{"zq_outer":[{"zq_inner":1,"zq_inner":2}]}`, []string{"zq_outer", "zq_inner"}},
		{"case-folded names", `{"location":"Paris","LOCATION":"Pyongyang"}`, []string{"location"}},
		{"kelvin sign folds to k", `{"kzq":1,"\u212Azq":2}`, []string{"kzq", "\u212Azq"}},
		{"lone surrogate", `{"zq_text":"\ud800"}`, []string{"zq_text"}},
		{"float out of range", `{"zq_big":1e400}`, []string{"zq_big", "1e400"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.args)) {
				t.Fatalf("%s is not valid JSON: the case tests nothing", c.args)
			}
			before := calls.Load()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: json.RawMessage(c.args)})
			if calls.Load() == before {
				t.Fatalf("the SDK refused %s before the tool ran: %v", c.args, err)
			}
			checkInvalidParams(t, err, c.names...)
		})
	}
	t.Run("prompt arguments", func(t *testing.T) {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief",
			Arguments: map[string]string{"tone_zq": "warm", "TONE_ZQ": "cold"}})
		checkInvalidParams(t, err, "tone_zq")
	})

	// A plain error response: the session goes on, and bindable arguments complete both rounds.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: json.RawMessage(`{"location":"Paris"}`)})
	if err != nil {
		t.Fatalf("a good call after the refusals: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"step":1}` {
		t.Errorf("result = %q, want the sealed state", got)
	}
}

// TestDeepArgumentsNeverLeak sends arguments nested 999 deep. The SDK v1.8.0 refuses any message
// nested deeper than 1000 before a handler runs (the message and its params add two levels), so the
// token package's own limit (1000 levels of params) cannot be reached through it; should a later SDK
// let such arguments through, the Guard must answer the fixed invalid-params error. Either way the
// client learns none of its member names.
func TestDeepArgumentsNeverLeak(t *testing.T) {
	var calls atomic.Int64
	cs := connectInMemory(t, countingServer(mcpstate.New(sealedCodec(t), mcpstate.Anonymous), &calls))
	args := strings.Repeat(`{"zq_deep":`, 999) + "1" + strings.Repeat("}", 999)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup", Arguments: json.RawMessage(args)})
	if err == nil {
		t.Fatal("arguments nested 999 deep were accepted")
	}
	if calls.Load() == 0 {
		if strings.Contains(strings.ToLower(err.Error()), "zq_deep") {
			t.Errorf("the SDK's refusal names the client's members: %v", err)
		}
		return
	}
	checkInvalidParams(t, err, "zq_deep")
}

// TestGuardAnswersClientInputAsInvalidParams checks, without a transport, every path from params the
// client wrote to the fixed error, the hook that keeps the cause for the server's logs, and that the
// server's own errors are left as they were.
func TestGuardAnswersClientInputAsInvalidParams(t *testing.T) {
	var causes []error
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous,
		mcpstate.OnInvalidParams(func(_ mcp.Request, cause error) { causes = append(causes, cause) }))
	tool := func(args string) *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(args)}}
	}
	state := json.RawMessage(`{"step":1}`)

	notJSON := tool(`{"zq_a":`)
	if _, err := guard.Bind(notJSON); !token.IsInputError(err) {
		t.Errorf("Bind of arguments that are not JSON: err = %v, want a *token.InputError", err)
	}
	_, err := guard.Seal(notJSON, state)
	checkInvalidParams(t, err, "zq_a")
	_, err = guard.Open(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t",
		Arguments: json.RawMessage(`{"zq_a":`), RequestState: "k1.AAAA"}})
	checkInvalidParams(t, err, "zq_a")

	// Deeper than the token package's MaxParamsDepth (1000): arguments 1000 deep inside the params.
	deep := tool(strings.Repeat(`[`, 1000) + strings.Repeat(`]`, 1000))
	res, err := guard.CallToolInputRequired(deep, state, nil)
	if res != nil {
		t.Errorf("CallToolInputRequired returned a result with its error: %+v", res)
	}
	checkInvalidParams(t, err)

	folded := &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "p", Arguments: map[string]string{"zq_k": "1", "ZQ_K": "2"}}}
	pres, err := guard.GetPromptInputRequired(folded, state, nil)
	if pres != nil {
		t.Errorf("GetPromptInputRequired returned a result with its error: %+v", pres)
	}
	checkInvalidParams(t, err, "zq_k")

	if len(causes) != 4 {
		t.Fatalf("OnInvalidParams saw %d causes, want 4: %v", len(causes), causes)
	}
	for _, c := range causes {
		if !token.IsInputError(c) {
			t.Errorf("cause %v is not a *token.InputError", c)
		}
	}
	if !strings.Contains(causes[3].Error(), "ZQ_K") {
		t.Errorf("the logged cause %q should name the members at fault", causes[3])
	}

	// A valid token replayed under folded arguments is a bad request state, as any other mismatch.
	tok, err := guard.Seal(tool(`{"location":"Paris"}`), state)
	if err != nil {
		t.Fatal(err)
	}
	_, err = guard.Open(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t",
		Arguments: json.RawMessage(`{"LOCATION":"Pyongyang","location":"Paris"}`), RequestState: tok}})
	if !mcpstate.IsInvalidRequestState(err) {
		t.Errorf("Open under folded arguments: err = %v, want the invalid request state error", err)
	}

	// The server's own mistakes stay what they are: not a JSON-RPC error, and no hook call.
	causes = nil
	_, err = guard.Seal(tool(`{"location":"Paris"}`), json.RawMessage(`not json`))
	var je *jsonrpc.Error
	if !token.IsConfigError(err) || errors.As(err, &je) {
		t.Errorf("state that is not JSON: err = %v (%T), want the *token.ConfigError unchanged", err, err)
	}
	if len(causes) != 0 {
		t.Errorf("OnInvalidParams called for a server error: %v", causes)
	}
}

func TestInvalidParamsValue(t *testing.T) {
	a, b := mcpstate.InvalidParams(), mcpstate.InvalidParams()
	if a == b {
		t.Error("InvalidParams returns a shared value")
	}
	a.Message = "altered"
	if b.Message != mcpstate.InvalidParamsMessage || mcpstate.InvalidParams().Message != mcpstate.InvalidParamsMessage {
		t.Error("altering one InvalidParams value altered another")
	}
	if mcpstate.IsInvalidParams(mcpstate.InvalidRequestState()) || mcpstate.IsInvalidRequestState(mcpstate.InvalidParams()) {
		t.Error("the two -32602 errors must be told apart by their reason")
	}
	if mcpstate.IsInvalidParams(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Data: json.RawMessage(`{"reason":"invalid_params"}`)}) {
		t.Error("IsInvalidParams accepted another code")
	}
}
