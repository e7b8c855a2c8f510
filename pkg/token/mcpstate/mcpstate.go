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

// Package mcpstate connects pkg/token to servers built on the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8.0).
//
// The SDK implements multi round-trip requests (MRTR, SEP-2322) but leaves a result's RequestState a
// plain string that the client echoes back on the retry, possibly to another replica. A Guard turns
// that string into a token sealed with the shared keyring and bound to the request that produced it:
//
//	guard := mcpstate.New(codec, mcpstate.FromTokenInfo)
//
//	func handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
//		if req.Params.RequestState == "" { // round 1: ask for input
//			// a *jsonrpc.Error (-32602) for arguments that cannot be bound: return it as is
//			return guard.CallToolInputRequired(req, state, mcp.InputRequestMap{"login": &mcp.ElicitParams{...}})
//		}
//		state, err := guard.Open(req) // a *jsonrpc.Error (-32602) for a bad token: return it as is
//		...
//	}
//
// # What a request state is bound to
//
// A request state opens only for a request equal to the one it was sealed for in all of these
// (Bind returns them as a token.Binding):
//
//   - The method: tools/call, resources/read or prompts/get.
//   - The params, as Snodo binds them: every member but the top-level "_meta", "inputResponses" and
//     "requestState", which change between the rounds of one request. They are compared as JSON
//     values: member order and whitespace do not matter, types do (1 and 1.0 differ). The SDK
//     (v1.8.0) keeps no raw bytes of the params and its request types carry only some members: for
//     tools/call the tool name and the arguments exactly as received on the wire
//     (req.Params.Arguments), for resources/read the URI, for prompts/get the name and the
//     arguments as it decoded them (a map of strings; {} is bound as {}, as Snodo binds it, while
//     arguments left out or null are left out). Any other member a client sends (a "task", a
//     "cursor", a member of a later protocol version) is dropped by the SDK when it decodes the
//     request, so the Guard cannot bind it: it binds the members the SDK's types carry. A state
//     Snodo sealed for params with such a member then does not open here, nor one sealed here on
//     Snodo. A server that has the params as received gives them with WholeParams, and the Guard
//     binds every member, exactly as Snodo does; behind the SDK's streamable HTTP handler,
//     RecordParams keeps them for WholeParams(RecordedParams).
//   - The principal that the Guard's PrincipalFunc derives from the request (see Principals).
//   - The MCP protocol version of the request, with the Sealed codec; the Signed codec (Snodo's wire
//     format) has no place for it. The Sealed codec also binds its server identity, so the state of
//     one server does not open on another that shares the keyring.
//
// A state is not single-use: it opens for an equal request, any number of times, until it expires.
// What the handler reads from the request must come from what is bound: the arguments the Guard bound
// (req.Params.Arguments, not _meta), and the input responses, which are not bound and are the
// client's answers to this round.
//
// # Repeated and case-folded member names
//
// The codecs bind params as Snodo does: as JSON values, members in any order, names compared by
// their bytes. Names that differ only by case or Unicode case folding ("Accept" and "accept", "k"
// and the Kelvin sign U+212A, "s" and the long s U+017F) are distinct members, each bound with its
// value, and a state sealed by Snodo for such params opens here. The codecs refuse what Snodo
// refuses: an object that repeats a name, strings with invalid UTF-8 or a lone surrogate escape
// ("\ud800"), numbers beyond the float64 range (1e400), integers of more than 64 digits, and params
// nested deeper than 1000 (a limit the SDK's transports never let a request reach: SDK v1.8.0
// refuses any message nested deeper than 1000, and the message and its params are two levels of
// it).
//
// Whether distinct is safe depends on the handler's decoder, which only the server knows. Go's
// encoding/json matches a member to a struct field without regard to case (bytes.EqualFold) and
// keeps the last member that lands on a field. So a handler that decodes the arguments with
// encoding/json, given {"amount":1,"AMOUNT":1000}, pays 1000, and given the same members in the other
// order, {"AMOUNT":1000,"amount":1}, pays 1; a binding blind to member order binds both alike. A
// client that got a state sealed after confirming the first (round 1: "pay 1000?") could complete
// round 2 with the second, and the handler would act on what nobody confirmed. The SDK's typed tool
// inputs (mcp.AddTool with an input type) are not exposed: the SDK decodes them case-sensitively
// (its internal/json), so "amount" fills the field and "AMOUNT" is ignored, whatever the order.
//
// Choose, then, by the handlers:
//
//   - By default the Guard refuses a request whose bound params hold, in any object at any depth,
//     two sibling names that encoding/json folds together (exactly as encoding/json folds them).
//     Seal, and so CallToolInputRequired and its siblings, answers InvalidParams; Open answers
//     InvalidRequestState, since no state was sealed for such params. Names inside the top-level
//     _meta, which is never bound, are not refused. The check runs before any token is
//     authenticated, in time linear in the params' size. Keep the default if any handler decodes
//     params with encoding/json (json.Unmarshal into a struct, directly or through a library), or
//     if you do not know: clients must then send arguments whose names are distinct even ignoring
//     case, and a state sealed by Snodo for params with folded names does not open.
//   - CaseSensitiveDecoding binds folded names as distinct members, as Snodo does. Give it when
//     every handler takes the SDK's typed input or decodes the arguments case-sensitively (into a
//     map, or with a decoder that matches names exactly): realistic maps keyed by user data (HTTP
//     headers, environment variables, file names) then pass, and states interoperate with Snodo
//     for every params.
//
// # Errors
//
// Two errors are for the client. Both are a *jsonrpc.Error with code -32602 (invalid params) and a
// fixed message whatever the cause, and a handler returns them as is: the SDK then sends them as
// the JSON-RPC error of the response, and the client's CallTool (ReadResource, GetPrompt) returns
// an error that errors.As finds as the same *jsonrpc.Error. Do not wrap them: the SDK sends a wrapped
// error's Error() text as the message and drops its data.
//
//   - InvalidRequestState, from Open: the request state is missing, malformed, tampered, sealed for
//     another request or principal, under a removed key, or expired. Message
//     InvalidRequestStateMessage, data {"reason":"invalid_request_state"} (IsInvalidRequestState).
//   - InvalidParams, from Seal and so the ...InputRequired helpers, and from Open for arguments that
//     are not JSON: the client's params cannot be bound (see above). Message
//     InvalidParamsMessage, data {"reason":"invalid_params"} (IsInvalidParams). The cause, a
//     *token.InputError whose Reason quotes the client's member names and offsets, never goes back
//     to the client; OnInvalidParams hands it to the server's logs.
//
// Every other error is the server's own and describes the server, never the client's input: a
// *token.ConfigError (the codec's options, no keyring, state that is not JSON or makes the token too
// large, a principal that is not JSON), ErrNoPrincipal or another error of the PrincipalFunc, a
// request of another method or without params. The SDK sends such an error to the client as a
// JSON-RPC error whose message is its text; a server that would rather not show it returns its own
// generic error and logs this one.
//
// # Principals
//
// FromTokenInfo, the default PrincipalFunc for servers behind the SDK's auth.RequireBearerToken,
// binds state to the caller as the access token names it: the issuer, the subject and the OAuth
// client. PrincipalFromTokenInfo(BindScopes()) binds the token's scopes as well. The principal is
// this JSON object, its members in this order, each absent part left out:
//
//	{"client":<client>,"iss":<issuer>,"scopes":[<scope>,...],"sub":<subject>}
//
//	sub     auth.TokenInfo.UserID; required: a request without one is ErrNoPrincipal
//	iss     TokenInfo.Extra["iss"]
//	client  TokenInfo.Extra["client_id"] (RFC 9068 access tokens, RFC 7662 introspection), or if
//	        that is absent Extra["azp"] (OpenID Connect); both name the OAuth client
//	scopes  only with BindScopes, and then always (possibly []): TokenInfo.Scopes sorted by their
//	        bytes, each once, empty ones dropped
//
// The SDK fills TokenInfo from the server's own auth.TokenVerifier and puts nothing in Extra by
// itself: for the issuer and the client to be bound, the verifier must copy the "iss" and
// "client_id" (or "azp") claims of the access token, or of the introspection response, into Extra.
// A server that accepts tokens of more than one issuer must do so, or the subjects of different
// issuers collide. An Extra value of another type than string is an error, an empty one counts as
// absent. Not bound, on purpose:
//
//   - The expiration, the token's id (jti) and any other claim: a refreshed access token of the same
//     caller must keep opening the state sealed under the previous one. The state has its own,
//     shorter, lifetime (the codec's TTL).
//   - The scopes, unless BindScopes is given: a refreshed token may carry fewer or other scopes, and
//     every round is an authorized request of its own (RequireBearerToken checks its scopes, the
//     handler checks what it needs). Bind them when the state records a decision taken under round
//     1's scopes, so that a token with other scopes cannot complete it.
//   - The audience: the resource server's verifier checks that the token is meant for it, and the
//     Sealed codec binds the server itself.
//
// The principal is a canonical JSON object, so every replica, in any language, derives the same
// bytes from the same token. Changing what is bound (adding BindScopes, or upgrading from a release
// whose FromTokenInfo bound the bare UserID as a JSON string) makes the states in flight fail to
// open once, with InvalidRequestState; their clients start the request over. Anonymous binds every
// state to token.Anonymous (null) instead: the explicit choice of a server that authenticates nobody.
package mcpstate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// The JSON-RPC methods whose results may ask for input (MRTR).
const (
	MethodCallTool     = "tools/call"
	MethodReadResource = "resources/read"
	MethodGetPrompt    = "prompts/get"
)

