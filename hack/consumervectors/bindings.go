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
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// bindingsFile is bindings.json: a token sealed for one request and opened for another, and the
// result every format counts for it (docs/consumers.md, "Metrics").
type bindingsFile struct {
	Comment []string `json:"comment"`
	Keyring struct {
		file
		Keys []keyInfo `json:"keys"`
	} `json:"keyring"`
	// NowUnix is the clock, in Unix seconds, of every seal and open the file's tokens and results
	// come from.
	NowUnix    int64 `json:"nowUnix"`
	TTLSeconds int64 `json:"ttlSeconds"`
	// Server is the Sealed codec's server, the first line of the rs2 associated data, and
	// python-sdk's audience.
	Server string `json:"server"`
	// State is the JSON text of the state the Signed and Sealed tokens carry; rs2's payload is its
	// bytes.
	State   string           `json:"state"`
	Formats []bindingsFormat `json:"formats"`
	Cases   []bindingsCase   `json:"cases"`
}

// bindingsFormat says what a format binds, who runs it, and why it counts what it counts.
type bindingsFormat struct {
	Name      string   `json:"name"`
	Consumers []string `json:"consumers"`
	Binds     string   `json:"binds"`
	Rejects   string   `json:"rejects"`
}

// request is one side of a case: the request a token is sealed for, or opened with.
type request struct {
	Method          string          `json:"method"`
	Params          json.RawMessage `json:"params"`
	Principal       json.RawMessage `json:"principal"`
	ProtocolVersion string          `json:"protocolVersion"`
	// RS2AD is the rs2 associated data of this request, as text.
	RS2AD string `json:"rs2Ad"`
}

type bindingsCase struct {
	Name string  `json:"name"`
	Seal request `json:"seal"`
	Open request `json:"open"`
	// Results are the result each format counts for the open, by format name.
	Results map[string]metrics.Result `json:"results"`
	// Tokens are the tokens sealed for Seal at NowUnix, for the formats whose tokens are
	// deterministic (Signed, rs2); Sealed and python-sdk draw a fresh nonce for every seal.
	Tokens map[string]string `json:"tokens"`
}

var bindingsComment = []string{
	"Made by `go run ./hack/consumervectors` from pkg/token; do not edit. See docs/consumers.md, \"Metrics\".",
	"Each case seals a token for `seal` and opens it for `open`; `results` is what each format's consumer",
	"counts for that open (the `result` label of mrtr_consumer_tokens_opened_total).",
	"The keyring is `keyring.data` (a keyring.json, standard base64), its one key `keyring.keys`.",
	"Every seal and open happens at `nowUnix` (Unix seconds) with tokens that live `ttlSeconds`.",
	"`server` is the Sealed codec's server, the first line of the rs2 associated data, and python-sdk's",
	"audience. `state` is the JSON text of the Signed and Sealed state; the rs2 payload is its bytes.",
	"A request: `method`, `params` (the request's params object: the tool's `name` and `arguments`),",
	"`principal` (the authenticated caller as JSON, null for anonymous), `protocolVersion`, and `rs2Ad`,",
	"the rs2 associated data of the request (the example servers' layout: server, principal, method,",
	"tool and location, one per line; the principal's JSON text, or `anonymous` for null).",
	"`tokens` are the tokens sealed for `seal` at `nowUnix` in the deterministic formats (Signed, rs2):",
	"a consumer's seal at that clock gives these bytes. python-sdk consumers map the request to the SDK's",
	"binding: the tool (params.name), its arguments, and bind_principal's answer: null is None, any other",
	"principal its JSON text.",
	"`formats` says, per format, what it binds and why it counts what it counts: rs2's tag covers the",
	"binding, so an rs2 consumer counts bad_mac where the others count binding_mismatch.",
}

// The keyring, clock and request of the binding vectors.
const (
	bindingsServer   = "weather"
	bindingsNow      = 1767225600 // 2026-01-01T00:00:00Z
	bindingsTTL      = 300 * time.Second
	bindingsProtocol = "2026-07-28"
)

