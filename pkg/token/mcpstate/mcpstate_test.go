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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// memoCodec is a token.Codec that keeps state server side and opens a token only for a binding equal
// (as JSON values) to the one it was sealed for. It lets these tests see exactly what mcpstate binds,
// independently of the cryptography of the real codecs (tested in pkg/token).
type memoCodec struct {
	mu     sync.Mutex
	sealed map[string]sealedState
	seen   []token.Binding // every binding sealed, in order
}

type sealedState struct {
	b     token.Binding
	state json.RawMessage
}

func newMemoCodec() *memoCodec { return &memoCodec{sealed: map[string]sealedState{}} }

func (c *memoCodec) Seal(b token.Binding, state json.RawMessage) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	tok := hex.EncodeToString(id[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed[tok] = sealedState{b, state}
	c.seen = append(c.seen, b)
	return tok, nil
}

func (c *memoCodec) Open(b token.Binding, tok string) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sealed[tok]
	if !ok || !sameBinding(s.b, b) {
		return nil, token.ErrInvalid
	}
	return s.state, nil
}

func (c *memoCodec) bindings() []token.Binding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]token.Binding(nil), c.seen...)
}

func sameBinding(a, b token.Binding) bool {
	return a.Method == b.Method && a.ProtocolVersion == b.ProtocolVersion &&
		jsonEqual(a.Params, b.Params) && jsonEqual(a.Principal, b.Principal)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// newServer is an MCP server with one tool, one resource and one prompt, each asking for a login
// through an elicitation before completing with what it received and the state it had sealed.
func newServer(guard *mcpstate.Guard) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	login := mcp.InputRequestMap{"login": &mcp.ElicitParams{
		Message:         "Your login?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}}
	state := json.RawMessage(`{"step":1}`)
	// answer opens the state and formats the elicited login with it.
	answer := func(req mcp.Request, responses mcp.InputResponseMap) (string, error) {
		st, err := guard.Open(req)
		if err != nil {
			return "", err
		}
		res, ok := responses["login"].(*mcp.ElicitResult)
		if !ok {
			return "", fmt.Errorf("no login response")
		}
		return fmt.Sprintf("%v %s", res.Content["name"], st), nil
	}

	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return guard.CallToolInputRequired(req, state, login)
			}
			text, err := answer(req, req.Params.InputResponses)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://profile", Name: "profile"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if req.Params.RequestState == "" {
				return guard.ReadResourceInputRequired(req, state, login)
			}
			text, err := answer(req, req.Params.InputResponses)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "hello", Arguments: []*mcp.PromptArgument{{Name: "tone"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if req.Params.RequestState == "" {
				return guard.GetPromptInputRequired(req, state, login)
			}
			text, err := answer(req, req.Params.InputResponses)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})
	return s
}

