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

package keyring

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// tellKey has bytes that are easy to spot in any encoding fmt, json or a logger might use.
var tellBytes = []byte("TOPSECRET-TOPSECRET-TOPSECRET-TOPSECRET!")

// leaks reports the first encoding of the key bytes found in out.
func leaks(out string) (string, bool) {
	dec := make([]string, 0, 8)
	for _, c := range tellBytes[:8] {
		dec = append(dec, fmt.Sprint(c))
	}
	forms := map[string]string{
		"raw":            string(tellBytes[:8]),
		"hex":            hex.EncodeToString(tellBytes[:8]),
		"HEX":            strings.ToUpper(hex.EncodeToString(tellBytes[:8])),
		"base64":         base64.StdEncoding.EncodeToString(tellBytes)[:12],
		"base64url":      base64.RawURLEncoding.EncodeToString(tellBytes)[:12],
		"decimal bytes":  strings.Join(dec, " "),
		"decimal commas": strings.Join(dec, ","),
		"go bytes":       fmt.Sprintf("%#v", tellBytes[:4])[len("[]byte{"):],
	}
	for name, f := range forms {
		if strings.Contains(out, f) {
			return name, true
		}
	}
	return "", false
}

func TestNoOutputPathShowsKeyBytes(t *testing.T) {
	k := NewKey("tell", tellBytes)
	r, err := New(k, NewKey("other", tellBytes[1:33]))
	if err != nil {
		t.Fatal(err)
	}
	if _, leaked := leaks(string(tellBytes)); !leaked { // the detector itself must work
		t.Fatal("leak detector does not see the raw bytes")
	}
	if _, leaked := leaks(fmt.Sprintf("%x", tellBytes)); !leaked {
		t.Fatal("leak detector does not see hex")
	}
	type holder struct {
		K  Key
		R  *Keyring
		RV Keyring
		ks []Key
		rv Keyring
	}
	h := holder{K: k, R: r, RV: *r, ks: r.Keys(), rv: *r}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T", "%10.3v"} {
		outputs["key "+verb] = fmt.Sprintf(verb, k)
		outputs["*keyring "+verb] = fmt.Sprintf(verb, r)
		outputs["keyring value "+verb] = fmt.Sprintf(verb, *r)
		outputs["[]Key "+verb] = fmt.Sprintf(verb, r.Keys())
		outputs["struct "+verb] = fmt.Sprintf(verb, h)
		outputs["&struct "+verb] = fmt.Sprintf(verb, &h)
	}
	outputs["key String"] = k.String()
	outputs["key GoString"] = k.GoString()
	outputs["keyring String"] = r.String()
	outputs["keyring GoString"] = r.GoString()
	outputs["Sprint"] = fmt.Sprint(k, r, *r)
	outputs["Sprintln"] = fmt.Sprintln(k, r, *r)
	outputs["error wrap"] = fmt.Errorf("bad: %v %w", r, fmt.Errorf("%v", k)).Error()

	structuredOutputs(t, outputs, map[string]any{"key": k, "*keyring": r, "keyring value": *r, "struct": h, "[]Key": r.Keys()},
		fmt.Errorf("reload: %v", r), "key", k, "keyring", r, "value", *r, "holder", h)

	for name, out := range outputs {
		if form, leaked := leaks(out); leaked {
			t.Errorf("%s shows the key bytes (%s): %s", name, form, out)
		}
	}

	// And what they do show is useful: ids and the fingerprint.
	for _, name := range []string{"*keyring %v", "json *keyring", "slog json", "logr funcr"} {
		if out := outputs[name]; !strings.Contains(out, r.Fingerprint()) || !strings.Contains(out, "tell") {
			t.Errorf("%s does not show the ids and fingerprint: %s", name, out)
		}
	}
	if got, want := outputs["json key"], `{"id":"tell","bytes":40}`; got != want {
		t.Errorf("json key = %s, want %s", got, want)
	}
	if got := fmt.Sprint((*Keyring)(nil)); got != "Keyring(nil)" {
		t.Errorf("nil keyring prints as %q", got)
	}
}

// structuredOutputs adds to outputs what structured encoders write of secret-bearing values: the
// JSON of each of values (under "json <name>"), and a line logged with the key-value pairs kv by
// each slog handler ("slog text", "slog json") and by logr's funcr ("logr funcr", also an error
// line with err and the first pair).
func structuredOutputs(t *testing.T, outputs map[string]string, values map[string]any, err error, kv ...any) {
	t.Helper()
	for name, v := range values {
		b, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatalf("json.Marshal(%s): %v", name, jerr)
		}
		outputs["json "+name] = string(b)
	}
	var buf bytes.Buffer
	for name, hnd := range map[string]slog.Handler{
		"text": slog.NewTextHandler(&buf, nil),
		"json": slog.NewJSONHandler(&buf, nil),
	} {
		buf.Reset()
		slog.New(hnd).Info("logged", kv...)
		outputs["slog "+name] = buf.String()
	}
	var logged strings.Builder
	log := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	log.Info("logged", kv...)
	log.Error(err, "failed", kv[:2]...)
	outputs["logr funcr"] = logged.String()
}
