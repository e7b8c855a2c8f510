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
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The places a consumer must never send the service account token (docs/consumers.md, "TLS"):
const (
	trapImpostor = "impostor"         // the API server's own address presenting a certificate of a foreign CA
	trapForeign  = "foreign listener" // another port, with a certificate of a foreign CA: a redirect's target
	trapRedirect = "redirect target"  // a path of the API server a 307 points to
	trapProxy    = "proxy"            // the proxy of $HTTPS_PROXY, $HTTP_PROXY, $ALL_PROXY and their lowercase
)

// quiet drops the servers' own logs: a handshake the consumer refuses is what the check wants,
// not news for its output.
var quiet = log.New(io.Discard, "", 0)

// redirectPath is where the API server's 307s point on itself: a client that follows a redirect,
// even one that keeps the Authorization header only for the same host and port, arrives there.
const redirectPath = "/conformance/redirected"

// sighting is one request that reached a trap.
type sighting struct {
	at     int
	trap   string
	method string
	target string // the request's URL or, for the proxy, its CONNECT authority
	token  bool   // it carried a service account token
}

// traps records the sightings; the API server, the foreign listener and the proxy report to it.
type traps struct {
	rec    *recorder
	mu     sync.Mutex
	tokens []string
	seen   []sighting
}

func (t *traps) addToken(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = append(t.tokens, tok)
}

// carries reports whether any header or the body of a request holds a token the check issued.
func (t *traps) carries(h http.Header, body []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tok := range t.tokens {
		if strings.Contains(string(body), tok) {
			return true
		}
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, tok) {
					return true
				}
			}
		}
	}
	return false
}

func (t *traps) saw(trap string, r *http.Request, body []byte) {
	sg := sighting{trap: trap, method: r.Method, target: r.URL.String(), token: t.carries(r.Header, body)}
	if r.Method == http.MethodConnect {
		sg.target = r.Host
	}
	t.rec.event(func() { sg.at = t.rec.n; t.mu.Lock(); t.seen = append(t.seen, sg); t.mu.Unlock() })
}

// sightings returns what reached the named traps.
func (t *traps) sightings(names ...string) []sighting {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sighting
	for _, s := range t.seen {
		for _, n := range names {
			if s.trap == n {
				out = append(out, s)
			}
		}
	}
	return out
}

// foreignServer is a TLS listener whose certificate, for 127.0.0.1, a foreign CA signed: a client
// that verifies against the pod's ca.crt never sends it a request. Whatever arrives is recorded.
type foreignServer struct {
	srv *http.Server
	ln  net.Listener
}

func newForeignServer(t *traps, cert tls.Certificate) (*foreignServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &foreignServer{ln: ln}
	f.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			t.saw(trapForeign, r, body)
			status(w, http.StatusNotFound, "NotFound", "conformance: the foreign listener")
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
	}
	go func() { _ = f.srv.ServeTLS(ln, "", "") }()
	return f, nil
}

func (f *foreignServer) addr() string { return f.ln.Addr().String() }

func (f *foreignServer) close() { _ = f.srv.Close() }

// proxyServer is an HTTP proxy, the one the consumer's $HTTPS_PROXY and the like name. It takes a
// CONNECT, answers 200, and terminates the tunnel's TLS itself with a certificate from the API
// server's own CA, as an interception proxy whose CA the pod trusts would: so a consumer that
// goes through it, even one that verifies the server, shows it its token. The requests it reads
// are then served by the API server as if they had come straight, so that using the proxy fails
// only the check about it. A request that is not a CONNECT is recorded and refused.
type proxyServer struct {
	srv    *http.Server
	ln     net.Listener
	inner  *http.Server
	tunnel *chanListener
}

func newProxyServer(t *traps, api http.Handler, cert tls.Certificate) (*proxyServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxyServer{ln: ln, tunnel: &chanListener{conns: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}}
	p.inner = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			t.saw(trapProxy, r, body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			api.ServeHTTP(w, r)
		}),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
	}
	go func() { _ = p.inner.ServeTLS(p.tunnel, "", "") }()
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodConnect {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				t.saw(trapProxy, r, body)
				http.Error(w, "conformance: a proxy the consumer must not use", http.StatusBadGateway)
				return
			}
			t.saw(trapProxy, r, nil)
			hj, ok := w.(http.Hijacker)
			if !ok {
				http.Error(w, "no hijack", http.StatusInternalServerError)
				return
			}
			conn, rw, err := hj.Hijack()
			if err != nil {
				return
			}
			_, _ = rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
			_ = rw.Flush()
			p.tunnel.give(&bufferedConn{Conn: conn, r: rw.Reader})
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *proxyServer) url() string { return "http://" + p.ln.Addr().String() }

func (p *proxyServer) close() {
	_ = p.srv.Close()
	_ = p.inner.Close()
}

// chanListener is a net.Listener of the connections handed to it.
type chanListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (l *chanListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// bufferedConn reads first what the CONNECT's reader already buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connKey is the context key of the connection a request came on (http.Server.ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
