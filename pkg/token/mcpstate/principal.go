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

package mcpstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// The keys of auth.TokenInfo.Extra that FromTokenInfo reads: the claims of an access token (RFC
// 9068) or of a token introspection response (RFC 7662) that name its issuer and its OAuth client.
// A TokenVerifier copies them into Extra; the SDK does not.
const (
	ExtraIssuer          = "iss"
	ExtraClientID        = "client_id"
	ExtraAuthorizedParty = "azp" // OpenID Connect's name of the client, read when client_id is absent
)

// ErrNoPrincipal is returned by FromTokenInfo for a request without an authenticated user.
var ErrNoPrincipal = errors.New("mcpstate: request carries no authenticated user (no auth.TokenInfo with a UserID)")

// PrincipalOption changes what PrincipalFromTokenInfo binds.
type PrincipalOption func(*principalOptions)

type principalOptions struct {
	scopes bool
}

// BindScopes binds the access token's scopes too, as a sorted set: a state sealed under the scopes
// [admin] does not open under [] or [read], and [b a] opens under [a b]. Use it when the state
// records a decision taken under round 1's scopes. See the package doc.
func BindScopes() PrincipalOption {
	return func(o *principalOptions) { o.scopes = true }
}

// PrincipalFromTokenInfo returns the PrincipalFunc that binds state to the caller named by the
// request's auth.TokenInfo, which the SDK's auth.RequireBearerToken middleware puts in RequestExtra:
// its subject (UserID), issuer (Extra["iss"]) and OAuth client (Extra["client_id"], else
// Extra["azp"]), and with BindScopes its scopes. The principal is the canonical JSON object
//
//	{"client":<client>,"iss":<issuer>,"scopes":[<scope>,...],"sub":<subject>}
//
// with absent (or empty) parts left out; "scopes" is there exactly when BindScopes is given. A
// request without a UserID is ErrNoPrincipal, never silently anonymous; an Extra value of those keys
// that is not a string, or a part that is not valid UTF-8, is an error too (of the server's
// TokenVerifier). The package doc says what is not bound, and why.
//
// A nil PrincipalOption is a mistake of the server: the PrincipalFunc returned then fails every
// request with a *token.ConfigError saying so.
func PrincipalFromTokenInfo(opts ...PrincipalOption) PrincipalFunc {
	var o principalOptions
	for _, opt := range opts {
		if opt == nil {
			err := &token.ConfigError{Field: "mcpstate.PrincipalFromTokenInfo PrincipalOption", Reason: reasonNil}
			return func(mcp.Request) (json.RawMessage, error) { return nil, err }
		}
		opt(&o)
	}
	return func(req mcp.Request) (json.RawMessage, error) { return tokenInfoPrincipal(req, o) }
}

// FromTokenInfo is the default PrincipalFunc for a server behind auth.RequireBearerToken:
// PrincipalFromTokenInfo(), binding the issuer, the subject and the OAuth client, not the scopes.
func FromTokenInfo(req mcp.Request) (json.RawMessage, error) {
	return tokenInfoPrincipal(req, principalOptions{})
}

func tokenInfoPrincipal(req mcp.Request, o principalOptions) (json.RawMessage, error) {
	var info *auth.TokenInfo
	if extra := req.GetExtra(); extra != nil {
		info = extra.TokenInfo
	}
	if info == nil || info.UserID == "" {
		return nil, ErrNoPrincipal
	}
	iss, err := extraString(info.Extra, ExtraIssuer)
	if err != nil {
		return nil, err
	}
	client, err := extraString(info.Extra, ExtraClientID)
	if err != nil {
		return nil, err
	}
	if client == "" {
		if client, err = extraString(info.Extra, ExtraAuthorizedParty); err != nil {
			return nil, err
		}
	}
	if !utf8.ValidString(info.UserID) {
		return nil, errors.New("mcpstate: auth.TokenInfo.UserID is not valid UTF-8")
	}

	// Members in the order of their names' bytes and strings as canonical.AppendString writes them,
	// so the object is already in the canonical form the codecs bind.
	b := []byte{'{'}
	str := func(s string) { b, _ = canonical.AppendString(b, s) } // every string is valid UTF-8: checked
	name := func(n string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		str(n)
		b = append(b, ':')
	}
	if client != "" {
		name("client")
		str(client)
	}
	if iss != "" {
		name("iss")
		str(iss)
	}
	if o.scopes {
		scopes := make([]string, 0, len(info.Scopes))
		for _, s := range info.Scopes {
			if !utf8.ValidString(s) {
				return nil, errors.New("mcpstate: a scope of auth.TokenInfo.Scopes is not valid UTF-8")
			}
			if s != "" {
				scopes = append(scopes, s)
			}
		}
		slices.Sort(scopes)
		scopes = slices.Compact(scopes)
		name("scopes")
		b = append(b, '[')
		for i, s := range scopes {
			if i > 0 {
				b = append(b, ',')
			}
			str(s)
		}
		b = append(b, ']')
	}
	name("sub")
	str(info.UserID)
	return append(b, '}'), nil
}

// extraString returns the string Extra[key], "" if it is absent; another type is an error.
func extraString(extra map[string]any, key string) (string, error) {
	v, ok := extra[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("mcpstate: auth.TokenInfo.Extra[%q] is a %T, want a string", key, v)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("mcpstate: auth.TokenInfo.Extra[%q] is not valid UTF-8", key)
	}
	return s, nil
}
