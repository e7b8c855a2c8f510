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

package harness

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
)

// Balancer is a non-sticky round-robin HTTP load balancer over a changing set of backends, like a
// Service in front of a Deployment: consecutive requests of one client, including the two rounds of
// one MRTR call, go to different backends. Backends are added when their replica serves and removed
// before it stops, as endpoints are; a request already proxied to a removed backend finishes there.
type Balancer struct {
	transport *http.Transport

	mu       sync.RWMutex
	backends []*backend

	next atomic.Uint64
}

type backend struct {
	name  string
	proxy *httputil.ReverseProxy
}

// NewBalancer returns a balancer with no backends; until one is added it answers 503.
func NewBalancer() *Balancer {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return &Balancer{transport: t}
}

// Add routes requests to the backend at addr (host:port) under name, replacing a backend of that name.
func (b *Balancer) Add(name, addr string) {
	target := &url.URL{Scheme: "http", Host: addr}
	p := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: b.transport,
		// A 502 without the default handler's log line: the client counts it as a failed round trip.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(name)
	b.backends = append(b.backends, &backend{name: name, proxy: p})
}

// Remove stops routing new requests to the backend name.
func (b *Balancer) Remove(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(name)
}

func (b *Balancer) removeLocked(name string) {
	for i, be := range b.backends {
		if be.name == name {
			b.backends = append(b.backends[:i:i], b.backends[i+1:]...)
			return
		}
	}
}

// ServeHTTP proxies r to the next backend in turn.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.RLock()
	n := len(b.backends)
	var be *backend
	if n > 0 {
		be = b.backends[(b.next.Add(1)-1)%uint64(n)]
	}
	b.mu.RUnlock()
	if be == nil {
		http.Error(w, "no backends", http.StatusServiceUnavailable)
		return
	}
	be.proxy.ServeHTTP(w, r)
}

// Close drops idle connections to the backends.
func (b *Balancer) Close() { b.transport.CloseIdleConnections() }
