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
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// ti is the auth.TokenInfo a TokenVerifier would return for an access token of issuer iss, subject
// sub and OAuth client client (put in Extra as RFC 9068 JWT access tokens and RFC 7662
// introspection name them); empty parts are left out.
func ti(iss, sub, client string, scopes ...string) *auth.TokenInfo {
	extra := map[string]any{}
	if iss != "" {
		extra["iss"] = iss
	}
	if client != "" {
		extra["client_id"] = client
	}
	return &auth.TokenInfo{UserID: sub, Scopes: scopes, Expiration: time.Now().Add(time.Hour), Extra: extra}
}

func toolRequest(info *auth.TokenInfo, state string) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: "t", Arguments: json.RawMessage(`{"a":1}`), RequestState: state},
		Extra:  &mcp.RequestExtra{TokenInfo: info},
	}
}

// opens seals a state for the caller sealer and reports whether it opens for the caller opener,
// through a Guard with the real Sealed codec and principal.
func opens(t *testing.T, principal mcpstate.PrincipalFunc, sealer, opener *auth.TokenInfo) bool {
	t.Helper()
	guard := mcpstate.New(sealedCodec(t), principal)
	tok, err := guard.Seal(toolRequest(sealer, ""), json.RawMessage(`{"step":1}`))
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	_, err = guard.Open(toolRequest(opener, tok))
	switch {
	case err == nil:
		return true
	case mcpstate.IsInvalidRequestState(err):
		return false
	}
	t.Fatalf("Open: %v, want nil or the invalid request state error", err)
	return false
}

func TestPrincipalBindsIssuerSubjectAndClient(t *testing.T) {
	const issA, issB = "https://a.example.com", "https://b.example.com"
	sealer := ti(issA, "u", "client-1", "admin")
	for _, c := range []struct {
		name   string
		opener *auth.TokenInfo
		want   bool
	}{
		{"the same caller", ti(issA, "u", "client-1", "admin"), true},
		{"another issuer, same subject", ti(issB, "u", "client-1", "admin"), false},
		{"no issuer", ti("", "u", "client-1", "admin"), false},
		{"another subject", ti(issA, "v", "client-1", "admin"), false},
		{"another client", ti(issA, "u", "client-2", "admin"), false},
		{"no client", ti(issA, "u", "", "admin"), false},
		{"the same client as azp", &auth.TokenInfo{UserID: "u", Extra: map[string]any{"iss": issA, "azp": "client-1"}}, true},
		// Not bound by default: a refreshed or down-scoped access token of the same caller.
		{"fewer scopes", ti(issA, "u", "client-1"), true},
		{"another expiry and other claims", &auth.TokenInfo{UserID: "u", Scopes: []string{"admin"}, Expiration: time.Now().Add(time.Minute),
			Extra: map[string]any{"iss": issA, "client_id": "client-1", "jti": "other-token", "exp": 1}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := opens(t, mcpstate.FromTokenInfo, sealer, c.opener); got != c.want {
				t.Errorf("state of %+v opens for %+v: %v, want %v", sealer, c.opener, got, c.want)
			}
		})
	}
}

func TestBindScopes(t *testing.T) {
	withScopes := mcpstate.PrincipalFromTokenInfo(mcpstate.BindScopes())
	for _, c := range []struct {
		name           string
		sealer, opener []string
		want           bool
	}{
		{"[admin] vs []", []string{"admin"}, nil, false},
		{"[] vs [admin]", nil, []string{"admin"}, false},
		{"[admin] vs [read]", []string{"admin"}, []string{"read"}, false},
		{"[a b] vs [a]", []string{"a", "b"}, []string{"a"}, false},
		{"[b a] vs [a b]", []string{"b", "a"}, []string{"a", "b"}, true},
		{"[a a b] vs [b a]", []string{"a", "a", "b"}, []string{"b", "a"}, true},
		{"[] vs nil", []string{}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, o := ti("https://a", "u", "c", c.sealer...), ti("https://a", "u", "c", c.opener...)
			if got := opens(t, withScopes, s, o); got != c.want {
				t.Errorf("with BindScopes: opens = %v, want %v", got, c.want)
			}
			if !opens(t, mcpstate.FromTokenInfo, s, o) {
				t.Error("without BindScopes the scopes must not matter")
			}
		})
	}
	// Issuer, subject and client stay bound with scopes.
	if opens(t, withScopes, ti("https://a", "u", "c", "x"), ti("https://b", "u", "c", "x")) {
		t.Error("with BindScopes, another issuer opened the state")
	}
}