// Reason is the data.reason of the error answering a bad request state, as in the Python and
// TypeScript SDKs.
const Reason = "invalid_request_state"

// InvalidRequestStateMessage is the message of that error: one fixed text for every cause.
const InvalidRequestStateMessage = "Invalid or expired requestState"

// InvalidParamsReason is the data.reason of the error answering params that cannot be bound.
const InvalidParamsReason = "invalid_params"

// InvalidParamsMessage is the message of that error: one fixed text for every cause, which quotes
// nothing of the client's params.
const InvalidParamsMessage = "Invalid params: a member name repeats or differs from a sibling's only in case, " +
	"or a string, number or nesting is invalid"

// InvalidRequestState returns the error a handler returns when a request state does not open: JSON-RPC
// -32602 "Invalid or expired requestState" with data {"reason":"invalid_request_state"}. The SDK sends
// a *jsonrpc.Error returned by a handler as a JSON-RPC error response; the client sees the same value
// through errors.As. A fresh value each call, so that no caller can alter another's.
func InvalidRequestState() *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: InvalidRequestStateMessage,
		Data:    json.RawMessage(`{"reason":"` + Reason + `"}`),
	}
}

// InvalidParams returns the error a handler returns when the client's params cannot be bound to a
// request state (see the package doc): JSON-RPC -32602 InvalidParamsMessage with data
// {"reason":"invalid_params"}. Guard.Seal, Guard.Open and the ...InputRequired helpers return it for
// a *token.InputError; its cause is not in it. A fresh value each call.
func InvalidParams() *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: InvalidParamsMessage,
		Data:    json.RawMessage(`{"reason":"` + InvalidParamsReason + `"}`),
	}
}

