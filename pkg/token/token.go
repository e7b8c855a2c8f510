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

package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// ErrInvalid is the one error every failed Open returns: oversize, malformed, tampered, unknown key,
// another request or principal, expired.
var ErrInvalid = errors.New("invalid or expired request state")

// MaxTTL is the longest token lifetime either codec accepts: keyring.MaxTokenTTL, the one ceiling of
// MRTR, Snodo and the MRTRKeyring's tokenTTL, under the name this package's options read. The
// operator waits out the declared lifetime before it drops a key, so no server may seal tokens that
// outlive that wait.
const MaxTTL = keyring.MaxTokenTTL

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

	fieldKeyring = "keyring"

	reasonEmpty = "is empty"
	reasonNil   = "is nil"
)

func (e *ConfigError) Error() string { return fmt.Sprintf("token: %s: %s", e.Field, e.Reason) }

// IsConfigError reports whether err is or wraps a *ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

// InputError reports request params that Seal cannot bind: a repeated member name, invalid UTF-8 or
// a lone surrogate, a number out of range, an integer of more than 64 digits, nesting deeper than
// MaxParamsDepth (see Binding.Params). Params come from the client, so this is
// the client's mistake, not the server's: answer it as invalid params with a fixed message and never
// send Reason back (it quotes the client's member names and offsets; it is for the server's logs).
// mcpstate.Guard does exactly that.
type InputError struct {
	Reason string
}

func (e *InputError) Error() string { return "token: " + fieldParams + ": " + e.Reason }

// IsInputError reports whether err is or wraps an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// sealTimes returns the issue and expiry times, in Unix seconds, of a token sealed at now with a
// lifetime of ttl seconds. A clock before 1970, or so late that the expiry would not fit an int64,
// is a *ConfigError naming field: Seal must never write a token that Open cannot read.
func sealTimes(field string, now time.Time, ttl int64) (issued, expires int64, err error) {
	issued = now.Unix()
	switch {
	case issued < 0:
		return 0, 0, &ConfigError{Field: field, Reason: "returned a time before 1970"}
	case issued > math.MaxInt64-ttl:
		return 0, 0, &ConfigError{Field: field,
			Reason: fmt.Sprintf("returned a time too late for a token: its expiry would be past %d Unix seconds", int64(math.MaxInt64))}
	}
	return issued, issued + ttl, nil
}

// checkDeclaredTTL refuses a seal of ttl seconds under a keyring whose owner declared a shorter
// token lifetime (keyring.Keyring.MaxTokenTTL): the operator drops a key that long after the last
// pod sealed with it, so a longer token would fail before it expires. Caught on the first seal,
// not at the next rotation.
func checkDeclaredTTL(field string, ttl int64, ring *keyring.Keyring) error {
	if ring == nil {
		return nil
	}
	if max := ring.MaxTokenTTL(); max > 0 && time.Duration(ttl)*time.Second > max {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(
			"is %v, longer than the %v the keyring declares (its %s, the MRTRKeyring's tokenTTL): "+
				"tokens would outlive the rotation's wait; lower it, or raise spec.tokenTTL",
			time.Duration(ttl)*time.Second, max, keyring.TokenTTLDataKey)}
	}
	return nil
}

// checkTTL reports whether d is a valid lifetime: whole seconds from 1s to MaxTTL.
func checkTTL(field string, d time.Duration) error {
	switch {
	case d < time.Second || d > MaxTTL:
		return &ConfigError{Field: field, Reason: fmt.Sprintf("is %v: it must be between 1s and %v", d, MaxTTL)}
	case d%time.Second != 0:
		return &ConfigError{Field: field, Reason: fmt.Sprintf("is %v: it must be a whole number of seconds", d)}
	}
	return nil
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
	// Empty Params are no params, bound as {}; Params of any other JSON type are a *ConfigError
	// (the JSON-RPC layer refuses them before a handler runs, so the server passed the wrong bytes).
	//
	// Params are bound exactly as Snodo binds them: as JSON values, members in any order. Member
	// names are compared by their bytes, so names that differ only by case or Unicode case folding
	// ("Accept" and "accept", "k" and the Kelvin sign) are distinct members, each bound with its
	// value. Seal refuses (with an *InputError) what Snodo refuses: an object that repeats a member
	// name, invalid UTF-8 or a lone surrogate escape, a number beyond the float64 range, an integer
	// of more than 64 digits (Snodo.JSONValue.decode's limit), and nesting deeper than
	// MaxParamsDepth. Open answers such params with ErrInvalid: no token can have been
	// sealed for them.
	//
	// A handler that decodes bound params with Go's encoding/json, which matches member names to
	// struct fields without regard to case and keeps the last match, reads one of two folded names
	// chosen by their order, which the binding ignores. The codecs cannot know the handler's
	// decoder; mcpstate.Guard refuses such params by default (see its package doc).
	Params json.RawMessage
	// Principal is the authenticated caller as any JSON value, or Anonymous.
	Principal json.RawMessage
	// ProtocolVersion is the MCP protocol version of the request. The Sealed codec binds it; Snodo's
	// wire format has no place for it, so the Signed codec does not.
	ProtocolVersion string
}

// checkParamsObject refuses params that are neither empty (no params) nor a JSON object, as Snodo
// raises an ArgumentError for them: a JSON-RPC layer refuses a request whose params are not an
// object before any handler runs, so such params are the server's mistake, never the client's. The
// check reads the leading whitespace and one byte.
func checkParamsObject(params []byte) error {
	if len(params) == 0 {
		return nil
	}
	i := 0
	for i < len(params) && (params[i] == ' ' || params[i] == '\t' || params[i] == '\n' || params[i] == '\r') {
		i++
	}
	if i < len(params) && params[i] == '{' {
		return nil
	}
	return &ConfigError{Field: fieldParams,
		Reason: "is not a JSON object: bind the request's params object, or nothing for a request without params"}
}

// unboundParams are the top-level params that change between the rounds of one request, so
// neither codec binds them (see Binding.Params). UnboundParams gives them out.
var unboundParams = []string{"_meta", "requestState", "inputResponses"}

// UnboundParams are the names of the top-level params members that neither codec binds, because
// they change between the rounds of one request: "_meta", "requestState" and "inputResponses".
// Everything else in the params, at any depth, is bound. It returns a copy: the codecs' own list
// cannot be changed through it.
func UnboundParams() []string { return slices.Clone(unboundParams) }

// Codec seals request state into a token and opens it again. Implementations are safe for
// concurrent use.
type Codec interface {
	// Seal returns a token carrying state (a JSON value) bound to b.
	Seal(b Binding, state json.RawMessage) (string, error)
	// Open returns the state of a token sealed for an equal binding, or ErrInvalid.
	Open(b Binding, token string) (json.RawMessage, error)
}
