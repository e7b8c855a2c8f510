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
	"cmp"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// AnnotationPrefix starts every acknowledgement annotation key.
const AnnotationPrefix = "loaded.mrtr.dev/"

// ServiceAccountDirEnv names the environment variable that, when set, replaces the service
// account directory (token, ca.crt, namespace) a Reporter reads when Config.ServiceAccountDir is
// empty. In a pod the kubelet's mount is right and the variable is unset; the conformance check
// (test/conformance, docs/consumers.md) sets it to point a consumer at its fake API server.
const ServiceAccountDirEnv = "MRTR_SERVICE_ACCOUNT_DIR"

// Defaults of a Config.
const (
	defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	defaultMinBackoff        = 200 * time.Millisecond
	defaultMaxBackoff        = 30 * time.Second
	defaultTimeout           = 10 * time.Second
)

// An annotation key's name part is at most 63 characters. A longer Secret name keeps a prefix of
// hashPrefixLen characters, a dash and hashLen hex digits of its SHA-256: 46+1+16 = 63.
const (
	maxNamePart   = 63
	hashLen       = 16
	hashPrefixLen = maxNamePart - 1 - hashLen
)

// AnnotationKey is the Pod annotation under which a pod acknowledges the keyring it loaded from the
// Secret named secret: AnnotationPrefix + secret when secret is at most 63 characters (the limit of an
// annotation key's name part; every Secret name that short is a valid name part), else
// AnnotationPrefix + secret[:46] + "-" + 16 lowercase hex digits of sha256(secret) (63 characters,
// still unique). The operator imports this function, so both sides agree.
func AnnotationKey(secret string) string {
	if len(secret) <= maxNamePart {
		return AnnotationPrefix + secret
	}
	// 64 bits of the hash keep two long names that share their first 46 characters apart; the
	// readable prefix is for the humans who look at the Pod.
	sum := sha256.Sum256([]byte(secret))
	return AnnotationPrefix + secret[:hashPrefixLen] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// secretName is a DNS-1123 subdomain, the syntax of a Secret's name.
var secretName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Config says where the reporter runs. Zero fields take the defaults given.
type Config struct {
	// Secret is the name of the keyring Secret whose keyring is acknowledged. Required.
	Secret string
	// PodName and Namespace name this pod: default $POD_NAME and $POD_NAMESPACE (the downward API), the namespace
	// then falling back to ServiceAccountDir/namespace.
	PodName, Namespace string
	// APIServer is the API server's base URL: default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
	// (IPv6 hosts bracketed, as net.JoinHostPort does).
	APIServer string
	// ServiceAccountDir holds token and ca.crt: default $MRTR_SERVICE_ACCOUNT_DIR, else
	// /var/run/secrets/kubernetes.io/serviceaccount.
	// The token is read again for every request (the kubelet rotates bound tokens).
	ServiceAccountDir string
	// OnError receives every failed attempt (never key bytes, never the token); nil discards them.
	OnError func(error)
	// Metrics is told each change of the acknowledgement's state (metrics.AckPending when a new
	// fingerprint is reported, metrics.AckAcknowledged when the API server accepted the latest,
	// metrics.AckRetrying after a failed attempt); nil records nothing.
	Metrics metrics.Recorder
	// MinBackoff and MaxBackoff bound the exponential backoff between failed attempts (with jitter): default 200ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one request: default 10s.
	Timeout time.Duration
}

// Reporter publishes the fingerprint of the keyring this pod has loaded on its Pod object. Make one
// with New; Report, Acknowledged and Follow are safe for concurrent use, Run runs once at a time.
type Reporter struct {
	url       string // the Pod's URL
	pod       string // namespace/name, for errors
	key       string // AnnotationKey(Config.Secret)
	tokenPath string
	client    *http.Client
	onError   func(error)
	rec       metrics.Recorder

	minBackoff, maxBackoff, timeout time.Duration

	mu     sync.Mutex // guards latest, acked, onPod and state
	latest string     // the last fingerprint reported
	acked  string     // the last fingerprint the API server accepted
	// onPod is the fingerprint the Pod is known to carry: acked after an accepted request, "" after
	// a failed one, whose PATCH the API server may have applied although its answer was lost.
	onPod string
	// state is the last state told to rec, "" before the first Report.
	state metrics.AckState

	// wake holds a token when Report changed latest since Run last looked: one slot, so Report
	// never blocks and any number of Reports coalesce into one wake-up.
	wake    chan struct{}
	running atomic.Bool
}

// New checks the configuration and returns a Reporter; errors name exactly what is missing or wrong
// (e.g. "ack: no pod name: set Config.PodName or $POD_NAME (the downward API's metadata.name)"), and never
// contain the token. It reads the CA file once to check it parses (and may keep it).
func New(c Config) (*Reporter, error) {
	if c.Secret == "" {
		return nil, errors.New("ack: no secret: set Config.Secret to the name of the keyring Secret the pod mounts")
	}
	if len(c.Secret) > 253 || !secretName.MatchString(c.Secret) {
		return nil, fmt.Errorf("ack: secret %q is not a Secret name "+
			"(a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.')", c.Secret)
	}
	dir := cmp.Or(c.ServiceAccountDir, os.Getenv(ServiceAccountDirEnv), defaultServiceAccountDir)
	pod := cmp.Or(c.PodName, os.Getenv("POD_NAME"))
	if pod == "" {
		return nil, errors.New("ack: no pod name: set Config.PodName or $POD_NAME (the downward API's metadata.name)")
	}
	ns, err := namespace(c.Namespace, dir)
	if err != nil {
		return nil, err
	}
	base, err := apiServer(c.APIServer)
	if err != nil {
		return nil, err
	}
	pool, err := loadCA(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	r := &Reporter{
		url:        base + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod),
		pod:        ns + "/" + pod,
		key:        AnnotationKey(c.Secret),
		tokenPath:  filepath.Join(dir, "token"),
		onError:    c.OnError,
		rec:        metrics.OrNop(c.Metrics),
		minBackoff: cmp.Or(c.MinBackoff, defaultMinBackoff),
		maxBackoff: cmp.Or(c.MaxBackoff, defaultMaxBackoff),
		timeout:    cmp.Or(c.Timeout, defaultTimeout),
		wake:       make(chan struct{}, 1),
	}
	switch {
	case r.minBackoff < 0 || r.maxBackoff < 0:
		return nil, fmt.Errorf("ack: backoff %v to %v: negative", c.MinBackoff, c.MaxBackoff)
	case r.minBackoff > r.maxBackoff:
		return nil, fmt.Errorf("ack: MinBackoff %v exceeds MaxBackoff %v", r.minBackoff, r.maxBackoff)
	case r.timeout < 0:
		return nil, fmt.Errorf("ack: Timeout %v: negative", c.Timeout)
	}
	r.client = &http.Client{
		Transport: &http.Transport{
			// Only the cluster's CA: the token must reach the API server and nothing else.
			TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
			IdleConnTimeout:   90 * time.Second,
			// No Proxy: the API server's Service address is cluster-internal, and an egress proxy
			// configured for the server's outbound calls (HTTPS_PROXY) should not see this traffic.
		},
		// A redirect would resend the patch, and with it the token, to wherever it points; the API
		// server never redirects this request, so a 3xx is an error like any other non-2xx.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r, nil
}

// namespace returns ns, else $POD_NAMESPACE, else the namespace file of the service account.
func namespace(ns, dir string) (string, error) {
	if ns = cmp.Or(ns, os.Getenv("POD_NAMESPACE")); ns != "" {
		return ns, nil
	}
	path := filepath.Join(dir, "namespace")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("ack: no namespace: set Config.Namespace or $POD_NAMESPACE (the downward API's metadata.namespace): %w", err)
	}
	if ns = strings.TrimSpace(string(b)); ns == "" {
		return "", fmt.Errorf("ack: no namespace: set Config.Namespace or $POD_NAMESPACE "+
			"(the downward API's metadata.namespace); %s is missing or empty", path)
	}
	return ns, nil
}

// apiServer returns the API server's base URL, without a trailing slash.
func apiServer(base string) (string, error) {
	if base == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return "", errors.New("ack: no API server: set Config.APIServer or $KUBERNETES_SERVICE_HOST and " +
				"$KUBERNETES_SERVICE_PORT (the kubelet sets both in every container)")
		}
		base = "https://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("ack: API server: %w", err)
	}
	// Plain http would send the token in the clear.
	if u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("ack: API server %q: not an https:// URL", u.Redacted())
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// loadCA returns the pool of the certificates in the PEM file at path.
func loadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ack: API server CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("ack: API server CA: no PEM certificate in %s", path)
	}
	return pool, nil
}