// IsInvalidRequestState reports whether err is or wraps the error of InvalidRequestState, as a client
// receives it from CallTool, ReadResource or GetPrompt.
func IsInvalidRequestState(err error) bool { return hasReason(err, Reason) }

// IsInvalidParams reports whether err is or wraps the error of InvalidParams, as a client receives it
// from CallTool, ReadResource or GetPrompt.
func IsInvalidParams(err error) bool { return hasReason(err, InvalidParamsReason) }

// hasReason reports whether err is or wraps a -32602 *jsonrpc.Error with data.reason reason.
func hasReason(err error, reason string) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		return false
	}
	var data struct {
		Reason string `json:"reason"`
	}
	return json.Unmarshal(je.Data, &data) == nil && data.Reason == reason
}

// PrincipalFunc returns the principal a request's state is bound to, as a JSON value, or
// token.Anonymous for a request that deliberately has none. An error means the request cannot be
// served with state (for example: it carries no authenticated user although one is required); it is
// the server's own, never answered as invalid params.
type PrincipalFunc func(req mcp.Request) (json.RawMessage, error)

// Anonymous binds every request to token.Anonymous: the explicit choice of a server that does not
// authenticate its callers. Codecs may give anonymous state a shorter life.
func Anonymous(mcp.Request) (json.RawMessage, error) { return token.Anonymous, nil }

// Guard seals and opens the request state of one server. It is safe for concurrent use.
type Guard struct {
	codec           token.Codec
	principal       PrincipalFunc
	onInvalidParams func(req mcp.Request, cause error)
	// caseSensitive: the handlers decode bound params case-sensitively, so folded names are
	// distinct arguments and not refused (CaseSensitiveDecoding).
	caseSensitive bool
	// err is the *token.ConfigError of a nil argument to New, returned by every method.
	err error
	// rawParams returns the whole params of a request as received (WholeParams).
	rawParams func(req mcp.Request) (json.RawMessage, bool)
}

