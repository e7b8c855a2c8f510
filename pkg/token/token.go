package token

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrInvalid is the one error every failed Open returns: oversize, malformed, tampered, unknown key,
// another request or principal, expired.
var ErrInvalid = errors.New("invalid or expired request state")

// ConfigError reports a caller or configuration mistake, never a property of an untrusted token.
type ConfigError struct {
	Field  string // the option or argument at fault, e.g. "TTL" or "Binding.Principal"
	Reason string
}

// The ConfigError.Field names the codecs use for their arguments.
const (
	fieldSrc       = "src"
	fieldState     = "state"
	fieldMethod    = "Binding.Method"
	fieldPrincipal = "Binding.Principal"
	fieldParams    = "Binding.Params"

	reasonEmpty = "is empty"
)

func (e *ConfigError) Error() string { return fmt.Sprintf("token: %s: %s", e.Field, e.Reason) }

// IsConfigError reports whether err is or wraps a *ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

// Anonymous is the Principal of a request that deliberately has none. An empty Principal is a
// ConfigError, so that forgetting to bind the caller cannot happen silently.
var Anonymous = json.RawMessage("null")

// Binding is what a token is bound to: the request that produced it and who made it. A token opens
// only with an equal Binding.
type Binding struct {
	// Method is the JSON-RPC method, e.g. "tools/call".
	Method string
	// Params is the request's params object as received. Its top-level "_meta", "requestState" and
	// "inputResponses" are not salient and are ignored; everything else, at any depth, is bound.
	Params json.RawMessage
	// Principal is the authenticated caller as any JSON value, or Anonymous.
	Principal json.RawMessage
	// ProtocolVersion is the MCP protocol version of the request. The Sealed codec binds it; Snodo's
	// wire format has no place for it, so the Signed codec does not.
	ProtocolVersion string
}

// unsalientParams are the top-level params that change between the rounds of one request, so
// neither codec binds them (see Binding.Params).
var unsalientParams = []string{"_meta", "requestState", "inputResponses"}

// Codec seals request state into a token and opens it again. Implementations are safe for
// concurrent use.
type Codec interface {
	// Seal returns a token carrying state (a JSON value) bound to b.
	Seal(b Binding, state json.RawMessage) (string, error)
	// Open returns the state of a token sealed for an equal binding, or ErrInvalid.
	Open(b Binding, token string) (json.RawMessage, error)
}
