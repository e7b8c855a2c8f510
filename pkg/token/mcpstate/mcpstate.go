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
//			return guard.CallToolInputRequired(req, state, mcp.InputRequestMap{"login": &mcp.ElicitParams{...}})
//		}
//		state, err := guard.Open(req) // a *jsonrpc.Error (-32602) for a bad token: return it as is
//		...
//	}
//
// The binding of a request (Bind) is its method, its salient params as received on the wire (the
// params minus "_meta", "inputResponses" and "requestState", which differ between rounds), the
// protocol version of the request and the principal that the Guard's PrincipalFunc derives from the
// request's auth info.
package mcpstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token"
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

// IsInvalidRequestState reports whether err is or wraps the error of InvalidRequestState, as a client
// receives it from CallTool, ReadResource or GetPrompt.
func IsInvalidRequestState(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		return false
	}
	var data struct {
		Reason string `json:"reason"`
	}
	return json.Unmarshal(je.Data, &data) == nil && data.Reason == Reason
}

// PrincipalFunc returns the principal a request's state is bound to, as a JSON value, or
// token.Anonymous for a request that deliberately has none. An error means the request cannot be
// served with state (for example: it carries no authenticated user although one is required).
type PrincipalFunc func(req mcp.Request) (json.RawMessage, error)

// ErrNoPrincipal is returned by FromTokenInfo for a request without an authenticated user.
var ErrNoPrincipal = errors.New("mcpstate: request carries no authenticated user (no auth.TokenInfo with a UserID)")

// FromTokenInfo binds state to the authenticated user: the UserID of the request's auth.TokenInfo,
// which the SDK's auth.RequireBearerToken middleware puts in RequestExtra. A request without one is
// an error (ErrNoPrincipal), never silently anonymous.
func FromTokenInfo(req mcp.Request) (json.RawMessage, error) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil || extra.TokenInfo.UserID == "" {
		return nil, ErrNoPrincipal
	}
	return json.Marshal(extra.TokenInfo.UserID)
}

// Anonymous binds every request to token.Anonymous: the explicit choice of a server that does not
// authenticate its callers. Codecs may give anonymous state a shorter life.
func Anonymous(mcp.Request) (json.RawMessage, error) { return token.Anonymous, nil }

// Guard seals and opens the request state of one server. It is safe for concurrent use.
type Guard struct {
	codec     token.Codec
	principal PrincipalFunc
}

// New returns a Guard sealing with codec and binding state to the principal that principal returns.
// It panics on a nil argument, a programming error.
func New(codec token.Codec, principal PrincipalFunc) *Guard {
	if codec == nil || principal == nil {
		panic("mcpstate: New needs a codec and a PrincipalFunc")
	}
	return &Guard{codec: codec, principal: principal}
}

// Bind returns the binding of a tools/call, resources/read or prompts/get request received by a
// server. Any other request is an error.
func (g *Guard) Bind(req mcp.Request) (token.Binding, error) {
	method, params, version, err := salient(req)
	if err != nil {
		return token.Binding{}, err
	}
	principal, err := g.principal(req)
	if err != nil {
		return token.Binding{}, err
	}
	return token.Binding{Method: method, Params: params, Principal: principal, ProtocolVersion: version}, nil
}

// Seal returns a request state carrying state (a JSON value) bound to req. Errors are the server's
// own (configuration, no keyring, no principal), never the client's.
func (g *Guard) Seal(req mcp.Request, state json.RawMessage) (string, error) {
	b, err := g.Bind(req)
	if err != nil {
		return "", err
	}
	return g.codec.Seal(b, state)
}

// Open returns the state of the request's requestState. A state that does not open (missing,
// malformed, tampered, sealed for another request or principal, under a removed key, expired) gives
// the *jsonrpc.Error of InvalidRequestState, for the handler to return unchanged. Other errors are
// the server's own.
func (g *Guard) Open(req mcp.Request) (json.RawMessage, error) {
	b, err := g.Bind(req)
	if err != nil {
		return nil, err
	}
	state, err := g.codec.Open(b, requestState(req))
	if errors.Is(err, token.ErrInvalid) {
		return nil, InvalidRequestState()
	}
	return state, err
}

// CallToolInputRequired returns the input-required result of a tools/call: inputs to fulfil, and
// state sealed for the retry.
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
// canonicalize what they bind, so the layout here does not matter, only the values.
func salient(req mcp.Request) (method string, params json.RawMessage, version string, err error) {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params == nil {
			return "", nil, "", errors.New("mcpstate: tools/call request without params")
		}
		var buf bytes.Buffer
		buf.WriteString(`{"name":`)
		writeString(&buf, r.Params.Name)
		if len(r.Params.Arguments) > 0 {
			if !json.Valid(r.Params.Arguments) {
				return "", nil, "", errors.New("mcpstate: tools/call arguments are not valid JSON")
			}
			buf.WriteString(`,"arguments":`)
			buf.Write(r.Params.Arguments)
		}
		buf.WriteByte('}')
		return MethodCallTool, buf.Bytes(), r.ProtocolVersion(), nil
	case *mcp.ReadResourceRequest:
		if r.Params == nil {
			return "", nil, "", errors.New("mcpstate: resources/read request without params")
		}
		p, err := marshal(struct {
			URI string `json:"uri"`
		}{r.Params.URI})
		return MethodReadResource, p, r.ProtocolVersion(), err
	case *mcp.GetPromptRequest:
		if r.Params == nil {
			return "", nil, "", errors.New("mcpstate: prompts/get request without params")
		}
		p, err := marshal(struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments,omitempty"`
		}{r.Params.Name, r.Params.Arguments})
		return MethodGetPrompt, p, r.ProtocolVersion(), err
	default:
		return "", nil, "", fmt.Errorf("mcpstate: %T is not a tools/call, resources/read or prompts/get request received by a server", req)
	}
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