// Option configures a Guard.
type Option func(*Guard)

// OnInvalidParams sets a function that the Guard calls, before it answers InvalidParams, with the
// request and the cause: a *token.InputError whose Reason names the members at fault and their
// offsets. It is for the server's logs (the client gets only the fixed error), so it must not send
// the cause anywhere the client can read it. It is called on the handler's goroutine, so it must be
// safe for concurrent use; a nil f calls nothing.
func OnInvalidParams(f func(req mcp.Request, cause error)) Option {
	return func(g *Guard) { g.onInvalidParams = f }
}

// CaseSensitiveDecoding tells the Guard that every handler it serves decodes the bound params
// case-sensitively, as the SDK's typed tool inputs do (mcp.AddTool with an input type: the SDK
// decodes the arguments with its internal/json, which matches member names to fields exactly). The
// Guard then binds member names that differ only by case as distinct members, as Snodo does,
// instead of refusing them. Do not give it if any handler decodes params with encoding/json (see the
// package doc for the attack).
func CaseSensitiveDecoding() Option {
	return func(g *Guard) { g.caseSensitive = true }
}

// WholeParams gives the Guard the params of each request exactly as the client sent them, for a
// server that has them (its own JSON-RPC layer, or a transport that keeps each request's bytes):
// params(req) returns the params object the SDK decoded req from, byte for byte, and true, or false
// to bind what the SDK's types carry (see the package doc). The Guard then binds what Snodo binds,
// every member of the params but the top-level _meta, requestState and inputResponses, members the
// SDK's types cannot carry (task, cursor, ...) included, so that states interoperate with Snodo for
// every request. The bytes must be those the SDK decoded: bytes of another request would bind what
// the handler does not read.
func WholeParams(params func(req mcp.Request) (json.RawMessage, bool)) Option {
	return func(g *Guard) { g.rawParams = params }
}

// New returns a Guard sealing with codec and binding state to the principal that principal returns.
// A nil argument (codec, principal or an Option) is a mistake of the server that New cannot return:
// every method of the Guard then returns it as a *token.ConfigError naming the argument.
func New(codec token.Codec, principal PrincipalFunc, opts ...Option) *Guard {
	g := &Guard{codec: codec, principal: principal}
	switch {
	case codec == nil:
		g.err = &token.ConfigError{Field: "mcpstate.New codec", Reason: "is nil: pass the token codec to seal with"}
	case principal == nil:
		g.err = &token.ConfigError{Field: "mcpstate.New principal",
			Reason: "is nil: pass a PrincipalFunc (FromTokenInfo, or Anonymous for a server that authenticates nobody)"}
	}
	for _, opt := range opts {
		if opt == nil {
			g.err = cmp.Or(g.err, error(&token.ConfigError{Field: "mcpstate.New Option", Reason: reasonNil}))
			continue
		}
		opt(g)
	}
	return g
}

// Bind returns the binding of a tools/call, resources/read or prompts/get request received by a
// server (see the package doc for what is bound). Arguments that are not JSON are a
// *token.InputError, the client's mistake; any other request, one without params, or an error of the
// PrincipalFunc is the server's.
func (g *Guard) Bind(req mcp.Request) (token.Binding, error) {
	if g.err != nil {
		return token.Binding{}, g.err
	}
	var raw json.RawMessage
	whole := false
	if g.rawParams != nil {
		raw, whole = g.rawParams(req)
	}
	method, params, version, err := salient(req, raw, whole)
	if err != nil {
		return token.Binding{}, err
	}
	if whole && !sameAsDecoded(req, raw) {
		return token.Binding{}, &token.ConfigError{Field: "mcpstate.WholeParams",
			Reason: "returned params whose name, arguments or uri differ from those of the request the SDK decoded: " +
				"they must be the bytes the SDK read the request from"}
	}
	principal, err := g.principal(req)
	if err != nil {
		return token.Binding{}, err
	}
	return token.Binding{Method: method, Params: params, Principal: principal, ProtocolVersion: version}, nil
}

