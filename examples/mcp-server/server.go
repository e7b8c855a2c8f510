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
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// Response headers that show which keyring served a request. They carry ids and the fingerprint, never
// key material, so a balancer or a demo can show which key every replica seals with.
const (
	HeaderReplica     = "Mrtr-Replica"
	HeaderFingerprint = "Mrtr-Keyring-Fingerprint"
	HeaderSealKey     = "Mrtr-Seal-Key"
)

// protocolVersion is the first MCP revision with multi round-trip requests. Older clients cannot do
// MRTR against a stateless server (it cannot elicit from them), so the server refuses them up front.
const protocolVersion = "2026-07-28"

// weatherState is what the get_weather tool seals between its two rounds. A real server would carry
// work in progress here; the replica and key id only make the demo visible.
type weatherState struct {
	Location string `json:"location"`
	SealedBy string `json:"sealedBy"`
	SealKey  string `json:"sealKey"`
}

type weatherArgs struct {
	Location string `json:"location"`
}

// app is one replica: an MCP server whose tool state is sealed with the keyring of src.
type app struct {
	replica string
	src     keyring.Source
	guard   *mcpstate.Guard
	log     *slog.Logger
	ack     *ack.Reporter // nil when the server does not acknowledge its keyrings
	// wholeParams: the Guard binds the params as the client sent them (RecordParams), as Snodo and
	// the TypeScript package do, so that the Signed state of either opens on the other.
	wholeParams bool

	// metrics serves GET /metrics; nil serves none (tests that build an app of their own).
	metrics http.Handler

	completed, rejected atomic.Uint64
	rejectedBy          rejectedKeys
}

// rejectedKeys counts rejected request states by the key id their text names. The text is the
// client's, unauthenticated: the ids are what the tokens claim, and at most maxRejectedKeys are
// kept apart (the others count under ""), so a client cannot grow the map.
type rejectedKeys struct {
	mu sync.Mutex
	n  map[string]uint64
}

const maxRejectedKeys = 16

func (r *rejectedKeys) add(tok string) {
	info, _ := token.Inspect(tok) // on a token no codec reads, KeyID is "" (or what was read)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]uint64{}
	}
	id := info.KeyID
	if _, seen := r.n[id]; !seen && len(r.n) >= maxRejectedKeys {
		id = ""
	}
	r.n[id]++
}

func (r *rejectedKeys) counts() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// newGuard returns the Guard of the example. It authenticates nobody, so its state is bound to the
// anonymous principal: a deliberate choice, see mcpstate.FromTokenInfo for servers behind
// auth.RequireBearerToken. Arguments that cannot be bound are answered with the fixed
// invalid-params error; why is logged here, never sent to the client.
func newGuard(codec token.Codec, log *slog.Logger, opts ...mcpstate.Option) *mcpstate.Guard {
	return mcpstate.New(codec, mcpstate.Anonymous, append(opts, mcpstate.OnInvalidParams(func(req mcp.Request, cause error) {
		log.Warn("refused params", "method", methodOf(req), "err", cause)
	}))...)
}

// methodOf names the method of a request the Guard binds.
func methodOf(req mcp.Request) string {
	switch req.(type) {
	case *mcp.CallToolRequest:
		return mcpstate.MethodCallTool
	case *mcp.ReadResourceRequest:
		return mcpstate.MethodReadResource
	case *mcp.GetPromptRequest:
		return mcpstate.MethodGetPrompt
	}
	return fmt.Sprintf("%T", req)
}

// mcpServer returns the MCP server with the get_weather tool.
func (a *app) mcpServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr-example", Version: "v0.1.0"}, &mcp.ServerOptions{
		Logger:                    a.sdkLog(),
		SupportedProtocolVersions: []string{protocolVersion},
	})
	s.AddTool(&mcp.Tool{
		Name:        "get_weather",
		Description: "Weather for a location. Asks for your GitHub login first (an elicitation), then answers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`),
	}, a.getWeather)
	return s
}

