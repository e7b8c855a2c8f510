// Package members holds what the operator needs to reach a member cluster
// of a ClusterMRTRKeyring.
//
// A member is reached with a kubeconfig stored in a Secret in the operator's
// namespace (data key "value", the shape Cluster API writes as
// <cluster>-kubeconfig). Whoever can write that Secret chooses where the
// operator connects and with what credentials, so the kubeconfig is treated
// as untrusted input: RESTConfig accepts only a self-contained kubeconfig
// whose credentials are inline bytes and whose transport is verified TLS.
// Anything that would make the operator read files on its own disk, run a
// program, skip certificate verification or send credentials through an
// extra hop is refused, with an error naming the field and the context,
// cluster or user it sits in, and never the credential bytes themselves.
package members

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxKubeconfigBytes bounds the input before it is parsed, so a hostile
// Secret costs the operator at most linear work on a bounded size. A real
// kubeconfig with inline CA, client certificate and key is a few KiB.
const MaxKubeconfigBytes = 1 << 20

// RESTConfig parses a member kubeconfig, validates its current context and
// returns the client configuration for it.
func RESTConfig(kubeconfig []byte) (*rest.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("kubeconfig is empty")
	}
	if len(kubeconfig) > MaxKubeconfigBytes {
		return nil, fmt.Errorf("kubeconfig is %d bytes, more than the limit of %d", len(kubeconfig), MaxKubeconfigBytes)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		// The parser's message can quote the offending input, which may be
		// credential bytes; say only that it did not parse.
		return nil, errors.New("kubeconfig does not parse as a kubeconfig (YAML or JSON with apiVersion v1, kind Config)")
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: cannot build a client configuration", cfg.CurrentContext)
	}
	return rc, nil
}

// validate checks the current context, its cluster and its user. Entries the
// current context does not name are never used, so they are not checked.
func validate(cfg *clientcmdapi.Config) error {
	name := cfg.CurrentContext
	if name == "" {
		return errors.New("kubeconfig has no current-context")
	}
	ctx, ok := cfg.Contexts[name]
	if !ok || ctx == nil {
		return fmt.Errorf("kubeconfig current-context %q names no context in contexts", name)
	}
	if ctx.Cluster == "" {
		return fmt.Errorf("kubeconfig context %q names no cluster", name)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok || cluster == nil {
		return fmt.Errorf("kubeconfig context %q names cluster %q, which is not in clusters", name, ctx.Cluster)
	}
	if err := validateCluster(ctx.Cluster, cluster); err != nil {
		return err
	}
	if ctx.AuthInfo == "" {
		return fmt.Errorf("kubeconfig context %q names no user", name)
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || user == nil {
		return fmt.Errorf("kubeconfig context %q names user %q, which is not in users", name, ctx.AuthInfo)
	}
	return validateUser(ctx.AuthInfo, user)
}

func validateCluster(name string, c *clientcmdapi.Cluster) error {
	if c.Server == "" {
		return fmt.Errorf("kubeconfig cluster %q has no server", name)
	}
	u, err := url.Parse(c.Server)
	if err != nil {
		// url.Error quotes the URL, which may carry userinfo; do not wrap it.
		return fmt.Errorf("kubeconfig cluster %q: server is not a URL", name)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("kubeconfig cluster %q: server must use https, not %q", name, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("kubeconfig cluster %q: server has no host", name)
	}
	// A host that is neither an IP nor a DNS name is a typo or an attempt to confuse the dialer or
	// the certificate check; refuse it here rather than at connect time.
	if host := u.Hostname(); net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		return fmt.Errorf("kubeconfig cluster %q: server host %q is neither an IP address nor a DNS name", name, host)
	}
	if u.User != nil {
		return fmt.Errorf("kubeconfig cluster %q: server URL must not carry a user or password", name)
	}
	if c.InsecureSkipTLSVerify {
		return fmt.Errorf("kubeconfig cluster %q: insecure-skip-tls-verify is not allowed; give certificate-authority-data", name)
	}
	if c.CertificateAuthority != "" {
		return fmt.Errorf("kubeconfig cluster %q: certificate-authority (a file path) is not allowed; give certificate-authority-data", name)
	}
	// A proxy is an extra hop that sees the bearer token when the member's
	// TLS is terminated there, and a socks5/http proxy URL would let the
	// Secret's writer steer the operator's traffic through a host of their
	// choosing. Members are reached directly (or through the operator's own
	// environment's proxy settings, which the Secret's writer does not set).
	if c.ProxyURL != "" {
		return fmt.Errorf("kubeconfig cluster %q: proxy-url is not allowed", name)
	}
	return nil
}

func validateUser(name string, a *clientcmdapi.AuthInfo) error {
	refuse := func(field, instead string) error {
		msg := fmt.Sprintf("kubeconfig user %q: %s is not allowed", name, field)
		if instead != "" {
			msg += "; give " + instead
		}
		return errors.New(msg)
	}
	switch {
	case a.ClientCertificate != "":
		return refuse("client-certificate (a file path)", "client-certificate-data")
	case a.ClientKey != "":
		return refuse("client-key (a file path)", "client-key-data")
	case a.TokenFile != "":
		return refuse("tokenFile (a file path)", "token")
	case a.Exec != nil:
		return refuse("exec (runs a program on the operator's host)", "token or client-certificate-data")
	case a.AuthProvider != nil:
		return refuse("auth-provider", "token or client-certificate-data")
	case a.Impersonate != "" || a.ImpersonateUID != "" || len(a.ImpersonateGroups) > 0 || len(a.ImpersonateUserExtra) > 0:
		// Impersonation widens what the credential may do beyond the member
		// ServiceAccount the member chart grants; the hub acts as that
		// ServiceAccount and nothing else.
		return refuse("as/as-uid/as-groups/as-user-extra (impersonation)", "")
	case a.Username != "" || a.Password != "":
		return refuse("username/password (basic auth)", "token or client-certificate-data")
	}
	hasCert := len(a.ClientCertificateData) > 0
	hasKey := len(a.ClientKeyData) > 0
	if hasCert != hasKey {
		return fmt.Errorf("kubeconfig user %q: client-certificate-data and client-key-data must be given together", name)
	}
	if !hasCert && a.Token == "" {
		return fmt.Errorf("kubeconfig user %q has no credentials; give token or client-certificate-data with client-key-data", name)
	}
	return nil
}
