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

package check

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// pyRepr writes b as Python's repr of bytes does.
func pyRepr(b []byte) string {
	var sb strings.Builder
	sb.WriteString("b'")
	for _, c := range b {
		switch {
		case c == '\\' || c == '\'':
			sb.WriteString(`\` + string(c))
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, `\x%02x`, c)
		}
	}
	sb.WriteString("'")
	return sb.String()
}

func ints(b []byte, sep string) string {
	s := make([]string, len(b))
	for i, c := range b {
		s[i] = strconv.Itoa(int(c))
	}
	return strings.Join(s, sep)
}

func hexSep(b []byte, sep string, upper bool) string {
	s := make([]string, len(b))
	for i, c := range b {
		s[i] = fmt.Sprintf("%02x", c)
		if upper {
			s[i] = strings.ToUpper(s[i])
		}
	}
	return strings.Join(s, sep)
}

// TestLeakForms: a key written in each language's native spellings is found, inside a larger text,
// and a key embedded at any byte offset of a base64 blob too; random text and other keys are not.
func TestLeakForms(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := newLeakScanner([][]byte{key})
	nodeInspect := "Uint8Array(32) [\n  " + ints(key[:12], ", ") + ",\n  " + ints(key[12:24], ", ") + ",\n  " + ints(key[24:], ", ") + "\n]"
	forms := map[string]string{
		"python bytes repr":     "loaded key " + pyRepr(key),
		"python list":           "key=[" + ints(key, ", ") + "]",
		"csv ints":              ints(key, ","),
		"node Buffer":           "<Buffer " + hexSep(key, " ", false) + ">",
		"node Uint8Array":       nodeInspect,
		"node Buffer JSON":      `{"type":"Buffer","data":[` + ints(key, ",") + `]}`,
		"hex lower":             hex.EncodeToString(key),
		"hex upper":             strings.ToUpper(hex.EncodeToString(key)),
		"hex colons":            hexSep(key, ":", true),
		"0x list":               "[0x" + hexSep(key, ", 0x", false) + "]",
		"go %q":                 strconv.Quote(string(key)),
		"base64":                base64.StdEncoding.EncodeToString(key),
		"base64url":             base64.RawURLEncoding.EncodeToString(key),
		"raw":                   "key " + string(key) + " end",
		"first 20 bytes in hex": hex.EncodeToString(key[:20]),
	}
	for off := range 6 {
		blob := make([]byte, 40+off)
		_, _ = rand.Read(blob)
		blob = append(append(blob[:off+7], key...), blob[off+7:]...)
		forms[fmt.Sprintf("base64 of a blob, key at offset %d", off+7)] = "x=" + base64.StdEncoding.EncodeToString(blob)
		forms[fmt.Sprintf("base64url of a blob, key at offset %d", off+7)] = base64.URLEncoding.EncodeToString(blob) + "."
		wrapped := base64.StdEncoding.EncodeToString(blob)
		forms[fmt.Sprintf("base64 wrapped, key at offset %d", off+7)] = wrapped[:20] + "\n" + wrapped[20:]
	}
	for name, text := range forms {
		if got := s.scan([]byte("2026-12-05 INFO " + text + " done")); len(got) == 0 {
			t.Errorf("%s: not found in %q", name, text)
		}
	}

	other := make([]byte, 32)
	_, _ = rand.Read(other)
	for name, text := range map[string]string{
		"another key":        pyRepr(other) + ints(other, ", ") + hex.EncodeToString(other) + base64.StdEncoding.EncodeToString(other),
		"15 bytes":           hex.EncodeToString(key[:15]) + " " + ints(key[17:], ","),
		"probe lines":        "loaded bb0a97748c2a0775 300\nserving bb0a97748c2a0775 none\n",
		"ints out of order":  ints(append(append([]byte{}, key[8:16]...), key[:8]...), ", "),
		"ints broken by 256": ints(key[:15], ", ") + ", 256, " + ints(key[15:30], ", "),
	} {
		if got := s.scan([]byte(text)); len(got) != 0 {
			t.Errorf("%s: found %v in %q", name, got, text)
		}
	}
}
