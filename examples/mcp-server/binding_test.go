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
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// bodyRecorder keeps the body of every HTTP request the client sends.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (b *bodyRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close() // read in full
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.bodies = append(b.bodies, body)
		b.mu.Unlock()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *bodyRecorder) sent(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range b.bodies {
		if bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	return false
}

// TestFoldedArgumentsCannotBypassTheBinding runs the example's get_weather, which decodes its
// arguments with encoding/json (names matched case-insensitively, the last one kept), behind its
// real HTTP handler, with the official SDK's client sending raw arguments in exactly the member
// order written here.
//
// The attack: a token sealed for {"location":"Paris","LOCATION":"Pyongyang"} (the handler reads
// Pyongyang) used to open for {"LOCATION":"Pyongyang","location":"Paris"} (the handler reads Paris),
// because the binding is order-blind and kept both members. Now round 1 with such arguments is
// refused with the fixed invalid-params error, so no such token exists; and a genuine token replayed
// under re-ordered, repeated or case-folded arguments is an invalid request state.
func TestFoldedArgumentsCannotBypassTheBinding(t *testing.T) {
	ctx := t.Context()
	r := startReplica(t, ctx, "r1", keyringJSON(t, newKey(t, "a")))
	rec := &bodyRecorder{}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
		// Rounds are sent by hand, so that the retry can carry other arguments than round 1.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: r.url + "/mcp", HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }() // nothing is pending
	login := mcp.InputResponseMap{"github_login": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "octocat"}}}
	call := func(args, state string) (*mcp.CallToolResult, error) {
		t.Helper()
		p := &mcp.CallToolParams{Name: "get_weather", Arguments: json.RawMessage(args), RequestState: state}
		if state != "" {
			p.InputResponses = login
		}
		res, err := cs.CallTool(ctx, p)
		// The SDK marshals a json.RawMessage argument as is: what the server got is what was written.
		if !rec.sent(`"arguments":` + args) {
			t.Fatalf("the client did not send the arguments %s verbatim", args)
		}
		return res, err
	}

	for _, args := range []string{
		`{"location":"Paris","LOCATION":"Pyongyang"}`,
		`{"LOCATION":"Pyongyang","location":"Paris"}`,
		`{"location":"Paris","location":"Pyongyang"}`,
		`{"Location":"Paris","lOcAtIoN":"Pyongyang"}`,
	} {
		t.Run("round 1 "+args, func(t *testing.T) {
			res, err := call(args, "")
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				t.Fatalf("round 1 = %+v, %v (%T); want the invalid-params error", res, err, err)
			}
			if je.Code != jsonrpc.CodeInvalidParams || je.Message != mcpstate.InvalidParamsMessage || !mcpstate.IsInvalidParams(err) {
				t.Errorf("round 1 error = %d %q %s, want -32602 %q", je.Code, je.Message, je.Data, mcpstate.InvalidParamsMessage)
			}
			if seen := strings.ToLower(je.Message + string(je.Data)); strings.Contains(seen, "location") || strings.Contains(seen, "pyongyang") {
				t.Errorf("the error echoes the client's arguments: %s %s", je.Message, je.Data)
			}
		})
	}

	first, err := call(`{"location":"Paris"}`, "")
	if err != nil || !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("round 1 for Paris = %+v, %v; want input required with a request state", first, err)
	}
	for _, args := range []string{
		`{"LOCATION":"Pyongyang","location":"Paris"}`, // the handler reads Paris
		`{"location":"Paris","LOCATION":"Pyongyang"}`, // the handler reads Pyongyang
		`{"location":"Pyongyang","location":"Paris"}`, // the handler reads Paris
		`{"location":"Paris","location":"Pyongyang"}`, // the handler reads Pyongyang
		`{"LOCATION":"Paris"}`,                        // the handler reads Paris, under another name
	} {
		t.Run("replay "+args, func(t *testing.T) {
			res, err := call(args, first.RequestState)
			if !mcpstate.IsInvalidRequestState(err) {
				t.Fatalf("retry = %+v, %v; want the invalid request state error", res, err)
			}
			if je := new(jsonrpc.Error); !errors.As(err, &je) || je.Message != mcpstate.InvalidRequestStateMessage {
				t.Errorf("retry error = %v, want the message %q", err, mcpstate.InvalidRequestStateMessage)
			}
		})
	}

	// The genuine retry still completes, for Paris.
	res, err := call(`{"location":"Paris"}`, first.RequestState)
	if err != nil || res.IsError {
		t.Fatalf("genuine retry = %+v, %v", res, err)
	}
	if got := res.StructuredContent.(map[string]any)["location"]; got != "Paris" {
		t.Errorf("location = %v, want Paris", got)
	}
}

// TestRefusedParamsAreLogged checks that the example logs why it refused params (the reason, which
// quotes the client's member names, goes to the server's log only) while the client gets the fixed
// error.
func TestRefusedParamsAreLogged(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &mu}, nil))
	ring, err := keyring.New(newKey(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	src := keyring.Static(ring)
	codec, err := token.NewSealed(src, "test")
	if err != nil {
		t.Fatal(err)
	}
	a := &app{replica: "r1", src: src, guard: newGuard(codec, log), log: log}
	ts := httptest.NewServer(a.handler())
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }() // nothing is pending
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_weather",
		Arguments: json.RawMessage(`{"location":"Paris","LOCATION":"Pyongyang"}`)})
	if !mcpstate.IsInvalidParams(err) {
		t.Fatalf("err = %v, want the invalid-params error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "refused params") || !strings.Contains(logged.String(), "LOCATION") {
		t.Errorf("log = %q, want the refusal with its reason", logged.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