// Seal returns a request state carrying state (a JSON value) bound to req.
//
// Params of the client that cannot be bound (a *token.InputError: repeated member names, folded ones
// unless CaseSensitiveDecoding, a lone surrogate, a number out of range, nesting too deep, arguments
// that are not JSON) give
// the *jsonrpc.Error of InvalidParams, for the handler to return unchanged; the cause goes to the
// OnInvalidParams function only. Every other error is the server's own (configuration, no keyring,
// state that is not JSON, no principal), returned as the codec or the PrincipalFunc gave it.
func (g *Guard) Seal(req mcp.Request, state json.RawMessage) (string, error) {
	b, err := g.Bind(req)
	if err != nil {
		return "", g.clientError(req, err)
	}
	if err := g.checkFolded(b); err != nil {
		return "", g.clientError(req, err)
	}
	tok, err := g.codec.Seal(b, state)
	if err != nil {
		return "", g.clientError(req, err)
	}
	return tok, nil
}

// Open returns the state of the request's requestState. A state that does not open (missing,
// malformed, tampered, sealed for another request or principal, under a removed key, expired), also
// when the params repeat member names or (unless CaseSensitiveDecoding) fold them, gives the
// *jsonrpc.Error of InvalidRequestState; arguments that are not JSON give that of InvalidParams. The handler returns either unchanged.
// Other errors are the server's own.
func (g *Guard) Open(req mcp.Request) (json.RawMessage, error) {
	b, err := g.Bind(req)
	if err != nil {
		return nil, g.clientError(req, err)
	}
	if g.checkFolded(b) != nil {
		return nil, InvalidRequestState() // Seal refused these params: no state was sealed for them
	}
	state, err := g.codec.Open(b, requestState(req))
	switch {
	case errors.Is(err, token.ErrInvalid):
		return nil, InvalidRequestState()
	case err != nil:
		return nil, g.clientError(req, err)
	}
	return state, nil
}

// checkFolded refuses, unless the handlers decode case-sensitively, bound params in which an object
// has two member names that encoding/json matches to one struct field (see the package doc).
func (g *Guard) checkFolded(b token.Binding) error {
	if g.caseSensitive {
		return nil
	}
	return checkFoldedNames(b.Params, unboundParams)
}

// reasonNil is the ConfigError.Reason of a nil argument.
const reasonNil = "is nil"

// unboundParams are the top-level params members that neither codec binds: they change between the
// rounds of one request. The codecs own the list.
var unboundParams = token.UnboundParams()

// clientError returns InvalidParams for an error of the client's params, after handing the cause to
// the OnInvalidParams function, and any other error unchanged.
func (g *Guard) clientError(req mcp.Request, err error) error {
	if !token.IsInputError(err) {
		return err
	}
	if g.onInvalidParams != nil {
		g.onInvalidParams(req, err)
	}
	return InvalidParams()
}

// CallToolInputRequired returns the input-required result of a tools/call: inputs to fulfil, and
// state sealed for the retry. Its errors are Seal's: the *jsonrpc.Error of InvalidParams for
// arguments that cannot be bound, to return as is, or the server's own.
func (g *Guard) CallToolInputRequired(
	req *mcp.CallToolRequest, state json.RawMessage, inputs mcp.InputRequestMap,
) (*mcp.CallToolResult, error) {
	tok, err := g.Seal(req, state)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{InputRequests: inputs, RequestState: tok}, nil
}

// ReadResourceInputRequired is CallToolInputRequired for resources/read.
func (g *Guard) ReadResourceInputRequired(
	req *mcp.ReadResourceRequest, state json.RawMessage, inputs mcp.InputRequestMap,
) (*mcp.ReadResourceResult, error) {
	tok, err := g.Seal(req, state)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{InputRequests: inputs, RequestState: tok}, nil
}

// GetPromptInputRequired is CallToolInputRequired for prompts/get.
func (g *Guard) GetPromptInputRequired(
	req *mcp.GetPromptRequest, state json.RawMessage, inputs mcp.InputRequestMap,
) (*mcp.GetPromptResult, error) {
	tok, err := g.Seal(req, state)
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{InputRequests: inputs, RequestState: tok}, nil
}

