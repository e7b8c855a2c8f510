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
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// snodoVector is the part of a vector of pkg/token/testdata/snodo that a Guard needs.
type snodoVector struct {
	ID        string              `json:"id"`
	Mode      string              `json:"mode"`
	SecretHex string              `json:"secret_hex"`
	Keys      []map[string]string `json:"keys"` // id, secret_hex
	Principal string              `json:"principal_json"`
	Method    string              `json:"method"`
	Params    string              `json:"params_json"`
	Clock     int64               `json:"clock"`
	Data      string              `json:"data_json"`
	Token     string              `json:"token"`
	Expected  struct {
		Token string `json:"token"`
		OK    *bool  `json:"ok"`
	} `json:"expected"`
}

func loadSnodoVectors(t *testing.T) map[string]snodoVector {
	t.Helper()
	raw, err := os.ReadFile("../testdata/snodo/vectors-casefold.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Seal []snodoVector `json:"seal_vectors"`
		Open []snodoVector `json:"open_vectors"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	byID := map[string]snodoVector{}
	for _, v := range append(f.Seal, f.Open...) {
		byID[v.ID] = v
	}
	return byID
}

// signedFor is the Signed codec of the vector's keys at its clock.
func signedFor(t *testing.T, v snodoVector) token.Codec {
	t.Helper()
	clock := token.SignedClock(func() time.Time { return time.Unix(v.Clock, 0) })
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var c *token.Signed
	var err error
	if v.Mode == "secret" {
		c, err = token.NewSignedSecret(mustHex(v.SecretHex), clock)
	} else {
		keys := make([]keyring.Key, len(v.Keys))
		for i, k := range v.Keys {
			keys[i] = keyring.NewKey(k["id"], mustHex(k["secret_hex"]))
		}
		r, rerr := keyring.New(keys...)
		if rerr != nil {
			t.Fatal(rerr)
		}
		c, err = token.NewSigned(keyring.Static(r), clock)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sdkRequest is the request the SDK hands a handler for these params: decoded into its types, which
// keep only the members they have fields for.
func sdkRequest(t *testing.T, method, params, state string) mcp.Request {
	t.Helper()
	switch method {
	case mcpstate.MethodCallTool:
		var p mcp.CallToolParamsRaw
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			t.Fatal(err)
		}
		p.RequestState = state
		return &mcp.CallToolRequest{Params: &p}
	case mcpstate.MethodReadResource:
		var p mcp.ReadResourceParams
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			t.Fatal(err)
		}
		p.RequestState = state
		return &mcp.ReadResourceRequest{Params: &p}
	}
	t.Fatalf("no request type for %s", method)
	return nil
}

// A Guard given the whole params (WholeParams) binds what Snodo binds, members the SDK's types
// cannot carry included: the states the real Snodo sealed for params with a task and a cursor open,
// for the same members in any order, and not without them; and the Guard seals, for those params,
// byte for byte the token Snodo sealed, which Snodo therefore opens. Without WholeParams the Guard
// binds only what the SDK's types carry, and Snodo's state does not open: the documented limit.
func TestWholeParamsInteroperateWithSnodo(t *testing.T) {
	vectors := loadSnodoVectors(t)
	for _, tc := range []struct {
		seal  string
		opens []string // open vectors based on seal
		opts  []mcpstate.Option
	}{
		{"f10-other-members", []string{"g16-ok-other-members-reordered", "g17-other-members-dropped", "g18-cursor-changed"}, nil},
		{"f11-other-members-secret", []string{"g19-ok-resource-cursor", "g20-resource-no-cursor"}, nil},
		// Folded names too, for a server whose handlers decode case-sensitively.
		{"f02-arguments-headers", []string{"g03-ok-headers-reordered", "g04-headers-one-dropped", "g05-headers-swapped"},
			[]mcpstate.Option{mcpstate.CaseSensitiveDecoding()}},
	} {
		t.Run(tc.seal, func(t *testing.T) {
			sv := vectors[tc.seal]
			if sv.ID == "" {
				t.Fatalf("no vector %s", tc.seal)
			}
			params := map[mcp.Request]json.RawMessage{}
			whole := mcpstate.WholeParams(func(req mcp.Request) (json.RawMessage, bool) {
				p, ok := params[req]
				return p, ok
			})
			principal := func(mcp.Request) (json.RawMessage, error) { return json.RawMessage(sv.Principal), nil }
			guard := mcpstate.New(signedFor(t, sv), principal, append([]mcpstate.Option{whole}, tc.opts...)...)
			sdkOnly := mcpstate.New(signedFor(t, sv), principal, tc.opts...)

			req := sdkRequest(t, sv.Method, sv.Params, "")
			params[req] = json.RawMessage(sv.Params)
			tok, err := guard.Seal(req, json.RawMessage(sv.Data))
			if err != nil || tok != sv.Expected.Token {
				t.Fatalf("Seal = %s, %v\nSnodo sealed %s", tok, err, sv.Expected.Token)
			}
			for _, id := range tc.opens {
				ov := vectors[id]
				if ov.ID == "" || ov.Expected.OK == nil {
					t.Fatalf("no open vector %s", id)
				}
				retry := sdkRequest(t, ov.Method, ov.Params, ov.Token)
				params[retry] = json.RawMessage(ov.Params)
				got, err := guard.Open(retry)
				if *ov.Expected.OK != (err == nil) {
					t.Errorf("%s: Open = %s, %v; Snodo opens it: %v", id, got, err, *ov.Expected.OK)
				}
				if err != nil && !mcpstate.IsInvalidRequestState(err) {
					t.Errorf("%s: %v, want the invalid request state error", id, err)
				}
			}
			if tc.seal != "f02-arguments-headers" {
				if _, err := sdkOnly.Open(sdkRequest(t, sv.Method, sv.Params, sv.Expected.Token)); !mcpstate.IsInvalidRequestState(err) {
					t.Errorf("without WholeParams, Snodo's state opened (%v): the SDK's types carry all the members?", err)
				}
			}
		})
	}
}

// WholeParams must return the bytes the SDK decoded the request from: params whose name, arguments
// or uri differ from the decoded request's would bind something else than what the handler reads,
// so the Guard refuses them as the server's mistake. Members the SDK's types do not carry, member
// order and whitespace may differ.
func TestWholeParamsMustMatchTheDecodedRequest(t *testing.T) {
	var raw json.RawMessage
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous,
		mcpstate.WholeParams(func(mcp.Request) (json.RawMessage, bool) { return raw, true }))
	call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(`{"amount":1}`)}}
	read := &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///a"}}
	for _, tc := range []struct {
		req  mcp.Request
		raw  string
		same bool
	}{
		{call, `{"name":"pay","arguments":{"amount":1},"task":{"ttl":1},"_meta":{"x":1}}`, true},
		{call, ` { "arguments" : { "amount" : 1 } , "cursor":"c", "name" : "pay" } `, true},
		{call, `{"name":"pay","arguments":{"amount":1000}}`, false},
		{call, `{"name":"refund","arguments":{"amount":1}}`, false},
		{call, `{"name":"pay"}`, false},
		{read, `{"uri":"file:///a","cursor":"n"}`, true},
		{read, `{"uri":"file:///b"}`, false},
	} {
		raw = json.RawMessage(tc.raw)
		b, err := guard.Bind(tc.req)
		switch {
		case tc.same && (err != nil || string(b.Params) != tc.raw):
			t.Errorf("%s: Bind = %s, %v; want the whole params bound", tc.raw, b.Params, err)
		case !tc.same && !token.IsConfigError(err):
			t.Errorf("%s: Bind = %s, %v; want a *token.ConfigError", tc.raw, b.Params, err)
		}
	}
}

// Behind the SDK's own streamable HTTP handler, RecordParams gives the Guard the params as the
// client sent them: a state the real Snodo sealed for params with a task and a cursor, which the
// SDK's types drop, opens when the retry carries them, in another order and with _meta, and not
// when it leaves them out. (Without RecordParams the first retry fails too.)
func TestRecordParamsBehindTheSDKHandler(t *testing.T) {
	v := loadSnodoVectors(t)
	sv := v["f10-other-members"]
	principal := func(mcp.Request) (json.RawMessage, error) { return json.RawMessage(sv.Principal), nil }
	guard := mcpstate.New(signedFor(t, sv), principal, mcpstate.WholeParams(mcpstate.RecordedParams))
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	server.AddTool(&mcp.Tool{Name: "publish", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st, err := guard.Open(req)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(st)}}}, nil
		})
	handler := mcpstate.RecordParams(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)

	call := func(params string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	withState := func(params string) string {
		return strings.TrimSuffix(params, "}") + `,"requestState":"` + sv.Expected.Token + `"}`
	}
	if out := call(withState(v["g16-ok-other-members-reordered"].Params)); !strings.Contains(out, `{\"step\":\"confirm\"}`) {
		t.Errorf("the retry with task and cursor: %s", out)
	}
	if out := call(withState(v["g17-other-members-dropped"].Params)); !strings.Contains(out, mcpstate.InvalidRequestStateMessage) {
		t.Errorf("the retry without task and cursor: %s", out)
	}
}
