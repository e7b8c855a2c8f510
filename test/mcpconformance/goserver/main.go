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

// Command goserver is the Go consumer's server for the MCP project's conformance suite
// (@modelcontextprotocol/conformance): the official Go SDK, stateless, with the suite's multi
// round-trip test tools (test_input_required_result_*) and prompt, its request state sealed by
// pkg/token over the keyring of a mounted folder (pkg/keyring) through mcpstate. test/mcpconformance
// runs replicas of it behind a round-robin balancer while it rotates the keyring.
//
// Usage: goserver -listen 127.0.0.1:8080 -keyring-dir DIR -token-ttl 3
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// The suite's scenarios speak the first MCP revision with multi round-trip requests, statelessly.
const protocolVersion = "2026-07-28"

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve MCP on (/mcp) and the keyring in service (/debug/keyring)")
	dir := flag.String("keyring-dir", "", "folder of the mounted keyring Secret, followed for changes")
	ttl := flag.Int("token-ttl", 3, "lifetime of a request state in seconds: at most the volume's token-ttl")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(*listen, *dir, time.Duration(*ttl)*time.Second, log); err != nil {
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}

func run(listen, dir string, ttl time.Duration, log *slog.Logger) error {
	if dir == "" {
		return errors.New("-keyring-dir is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := keyring.NewFileSource(filepath.Join(dir, keyring.SecretDataKey), keyring.WithErrorHandler(func(err error) {
		log.Warn("keyring not reloaded, keeping the last good one", "err", err)
	}))
	if err != nil {
		return err
	}
	go func() {
		if err := src.Start(ctx); err != nil {
			log.Error("cannot follow the keyring", "err", err)
		}
	}()
	codec, err := token.NewSealed(src, "mrtr-conformance", token.SealedTTL(ttl), token.SealedAnonymousTTL(ttl))
	if err != nil {
		return err
	}
	t := &tools{guard: mcpstate.New(codec, mcpstate.Anonymous)}

	mux := http.NewServeMux()
	srv := t.server()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	mux.HandleFunc("GET /debug/keyring", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"fingerprint": src.Keyring().Fingerprint()})
	})
	hs := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tools are the suite's test tools. The ones whose scenario checks the request state seal theirs
// with the Guard, so that the retry, which the balancer sends to another replica, opens it there.
type tools struct{ guard *mcpstate.Guard }

// step is the sealed state: the tool (or prompt) that sealed it and how far it got.
type step struct {
	Tool string `json:"tool"`
	Step int    `json:"step"`
	Name string `json:"name,omitempty"`
}

func (t *tools) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr-conformance-go", Version: "v0.1.0"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{protocolVersion}})
	noArgs := json.RawMessage(`{"type":"object"}`)
	for name, h := range map[string]mcp.ToolHandler{
		"test_input_required_result_elicitation":     t.elicitation,
		"test_input_required_result_sampling":        t.sampling,
		"test_input_required_result_list_roots":      t.listRoots,
		"test_input_required_result_request_state":   t.requestState,
		"test_input_required_result_multiple_inputs": t.multipleInputs,
		"test_input_required_result_multi_round":     t.multiRound,
		"test_input_required_result_tampered_state":  t.requestState,
		"test_input_required_result_capabilities":    t.capabilities,
	} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: noArgs}, h)
	}
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt"}, t.prompt)
	return s
}