var bindingsFormats = []bindingsFormat{
	{
		Name:      token.CodecSigned,
		Consumers: []string{"Go (token.Signed)", "TypeScript (SignedCodec)"},
		Binds: "canonical([method, params without _meta, requestState and inputResponses, principal]), " +
			"checked after the MAC",
		Rejects: "an authentic token of another request or principal: binding_mismatch",
	},
	{
		Name:      token.CodecSealed,
		Consumers: []string{"Go (token.Sealed)"},
		Binds: "the protocol version, method and server in the AES-GCM associated data; the params' digest and " +
			"the principal in the payload, checked after the tag",
		Rejects: "other params or another principal: binding_mismatch (another method, protocol version or " +
			"server fails the tag: bad_mac)",
	},
	{
		Name:      token.CodecRS2,
		Consumers: []string{"Go (token.RS2)", "Rust (mrtr_keyring::Rs2Codec)"},
		Binds:     "the associated data (rs2Ad), in the HMAC tag: the token does not carry it",
		Rejects: "a token of another binding fails its tag: bad_mac, never binding_mismatch. No rs2 consumer can " +
			"tell a wrong binding from a forged tag, and changing that would break compatibility with rmcp",
	},
	{
		Name:      token.CodecPythonSDK,
		Consumers: []string{"Python (mrtr_keyring.mcp, python-sdk mcp 2.3.0)"},
		Binds: "the method, the tool, the arguments' digest, the audience and the principal in the claims, which " +
			"the SDK's boundary checks after the codec opened the token",
		Rejects: "binding_mismatch with mrtr_keyring.mcp.meter_boundary(server); without it the codec alone " +
			"counts ok for a token the boundary then refuses",
	},
}

// bindingsKey is the keyring's one key.
func bindingsKey() keyring.Key { return keyring.NewKey("bindings-1", secret(100, 32)) }

// weather is a tools/call of tool with one location, by principal (nil: anonymous).
func weather(tool, location string, principal any) request {
	type arguments struct {
		Location string `json:"location"`
	}
	params, err := json.Marshal(struct {
		Name      string    `json:"name"`
		Arguments arguments `json:"arguments"`
	}{tool, arguments{location}})
	if err != nil {
		panic(err)
	}
	p := token.Anonymous
	shown := "anonymous"
	if principal != nil {
		if p, err = json.Marshal(principal); err != nil {
			panic(err)
		}
		shown = string(p)
	}
	return request{Method: "tools/call", Params: params, Principal: p, ProtocolVersion: bindingsProtocol,
		RS2AD: fmt.Sprintf("%s\n%s\n%s\n%s\n%s", bindingsServer, shown, "tools/call", tool, location)}
}

func (r request) binding() token.Binding {
	return token.Binding{Method: r.Method, Params: r.Params, Principal: r.Principal, ProtocolVersion: r.ProtocolVersion}
}

// lastResult is a metrics.Recorder that keeps the result of the last open.
type lastResult struct {
	metrics.Nop
	result metrics.Result
}

func (r *lastResult) TokenOpened(_ string, res metrics.Result) { r.result = res }

// bindingCodecs are the three Go codecs over one keyring at one clock, reporting to one recorder.
type bindingCodecs struct {
	signed *token.Signed
	sealed *token.Sealed
	rs2    *token.RS2
	rec    *lastResult
}

func newBindingCodecs(ring *keyring.Keyring, now time.Time, ttl time.Duration, server string) (*bindingCodecs, error) {
	src := keyring.Static(ring)
	clock := func() time.Time { return now }
	c := &bindingCodecs{rec: &lastResult{}}
	var err error
	if c.signed, err = token.NewSigned(src, token.SignedClock(clock), token.SignedTTL(ttl), token.SignedMetrics(c.rec)); err != nil {
		return nil, err
	}
	if c.sealed, err = token.NewSealed(src, server, token.SealedClock(clock), token.SealedTTL(ttl), token.SealedMetrics(c.rec)); err != nil {
		return nil, err
	}
	if c.rs2, err = token.NewRS2(src, token.RS2Clock(clock), token.RS2TTL(ttl), token.RS2Metrics(c.rec)); err != nil {
		return nil, err
	}
	return c, nil
}

