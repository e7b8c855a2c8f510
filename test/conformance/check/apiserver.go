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
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// metadata is the Pod's field the acknowledgement patches.
const metadata = "metadata"

// fault is how the fake API server answers one acknowledgement instead of applying it.
type fault int

const (
	faultNone         fault = iota
	fault409                // a conflict, as for a stale resourceVersion
	fault403                // forbidden, as before the RoleBinding exists
	fault500                // an internal error
	faultHang               // no answer: hold the request, then drop the connection
	faultLostAnswer         // apply the patch, then drop the connection before answering
	faultRedirForeign       // 307 to the same path on the foreign listener
	faultRedirSelf          // 307 to redirectPath on this server
)

func (f fault) String() string {
	return [...]string{"none", "409", "403", "500", "timeout", "lost answer", "307 foreign", "307 self"}[f]
}

// request is one request the fake API server received.
type request struct {
	at          int // the recorder's event number when it arrived
	method      string
	path        string
	query       string
	contentType string
	auth        string
	body        []byte
	// problem says why the request is not a well-formed acknowledgement; "" if it is one.
	problem string
	// fingerprint is the one it acknowledges, if well-formed.
	fingerprint string
	// answer is what the server did: "200", a fault, or "401" for a stale token.
	answer string
}

// apiServer is a fake Kubernetes API server that knows one Pod and answers its acknowledgement
// PATCHes over TLS, with a CA of its own.
type apiServer struct {
	rec       *recorder
	srv       *http.Server
	ln        net.Listener
	caPEM     []byte
	namespace string
	pod       string
	annotKey  string
	holdFor   time.Duration
	traps     *traps
	cert      tls.Certificate
	foreign   tls.Certificate // a certificate for the same names from a foreign CA
	redirTo   string          // host:port of the foreign listener, the target of faultRedirForeign

	impostor   atomic.Bool // present foreign to every new connection
	impostors  sync.Map    // the underlying net.Conn of each connection that was shown foreign
	handshakes atomic.Int64
	connMu     sync.Mutex
	conns      map[net.Conn]bool // the open connections, for setImpostor

	mu          sync.Mutex
	token       string  // the token it accepts now
	faults      []fault // answers to come, in order; then faultAfter
	faultAfter  fault   // the answer once faults is used up
	annotations map[string]string
	requests    []request
}

func newAPIServer(rec *recorder, t *traps, namespace, pod, secret, token string, holdFor time.Duration) (*apiServer, error) {
	caPEM, cert, err := newCertificates()
	if err != nil {
		return nil, err
	}
	_, foreign, err := newCertificates()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &apiServer{rec: rec, traps: t, caPEM: caPEM, cert: cert, foreign: foreign, namespace: namespace, pod: pod,
		annotKey: ack.AnnotationKey(secret), token: token, annotations: map[string]string{}, ln: ln, holdFor: holdFor,
		conns: map[net.Conn]bool{}}
	s.srv = &http.Server{
		Handler: s,
		// HTTP/1.1 only, so that a handler can drop the connection (Hijack) to lose an answer.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		TLSConfig: &tls.Config{
			GetCertificate: s.certificate, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12,
			// No resumption: a client resuming an earlier session would reach the impostor without
			// being shown its certificate.
			SessionTicketsDisabled: true,
		},
		ConnContext:       withConn,
		ConnState:         s.track,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
	}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// certificate is the serving certificate of each handshake: the foreign one while the server plays
// the impostor, remembered per connection.
func (s *apiServer) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if s.impostor.Load() {
		s.impostors.Store(hello.Conn, true)
		s.rec.event(func() { s.handshakes.Add(1) })
		return &s.foreign, nil
	}
	return &s.cert, nil
}

func (s *apiServer) track(c net.Conn, st http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

// setImpostor makes every new connection see the foreign certificate (or no longer), after closing
// the open ones, so that the consumer's next request makes a new handshake. A connection may still
// be writing the answer to an acknowledgement the check saw applied: the consumer takes it for a
// lost answer and sends again, which the contract asks of it anyway.
func (s *apiServer) setImpostor(on bool) {
	s.impostor.Store(on)
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.conns {
		_ = c.Close()
		delete(s.conns, c)
	}
}

// shownForeign reports whether the request came on a connection shown the foreign certificate.
func (s *apiServer) shownForeign(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*tls.Conn)
	if !ok {
		return false
	}
	_, foreign := s.impostors.Load(c.NetConn())
	return foreign
}

// port is the port the server listens on, at 127.0.0.1.
func (s *apiServer) port() string {
	_, port, _ := net.SplitHostPort(s.ln.Addr().String())
	return port
}

func (s *apiServer) close() { _ = s.srv.Close() }

func (s *apiServer) setToken(t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = t
}

