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
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// The attack the default refuses: a handler decoding the arguments with encoding/json reads the last
// of two folded names, so a state sealed for {"amount":1,"AMOUNT":1000} (the handler reads 1000)
// would open for {"AMOUNT":1000,"amount":1} (the handler reads 1) if the Guard bound both as
// distinct members. By default the Guard refuses such arguments on both rounds; _meta is not bound,
// so folded names there pass.
func TestGuardRefusesFoldedNamesByDefault(t *testing.T) {
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous)
	state := json.RawMessage(`{"step":1}`)
	call := func(args, tok string) *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(args), RequestState: tok,
			Meta: mcp.Meta{"Trace": "1", "trace": "2"}}}
	}
	var decoded struct {
		Amount int `json:"amount"`
	}
	if err := json.Unmarshal([]byte(`{"amount":1,"AMOUNT":1000}`), &decoded); err != nil || decoded.Amount != 1000 {
		t.Fatalf("encoding/json no longer reads the last folded name (%d, %v): the attack needs restating", decoded.Amount, err)
	}

	_, err := guard.Seal(call(`{"amount":1,"AMOUNT":1000}`, ""), state)
	checkInvalidParams(t, err, "AMOUNT")
	tok, err := guard.Seal(call(`{"amount":1}`, ""), state)
	if err != nil {
		t.Fatalf("Seal with folded names only in _meta: %v", err)
	}
	if _, err := guard.Open(call(`{"amount":1}`, tok)); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := guard.Open(call(`{"AMOUNT":1000,"amount":1}`, tok)); !mcpstate.IsInvalidRequestState(err) {
		t.Fatalf("Open under folded arguments: %v, want the invalid request state error", err)
	}
}

// With CaseSensitiveDecoding, names that differ only by case are distinct arguments, bound each with
// its value as Snodo binds them: a round trip through the SDK completes, the same members in another
// order open the state, and the values of two folded names swapped do not.
func TestCaseSensitiveDecodingBindsFoldedNames(t *testing.T) {
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous, mcpstate.CaseSensitiveDecoding())
	var calls atomic.Int64
	server := countingServer(guard, &calls)
	ctx := context.Background()
	args := json.RawMessage(`{"Accept":"text/html","accept":"application/json","\u212a":1,"k":2}`)
	// The whole round trip, as the SDK's client runs it.
	if res, err := connectInMemory(t, server).CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: args}); err != nil ||
		res.IsError || calls.Load() != 2 {
		t.Fatalf("round trip: %v, %+v, %d calls", err, res, calls.Load())
	}
	// Then round by round.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "manual", Version: "v0"},
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: args})
	if err != nil || res.RequestState == "" {
		t.Fatalf("round 1: %v, %+v", err, res)
	}
	retry := func(args string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: json.RawMessage(args),
			RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{"login": &mcp.ElicitResult{Action: "accept",
				Content: map[string]any{"name": "ada"}}}})
	}
	for _, ok := range []string{string(args), `{"k":2,"\u212a":1,"accept":"application/json","Accept":"text/html"}`} {
		if got, err := retry(ok); err != nil || got.IsError || len(got.Content) == 0 {
			t.Fatalf("retry with %s: %v, %+v", ok, err, got)
		}
	}
	if _, err := retry(`{"Accept":"application/json","accept":"text/html","\u212a":1,"k":2}`); !mcpstate.IsInvalidRequestState(err) {
		t.Fatalf("retry with Accept and accept swapped: %v, want the invalid request state error", err)
	}
}
