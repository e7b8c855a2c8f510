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
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// Every way of showing a Key or a Keyring outside the codec goes through this file, and each one
// shows ids, lengths and the fingerprint only:
//
//   - fmt: Format handles every verb and flag (%v %+v %#v %s %q %x %d ...), so no verb can fall
//     through to fmt's reflection on the fields.
//   - encoding/json: MarshalJSON, so a Keyring embedded in a status or debug struct stays safe.
//     keyring.json itself is written by Marshal, never by json.Marshal.
//   - logr: MarshalLog (logr.Marshaler) without importing logr.
//   - log/slog: LogValue (slog.LogValuer).

// Format writes String for every verb; %q quotes it.
func (k Key) Format(f fmt.State, verb rune) { writeRedacted(f, verb, k.String()) }

// Format writes String for every verb; %q quotes it. A nil keyring prints as Keyring(nil).
func (r *Keyring) Format(f fmt.State, verb rune) { writeRedacted(f, verb, r.String()) }

func writeRedacted(w io.Writer, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(w, s)
}

// keyView is what structured output sees of a key.
type keyView struct {
	ID    string `json:"id"`
	Bytes int    `json:"bytes"`
}

// keyringView is what structured output sees of a keyring.
type keyringView struct {
	IDs         []string `json:"ids"`
	Fingerprint string   `json:"fingerprint"`
}

func (r *Keyring) view() keyringView { return keyringView{IDs: r.IDs(), Fingerprint: r.fingerprint} }

// MarshalJSON encodes {"id":...,"bytes":<length>}.
func (k Key) MarshalJSON() ([]byte, error) { return json.Marshal(keyView{ID: k.id, Bytes: k.Len()}) }

// MarshalJSON encodes {"ids":[...],"fingerprint":...}, or null for a nil keyring. It is not the
// keyring.json format: use Marshal for that.
func (r *Keyring) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(r.view())
}

// MarshalLog implements logr.Marshaler: loggers built on logr (controller-runtime's among them) log
// the id and length.
func (k Key) MarshalLog() any { return keyView{ID: k.id, Bytes: k.Len()} }

// MarshalLog implements logr.Marshaler: ids and fingerprint.
func (r *Keyring) MarshalLog() any {
	if r == nil {
		return nil
	}
	return r.view()
}

// LogValue implements slog.LogValuer: a group of id and bytes (the length).
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", k.id), slog.Int("bytes", k.Len()))
}

// LogValue implements slog.LogValuer: a group of ids and fingerprint.
func (r *Keyring) LogValue() slog.Value {
	if r == nil {
		return slog.StringValue("Keyring(nil)")
	}
	return slog.GroupValue(slog.Any("ids", r.IDs()), slog.String("fingerprint", r.fingerprint))
}
