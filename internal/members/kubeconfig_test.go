package members

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// secretToken is distinctive so a test can tell whether an error echoes it.
const secretToken = "tok-SECRET-9f8e7d6c5b4a"

// pemPair returns a self-signed certificate and its key, PEM encoded, as a
// member kubeconfig would carry them inline.
func pemPair(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "member"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Unix(0, 0).Add(100 * 365 * 24 * time.Hour),
		IsCA:         true,
		KeyUsage:     x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// kubeconfig renders a kubeconfig with one context "west" using cluster
// "west-cluster" and user "west-admin"; clusterExtra and userExtra are YAML
// lines (already indented) added to the cluster and user.
func kubeconfig(server, clusterExtra, userExtra string) string {
	return `apiVersion: v1
kind: Config
current-context: west
contexts:
- name: west
  context:
    cluster: west-cluster
    user: west-admin
clusters:
- name: west-cluster
  cluster:
    server: ` + server + `
` + clusterExtra + `users:
- name: west-admin
  user:
` + userExtra
}

func TestRESTConfig(t *testing.T) {
	certPEM, keyPEM := pemPair(t)
	ca := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString(certPEM) + "\n"
	token := "    token: " + secretToken + "\n"
	certUser := "    client-certificate-data: " + base64.StdEncoding.EncodeToString(certPEM) + "\n" +
		"    client-key-data: " + base64.StdEncoding.EncodeToString(keyPEM) + "\n"
	const server = "https://west.example:6443"

	valid := []struct {
		name   string
		config string
		check  func(t *testing.T, host, bearer string, hasCert bool)
	}{
		{
			name:   "CA data and token",
			config: kubeconfig(server, ca, token),
			check: func(t *testing.T, host, bearer string, hasCert bool) {
				if host != server || bearer != secretToken || hasCert {
					t.Errorf("got host %q, token set %v, client cert %v", host, bearer == secretToken, hasCert)
				}
			},
		},
		{
			name:   "CA data and client certificate data",
			config: kubeconfig(server, ca, certUser),
			check: func(t *testing.T, host, bearer string, hasCert bool) {
				if host != server || bearer != "" || !hasCert {
					t.Errorf("got host %q, token set %v, client cert %v", host, bearer != "", hasCert)
				}
			},
		},
		{
			name:   "upper-case scheme and host, IPv6 server",
			config: kubeconfig("HTTPS://[2001:db8::1]:6443", ca, token),
			check: func(t *testing.T, host, _ string, _ bool) {
				if !strings.Contains(host, "[2001:db8::1]:6443") {
					t.Errorf("got host %q", host)
				}
			},
		},
		{
			name:   "unused contexts are not checked",
			config: kubeconfig(server, ca, token) + "- name: other\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n",
			check:  func(*testing.T, string, string, bool) {},
		},
	}
	for _, tc := range valid {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			rc, err := RESTConfig([]byte(tc.config))
			if err != nil {
				t.Fatalf("RESTConfig: %v", err)
			}
			if len(rc.CAData) == 0 {
				t.Error("CA data not carried into the client configuration")
			}
			tc.check(t, rc.Host, rc.BearerToken, len(rc.CertData) > 0 && len(rc.KeyData) > 0)
		})
	}

	refused := []struct {
		name   string
		config string
		want   []string // substrings the error must contain
	}{
		{"empty", "", []string{"empty"}},
		{"not a kubeconfig", "{[" + secretToken, []string{"does not parse"}},
		{"no current-context", strings.Replace(kubeconfig(server, ca, token), "current-context: west\n", "", 1), []string{"no current-context"}},
		{"current-context missing", strings.Replace(kubeconfig(server, ca, token), "current-context: west", "current-context: east", 1), []string{`"east"`, "names no context"}},
		{"cluster missing", strings.Replace(kubeconfig(server, ca, token), "cluster: west-cluster", "cluster: nowhere", 1), []string{`"west"`, `"nowhere"`}},
		{"user missing", strings.Replace(kubeconfig(server, ca, token), "user: west-admin", "user: nobody", 1), []string{`"west"`, `"nobody"`}},
		{"http server", kubeconfig("http://west.example:6443", ca, token), []string{`"west-cluster"`, "https"}},
		{"server without host", kubeconfig("https://", ca, token), []string{`"west-cluster"`, "no host"}},
		{"invalid host", kubeconfig("https://invalid_host.example.com", ca, token), []string{`"west-cluster"`, "neither an IP address nor a DNS name"}},
		{"userinfo in server", kubeconfig("https://admin:"+secretToken+"@west.example", ca, token), []string{`"west-cluster"`, "user or password"}},
		{"insecure-skip-tls-verify", kubeconfig(server, "    insecure-skip-tls-verify: true\n", token), []string{`"west-cluster"`, "insecure-skip-tls-verify"}},
		{"certificate-authority file", kubeconfig(server, "    certificate-authority: /etc/ca.crt\n", token), []string{`"west-cluster"`, "certificate-authority"}},
		{"proxy-url", kubeconfig(server, ca+"    proxy-url: socks5://proxy.example:1080\n", token), []string{`"west-cluster"`, "proxy-url"}},
		{"client-certificate file", kubeconfig(server, ca, "    client-certificate: /etc/client.crt\n    client-key-data: eA==\n"), []string{`"west-admin"`, "client-certificate"}},
		{"client-key file", kubeconfig(server, ca, "    client-certificate-data: eA==\n    client-key: /etc/client.key\n"), []string{`"west-admin"`, "client-key"}},
		{"tokenFile", kubeconfig(server, ca, token+"    tokenFile: /var/run/secrets/token\n"), []string{`"west-admin"`, "tokenFile"}},
		{"exec plugin", kubeconfig(server, ca, token+"    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n"), []string{`"west-admin"`, "exec"}},
		{"auth-provider", kubeconfig(server, ca, token+"    auth-provider:\n      name: oidc\n"), []string{`"west-admin"`, "auth-provider"}},
		{"impersonation", kubeconfig(server, ca, token+"    as: system:admin\n"), []string{`"west-admin"`, "impersonation"}},
		{"basic auth", kubeconfig(server, ca, "    username: admin\n    password: "+secretToken+"\n"), []string{`"west-admin"`, "basic auth"}},
		{"no credentials", kubeconfig(server, ca, "    {}\n"), []string{`"west-admin"`, "no credentials"}},
		{"key without certificate", kubeconfig(server, ca, "    client-key-data: "+base64.StdEncoding.EncodeToString(keyPEM)+"\n"), []string{`"west-admin"`, "together"}},
		{"too large", kubeconfig(server, ca, token) + "#" + strings.Repeat("x", MaxKubeconfigBytes), []string{"limit"}},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			_, err := RESTConfig([]byte(tc.config))
			if err == nil {
				t.Fatal("RESTConfig accepted it")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			assertNoCredentials(t, msg, keyPEM)
		})
	}
}