// TestPrincipalJSON pins the principal's bytes: a canonical object (members sorted, absent parts
// left out, scopes sorted and de-duplicated), so that every replica, in any language, derives the
// same principal from the same token.
func TestPrincipalJSON(t *testing.T) {
	withScopes := mcpstate.PrincipalFromTokenInfo(mcpstate.BindScopes())
	for _, c := range []struct {
		principal mcpstate.PrincipalFunc
		info      *auth.TokenInfo
		want      string
	}{
		{mcpstate.FromTokenInfo, &auth.TokenInfo{UserID: "alice"}, `{"sub":"alice"}`},
		{mcpstate.FromTokenInfo, ti("https://idp", "alice", "app", "b", "a"),
			`{"client":"app","iss":"https://idp","sub":"alice"}`},
		{mcpstate.FromTokenInfo, &auth.TokenInfo{UserID: "alice", Extra: map[string]any{"azp": "app", "client_id": ""}},
			`{"client":"app","sub":"alice"}`},
		{mcpstate.FromTokenInfo, &auth.TokenInfo{UserID: "alice", Extra: map[string]any{"azp": "other", "client_id": "app"}},
			`{"client":"app","sub":"alice"}`},
		{mcpstate.FromTokenInfo, &auth.TokenInfo{UserID: "<a&b>\u2028"}, "{\"sub\":\"<a&b>\u2028\"}"},
		{withScopes, &auth.TokenInfo{UserID: "alice"}, `{"scopes":[],"sub":"alice"}`},
		{withScopes, ti("https://idp", "alice", "app", "write", "read", "write", ""),
			`{"client":"app","iss":"https://idp","scopes":["read","write"],"sub":"alice"}`},
		{mcpstate.PrincipalFromTokenInfo(), ti("https://idp", "alice", "", "read"), `{"iss":"https://idp","sub":"alice"}`},
	} {
		got, err := c.principal(toolRequest(c.info, ""))
		if err != nil || string(got) != c.want {
			t.Errorf("principal of %+v = %s, %v; want %s", c.info, got, err, c.want)
		}
	}
}

func TestPrincipalRejectsMalformedTokenInfo(t *testing.T) {
	for name, info := range map[string]*auth.TokenInfo{
		"iss not a string":       {UserID: "u", Extra: map[string]any{"iss": 42}},
		"client_id not a string": {UserID: "u", Extra: map[string]any{"client_id": []string{"a"}}},
		"azp not a string":       {UserID: "u", Extra: map[string]any{"azp": true}},
		"user id not UTF-8":      {UserID: "u\xff"},
		"scope not UTF-8":        {UserID: "u", Scopes: []string{"\xff"}},
	} {
		principal := mcpstate.PrincipalFromTokenInfo(mcpstate.BindScopes())
		if p, err := principal(toolRequest(info, "")); err == nil || errors.Is(err, mcpstate.ErrNoPrincipal) {
			t.Errorf("%s: principal = %s, %v; want an error naming the bad part", name, p, err)
		}
	}
}

func TestPrincipalRequiresAUser(t *testing.T) {
	for name, extra := range map[string]*mcp.RequestExtra{
		"no extra":               nil,
		"no token info":          {},
		"no user id":             {TokenInfo: &auth.TokenInfo{Scopes: []string{"admin"}}},
		"issuer and client only": {TokenInfo: &auth.TokenInfo{Extra: map[string]any{"iss": "https://a", "client_id": "c"}}},
	} {
		for pname, principal := range map[string]mcpstate.PrincipalFunc{
			"FromTokenInfo": mcpstate.FromTokenInfo, "BindScopes": mcpstate.PrincipalFromTokenInfo(mcpstate.BindScopes()),
		} {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}, Extra: extra}
			if _, err := principal(req); !errors.Is(err, mcpstate.ErrNoPrincipal) {
				t.Errorf("%s, %s: err = %v, want ErrNoPrincipal", name, pname, err)
			}
			_, err := mcpstate.New(sealedCodec(t), principal).Seal(req, json.RawMessage(`1`))
			var je *jsonrpc.Error
			if !errors.Is(err, mcpstate.ErrNoPrincipal) || errors.As(err, &je) {
				t.Errorf("%s, %s: Seal err = %v, want ErrNoPrincipal as is", name, pname, err)
			}
		}
	}
}

// TestPrincipalThroughBearerAuth is the finding end to end: behind the SDK's RequireBearerToken, a
// state sealed under an admin-scoped access token of one OAuth client must not open under a
// scope-less token of another client of the same user, nor (with BindScopes) under a scope-less
// token of the same client; the caller's own token still opens it.
func TestPrincipalThroughBearerAuth(t *testing.T) {
	// The bearer token is "iss|sub|client|scope scope…"; a real verifier reads these claims from a
	// JWT access token or an introspection response.
	verifier := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		p := strings.Split(tok, "|")
		if len(p) != 4 {
			return nil, auth.ErrInvalidToken
		}
		return ti(p[0], p[1], p[2], strings.Fields(p[3])...), nil
	}
	for _, c := range []struct {
		name      string
		principal mcpstate.PrincipalFunc
		retry     string
	}{
		{"another client", mcpstate.FromTokenInfo, "https://idp|alice|client-2|"},
		{"another issuer", mcpstate.FromTokenInfo, "https://evil|alice|client-1|admin"},
		{"fewer scopes with BindScopes", mcpstate.PrincipalFromTokenInfo(mcpstate.BindScopes()), "https://idp|alice|client-1|"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serve(t, newServer(mcpstate.New(sealedCodec(t), c.principal)), auth.RequireBearerToken(verifier, nil))
			var bearer atomic.Value
			bearer.Store("https://idp|alice|client-1|admin")
			cs := connect(t, url, bearerClient(&bearer), true)
			ctx := context.Background()
			args := map[string]any{"city": "Bern"}
			first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: args})
			if err != nil || first.RequestState == "" {
				t.Fatalf("round 1: %+v, %v", first, err)
			}
			bearer.Store(c.retry)
			if err := retryTool(ctx, cs, args, first.RequestState); !mcpstate.IsInvalidRequestState(err) {
				t.Errorf("retry as %s: err = %v, want the invalid request state error", c.retry, err)
			}
			bearer.Store("https://idp|alice|client-1|admin")
			if err := retryTool(ctx, cs, args, first.RequestState); err != nil {
				t.Errorf("retry with the sealing token: %v", err)
			}
		})
	}
}
