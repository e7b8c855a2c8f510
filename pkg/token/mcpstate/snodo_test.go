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
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	BasedOn   string              `json:"based_on"`
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

// loadSnodoVectors returns the vectors of the named files of ../testdata/snodo by id (default
// vectors-casefold.json).
func loadSnodoVectors(t *testing.T, files ...string) map[string]snodoVector {
	t.Helper()
	byID := map[string]snodoVector{}
	if len(files) == 0 {
		files = []string{"vectors-casefold.json"}
	}
	for _, name := range files {
		raw, err := os.ReadFile("../testdata/snodo/" + name)
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
		for _, v := range append(f.Seal, f.Open...) {
			byID[v.ID] = v
		}
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
	case mcpstate.MethodGetPrompt:
		var p mcp.GetPromptParams
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			t.Fatal(err)
		}
		p.RequestState = state
		return &mcp.GetPromptRequest{Params: &p}
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

// The shapes of params the SDK decodes alike but Snodo binds apart (prompt and tool arguments that
// are {}, null, hold a null or are absent; a tools/call with a uri, a resources/read with a name),
// against the real Snodo (testdata/snodo/vectors-shapes.json). Behind WholeParams the Guard seals
// Snodo's token byte for byte and opens exactly what Snodo opens. With the SDK's types alone it
// still seals Snodo's token for the shapes those types carry: {} and absent arguments.
func TestSnodoShapes(t *testing.T) {
	vectors := loadSnodoVectors(t, "vectors-shapes.json")
	sdkCarries := map[string]bool{ // the seal vectors whose params the SDK's types carry whole
		"prompt-args-empty": true, "prompt-args-missing": true,
		"tool-args-empty": true, "tool-args-null": true, "tool-args-missing": true,
	}
	opens := map[string][]snodoVector{}
	var seals []string
	for id, v := range vectors {
		if v.BasedOn != "" {
			opens[v.BasedOn] = append(opens[v.BasedOn], v)
		} else {
			seals = append(seals, id)
		}
	}
	if len(seals) < 18 {
		t.Fatalf("%d seal vectors, want 18", len(seals))
	}
	for _, id := range seals {
		sv := vectors[id]
		t.Run(id, func(t *testing.T) {
			var raw json.RawMessage
			principal := func(mcp.Request) (json.RawMessage, error) { return json.RawMessage(sv.Principal), nil }
			whole := mcpstate.New(signedFor(t, sv), principal,
				mcpstate.WholeParams(func(mcp.Request) (json.RawMessage, bool) { return raw, true }))
			raw = json.RawMessage(sv.Params)
			if tok, err := whole.Seal(sdkRequest(t, sv.Method, sv.Params, ""), json.RawMessage(sv.Data)); err != nil || tok != sv.Expected.Token {
				t.Errorf("WholeParams: Seal = %s, %v\nSnodo sealed %s", tok, err, sv.Expected.Token)
			}
			for _, ov := range opens[id] {
				raw = json.RawMessage(ov.Params)
				_, err := whole.Open(sdkRequest(t, ov.Method, ov.Params, ov.Token))
				if *ov.Expected.OK != (err == nil) || (err != nil && !mcpstate.IsInvalidRequestState(err)) {
					t.Errorf("%s: WholeParams: Open: %v; Snodo opens it: %v", ov.ID, err, *ov.Expected.OK)
				}
			}
			shape := id[strings.Index(id[4:], "-")+5:] // m01-secret-prompt-args-empty: prompt-args-empty
			if sdkCarries[shape] {
				sdkOnly := mcpstate.New(signedFor(t, sv), principal)
				if tok, err := sdkOnly.Seal(sdkRequest(t, sv.Method, sv.Params, ""), json.RawMessage(sv.Data)); err != nil || tok != sv.Expected.Token {
					t.Errorf("the SDK's types: Seal = %s, %v\nSnodo sealed %s", tok, err, sv.Expected.Token)
				}
			}
		})
	}
}

// WholeParams must return the bytes the SDK decoded the request from: params whose name, arguments
// or uri differ from the decoded request's would bind something else than what the handler reads,
// so the Guard refuses them as the server's mistake. The params are read as the SDK reads them, per
// method and on that method's members only: members the SDK's types do not carry (also "uri" in a
// tools/call, "name" in a resources/read), member order and whitespace may differ, and prompt
// arguments that are null, absent or {} are no arguments, a null value the empty string.
func TestWholeParamsMustMatchTheDecodedRequest(t *testing.T) {
	var raw json.RawMessage
	whole := mcpstate.WholeParams(func(mcp.Request) (json.RawMessage, bool) { return raw, true })
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous, whole)
	// For the Seal of params whose names fold (see TestGuardRefusesFoldedNamesByDefault).
	caseSensitive := mcpstate.New(sealedCodec(t), mcpstate.Anonymous, whole, mcpstate.CaseSensitiveDecoding())
	call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(`{"amount":1}`)}}
	callNull := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(`null`)}}
	callNone := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay"}}
	read := &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///a"}}
	prompt := func(args map[string]string) mcp.Request {
		return &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "hello", Arguments: args}}
	}
	for _, tc := range []struct {
		req  mcp.Request
		raw  string
		same bool
	}{
		{call, `{"name":"pay","arguments":{"amount":1},"task":{"ttl":1},"_meta":{"x":1}}`, true},
		{call, ` { "arguments" : { "amount" : 1 } , "cursor":"c", "name" : "pay" } `, true},
		{call, `{"name":"pay","arguments":{"amount":1},"uri":"file:///x"}`, true},
		{call, `{"name":"pay","arguments":{"amount":1},"Name":"refund","ARGUMENTS":2}`, true},
		{call, `{"name":"pay","arguments":{"amount":1000}}`, false},
		{call, `{"name":"pay","arguments":{"amount":1.0}}`, false},
		{call, `{"name":"refund","arguments":{"amount":1}}`, false},
		{call, `{"name":"pay"}`, false},
		{call, `{"arguments":{"amount":1}}`, false},
		{call, `{"name":7,"arguments":{"amount":1}}`, false},
		{callNull, `{"name":"pay","arguments":null}`, true},
		{callNull, `{"name":"pay"}`, false},
		{callNone, `{"name":"pay"}`, true},
		{callNone, `{"name":"pay","arguments":{}}`, false},
		{read, `{"uri":"file:///a","cursor":"n"}`, true},
		{read, `{"uri":"file:///a","name":"n"}`, true},
		{read, `{"uri":"file:///b"}`, false},
		{read, `{"name":"file:///a"}`, false},
		{prompt(map[string]string{}), `{"name":"hello","arguments":{}}`, true},
		{prompt(nil), `{"name":"hello","arguments":null}`, true},
		{prompt(nil), `{"name":"hello"}`, true},
		{prompt(nil), `{"name":"hello","arguments":{}}`, true},
		{prompt(map[string]string{"tone": ""}), `{"name":"hello","arguments":{"tone":null}}`, true},
		{prompt(map[string]string{"tone": ""}), `{"name":"hello","arguments":{"tone":""}}`, true},
		{prompt(map[string]string{"tone": "warm"}), `{"arguments":{"tone":"warm"},"uri":"u","name":"hello"}`, true},
		{prompt(map[string]string{"tone": "warm"}), `{"name":"hello","arguments":{"tone":"cold"}}`, false},
		{prompt(map[string]string{"tone": "warm"}), `{"name":"hello","arguments":{"tone":"warm","lang":"fr"}}`, false},
		{prompt(map[string]string{"tone": "warm"}), `{"name":"hello","arguments":{}}`, false},
		{prompt(map[string]string{"tone": "warm"}), `{"name":"hello","arguments":{"tone":1}}`, false},
		{prompt(map[string]string{"tone": "warm"}), `{"name":"bye","arguments":{"tone":"warm"}}`, false},
		{prompt(nil), `{"name":"hello","arguments":{"tone":null}}`, false},
	} {
		raw = json.RawMessage(tc.raw)
		b, err := guard.Bind(tc.req)
		switch {
		case tc.same && (err != nil || string(b.Params) != tc.raw):
			t.Errorf("%s: Bind = %s, %v; want the whole params bound", tc.raw, b.Params, err)
		case !tc.same && !token.IsConfigError(err):
			t.Errorf("%s: Bind = %s, %v; want a *token.ConfigError", tc.raw, b.Params, err)
		}
		if tc.same {
			if _, err := caseSensitive.Seal(tc.req, json.RawMessage(`1`)); err != nil {
				t.Errorf("%s: Seal: %v", tc.raw, err)
			}
		}
	}
}