// serve runs s as a stateless streamable HTTP server, the way replicas behind a balancer run, with
// wrap around the handler (for auth) when not nil.
func serve(t *testing.T, s *mcp.Server, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// connect returns a client session; with manual set, the client's automatic MRTR retries are off.
func connect(t *testing.T, url string, httpClient *http.Client, manual bool) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}, nil
		},
	}
	if manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: httpClient, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestRoundTripsOfEveryMethod(t *testing.T) {
	codec := newMemoCodec()
	url := serve(t, newServer(mcpstate.New(codec, mcpstate.Anonymous)), nil)
	cs := connect(t, url, nil, false)
	ctx := context.Background()

	tool, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"city": "Zürich <&>", "n": 1.50}})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := tool.Content[0].(*mcp.TextContent).Text; got != `octocat {"step":1}` {
		t.Errorf("tool result = %q, want the elicited login and the sealed state", got)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://profile"})
	if err != nil {
		t.Fatalf("ReadResource: %v", err)
	}
	if got := res.Contents[0].Text; got != `octocat {"step":1}` {
		t.Errorf("resource text = %q", got)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello", Arguments: map[string]string{"tone": "warm"}})
	if err != nil {
		t.Fatalf("GetPrompt: %v", err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != `octocat {"step":1}` {
		t.Errorf("prompt text = %q", got)
	}

	want := []struct{ method, params string }{
		{"tools/call", `{"name":"greet","arguments":{"city":"Zürich <&>","n":1.5}}`},
		{"resources/read", `{"uri":"test://profile"}`},
		{"prompts/get", `{"name":"hello","arguments":{"tone":"warm"}}`},
	}
	got := codec.bindings()
	if len(got) != len(want) {
		t.Fatalf("sealed %d bindings, want %d", len(got), len(want))
	}
	for i, w := range want {
		b := got[i]
		if b.Method != w.method || !jsonEqual(b.Params, json.RawMessage(w.params)) {
			t.Errorf("binding %d = %s %s, want %s %s", i, b.Method, b.Params, w.method, w.params)
		}
		if string(b.Principal) != "null" {
			t.Errorf("binding %d principal = %s, want null (Anonymous)", i, b.Principal)
		}
		if b.ProtocolVersion == "" {
			t.Errorf("binding %d has no protocol version", i)
		}
	}
}

// TestArgumentsBoundAsReceived checks that the raw arguments are bound byte for byte, not re-encoded
// through Go values (which would turn 1.0 into 1, or lose big integers).
func TestArgumentsBoundAsReceived(t *testing.T) {
	codec := newMemoCodec()
	guard := mcpstate.New(codec, mcpstate.Anonymous)
	raw := `{"big":123456789012345678901234567890,"f":1.0,"s":"<\u00e9>"}`
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(raw)}}
	b, err := guard.Bind(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"arguments":` + raw + `,"name":"t"}`; string(b.Params) != want {
		t.Errorf("params = %s, want %s", b.Params, want)
	}
}

// retry sends round 2 of an MRTR call by hand, with the given state and arguments.
func retryTool(ctx context.Context, cs *mcp.ClientSession, args map[string]any, state string) error {
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name: "greet", Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{"login": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "x"}}},
	})
	return err
}

func TestBadStateIsInvalidRequestState(t *testing.T) {
	url := serve(t, newServer(mcpstate.New(newMemoCodec(), mcpstate.Anonymous)), nil)
	cs := connect(t, url, nil, true)
	ctx := context.Background()
	args := map[string]any{"city": "Bern"}

	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("round 1 = %+v, want input required with a request state", first)
	}
	cases := map[string]struct {
		args  map[string]any
		state string
	}{
		"tampered state":    {args, first.RequestState + "x"},
		"missing state":     {args, ""},
		"other arguments":   {map[string]any{"city": "Basel"}, first.RequestState},
		"nested arguments":  {map[string]any{"city": "Bern", "extra": map[string]any{"requestState": 1}}, first.RequestState},
		"garbage":           {args, "\x00not a token"},
		"oversize-ish junk": {args, string(make([]byte, 70000))},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := retryTool(ctx, cs, c.args, c.state)
			if c.state == "" {
				// Round 1 again: the server asks for input anew, which is correct, not an error.
				if err != nil {
					t.Fatalf("a call without state is round 1, got %v", err)
				}
				return
			}
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				t.Fatalf("err = %v (%T), want a *jsonrpc.Error", err, err)
			}
			if je.Code != -32602 || je.Message != "Invalid or expired requestState" || string(je.Data) != `{"reason":"invalid_request_state"}` {
				t.Errorf("error = %d %q %s", je.Code, je.Message, je.Data)
			}
			if !mcpstate.IsInvalidRequestState(err) {
				t.Errorf("IsInvalidRequestState(%v) = false", err)
			}
		})
	}
	// The session stays usable and the genuine retry still opens.
	if err := retryTool(ctx, cs, args, first.RequestState); err != nil {
		t.Errorf("genuine retry after failures: %v", err)
	}
}

// TestPrincipalFromTokenInfo runs the server behind the SDK's bearer-token middleware and checks that
// a state sealed for one user does not open for another.
func TestPrincipalFromTokenInfo(t *testing.T) {
	codec := newMemoCodec()
	verifier := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: tok, Expiration: time.Now().Add(time.Hour)}, nil
	}
	url := serve(t, newServer(mcpstate.New(codec, mcpstate.FromTokenInfo)), auth.RequireBearerToken(verifier, nil))
	var user atomic.Value
	user.Store("alice")
	cs := connect(t, url, bearerClient(&user), true)
	ctx := context.Background()
	args := map[string]any{"city": "Bern"}

	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if p := codec.bindings()[0].Principal; string(p) != `{"sub":"alice"}` {
		t.Errorf("principal = %s, want {\"sub\":\"alice\"}", p)
	}
	user.Store("bob")
	if err := retryTool(ctx, cs, args, first.RequestState); !mcpstate.IsInvalidRequestState(err) {
		t.Errorf("bob retrying alice's state: err = %v, want invalid request state", err)
	}
	user.Store("alice")
	if err := retryTool(ctx, cs, args, first.RequestState); err != nil {
		t.Errorf("alice retrying her own state: %v", err)
	}
}

// bearerClient sends every request with the bearer token that current holds at the time: a test
// switches callers between rounds by storing another.
func bearerClient(current *atomic.Value) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+current.Load().(string))
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestFromTokenInfoRequiresAUser(t *testing.T) {
	for name, extra := range map[string]*mcp.RequestExtra{
		"no extra":      nil,
		"no token info": {},
		"no user id":    {TokenInfo: &auth.TokenInfo{Scopes: []string{"read"}}},
	} {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}, Extra: extra}
		if _, err := mcpstate.FromTokenInfo(req); !errors.Is(err, mcpstate.ErrNoPrincipal) {
			t.Errorf("%s: err = %v, want ErrNoPrincipal", name, err)
		}
		guard := mcpstate.New(newMemoCodec(), mcpstate.FromTokenInfo)
		if _, err := guard.Seal(req, json.RawMessage(`1`)); !errors.Is(err, mcpstate.ErrNoPrincipal) {
			t.Errorf("%s: Seal err = %v, want ErrNoPrincipal", name, err)
		}
	}
}

func TestBindRejectsOtherRequests(t *testing.T) {
	guard := mcpstate.New(newMemoCodec(), mcpstate.Anonymous)
	for _, req := range []mcp.Request{
		&mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}},
		&mcp.CallToolRequest{},
		&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(`{"a":`)}},
	} {
		if _, err := guard.Bind(req); err == nil {
			t.Errorf("Bind(%T %+v) succeeded, want an error", req, req)
		}
	}
}

func TestIsInvalidRequestState(t *testing.T) {
	if mcpstate.IsInvalidRequestState(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}) {
		t.Error("a -32602 without the reason is not an invalid request state")
	}
	if mcpstate.IsInvalidRequestState(errors.New("Invalid or expired requestState")) {
		t.Error("a plain error is not an invalid request state")
	}
	if !mcpstate.IsInvalidRequestState(fmt.Errorf("calling: %w", mcpstate.InvalidRequestState())) {
		t.Error("a wrapped InvalidRequestState must be recognised")
	}
}
