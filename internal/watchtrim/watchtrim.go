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

// Package watchtrim drops metadata.managedFields from the watch events of custom resources
// before client-go decodes them. The API server has no protobuf for a custom resource, and sends
// a keyring's field managers (about 1.8 of its 4.2 kB) in every watch event, which client-go then
// scans some five times over (framing, kind sniffing and decoding, for the event and again for
// the object) only for the cache's transform to drop them. Removing them from the event's bytes
// costs one light scan of the event (quotes and brackets only, to find where its object ends) and
// one of its metadata up to the end of managedFields; what stays is what the cache keeps anyway.
package watchtrim

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// bufferSize holds a whole watch event line in most cases; a longer one is put together in a
// buffer of its own.
const bufferSize = 64 << 10

// Transport returns a rest.Config.WrapTransport that trims the JSON watch events of the API
// groups named (the managedFields of each event's object), and leaves every other request and
// answer as it is.
func Transport(groups ...string) func(http.RoundTripper) http.RoundTripper {
	paths := make([]string, len(groups))
	for i, g := range groups {
		paths[i] = "/apis/" + g + "/"
	}
	return func(rt http.RoundTripper) http.RoundTripper { return &transport{next: rt, paths: paths} }
}

func newReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, bufferSize) }

type transport struct {
	next  http.RoundTripper
	paths []string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !t.watches(req) || resp.StatusCode != http.StatusOK || !isJSON(resp.Header.Get("Content-Type")) {
		return resp, err
	}
	resp.Body = &trimmingBody{body: resp.Body, r: newReader(resp.Body)}
	resp.ContentLength = -1 // shorter than said, if anything was said (a watch streams: it is not)
	resp.Header.Del("Content-Length")
	return resp, nil
}

// watches reports whether req is a watch of one of t's groups.
func (t *transport) watches(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	if w := req.URL.Query().Get("watch"); w != "true" && w != "1" {
		return false
	}
	for _, p := range t.paths {
		if strings.Contains(req.URL.Path, p) {
			return true
		}
	}
	return false
}

// isJSON reports whether a Content-Type is JSON (a watch's is application/json, with or without
// ;stream=watch).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// trimmingBody is a watch stream whose events, one per line as the API server writes them, come
// out trimmed (Trim).
type trimmingBody struct {
	body io.ReadCloser
	r    *bufio.Reader
	out  []byte // what is left of the current event
	long []byte // an event longer than r's buffer, put together
	err  error  // the stream's end or failure, returned once out is read
}

func (t *trimmingBody) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		line, err := t.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			t.long = append(t.long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = t.r.ReadSlice('\n')
				t.long = append(t.long, line...)
			}
			line = t.long
		}
		t.out, t.err = Trim(line), err
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

func (t *trimmingBody) Close() error { return t.body.Close() }

// Trim removes object.metadata.managedFields from event, one JSON watch event
// ({"type":...,"object":{...}}), in place, and returns what is left. An event without them, or
// that is not such an object as far as it is read, is returned as it is: its decoder reports what
// is wrong with it, and so is an event whose object does not end (cut off): it is trimmed only
// once it is whole.
func Trim(event []byte) []byte {
	obj, ok := member(event, 0, "object")
	if !ok || skipValue(event, obj) < 0 {
		return event
	}
	meta, ok := member(event, obj, "metadata")
	if !ok {
		return event
	}
	from, to, ok := memberSpan(event, meta, "managedFields")
	if !ok {
		return event
	}
	n := copy(event[from:], event[to:])
	return event[:from+n]
}

// member is where the value of key starts in the JSON object at b[at:], false when b has no
// object there or the object has no such key. The value itself is not read.
func member(b []byte, at int, key string) (int, bool) {
	found := -1
	walk(b, at, func(k []byte, _, value, _ int) bool {
		if string(k) == key {
			found = value
			return false
		}
		return true
	})
	return found, found >= 0
}

// memberSpan is the span to cut to remove key and its value from the JSON object at b[at:], with
// the comma that joins it to the next member (or, for the last, to the one before), false when
// there is no such object or key, or its value does not end.
func memberSpan(b []byte, at int, key string) (from, to int, ok bool) {
	prevEnd := -1 // the end of the value before key's, where the comma that precedes key starts
	walk(b, at, func(k []byte, start, value, before int) bool {
		if string(k) != key {
			return true
		}
		from, to, prevEnd = start, skipValue(b, value), before
		return false
	})
	if to <= 0 {
		return 0, 0, false
	}
	if i := skipSpace(b, to); i < len(b) && b[i] == ',' {
		return from, skipSpace(b, i+1), true
	}
	if prevEnd >= 0 {
		return prevEnd, to, true
	}
	return from, to, true
}

// walk calls fn for each member of the JSON object at b[at:] (after white space) with its key
// (raw, as written between the quotes), where the member starts (its key's quote), where its value
// starts, and where the value of the member before it ended (-1 for the first), until fn returns
// false or the object ends. fn is called before its member's value is read: a caller that stops
// at a key reads no further. walk stops at anything that is not JSON as far as it reads.
func walk(b []byte, at int, fn func(key []byte, start, value, before int) bool) {
	i := skipSpace(b, at)
	if i >= len(b) || b[i] != '{' {
		return
	}
	before := -1
	for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		start := i
		keyEnd := skipString(b, i)
		if keyEnd < 0 {
			return
		}
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return
		}
		value := skipSpace(b, i+1)
		if !fn(b[start+1:keyEnd-1], start, value, before) {
			return
		}
		end := skipValue(b, value)
		if end < 0 {
			return
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ',' {
			return
		}
		before = end
		i = skipSpace(b, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString is the index after the JSON string that starts at b[i] (a quote), -1 if it does not
// end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue is the index after the JSON value that starts at b[i], -1 if it does not end. A
// literal or number ends where a delimiter starts; objects and arrays by their brackets, counted
// outside strings.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !delimiter(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// delimiter reports whether c ends a literal or a number.
func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