// plan makes the next acknowledgements fail as listed, and every one after them as after.
func (s *apiServer) plan(after fault, faults ...fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.faultAfter = faults, after
}

// annotation is the acknowledgement the Pod carries now.
func (s *apiServer) annotation() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.annotations[s.annotKey]
}

func (s *apiServer) allRequests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	switch {
	case s.shownForeign(r):
		s.traps.saw(trapImpostor, r, body)
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "conformance: an impostor")
		return
	case strings.HasPrefix(r.URL.Path, redirectPath):
		s.traps.saw(trapRedirect, r, body)
		status(w, http.StatusNotFound, "NotFound", "conformance: a redirect's target")
		return
	}
	req := request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, contentType: r.Header.Get("Content-Type"),
		auth: r.Header.Get("Authorization"), body: body}
	req.fingerprint, req.problem = s.validate(r, body)

	s.mu.Lock()
	f := faultNone
	switch {
	case req.problem != "":
	case req.auth != "Bearer "+s.token:
		req.answer = "401"
	case len(s.faults) > 0:
		f, s.faults = s.faults[0], s.faults[1:]
	default:
		f = s.faultAfter
	}
	if req.problem == "" && req.answer == "" {
		req.answer = f.String()
		if f == faultNone {
			req.answer = "200"
		}
		if f == faultNone || f == faultLostAnswer {
			s.annotations[s.annotKey] = req.fingerprint
		}
	}
	pod := s.podJSON()
	s.mu.Unlock()
	s.rec.event(func() { req.at = s.rec.n; s.mu.Lock(); s.requests = append(s.requests, req); s.mu.Unlock() })

	switch {
	case req.problem != "":
		status(w, http.StatusBadRequest, "BadRequest", "conformance: not an acknowledgement: "+req.problem)
	case req.answer == "401":
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
	case f == fault409:
		status(w, http.StatusConflict, "Conflict", fmt.Sprintf("Operation cannot be fulfilled on pods %q: the object has been modified; please apply your changes to the latest version and try again", s.pod))
	case f == fault403:
		status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("pods %q is forbidden: User \"system:serviceaccount:%s:default\" cannot patch resource \"pods\" in API group \"\" in the namespace %q", s.pod, s.namespace, s.namespace))
	case f == fault500:
		status(w, http.StatusInternalServerError, "InternalError", "Internal error occurred: conformance: a refused acknowledgement")
	case f == faultHang:
		select {
		case <-r.Context().Done():
		case <-time.After(s.holdFor):
		}
		drop(w)
	case f == faultLostAnswer:
		drop(w)
	case f == faultRedirForeign:
		http.Redirect(w, r, "https://"+s.redirTo+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	case f == faultRedirSelf:
		http.Redirect(w, r, redirectPath+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(pod)
	}
}

// validate returns the fingerprint a request acknowledges, or why it is not a well-formed
// acknowledgement of this Pod (docs/consumers.md, "The acknowledgement").
func (s *apiServer) validate(r *http.Request, body []byte) (fp, problem string) {
	path := "/api/v1/namespaces/" + s.namespace + "/pods/" + s.pod
	switch {
	case r.Method != http.MethodPatch:
		return "", fmt.Sprintf("method %s, want PATCH", r.Method)
	case r.URL.Path != path:
		return "", fmt.Sprintf("path %s, want %s", r.URL.Path, path)
	case r.URL.Query().Get("fieldManager") != ack.FieldManager:
		return "", fmt.Sprintf("query %q, want fieldManager=%s", r.URL.RawQuery, ack.FieldManager)
	case r.Header.Get("Content-Type") != "application/merge-patch+json":
		return "", fmt.Sprintf("Content-Type %q, want application/merge-patch+json", r.Header.Get("Content-Type"))
	}
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil {
		return "", "body is not JSON"
	}
	fp, _ = dig(patch, metadata, "annotations", s.annotKey).(string)
	want := map[string]any{metadata: map[string]any{"annotations": map[string]any{s.annotKey: fp}}}
	if fp == "" || !reflect.DeepEqual(patch, want) {
		return "", fmt.Sprintf("body %s, want exactly {\"metadata\":{\"annotations\":{%q:\"<fingerprint>\"}}}", bytes.TrimSpace(body), s.annotKey)
	}
	return fp, ""
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// podJSON is the patched Pod, as the API server answers a PATCH; s.mu held.
func (s *apiServer) podJSON() []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
		metadata: map[string]any{"name": s.pod, "namespace": s.namespace, "annotations": s.annotations}})
	return b
}

// status writes a metav1.Status, as the API server does for an error.
func status(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", metadata: map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code})
	_, _ = w.Write(b)
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // closes the connection too, without a response
}

// newCertificates returns the PEM of a new CA and a serving certificate it signed for 127.0.0.1
// and localhost.
func newCertificates() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mrtr conformance CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
