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

package ack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// userAgent names this package in the API server's audit log.
const userAgent = "mrtr-ack (github.com/mrtr-dev/mrtr-operator/pkg/ack)"

// FieldManager is the field manager of every acknowledgement a Reporter writes: the Pod's
// managedFields record it, with the time of the write, as the writer of the annotation. The
// operator takes as proof only an acknowledgement whose entry names this manager and the Pod itself
// (not its status subresource), and is not older than the Secret write it acknowledges. A server
// that acknowledges without this package must patch with ?fieldManager=mrtr-ack too. Without the
// parameter the API server would derive a manager from the User-Agent, which any client shares.
const FieldManager = "mrtr-ack"

// maxErrorBody is how much of an error response is read for its Status message, and maxDrainedBody how
// much of a successful one is read (and dropped): no response is ever read whole.
const (
	maxErrorBody   = 4 << 10
	maxDrainedBody = 64 << 10
)

// Report records that the process now seals and opens with the keyring of this fingerprint. It never blocks and
// never fails: the latest fingerprint wins (reports coalesce), and Run publishes it. An empty fingerprint is
// ignored.
func (r *Reporter) Report(fingerprint string) {
	if fingerprint == "" {
		return
	}
	r.mu.Lock()
	changed := fingerprint != r.latest
	r.latest = fingerprint
	if changed {
		if fingerprint == r.onPod {
			r.setState(metrics.AckAcknowledged) // back to what the Pod carries: nothing to send
		} else {
			r.setState(metrics.AckPending)
		}
	}
	r.mu.Unlock()
	if !changed {
		return // nothing Run does not know already; in particular, no retry out of its backoff
	}
	select {
	case r.wake <- struct{}{}:
	default: // Run has a wake-up pending and will read latest then
	}
}

// Acknowledged returns the last fingerprint the API server accepted, "" before the first.
func (r *Reporter) Acknowledged() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acked
}

// Follow reports src's current keyring and every keyring it changes to (src.OnChange), and returns.
// A nil src is a mistake of the caller that Follow cannot return: it reports nothing and hands an
// error saying so to OnError.
func (r *Reporter) Follow(src *keyring.FileSource) {
	if src == nil {
		if r.onError != nil {
			r.onError(errors.New("ack: Follow(nil): no keyring source to follow; pass the server's *keyring.FileSource"))
		}
		return
	}
	src.OnChange(func(k *keyring.Keyring) { r.Report(k.Fingerprint()) })
	// The listener is registered first so that no change is missed. A reload may still put a new
	// keyring in service, and report it, between our read of Keyring and our Report of it, which
	// would leave the older one as the latest: read again until the keyring holds still.
	for {
		k := src.Keyring()
		r.Report(k.Fingerprint())
		if src.Keyring() == k {
			return
		}
	}
}

// Run publishes each reported fingerprint with one PATCH of the Pod, retrying failures with backoff, until ctx is done.
// It returns nil when ctx is done. Serving never waits on it. It returns an error only if another Run of r is
// in progress.
//
// The retries of one fingerprint have no total time limit, on purpose. The acknowledgement is the
// only way the operator learns that this pod holds the keyring: a reporter that gave up would leave
// the rotation waiting on this pod (reported Stalled) until the pod restarted, while one that keeps
// trying completes it the moment the API server answers again. What an unending retry costs is
// bounded: one request per MaxBackoff (30s by default) at most, with jitter, only while a failure
// lasts, only for the latest fingerprint (a newer Report replaces it and is tried at once), and every
// failure goes to OnError, where a persistent one (a missing RoleBinding, say) shows.
func (r *Reporter) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("ack: reporter for pod " + r.pod + " already running")
	}
	defer r.running.Store(false)

	timer := time.NewTimer(0)
	timer.Stop() // armed after a failure; since Go 1.23 Stop and Reset leave no stale tick behind
	defer timer.Stop()
	var (
		retry    <-chan time.Time // timer.C while backing off, else nil
		failures int              // in a row, for the backoff
	)
	for {
		if retry == nil {
			// Drain the wake-up first: the read of latest below covers every Report made before
			// it, whose wake-up must not later cut a backoff short as if something newer had come.
			select {
			case <-r.wake:
			default:
			}
			if fp := r.pending(); fp != "" {
				err := r.publish(ctx, fp)
				if ctx.Err() != nil {
					return nil // cancelled mid-request: not a failure worth reporting
				}
				r.settle(fp, err)
				if err == nil {
					failures = 0
					continue // a newer fingerprint may have come meanwhile
				}
				failures++
				if r.onError != nil {
					r.onError(err)
				}
				timer.Reset(r.backoff(failures))
				retry = timer.C
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake: // a newer fingerprint: try it at once, backing off or not
			timer.Stop()
			retry = nil
		case <-retry:
			retry = nil
		}
	}
}

// pending returns the fingerprint to publish, "" if the Pod is known to carry the latest one.
func (r *Reporter) pending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest == r.onPod {
		return ""
	}
	return r.latest
}

// settle records the outcome of the request that published fp. After a failure what the Pod carries
// is unknown: the API server may have applied a PATCH whose answer was lost (a timeout, a cut
// connection), so that a later return to the fingerprint acknowledged before must be sent again, or
// the Pod would keep the other one while the process serves this one, and be evicted as a laggard.
func (r *Reporter) settle(fp string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.onPod = ""
		r.setState(metrics.AckRetrying)
		return
	}
	r.acked, r.onPod = fp, fp
	if fp == r.latest {
		r.setState(metrics.AckAcknowledged)
	} else {
		r.setState(metrics.AckPending) // a newer fingerprint came meanwhile; Run sends it next
	}
}