// Params that repeat a compared member are the client's mistake, not the server's: the Guard leaves
// them to the codec, which refuses them, and answers InvalidParams.
func TestWholeParamsWithARepeatedMemberAreInvalidParams(t *testing.T) {
	var raw json.RawMessage
	guard := mcpstate.New(sealedCodec(t), mcpstate.Anonymous,
		mcpstate.WholeParams(func(mcp.Request) (json.RawMessage, bool) { return raw, true }))
	for _, tc := range []struct {
		req mcp.Request
		raw string
	}{
		{&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: json.RawMessage(`{"amount":2}`)}},
			`{"name":"pay","arguments":{"amount":1},"arguments":{"amount":2}}`},
		{&mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "hello", Arguments: map[string]string{"tone": "b"}}},
			`{"name":"hello","arguments":{"tone":"a","tone":"b"}}`},
	} {
		raw = json.RawMessage(tc.raw)
		_, err := guard.Seal(tc.req, json.RawMessage(`1`))
		if !mcpstate.IsInvalidParams(err) {
			t.Errorf("%s: Seal: %v, want InvalidParams", tc.raw, err)
		}
	}
}

// Without WholeParams, prompt arguments the client sent as {} are bound as {}, as Snodo binds them,
// and arguments it left out are left out: a state sealed on either side opens on the other.
func TestEmptyPromptArgumentsBoundAsSnodoBindsThem(t *testing.T) {
	codec := newMemoCodec()
	guard := mcpstate.New(codec, mcpstate.Anonymous)
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{}, `{"arguments":{},"name":"hello"}`},
		{nil, `{"name":"hello"}`},
		{map[string]string{"tone": ""}, `{"arguments":{"tone":""},"name":"hello"}`},
	} {
		b, err := guard.Bind(&mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "hello", Arguments: tc.args}})
		if err != nil || string(b.Params) != tc.want {
			t.Errorf("Bind(%#v) = %s, %v; want %s", tc.args, b.Params, err, tc.want)
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

// Behind the SDK's own handler with RecordParams, requests of every shape that the SDK accepts
// complete their MRTR round with the SDK's own client: prompt arguments that are {}, null or hold a
// null, a tools/call with a member named uri, a resources/read with one named name. (The client's
// requests are rewritten on the wire into these shapes, which its types cannot write.) Each such
// member is bound: a retry that changes it does not open the state.
func TestRecordParamsCompletesEveryShape(t *testing.T) {
	r, err := keyring.New(keyring.NewKey("k1", []byte("0123456789abcdef0123456789abcdef")))
	if err != nil {
		t.Fatal(err)
	}
	codec, err := token.NewSigned(keyring.Static(r))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, newServer(mcpstate.New(codec, mcpstate.Anonymous, mcpstate.WholeParams(mcpstate.RecordedParams))),
		mcpstate.RecordParams)
	ctx := context.Background()
	call := map[string]func(cs *mcp.ClientSession) (string, error){
		"prompts/get": func(cs *mcp.ClientSession) (string, error) {
			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello"})
			if err != nil {
				return "", err
			}
			return res.Messages[0].Content.(*mcp.TextContent).Text, nil
		},
		"tools/call": func(cs *mcp.ClientSession) (string, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"a": 1}})
			if err != nil {
				return "", err
			}
			return res.Content[0].(*mcp.TextContent).Text, nil
		},
		"resources/read": func(cs *mcp.ClientSession) (string, error) {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://profile"})
			if err != nil {
				return "", err
			}
			return res.Contents[0].Text, nil
		},
	}
	for _, tc := range []struct {
		method         string
		shape, changed map[string]string // members set in the params of round 1 and of the retry
	}{
		{"prompts/get", map[string]string{"arguments": `{}`}, map[string]string{"arguments": `null`}},
		{"prompts/get", map[string]string{"arguments": `null`}, map[string]string{"arguments": `{}`}},
		{"prompts/get", map[string]string{"arguments": `{"tone":null}`}, map[string]string{"arguments": `{"tone":""}`}},
		{"tools/call", map[string]string{"uri": `"file:///x"`}, map[string]string{"uri": `"file:///y"`}},
		{"resources/read", map[string]string{"name": `"n"`}, map[string]string{"name": `"m"`}},
	} {
		name := fmt.Sprintf("%s %v", tc.method, tc.shape)
		for i, retry := range []map[string]string{tc.shape, tc.changed} {
			rw := &rewriter{method: tc.method, rounds: []map[string]string{tc.shape, retry}}
			got, err := call[tc.method](connect(t, url, &http.Client{Transport: rw}, false))
			switch {
			case rw.n < 2:
				t.Errorf("%s: %d rounds rewritten, want 2 (%q, %v)", name, rw.n, got, err)
			case i == 0 && (err != nil || got != `octocat {"step":1}`):
				t.Errorf("%s: %q, %v; want the round to complete", name, got, err)
			case i == 1 && (err == nil || !strings.Contains(err.Error(), mcpstate.InvalidRequestStateMessage)):
				t.Errorf("%s, retried with %v: %q, %v; want the invalid request state error", name, retry, got, err)
			}
		}
	}
}