// getWeather is a two-round tool: round 1 asks for the caller's login and seals what it has so far;
// the retry, on any replica, opens that state and completes.
//
// It decodes its arguments with encoding/json, which matches "location" case-insensitively and keeps
// the last of repeated members. That is safe because the Guard binds exactly these raw arguments and
// refuses any whose member names repeat or differ only in case (see mcpstate): what the tool reads
// on the retry is what the state was sealed for. The Guard's *jsonrpc.Error values go back as is.
func (a *app) getWeather(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args weatherArgs
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Location == "" {
		return nil, fmt.Errorf("get_weather needs {\"location\": string}")
	}
	if req.Params.RequestState == "" {
		// The key id is read apart from Seal, so during a reload it may name the previous primary:
		// it is for display only, the token itself carries the key that sealed it.
		st, err := json.Marshal(weatherState{Location: args.Location, SealedBy: a.replica, SealKey: a.src.Keyring().Primary().ID()})
		if err != nil {
			return nil, err
		}
		return a.guard.CallToolInputRequired(req, st, mcp.InputRequestMap{"github_login": &mcp.ElicitParams{
			Mode:            "form",
			Message:         "Your GitHub username?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		}})
	}

	raw, err := a.guard.Open(req)
	if err != nil {
		if mcpstate.IsInvalidRequestState(err) {
			a.rejected.Add(1)
			a.rejectedBy.add(req.Params.RequestState)
			a.log.Warn("rejected request state", "tool", req.Params.Name, "keyring", a.src.Keyring())
		}
		return nil, err
	}
	var st weatherState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("sealed state: %w", err)
	}
	login, _ := req.Params.InputResponses["github_login"].(*mcp.ElicitResult)
	if login == nil || login.Action != "accept" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "No login, no weather."}}}, nil
	}
	a.completed.Add(1)
	text := fmt.Sprintf("Sunny in %s for %v (state sealed by %s with key %s, opened by %s)",
		st.Location, login.Content["name"], st.SealedBy, st.SealKey, a.replica)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{"location": st.Location, "sealedBy": st.SealedBy, "sealKey": st.SealKey, "openedBy": a.replica},
	}, nil
}

// Debug is the body of GET /debug/keyring: what this replica has loaded, safe to show.
type Debug struct {
	Replica     string   `json:"replica"`
	Fingerprint string   `json:"fingerprint"`
	KeyIDs      []string `json:"keyIds"`
	SealKey     string   `json:"sealKey"`
	// Acknowledged is the fingerprint the API server last accepted on this replica's Pod, "" before
	// the first or when the server does not acknowledge (no --keyring-secret).
	Acknowledged string `json:"acknowledged"`
	Completed    uint64 `json:"completed"`
	Rejected     uint64 `json:"rejected"`
	// RejectedByKey counts the rejected request states by the key id they name (unverified: what
	// the token's text says; "" for none or past the first 16 ids).
	RejectedByKey map[string]uint64 `json:"rejectedByKey,omitempty"`
}

// handler serves MCP on /mcp (stateless streamable HTTP, so any replica answers any request),
// GET /debug/keyring, GET /metrics and GET /healthz.
func (a *app) handler() http.Handler {
	s := a.mcpServer()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: a.sdkLog()})

	mux := http.NewServeMux()
	var h http.Handler = mcpHandler
	if a.wholeParams {
		h = mcpstate.RecordParams(h) // the params as received, for WholeParams(RecordedParams)
	}
	mux.Handle("/mcp", a.withKeyringHeaders(h))
	mux.HandleFunc("GET /debug/keyring", func(w http.ResponseWriter, _ *http.Request) {
		r := a.src.Keyring()
		var acked string
		if a.ack != nil {
			acked = a.ack.Acknowledged()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Debug{
			Replica: a.replica, Fingerprint: r.Fingerprint(), KeyIDs: r.IDs(), SealKey: r.Primary().ID(),
			Acknowledged: acked, Completed: a.completed.Load(), Rejected: a.rejected.Load(),
			RejectedByKey: a.rejectedBy.counts(),
		})
	})
	if a.metrics != nil {
		mux.Handle("GET /metrics", a.metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// withKeyringHeaders tags every response with the replica and the keyring in service when the request
// arrived.
func (a *app) withKeyringHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := a.src.Keyring()
		w.Header().Set(HeaderReplica, a.replica)
		w.Header().Set(HeaderFingerprint, r.Fingerprint())
		w.Header().Set(HeaderSealKey, r.Primary().ID())
		next.ServeHTTP(w, req)
	})
}

// sdkLog is the logger for the SDK, which logs every stateless request's session at Info: warnings
// and errors only.
func (a *app) sdkLog() *slog.Logger {
	return slog.New(minLevel{a.log.Handler(), slog.LevelWarn})
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