// setState tells the Recorder of a new state, once per change. r.mu is held, so that the Recorder
// sees the states in the order they happened.
func (r *Reporter) setState(st metrics.AckState) {
	if st == r.state {
		return
	}
	r.state = st
	r.rec.AckStateChanged(st)
}

// backoff returns the pause after the n-th failure in a row (n ≥ 1): uniformly random in the upper half
// of min(MinBackoff·2ⁿ, MaxBackoff), and never outside [MinBackoff, MaxBackoff]. The randomness keeps
// the pods of a Deployment, which all fail together when the API server restarts, from all coming
// back at once.
func (r *Reporter) backoff(n int) time.Duration {
	d := r.minBackoff
	for range n {
		if d > r.maxBackoff/2 { // doubling would pass the cap (or overflow)
			d = r.maxBackoff
			break
		}
		d *= 2
	}
	return max(d/2+rand.N(d/2+1), r.minBackoff)
}

// Patch is the JSON merge patch of a Pod by which the pod acknowledges the keyring of fingerprint,
// loaded from the Secret named secret: the body of every request a Reporter sends. It is for a
// program that writes acknowledgements through a client of its own, such as a simulation of many
// pods; send it with ?fieldManager=FieldManager, or the operator does not take it as proof.
func Patch(secret, fingerprint string) []byte { return patch(AnnotationKey(secret), fingerprint) }

func patch(key, fingerprint string) []byte {
	// Cannot fail: strings always encode.
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: fingerprint}}})
	return body
}

// publish sends one PATCH that sets the annotation to fp.
func (r *Reporter) publish(ctx context.Context, fp string) error {
	token, err := r.token()
	if err != nil {
		return err
	}
	body := patch(r.key, fp)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, r.url+"?fieldManager="+FieldManager, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)

	// The client's errors name the method and URL, never the headers.
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("ack: patch pod %s: %w", r.pod, err)
	}
	defer func() { _ = resp.Body.Close() }() // a failed close of a read body changes nothing
	if resp.StatusCode/100 == 2 {
		// The patched Pod is of no use here; reading a bounded part of it lets the connection be
		// reused for the next acknowledgement, and a larger body is cut off by the close.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainedBody))
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // what was read is enough to explain
	return fmt.Errorf("ack: patch pod %s: %s: %s%s", r.pod, statusLine(resp, token), statusMessage(b, token), hint(resp.StatusCode))
}

// statusLine returns the status code and reason phrase of resp. The phrase is the server's text (any
// endpoint the pod's CA trusts can answer, a proxy say): one that is not the standard one is treated
// like the body's message, redacted, quoted and cut, so that it cannot carry escapes, 10 MB of text
// or the echoed token into a log.
func statusLine(resp *http.Response, token string) string {
	code := strconv.Itoa(resp.StatusCode)
	reason := strings.TrimPrefix(strings.TrimPrefix(resp.Status, code), " ")
	if reason == "" || reason == http.StatusText(resp.StatusCode) {
		return strings.TrimSpace(code + " " + http.StatusText(resp.StatusCode))
	}
	return code + " " + quoteCut(redact(reason, token))
}

// token reads the service account token. It is read for every request because the kubelet replaces a
// bound token well before it expires, and a token read once would stop working after an hour or so.
func (r *Reporter) token() (string, error) {
	b, err := os.ReadFile(r.tokenPath)
	if err != nil {
		return "", fmt.Errorf("ack: service account token: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("ack: service account token %s is empty", r.tokenPath)
	}
	return t, nil
}

// statusMessage returns the message of the metav1.Status in body, else the start of body (a proxy's
// or load balancer's error page, say), with every trace of token removed (see redact), quoted and cut
// to maxMessage bytes: the text is the server's, and quoted it cannot forge a log line with a
// newline or rewrite a terminal with an escape sequence.
func statusMessage(body []byte, token string) string {
	var st struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return quoteCut(redact(st.Message, token))
	}
	if len(body) == maxErrorBody {
		// Cut by the read limit, the body may end with the first bytes of a token that redact
		// cannot recognise: drop them.
		for k := min(len(token)-1, len(body)); k > 0; k-- {
			if bytes.HasSuffix(body, []byte(token[:k])) {
				body = body[:len(body)-k]
				break
			}
		}
	}
	msg := strings.TrimSpace(redact(string(body), token)) // before cutting, which could split a token
	if msg == "" {
		return "no message"
	}
	return quoteCut(msg)
}

// maxMessage is how much of the server's error text an error quotes.
const maxMessage = 200

// quoteCut quotes msg as Go does (%q: newlines, escapes and invalid UTF-8 come out as escapes), cut to
// its first maxMessage bytes at a rune boundary and marked "…" if it was cut.
func quoteCut(msg string) string {
	if len(msg) <= maxMessage {
		return strconv.Quote(msg)
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return strconv.Quote(msg[:cut]) + "…"
}

// redact removes the token from a message of the server: no API server echoes it, but whatever answers
// at that address (a misconfigured proxy) might, and the message goes to logs.
func redact(msg, token string) string {
	return strings.ReplaceAll(msg, token, "[token]")
}

// hint says what a status the API server keeps answering usually means.
func hint(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return " (the service account token was not accepted)"
	case http.StatusForbidden:
		return " (is the ClusterRole mrtr-keyring-consumer bound to the pod's ServiceAccount?)"
	case http.StatusNotFound:
		return " (no such pod: check $POD_NAME and $POD_NAMESPACE)"
	}
	return ""
}
