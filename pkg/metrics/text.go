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

package metrics

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Text is a Recorder that keeps the metrics in memory and writes them in the Prometheus text
// exposition format (version 0.0.4), with no dependency: for a server that does not use
// client_golang, for tests, and for the conformance check's probe. The zero value is ready to use
// and safe for concurrent use.
type Text struct {
	mu          sync.Mutex
	sealed      map[string]uint64
	opened      map[string]map[Result]uint64
	fingerprint string
	reloadFails uint64
	ack         AckState
}

var _ Recorder = (*Text)(nil)

// TokenSealed counts one sealed token of format.
func (t *Text) TokenSealed(format string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.format(format)
	t.sealed[format]++
}

// TokenOpened counts one open of a token of format that ended with result.
func (t *Text) TokenOpened(format string, result Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.format(format)
	t.opened[format][result]++
}

// format creates every series of format at 0 (see Results). t.mu is held.
func (t *Text) format(format string) {
	if t.sealed == nil {
		t.sealed = map[string]uint64{}
		t.opened = map[string]map[Result]uint64{}
	}
	if _, ok := t.opened[format]; ok {
		return
	}
	t.sealed[format] = 0
	t.opened[format] = map[Result]uint64{}
	for _, r := range Results() {
		t.opened[format][r] = 0
	}
}

// KeyringInService replaces the fingerprint of the keyring in service.
func (t *Text) KeyringInService(fingerprint string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fingerprint = fingerprint
}

// ReloadFailed counts one failed reload.
func (t *Text) ReloadFailed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reloadFails++
}

// AckStateChanged replaces the acknowledgement's state.
func (t *Text) AckStateChanged(state AckState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ack = state
}

// Opened returns the count of opens of format that ended with result.
func (t *Text) Opened(format string, result Result) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opened[format][result]
}

// Sealed returns the count of tokens sealed in format.
func (t *Text) Sealed(format string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sealed[format]
}

// Fingerprint returns the fingerprint of the keyring in service, "" before the first.
func (t *Text) Fingerprint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fingerprint
}

// ReloadFailures returns the count of failed reloads.
func (t *Text) ReloadFailures() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reloadFails
}

// AckState returns the acknowledgement's state, "" before the first report.
func (t *Text) AckState() AckState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ack
}

// ContentType is the media type of what WriteTo writes, for a /metrics handler.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteTo writes every metric in the text exposition format, formats and results in a fixed order.
// Label values are a codec's name, a result, a state and a fingerprint (16 hex digits): none needs
// escaping, and none is key material.
func (t *Text) WriteTo(w io.Writer) (int64, error) {
	t.mu.Lock()
	var b strings.Builder
	formats := make([]string, 0, len(t.sealed))
	for f := range t.sealed {
		formats = append(formats, f)
	}
	slices.Sort(formats)

	fmt.Fprintf(&b, "# HELP %s Request-state tokens sealed, by format.\n# TYPE %s counter\n", TokensSealedTotal, TokensSealedTotal)
	for _, f := range formats {
		fmt.Fprintf(&b, "%s{%s=%q} %d\n", TokensSealedTotal, LabelFormat, f, t.sealed[f])
	}
	fmt.Fprintf(&b, "# HELP %s Request-state tokens opened, by format and result.\n# TYPE %s counter\n", TokensOpenedTotal, TokensOpenedTotal)
	for _, f := range formats {
		for _, r := range Results() {
			fmt.Fprintf(&b, "%s{%s=%q,%s=%q} %d\n", TokensOpenedTotal, LabelFormat, f, LabelResult, r, t.opened[f][r])
		}
	}
	fmt.Fprintf(&b, "# HELP %s The keyring in service, by fingerprint.\n# TYPE %s gauge\n", KeyringInfo, KeyringInfo)
	if t.fingerprint != "" {
		fmt.Fprintf(&b, "%s{%s=%q} 1\n", KeyringInfo, LabelFingerprint, t.fingerprint)
	}
	fmt.Fprintf(&b, "# HELP %s Reloads that kept the last good keyring.\n# TYPE %s counter\n%s %d\n",
		ReloadFailuresTotal, ReloadFailuresTotal, ReloadFailuresTotal, t.reloadFails)
	fmt.Fprintf(&b, "# HELP %s The acknowledgement's state: 1 for the current one.\n# TYPE %s gauge\n", AckStateGauge, AckStateGauge)
	if t.ack != "" {
		for _, s := range AckStates() {
			v := 0
			if s == t.ack {
				v = 1
			}
			fmt.Fprintf(&b, "%s{%s=%q} %d\n", AckStateGauge, LabelState, s, v)
		}
	}
	t.mu.Unlock()
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
