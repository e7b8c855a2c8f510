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

// Package metricsauth lets only the callers the API server authenticates, and authorizes for the
// path they request, read the manager's metrics: a bearer token checked with a TokenReview, then
// a SubjectAccessReview of the non-resource URL (GET /metrics needs "get" on "/metrics", which the
// metrics-reader ClusterRole grants).
//
// It does what controller-runtime's filters.WithAuthenticationAndAuthorization does, with the same
// cache lifetimes, but with client-go's typed clients alone. That filter is built on
// k8s.io/apiserver's delegating authenticator and authorizer, which bring CEL, its parser and the
// API server's configuration types into the binary: 20 MB of its 54 MB of code and tables, which
// the process maps and so counts in its memory (RSS), to make the same two API calls.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a review's answer is reused: those of controller-runtime's filter (and of kubelet's
// delegated authentication). A denial is kept briefly so that a new RoleBinding takes effect soon;
// an error is not kept.
const (
	authenticatedTTL   = time.Minute
	unauthenticatedTTL = 10 * time.Second
	allowedTTL         = 5 * time.Minute
	deniedTTL          = 30 * time.Second
	// reviewTimeout bounds each review call, so a slow API server cannot hold scrapes for long.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache (the least recently used answer leaves first): tokens are the
	// caller's to choose, so their number is not ours.
	maxCached = 1024
)

// FilterProvider is a metricsserver.Options.FilterProvider.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	return New(authn.TokenReviews(), authz.SubjectAccessReviews()).Filter, nil
}

// Authorizer checks the callers of the metrics endpoint.
type Authorizer struct {
	tokens  authnclient.TokenReviewInterface
	reviews authzclient.SubjectAccessReviewInterface
	// users holds a *authnv1.UserInfo (nil: not authenticated) by the token's SHA-256, so that the
	// token itself is never kept; allowed holds a bool by the review's spec, as JSON.
	users, allowed *cache.LRUExpireCache
	// limit bounds the TokenReviews of tokens not in users (limit.go).
	limit *reviewLimiter
}

// New returns an Authorizer that reviews with the given clients.
func New(tokens authnclient.TokenReviewInterface, reviews authzclient.SubjectAccessReviewInterface) *Authorizer {
	return newWithClock(tokens, reviews, clock.RealClock{})
}

func newWithClock(tokens authnclient.TokenReviewInterface, reviews authzclient.SubjectAccessReviewInterface, c cache.Clock) *Authorizer {
	return &Authorizer{tokens: tokens, reviews: reviews, limit: newReviewLimiter(c),
		users: cache.NewLRUExpireCacheWithClock(maxCached, c), allowed: cache.NewLRUExpireCacheWithClock(maxCached, c)}
}

// Filter is a metricsserver.Filter: it answers 401 to a caller without a valid token, 403 to one
// not allowed the request, 429 to one whose unknown token would exceed the reviews' rate limit,
// 500 when the API server cannot say, and passes the rest to next.
func (a *Authorizer) Filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req.Header.Get("Authorization"))
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, err := a.authenticate(req.Context(), token, req.RemoteAddr)
		if errors.Is(err, errTooManyReviews) {
			log.V(1).Info("metrics: token review rate-limited", "client", req.RemoteAddr)
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, "Too many requests with unknown tokens", http.StatusTooManyRequests)
			return
		}
		if err != nil {
			log.Error(err, "metrics: the TokenReview failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if user == nil {
			log.V(1).Info("metrics: token not authenticated")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		allowed, err := a.authorize(req.Context(), user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "metrics: the SubjectAccessReview failed", "user", user.Username)
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			log.V(1).Info("metrics: request denied", "user", user.Username, "verb", verb, "path", req.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, req.URL.Path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header (the scheme in any
// case, as RFC 7235 has it).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// errTooManyReviews refuses a TokenReview over the rate limit.
var errTooManyReviews = errors.New("too many token reviews")

// authenticate returns who token belongs to, or nil when the API server does not authenticate it.
// A token it has no answer for is reviewed only within the rate limit of client (its address).
func (a *Authorizer) authenticate(ctx context.Context, token, client string) (*authnv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if user, ok := a.users.Get(key); ok {
		return user.(*authnv1.UserInfo), nil
	}
	if !a.limit.allow(client) {
		return nil, errTooManyReviews
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if !review.Status.Authenticated {
		a.users.Add(key, (*authnv1.UserInfo)(nil), unauthenticatedTTL)
		return nil, nil
	}
	user := &review.Status.User
	a.users.Add(key, user, authenticatedTTL)
	return user, nil
}

// authorize says whether user may verb the non-resource URL path.
func (a *Authorizer) authorize(ctx context.Context, user *authnv1.UserInfo, verb, path string) (bool, error) {
	spec := authzv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	if len(user.Extra) > 0 {
		spec.Extra = make(map[string]authzv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			spec.Extra[k] = authzv1.ExtraValue(v)
		}
	}
	key, err := json.Marshal(spec) // every field that decides; maps marshal in key order
	if err != nil {
		return false, err
	}
	if allowed, ok := a.allowed.Get(string(key)); ok {
		return allowed.(bool), nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := a.reviews.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	a.allowed.Add(string(key), allowed, ttl)
	return allowed, nil
}