// rewriter sets members of the params of the requests for method on their way to the server: those
// of rounds[0] in the first request, of rounds[1] in the second (the retry).
type rewriter struct {
	method string
	rounds []map[string]string
	n      int
}

func (rw *rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return http.DefaultTransport.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) == nil && string(msg["method"]) == `"`+rw.method+`"` && rw.n < len(rw.rounds) {
		var params map[string]json.RawMessage
		if err := json.Unmarshal(msg["params"], &params); err != nil {
			return nil, err
		}
		for k, v := range rw.rounds[rw.n] {
			params[k] = json.RawMessage(v)
		}
		rw.n++
		if msg["params"], err = json.Marshal(params); err != nil {
			return nil, err
		}
		if body, err = json.Marshal(msg); err != nil {
			return nil, err
		}
	}
	req = req.Clone(req.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return http.DefaultTransport.RoundTrip(req)
}

// A forged state behind WholeParams costs about what reading the params once costs (json.Valid), not
// a canonicalization of them: the params RecordParams hands over are the bytes the SDK decoded, so
// they are compared as bytes, and the codec refuses the token before it binds anything. Compare the
// two sub-benchmarks' ns/op (docs/benchmarks.md).
func BenchmarkOpenForgedWholeParams(b *testing.B) {
	// 2.4 MB of arguments whose members are out of canonical order.
	var args bytes.Buffer
	args.WriteByte('{')
	for i := 0; args.Len() < 2400<<10; i++ {
		if i > 0 {
			args.WriteByte(',')
		}
		fmt.Fprintf(&args, `"k%08d":"%s"`, 99999999-i, strings.Repeat("v", 40))
	}
	args.WriteByte('}')
	r, err := keyring.New(keyring.NewKey("k1", []byte("0123456789abcdef0123456789abcdef")))
	if err != nil {
		b.Fatal(err)
	}
	codec, err := token.NewSigned(keyring.Static(r))
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"name":"pay","arguments":` + args.String() + `}`)
	guard := mcpstate.New(codec, mcpstate.Anonymous, mcpstate.WholeParams(func(mcp.Request) (json.RawMessage, bool) { return raw, true }))
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pay", Arguments: args.Bytes(),
		RequestState: "mrtr2.k1.WzEsMTgwMDAwMDAwMCwxODAwMDAwMzAwLCJ4Iiw0Ml0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := guard.Open(req); !mcpstate.IsInvalidRequestState(err) {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if !json.Valid(raw) {
				b.Fatal("not JSON")
			}
		}
	})
}
