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
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
)

// countingTokens and countingReviews count the reviews that reach the API server, and fail them
// while fail is set.
type countingTokens struct {
	authnclient.TokenReviewInterface
	calls atomic.Int32
	fail  atomic.Bool
}

func (c *countingTokens) Create(ctx context.Context, r *authnv1.TokenReview, o metav1.CreateOptions) (*authnv1.TokenReview, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return nil, errors.New("connection refused")
	}
	return c.TokenReviewInterface.Create(ctx, r, o)
}

type countingReviews struct {
	authzclient.SubjectAccessReviewInterface
	calls atomic.Int32
}

func (c *countingReviews) Create(ctx context.Context, r *authzv1.SubjectAccessReview, o metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	c.calls.Add(1)
	return c.SubjectAccessReviewInterface.Create(ctx, r, o)
}

// TestAgainstTheAPIServer runs the filter in front of a handler, with ServiceAccount tokens that a
// real kube-apiserver (envtest) authenticates and its RBAC authorizes.
func TestAgainstTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	cfg := testsuite.ForTest(t, testenv.Options{}).Config
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()

	tokenOf := func(name string) string {
		t.Helper()
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	bind := func(name string) {
		t.Helper()
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	// The chart's metrics-reader role (config/rbac/metrics_reader_role.yaml).
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	scraper, stranger := tokenOf("scraper"), tokenOf("stranger")
	bind("scraper")

	tokens := &countingTokens{TokenReviewInterface: cs.AuthenticationV1().TokenReviews()}
	reviews := &countingReviews{SubjectAccessReviewInterface: cs.AuthorizationV1().SubjectAccessReviews()}
	fake := clocktesting.NewFakeClock(time.Now()) // the Authorizer's clock, moved on by the test
	a := newWithClock(tokens, reviews, fake)
	// past moves the clock just past d: an answer is reused up to the end of its lifetime included.
	past := func(d time.Duration) { fake.Step(d + time.Nanosecond) }
	h, err := a.Filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "the metrics")
	}))
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	type answer struct {
		code int
		body string
	}
	ask := func(method, path, authorization string) answer {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return answer{resp.StatusCode, string(body)}
	}

	t.Run("a scraper the role allows reads the metrics", func(t *testing.T) {
		// RBAC's informers see the new binding a moment after it is created.
		g.Eventually(func() answer { past(deniedTTL); return ask("GET", "/metrics", "Bearer "+scraper) }).
			WithTimeout(30 * time.Second).Should(Equal(answer{200, "the metrics"}))
		g.Expect(ask("GET", "/metrics", "bearer  "+scraper)).To(Equal(answer{200, "the metrics"}), "the scheme in any case")
	})
	t.Run("no one else does", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, path, authorization string
			code                              int
			says                              string
		}{
			{"no token", "GET", "/metrics", "", 401, "a bearer token is required"},
			{"another scheme", "GET", "/metrics", "Basic " + scraper, 401, "a bearer token is required"},
			{"an empty token", "GET", "/metrics", "Bearer ", 401, "a bearer token is required"},
			{"a token the API server does not know", "GET", "/metrics", "Bearer not-a-token", 401, "Unauthorized"},
			{"a ServiceAccount without the role", "GET", "/metrics", "Bearer " + stranger, 403, `user "system:serviceaccount:default:stranger" may not get /metrics`},
			{"another path", "GET", "/debug/pprof", "Bearer " + scraper, 403, "may not get /debug/pprof"},
			{"another verb", "POST", "/metrics", "Bearer " + scraper, 403, "may not post /metrics"},
		} {
			got := ask(tc.method, tc.path, tc.authorization)
			if got.code != tc.code || !strings.Contains(got.body, tc.says) {
				t.Errorf("%s: %d %q, want %d and %q", tc.name, got.code, got.body, tc.code, tc.says)
			}
			if strings.Contains(got.body, "the metrics") {
				t.Errorf("%s: the handler ran", tc.name)
			}
		}
	})
	t.Run("answers are reused for their lifetime, then asked again", func(t *testing.T) {
		past(allowedTTL) // everything cached so far has expired
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
		authn, authz := tokens.calls.Load(), reviews.calls.Load()
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
		g.Expect([]int32{tokens.calls.Load(), reviews.calls.Load()}).To(Equal([]int32{authn, authz}), "a second scrape asks nothing")

		past(authenticatedTTL)
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
		g.Expect([]int32{tokens.calls.Load(), reviews.calls.Load()}).To(Equal([]int32{authn + 1, authz}),
			"after a minute the token is reviewed again, the access (5 minutes) is not")
		past(allowedTTL)
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
		g.Expect([]int32{tokens.calls.Load(), reviews.calls.Load()}).To(Equal([]int32{authn + 2, authz + 1}))
	})
	t.Run("a denial lasts 30 s: a new binding takes effect after it", func(t *testing.T) {
		past(deniedTTL) // the denials cached above have expired
		g.Expect(ask("GET", "/metrics", "Bearer "+stranger).code).To(Equal(403))
		bind("stranger")
		asked := reviews.calls.Load()
		g.Expect(ask("GET", "/metrics", "Bearer "+stranger).code).To(Equal(403))
		g.Expect(reviews.calls.Load()).To(Equal(asked), "the denial is reused")
		g.Eventually(func() int {
			past(deniedTTL) // each try asks again, until RBAC has seen the binding
			return ask("GET", "/metrics", "Bearer "+stranger).code
		}).WithTimeout(30 * time.Second).Should(Equal(200))
	})
	t.Run("unknown tokens beyond the rate limit are refused without a review", func(t *testing.T) {
		past(allowedTTL) // every answer expired, every client's burst back
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
		reviewed := tokens.calls.Load()
		codes := map[int]int{}
		for i := range 20 {
			got := ask("GET", "/metrics", fmt.Sprintf("Bearer unknown-%d", i))
			codes[got.code]++
			if got.code == http.StatusTooManyRequests {
				g.Expect(got.body).To(ContainSubstring("Too many requests with unknown tokens"))
			}
		}
		// This client had its burst less the scraper's review.
		g.Expect(codes).To(Equal(map[int]int{401: clientBurst - 1, 429: 20 - (clientBurst - 1)}))
		g.Expect(tokens.calls.Load() - reviewed).To(BeEquivalentTo(clientBurst - 1))
		reviewed = tokens.calls.Load()
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200), "a known token is never limited")
		g.Expect(tokens.calls.Load()).To(Equal(reviewed))
		past(time.Second / clientReviews)
		g.Expect(ask("GET", "/metrics", "Bearer unknown-again").code).To(Equal(401), "a second later, one more review")
		g.Expect(ask("GET", "/metrics", "Bearer unknown-again-2").code).To(Equal(429))
		g.Expect(tokens.calls.Load() - reviewed).To(BeEquivalentTo(1))
	})
	t.Run("an API server that cannot say is a 500, and not remembered", func(t *testing.T) {
		past(allowedTTL)
		tokens.fail.Store(true)
		got := ask("GET", "/metrics", "Bearer "+scraper)
		g.Expect(got.code).To(Equal(500))
		g.Expect(got.body).NotTo(ContainSubstring(scraper), "the token is never echoed")
		tokens.fail.Store(false)
		g.Expect(ask("GET", "/metrics", "Bearer "+scraper).code).To(Equal(200))
	})
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc":    "abc",
		"bearer abc":    "abc",
		"BEARER   abc ": "abc",
		"Bearer":        "",
		"Bearer ":       "",
		"Basic abc":     "",
		"Bearer a b":    "",
		"Bearerabc":     "",
		"":              "",
	} {
		got, ok := bearerToken(header)
		if got != want || ok != (want != "") {
			t.Errorf("bearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}

func TestTheCachesAreBounded(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	a := newWithClock(nil, nil, fake)
	for i := range maxCached + 10 {
		a.allowed.Add(fmt.Sprint(i), true, time.Minute)
		a.users.Add(sha256.Sum256([]byte(fmt.Sprint(i))), (*authnv1.UserInfo)(nil), time.Minute)
		if n, m := len(a.allowed.Keys()), len(a.users.Keys()); n > maxCached || m > maxCached {
			t.Fatalf("%d and %d entries after %d puts, want at most %d", n, m, i+1, maxCached)
		}
	}
	if _, ok := a.allowed.Get(fmt.Sprint(maxCached + 9)); !ok {
		t.Error("the last answer put is not kept")
	}
	fake.Step(time.Minute + time.Nanosecond)
	if _, ok := a.allowed.Get(fmt.Sprint(maxCached + 9)); ok {
		t.Error("an answer is kept past its lifetime")
	}
}

func TestReviewsAreLimitedInAll(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	l := newReviewLimiter(fake)
	allowed := func(clients int) int {
		n := 0
		for i := range clients {
			if l.allow(fmt.Sprintf("10.0.%d.%d:4000", i/256, i%256)) {
				n++
			}
		}
		return n
	}
	if n := allowed(100); n != allBurst {
		t.Errorf("100 clients at once had %d reviews, want the burst of all, %d", n, allBurst)
	}
	fake.Step(time.Second)
	if n := allowed(100); n != allReviews {
		t.Errorf("a second later, %d reviews, want %d", n, allReviews)
	}
	if l.allow("[fd00::1]:4000") {
		t.Error("a new client got a review with the limit of all exhausted")
	}
}
