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
	"fmt"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// tokenTTLFile is token-ttl.json.
type tokenTTLFile struct {
	Comment []string     `json:"comment"`
	Valid   []validTTL   `json:"valid"`
	Invalid []invalidTTL `json:"invalid"`
}

type validTTL struct {
	Name string `json:"name"`
	file
	Seconds int64 `json:"seconds"`
}

type invalidTTL struct {
	Name string `json:"name"`
	file
	Error string `json:"error"`
}

var tokenTTLComment = []string{
	"Made by `go run ./hack/consumervectors` from pkg/keyring (ParseTokenTTL); do not edit. See docs/consumers.md.",
	"The content of the optional token-ttl file beside keyring.json: `data` (standard base64) is the file's",
	"bytes, `text` the same as text. valid: what it declares, in whole seconds; a consumer must never seal a",
	"token that outlives it. invalid: the file must be refused, and with it the whole snapshot (keyring.json",
	"included): the consumer keeps serving its last good keyring. No token-ttl file at all declares nothing.",
	"The rule: ASCII decimal digits, 1 to 900, no sign, no leading zero, no space, one optional final \\n.",
}

func tokenTTLVectors() (*tokenTTLFile, error) {
	out := &tokenTTLFile{Comment: tokenTTLComment}
	for _, v := range []struct{ name, text string }{
		{"the least", "1"},
		{"the most (15 minutes)", "900"},
		{"the default tokenTTL (5 minutes)", "300"},
		{"with a final newline", "300\n"},
		{"one minute", "60"},
	} {
		d, err := keyring.ParseTokenTTL([]byte(v.text))
		if err != nil {
			return nil, fmt.Errorf("valid token-ttl %q: %w", v.name, err)
		}
		out.Valid = append(out.Valid, validTTL{Name: v.name, file: newFile([]byte(v.text), 0), Seconds: int64(d / time.Second)})
	}
	for _, v := range []struct{ name, text string }{
		{"empty", ""},
		{"only a newline", "\n"},
		{"zero", "0"},
		{"one over the most", "901"},
		{"an hour", "3600"},
		{"negative", "-1"},
		{"a plus sign", "+300"},
		{"a leading zero", "0300"},
		{"a leading space", " 300"},
		{"a trailing space", "300 "},
		{"two final newlines", "300\n\n"},
		{"a CRLF line end", "300\r\n"},
		{"a leading newline", "\n300"},
		{"a decimal point", "300.0"},
		{"a unit", "300s"},
		{"a Go duration", "5m"},
		{"hexadecimal", "0x12c"},
		{"beyond 64 bits", "99999999999999999999999"},
		{"non-ASCII digits", "٣٠٠"},
		{"a NUL after the number", "300\x00"},
	} {
		_, err := keyring.ParseTokenTTL([]byte(v.text))
		if err == nil {
			return nil, fmt.Errorf("invalid token-ttl %q: ParseTokenTTL accepted it", v.name)
		}
		out.Invalid = append(out.Invalid, invalidTTL{Name: v.name, file: newFile([]byte(v.text), 0), Error: err.Error()})
	}
	return out, nil
}