func assertNoCredentials(t testing.TB, msg string, keyPEM []byte) {
	t.Helper()
	if strings.Contains(msg, secretToken) {
		t.Errorf("error echoes the token: %q", msg)
	}
	if len(keyPEM) > 0 && strings.Contains(msg, base64.StdEncoding.EncodeToString(keyPEM)[:24]) {
		t.Errorf("error echoes key data: %q", msg)
	}
}

// FuzzRESTConfig feeds arbitrary bytes and mutations of valid and refused
// kubeconfigs: RESTConfig must not panic, and an error must never contain
// the token the input carries.
func FuzzRESTConfig(f *testing.F) {
	const ca = "    certificate-authority-data: eA==\n"
	const token = "    token: " + secretToken + "\n"
	f.Add([]byte(kubeconfig("https://west.example:6443", ca, token)))
	f.Add([]byte(kubeconfig("http://admin:"+secretToken+"@west.example", "    insecure-skip-tls-verify: true\n", token)))
	f.Add([]byte(kubeconfig("https://west.example", ca, token+"    exec:\n      command: sh\n")))
	f.Add([]byte(kubeconfig("https://west.example", ca, "    username: u\n    password: "+secretToken+"\n")))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","current-context":"a","contexts":[{"name":"a","context":{"cluster":"c","user":"u"}}]}`))
	f.Add([]byte("{[" + secretToken))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, err := RESTConfig(in)
		if err == nil {
			return
		}
		// The fixed token is the secret in every seed. A mutation may move it
		// into a name or other non-secret position, where quoting it is fine,
		// so check only inputs where it appears solely as a credential value.
		s := string(in)
		if strings.Count(s, secretToken) == strings.Count(s, "token: "+secretToken)+strings.Count(s, "password: "+secretToken) &&
			strings.Contains(err.Error(), secretToken) {
			t.Errorf("error echoes the token: %q", err)
		}
	})
}
