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

package metricsauth

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
)

// A token the filter has not seen costs a TokenReview, a request to the API server, before the
// caller is authenticated: at the caller's rate, with a new token each time, unless bounded. So the
// reviews of unknown tokens are rate-limited, per client address and in all; a token answered from
// the cache costs nothing and is never limited, so a scraper whose token is known keeps reading
// while a flood is refused. A scraper reviews its token once a minute (authenticatedTTL), far below
// either limit.
const (
	// clientReviews per second per client address, after a burst of clientBurst.
	clientReviews = 1
	clientBurst   = 5
	// allReviews per second from every client together, after a burst of allBurst: what the API
	// server spends on the endpoint's unknown tokens at most.
	allReviews = 10
	allBurst   = 20
	// retryAfter is the Retry-After of a refused request, in seconds.
	retryAfter = "1"
)

// reviewLimiter says whether a client may have a token reviewed now.
type reviewLimiter struct {
	clock cache.Clock
	all   *rate.Limiter

	mu      sync.Mutex
	clients *cache.LRUExpireCache // client address -> *rate.Limiter
}

func newReviewLimiter(c cache.Clock) *reviewLimiter {
	return &reviewLimiter{clock: c, all: rate.NewLimiter(allReviews, allBurst), clients: cache.NewLRUExpireCacheWithClock(maxCached, c)}
}

// allow reports whether the client at remoteAddr (host:port, as http.Request.RemoteAddr) may have a
// token reviewed now, and takes its turn if so.
func (l *reviewLimiter) allow(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var client *rate.Limiter
	if v, ok := l.clients.Get(host); ok {
		client = v.(*rate.Limiter)
	} else {
		client = rate.NewLimiter(clientReviews, clientBurst)
	}
	// A client idle for a minute has its whole burst back: forgetting it then changes nothing.
	l.clients.Add(host, client, time.Minute)
	if client.TokensAt(now) < 1 {
		return false
	}
	if !l.all.AllowN(now, 1) {
		return false
	}
	return client.AllowN(now, 1)
}
