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
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// roundRobin is a non-sticky balancer over fixed replicas: every request goes to the next one, so
// with two replicas the retry of a multi round-trip request never reaches the replica that sealed
// its state.
type roundRobin struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
}

func newRoundRobin(addrs []string) *roundRobin {
	b := &roundRobin{}
	for _, addr := range addrs {
		target := &url.URL{Scheme: "http", Host: addr}
		b.proxies = append(b.proxies, &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }})
	}
	return b
}

func (b *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.proxies[(b.next.Add(1)-1)%uint64(len(b.proxies))].ServeHTTP(w, r)
}