// salient returns the method, the salient params and the protocol version of a server request.
//
// The SDK keeps no raw bytes of the whole params object, so the params are rebuilt from the fields
// that are salient: for tools/call the name and the arguments exactly as received (the SDK keeps them
// raw), for resources/read the uri, for prompts/get the name and the string arguments. The codecs
// canonicalize what they bind, so the layout here does not matter, only the values. Arguments that
// are not one JSON value are a *token.InputError (spliced in, they could add members to the params).
//
// With whole, the params are raw (WholeParams) and nothing is rebuilt: Bind checks them against
// the request instead (sameAsDecoded).
func salient(req mcp.Request, raw json.RawMessage, whole bool) (method string, params json.RawMessage, version string, err error) {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r == nil || r.Params == nil {
			return "", nil, "", errors.New("mcpstate: tools/call request without params")
		}
		if whole {
			return MethodCallTool, raw, r.ProtocolVersion(), nil
		}
		// The members in canonical order ("arguments" sorts before "name"), so that arguments a
		// client wrote in canonical order (as Go's encoding/json writes maps) take the codecs' fast
		// path. The arguments are spliced in raw, so they must be exactly one JSON value: the codec
		// checks the rest.
		var buf bytes.Buffer
		buf.WriteByte('{')
		if len(r.Params.Arguments) > 0 {
			if !oneJSONValue(r.Params.Arguments) {
				return "", nil, "", &token.InputError{Reason: "tools/call arguments are not one JSON value"}
			}
			buf.WriteString(`"arguments":`)
			buf.Write(r.Params.Arguments)
			buf.WriteByte(',')
		}
		buf.WriteString(`"name":`)
		writeString(&buf, r.Params.Name)
		buf.WriteByte('}')
		return MethodCallTool, buf.Bytes(), r.ProtocolVersion(), nil
	case *mcp.ReadResourceRequest:
		if r == nil || r.Params == nil {
			return "", nil, "", errors.New("mcpstate: resources/read request without params")
		}
		if whole {
			return MethodReadResource, raw, r.ProtocolVersion(), nil
		}
		p, err := marshal(struct {
			URI string `json:"uri"`
		}{r.Params.URI})
		return MethodReadResource, p, r.ProtocolVersion(), err
	case *mcp.GetPromptRequest:
		if r == nil || r.Params == nil {
			return "", nil, "", errors.New("mcpstate: prompts/get request without params")
		}
		if whole {
			return MethodGetPrompt, raw, r.ProtocolVersion(), nil
		}
		// The members in canonical order, for the codecs' fast path (see tools/call).
		p, err := marshal(struct {
			// omitzero, not omitempty: an empty map the client sent ("arguments":{}) is bound as {},
			// as Snodo binds it, and only arguments the client left out (or null) are left out.
			Arguments map[string]string `json:"arguments,omitzero"`
			Name      string            `json:"name"`
		}{r.Params.Arguments, r.Params.Name})
		return MethodGetPrompt, p, r.ProtocolVersion(), err
	case nil:
		return "", nil, "", &token.ConfigError{Field: "mcpstate request", Reason: reasonNil}
	default:
		return "", nil, "", fmt.Errorf(
			"mcpstate: %T is not a tools/call, resources/read or prompts/get request received by a server", req)
	}
}

// sameAsDecoded reports whether raw, the params WholeParams returned, holds what the SDK decoded req
// from: whether the handler reads what the Guard binds. Each method's members are read the way the
// SDK (v1.8.0) reads them, case-sensitively, and only those: tools/call's "name" (a string) and
// "arguments" (kept raw), resources/read's "uri", prompts/get's "name" and "arguments" (a map of
// strings, where null and an absent map are no arguments and a null value is ""). Members a method
// does not carry ("uri" in a tools/call, "name" in a resources/read, "task", ...) are bound and never
// compared. Params that cannot be read, or repeat a compared member, are left to the codec, which
// refuses them as the client's.
//
// It runs before any token is authenticated, so its cost is linear in raw: RecordParams hands over
// the very bytes the SDK decoded, so arguments are compared as bytes first and canonicalized only
// when their bytes differ.
func sameAsDecoded(req mcp.Request, raw []byte) bool {
	var m sdkMembers
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		m.names = [2]string{"name", "arguments"}
		if !m.read(raw) {
			return true
		}
		return sameString(m.values[0], r.Params.Name) && sameRaw(m.values[1], r.Params.Arguments)
	case *mcp.ReadResourceRequest:
		m.names = [2]string{"uri"}
		if !m.read(raw) {
			return true
		}
		return sameString(m.values[0], r.Params.URI)
	case *mcp.GetPromptRequest:
		m.names = [2]string{"name", "arguments"}
		if !m.read(raw) {
			return true
		}
		return sameString(m.values[0], r.Params.Name) && sameStringMap(m.values[1], r.Params.Arguments)
	}
	return false // unreachable: salient has already rejected any other request
}

