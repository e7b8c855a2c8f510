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
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sync"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-dev/mrtr-operator/pkg/token/internal/canonical"
)

// RecordParams wraps the SDK's streamable HTTP handler (mcp.NewStreamableHTTPHandler) so that the
// params of each tools/call, resources/read and prompts/get request stay available, byte for byte,
// to RecordedParams while the request is served:
//
//	handler := mcpstate.RecordParams(mcp.NewStreamableHTTPHandler(getServer, opts))
//	guard := mcpstate.New(codec, mcpstate.FromTokenInfo, mcpstate.WholeParams(mcpstate.RecordedParams))
//
// The Guard then binds every member of the params, as Snodo does (see WholeParams). A POST body
// that is not one such request (a batch, a response, more than maxRecordedBody bytes, a repeated
// "method" or "params" member) is passed on unrecorded, and its requests are bound by what the
// SDK's types carry. Put RecordParams outside any middleware that rewrites the body.
//
// A request is told from the others by its Header map: the SDK hands the handler the very map it
// was given (mcp.RequestExtra.Header), and RecordParams gives each recorded request a copy of its
// own, which no client can name.
func RecordParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Header == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody+1))
		// The handler reads the same bytes: those read, then whatever is left.
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		params, ok := json.RawMessage(nil), false
		if err == nil && len(body) <= maxRecordedBody {
			params, ok = requestParams(body)
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		r = r.Clone(r.Context()) // a Header map of its own; the body is shared
		key := headerKey(r.Header)
		recorded.Store(key, params)
		defer recorded.Delete(key)
		next.ServeHTTP(w, r)
	})
}

// RecordedParams returns the params RecordParams recorded for req, for WholeParams.
func RecordedParams(req mcp.Request) (json.RawMessage, bool) {
	if v := reflect.ValueOf(req); req == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, false
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	p, ok := recorded.Load(headerKey(extra.Header))
	if !ok {
		return nil, false
	}
	return p.(json.RawMessage), true
}

// maxRecordedBody is the largest POST body RecordParams records: the SDK's limit on a message.
const maxRecordedBody = 4 << 20

// recorded maps the Header map of each request being served to its params. An entry lives while
// RecordParams serves its request; the map it is keyed by lives at least as long (the request and
// the handler hold it), so no other map can take its address meanwhile.
var recorded sync.Map

func headerKey(h http.Header) unsafe.Pointer { return reflect.ValueOf(h).UnsafePointer() }

type readCloser struct {
	io.Reader
	io.Closer
}

// requestParams returns the params of body if it is one JSON-RPC request of a method whose results
// may ask for input, with its params an object. Names are matched exactly, as the SDK decodes the
// envelope (case-sensitively), and a repeated "method" or "params" member records nothing.
func requestParams(body []byte) (json.RawMessage, bool) {
	d := canonical.GetDecoder(body)
	defer canonical.PutDecoder(d)
	if !d.Consume('{') {
		return nil, false
	}
	var method, params []byte
	methods, paramsSeen := 0, 0
	for first := true; !d.Consume('}'); first = false {
		if !first && !d.Consume(',') {
			return nil, false
		}
		d.SkipSpace()
		name, err := d.String(nil)
		if err != nil || !d.Consume(':') {
			return nil, false
		}
		d.SkipSpace()
		start := d.Offset()
		switch string(name) {
		case "method":
			methods++
			if method, err = d.String(nil); err != nil {
				return nil, false
			}
		case "params":
			paramsSeen++
			if err := d.SkipValue(); err != nil {
				return nil, false
			}
			params = body[start:d.Offset()]
		default:
			if err := d.SkipValue(); err != nil {
				return nil, false
			}
		}
	}
	switch {
	case methods != 1 || paramsSeen != 1 || len(params) == 0 || params[0] != '{':
		return nil, false
	case string(method) != MethodCallTool && string(method) != MethodReadResource && string(method) != MethodGetPrompt:
		return nil, false
	}
	return bytes.Clone(params), true
}