func elicit(message, field string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: message,
		RequestedSchema: json.RawMessage(fmt.Sprintf(
			`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, field, field)),
	}
}

//nolint:staticcheck // sampling and roots, deprecated by 2026-07-28 (SEP-2577), are what the scenarios ask for
func sample(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		MaxTokens: maxTokens,
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// accepted returns the content of the accepted elicitation answering key, or nil.
func accepted(in mcp.InputResponseMap, key string) map[string]any {
	if r, ok := in[key].(*mcp.ElicitResult); ok && r.Action == "accept" {
		return r.Content
	}
	return nil
}

// elicitation keeps no state: its scenarios retry with the answer alone (extra keys, wrong keys).
func (t *tools) elicitation(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if c := accepted(req.Params.InputResponses, "user_name"); c != nil {
		return text(fmt.Sprintf("Hello, %v!", c["name"])), nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": elicit("What is your name?", "name")}}, nil
}

//nolint:staticcheck // sampling and roots, deprecated by 2026-07-28 (SEP-2577), are what the scenarios ask for
func (t *tools) sampling(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r, ok := req.Params.InputResponses["capital_question"].(*mcp.CreateMessageWithToolsResult); ok {
		return &mcp.CallToolResult{Content: r.Content}, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
		"capital_question": sample("What is the capital of France?", 100),
	}}, nil
}

//nolint:staticcheck // sampling and roots, deprecated by 2026-07-28 (SEP-2577), are what the scenarios ask for
func (t *tools) listRoots(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
		uris := make([]string, 0, len(r.Roots))
		for _, root := range r.Roots {
			uris = append(uris, root.URI)
		}
		return text(fmt.Sprintf("roots: %v", uris)), nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil
}

// open returns the state of a retry sealed by tool at step want; a state that does not open, or
// was sealed for another tool or step, is the invalid-request-state error.
func (t *tools) open(req mcp.Request, tool string, want int) (step, error) {
	var st step
	raw, err := t.guard.Open(req)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Tool != tool || st.Step != want {
		return st, mcpstate.InvalidRequestState()
	}
	return st, nil
}

func (t *tools) seal(req *mcp.CallToolRequest, st step, inputs mcp.InputRequestMap) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return t.guard.CallToolInputRequired(req, raw, inputs)
}

// requestState serves request-state and tampered-state: a sealed state, which the retry must bring
// back unchanged.
func (t *tools) requestState(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	if req.Params.RequestState == "" {
		return t.seal(req, step{Tool: name, Step: 1}, mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
			Message:         "Please confirm",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
		}})
	}
	if _, err := t.open(req, name, 1); err != nil {
		return nil, err
	}
	if accepted(req.Params.InputResponses, "confirm") == nil {
		return nil, fmt.Errorf("inputResponses lack an accepted %q", "confirm")
	}
	return text("state-ok: the request state opened on this replica"), nil
}

//nolint:staticcheck // sampling and roots, deprecated by 2026-07-28 (SEP-2577), are what the scenarios ask for
func (t *tools) multipleInputs(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	if req.Params.RequestState == "" {
		return t.seal(req, step{Tool: name, Step: 1}, mcp.InputRequestMap{
			"user_name":    elicit("What is your name?", "name"),
			"greeting":     sample("Generate a greeting", 50),
			"client_roots": &mcp.ListRootsParams{},
		})
	}
	if _, err := t.open(req, name, 1); err != nil {
		return nil, err
	}
	in := req.Params.InputResponses
	_, sampled := in["greeting"].(*mcp.CreateMessageWithToolsResult)
	_, rooted := in["client_roots"].(*mcp.ListRootsResult)
	if c := accepted(in, "user_name"); c == nil || !sampled || !rooted {
		return nil, errors.New("inputResponses lack one of user_name, greeting and client_roots")
	}
	return text("all three inputs received"), nil
}

// multiRound asks for a name, then (sealing the name into a new state) for a colour.
func (t *tools) multiRound(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	if req.Params.RequestState == "" {
		return t.seal(req, step{Tool: name, Step: 1}, mcp.InputRequestMap{"step1": elicit("Step 1: What is your name?", "name")})
	}
	if c := accepted(req.Params.InputResponses, "step1"); c != nil {
		if _, err := t.open(req, name, 1); err != nil {
			return nil, err
		}
		return t.seal(req, step{Tool: name, Step: 2, Name: fmt.Sprint(c["name"])},
			mcp.InputRequestMap{"step2": elicit("Step 2: What is your favorite color?", "color")})
	}
	st, err := t.open(req, name, 2)
	if err != nil {
		return nil, err
	}
	c := accepted(req.Params.InputResponses, "step2")
	if c == nil {
		return nil, errors.New("inputResponses lack an accepted step2")
	}
	return text(fmt.Sprintf("%s likes %v", st.Name, c["color"])), nil
}

// capabilities asks only for what the client declared it can answer.
//
//nolint:staticcheck // sampling and roots, deprecated by 2026-07-28 (SEP-2577), are what the scenarios ask for
func (t *tools) capabilities(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if len(req.Params.InputResponses) > 0 {
		return text("inputs received"), nil
	}
	caps := req.ClientCapabilities()
	inputs := mcp.InputRequestMap{}
	if caps != nil && caps.Sampling != nil {
		inputs["question"] = sample("What is the capital of France?", 100)
	}
	if caps != nil && caps.Elicitation != nil {
		inputs["user_name"] = elicit("What is your name?", "name")
	}
	if len(inputs) == 0 {
		return text("the client declared no capability to ask with"), nil
	}
	return &mcp.CallToolResult{InputRequests: inputs}, nil
}

// prompt is a prompts/get that asks for input, with a sealed state as the tools have.
func (t *tools) prompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	const name = "test_input_required_result_prompt"
	if req.Params.RequestState == "" {
		raw, err := json.Marshal(step{Tool: name, Step: 1})
		if err != nil {
			return nil, err
		}
		return t.guard.GetPromptInputRequired(req, raw, mcp.InputRequestMap{
			"user_context": elicit("What context should the prompt use?", "context"),
		})
	}
	if _, err := t.open(req, name, 1); err != nil {
		return nil, err
	}
	c := accepted(req.Params.InputResponses, "user_context")
	if c == nil {
		return nil, errors.New("inputResponses lack an accepted user_context")
	}
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{
		Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Use this context: %v", c["context"])},
	}}}, nil
}