// sdkMembers holds the values (raw JSON, nil when absent) of the top-level members named in names
// (an empty name is unused).
type sdkMembers struct {
	names  [2]string
	values [2][]byte
}

// read fills m.values from the params object raw. It returns false if raw is not an object that can
// be read, or repeats one of m.names (which of two the SDK kept is its decoder's business).
func (m *sdkMembers) read(raw []byte) bool {
	d := canonical.GetDecoder(raw)
	defer canonical.PutDecoder(d)
	if !d.Consume('{') {
		return false
	}
	var name []byte
	for first := true; !d.Consume('}'); first = false {
		if !first && !d.Consume(',') {
			return false
		}
		var err error
		if name, err = d.String(name[:0]); err != nil || !d.Consume(':') {
			return false
		}
		d.SkipSpace()
		start := d.Offset()
		if d.SkipValue() != nil {
			return false
		}
		for i, n := range m.names {
			if n != "" && string(name) == n {
				if m.values[i] != nil {
					return false
				}
				m.values[i] = raw[start:d.Offset()]
			}
		}
	}
	return true
}

// sameString reports whether the JSON value v decodes to s as the SDK decodes a string field: absent
// and null leave it "".
func sameString(v []byte, s string) bool {
	if v == nil || string(v) == "null" {
		return s == ""
	}
	d := canonical.GetDecoder(v)
	defer canonical.PutDecoder(d)
	got, err := d.String(nil)
	return err == nil && string(got) == s
}

// sameRaw reports whether the JSON value v is the raw value the SDK kept (tools/call's arguments):
// the same bytes, or failing that the same JSON value.
func sameRaw(v, kept []byte) bool {
	if bytes.Equal(v, kept) {
		return true
	}
	if v == nil || kept == nil {
		return false
	}
	a, aerr := canonical.Append(nil, v)
	b, berr := canonical.Append(nil, kept)
	return aerr == nil && berr == nil && bytes.Equal(a, b)
}

// sameStringMap reports whether the JSON value v decodes to args as the SDK decodes prompt
// arguments (a map[string]string): absent, null and {} are no arguments, a null value is "".
func sameStringMap(v []byte, args map[string]string) bool {
	if v == nil || string(v) == "null" {
		return len(args) == 0
	}
	d := canonical.GetDecoder(v)
	defer canonical.PutDecoder(d)
	if !d.Consume('{') {
		return false
	}
	var name, value []byte
	n, differ := 0, false
	for first := true; !d.Consume('}'); first = false {
		if !first && !d.Consume(',') {
			return false
		}
		var err error
		if name, err = d.String(name[:0]); err != nil || !d.Consume(':') {
			return false
		}
		d.SkipSpace()
		if rest := v[d.Offset():]; bytes.HasPrefix(rest, []byte("null")) {
			if d.SkipValue() != nil {
				return false
			}
			value = value[:0]
		} else if value, err = d.String(value[:0]); err != nil {
			return false
		}
		want, ok := args[string(name)]
		if !ok {
			return false // the SDK decodes every member into the map
		}
		differ = differ || want != string(value)
		n++
	}
	// More members than the map holds, each of them in it: a name repeats, and which value the SDK
	// kept is its decoder's business. The codec refuses such arguments as the client's.
	return n > len(args) || (n == len(args) && !differ)
}

// oneJSONValue reports whether b is one JSON value, checking its syntax only (the codec reads the
// rest): a fraction of the cost of json.Valid.
func oneJSONValue(b []byte) bool {
	d := canonical.GetDecoder(b)
	defer canonical.PutDecoder(d)
	return d.SkipValue() == nil && d.End() == nil
}

func requestState(req mcp.Request) string {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		return r.Params.RequestState
	case *mcp.ReadResourceRequest:
		return r.Params.RequestState
	case *mcp.GetPromptRequest:
		return r.Params.RequestState
	}
	return "" // unreachable: salient has already rejected any other request
}

// marshal is json.Marshal without HTML escaping, so that strings keep their bytes.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := marshal(s) // a Go string always marshals
	buf.Write(b)
}