// run seals state for seal and opens it for open in every Go format: the result each counted, and
// the tokens of the deterministic formats.
func (c *bindingCodecs) run(seal, open request, state string) (map[string]metrics.Result, map[string]string, error) {
	results := map[string]metrics.Result{}
	tokens := map[string]string{}
	opened := func(format string, err error) error {
		if (err == nil) != (c.rec.result == metrics.OK) {
			return fmt.Errorf("%s: Open returned %v and counted %q", format, err, c.rec.result)
		}
		results[format] = c.rec.result
		return nil
	}
	tok, err := c.signed.Seal(seal.binding(), json.RawMessage(state))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", token.CodecSigned, err)
	}
	tokens[token.CodecSigned] = tok
	_, err = c.signed.Open(open.binding(), tok)
	if err = opened(token.CodecSigned, err); err != nil {
		return nil, nil, err
	}
	if tok, err = c.sealed.Seal(seal.binding(), json.RawMessage(state)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", token.CodecSealed, err)
	}
	_, err = c.sealed.Open(open.binding(), tok)
	if err = opened(token.CodecSealed, err); err != nil {
		return nil, nil, err
	}
	if tok, err = c.rs2.Seal([]byte(seal.RS2AD), []byte(state)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", token.CodecRS2, err)
	}
	tokens[token.CodecRS2] = tok
	_, err = c.rs2.Open(tok, []byte(open.RS2AD))
	if err = opened(token.CodecRS2, err); err != nil {
		return nil, nil, err
	}
	return results, tokens, nil
}

// pythonSDKResult is what a python-sdk consumer counts, with meter_boundary: mcp 2.3's boundary
// binds a tools/call to the tool, the digest of its arguments as JSON values, the audience and the
// principal, and refuses a token of another one after the codec opened it.
func pythonSDKResult(seal, open request) (metrics.Result, error) {
	type call struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	var s, o call
	if err := json.Unmarshal(seal.Params, &s); err != nil {
		return "", err
	}
	if err := json.Unmarshal(open.Params, &o); err != nil {
		return "", err
	}
	if seal.Method == open.Method && s.Name == o.Name && reflect.DeepEqual(s.Arguments, o.Arguments) &&
		bytes.Equal(seal.Principal, open.Principal) {
		return metrics.OK, nil
	}
	return metrics.BindingMismatch, nil
}

func bindingVectors() (*bindingsFile, error) {
	ring, err := keyring.New(bindingsKey())
	if err != nil {
		return nil, err
	}
	doc, err := keyring.Marshal(ring)
	if err != nil {
		return nil, err
	}
	out := &bindingsFile{Comment: bindingsComment, NowUnix: bindingsNow, TTLSeconds: int64(bindingsTTL / time.Second),
		Server: bindingsServer, State: `{"step":1}`, Formats: bindingsFormats}
	out.Keyring.file = newFile(doc, 0)
	k := bindingsKey()
	out.Keyring.Keys = []keyInfo{{ID: k.ID(), Secret: k.Secret(), PythonKid: k.PythonKid()}}

	codecs, err := newBindingCodecs(ring, time.Unix(bindingsNow, 0), bindingsTTL, bindingsServer)
	if err != nil {
		return nil, err
	}
	ada := weather("get_weather", "Paris", "user:ada")
	for _, c := range []struct {
		name       string
		seal, open request
	}{
		{"the same request", ada, ada},
		{"another principal", ada, weather("get_weather", "Paris", "user:grace")},
		{"other arguments", ada, weather("get_weather", "Rome", "user:ada")},
		{"another tool", ada, weather("get_forecast", "Paris", "user:ada")},
		{"signed in, then anonymous", ada, weather("get_weather", "Paris", nil)},
		{"anonymous, then signed in", weather("get_weather", "Paris", nil), ada},
	} {
		results, tokens, err := codecs.run(c.seal, c.open, out.State)
		if err != nil {
			return nil, fmt.Errorf("binding case %q: %w", c.name, err)
		}
		if results[token.CodecPythonSDK], err = pythonSDKResult(c.seal, c.open); err != nil {
			return nil, fmt.Errorf("binding case %q: %w", c.name, err)
		}
		out.Cases = append(out.Cases, bindingsCase{Name: c.name, Seal: c.seal, Open: c.open, Results: results, Tokens: tokens})
	}
	return out, nil
}
