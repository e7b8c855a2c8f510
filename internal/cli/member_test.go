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

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mrtr-dev/mrtr-operator/internal/members"
)

const (
	memberNS    = "mrtr-operator-system"
	memberToken = "member-token-7c6b5a49"
	memberCA    = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
)

// memberTokenSecret is the token Secret the chart's member mode installs, as the API server's
// token controller has filled it in.
func memberTokenSecret(mutate func(*corev1.Secret)) client.Object {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mrtr-operator-member-token", Namespace: memberNS,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "mrtr-operator-member"}},
		Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte(memberToken), corev1.ServiceAccountRootCAKey: []byte(memberCA)},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// contextKubeconfig writes a kubeconfig whose current context points at server, as the member
// admin's own would.
func contextKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	y := "apiVersion: v1\nkind: Config\ncurrent-context: west\ncontexts:\n- name: west\n  context: {cluster: west, user: admin}\n" +
		"clusters:\n- name: west\n  cluster: {server: '" + server + "'}\nusers:\n- name: admin\n  user: {token: admin-token}\n"
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMemberKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		name, wantServer string
		args             func(t *testing.T) []string
	}{
		{"server flag", "https://west.example:6443", func(*testing.T) []string {
			return []string{"--server", "https://west.example:6443"}
		}},
		{"server of the context", "https://west-api.internal:443", func(t *testing.T) []string {
			return []string{"--kubeconfig", contextKubeconfig(t, "https://west-api.internal:443")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"member", "kubeconfig", "--name", "west", "-n", memberNS, "--hub-namespace", "hub-ops"}, tc.args(t)...)
			r := run(t, clusterOptions(memberTokenSecret(nil)), "", args...)
			if r.err != nil || r.errOut != "" {
				t.Fatalf("kubectl mrtr %s: %v, stderr %q", strings.Join(args, " "), r.err, r.errOut)
			}
			var s corev1.Secret
			if err := yaml.UnmarshalStrict([]byte(r.out), &s); err != nil {
				t.Fatalf("output is not a Secret: %v\n%s", err, r.out)
			}
			if s.Kind != "Secret" || s.Name != "west-kubeconfig" || s.Namespace != "hub-ops" {
				t.Errorf("printed %s %s/%s, want Secret hub-ops/west-kubeconfig", s.Kind, s.Namespace, s.Name)
			}
			rc, err := members.RESTConfig(s.Data["value"])
			if err != nil {
				t.Fatalf("the printed kubeconfig is refused: %v", err)
			}
			if rc.Host != tc.wantServer || rc.BearerToken != memberToken || string(rc.CAData) != memberCA {
				t.Errorf("kubeconfig has server %q, the token %v, the CA %v", rc.Host, rc.BearerToken == memberToken, string(rc.CAData) == memberCA)
			}
		})
	}
}

func TestMemberKubeconfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret client.Object
		args   []string
		want   string
	}{
		{"name not a DNS label", memberTokenSecret(nil), []string{"--name", "West_1", "--server", "https://w:6443"}, `--name "West_1" is not a member name`},
		{"http server", memberTokenSecret(nil), []string{"--name", "west", "--server", "http://w:6443"}, "https only"},
		{"user info in server", memberTokenSecret(nil), []string{"--name", "west", "--server", "https://u:p@w:6443"}, "without user info"},
		{"no token Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: memberNS}},
			[]string{"--name", "west", "--server", "https://w:6443"}, "is the chart installed with mode member"},
		{"not a token Secret", memberTokenSecret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }),
			[]string{"--name", "west", "--server", "https://w:6443"}, "is not the token Secret of ServiceAccount mrtr-operator-member"},
		{"another ServiceAccount's", memberTokenSecret(func(s *corev1.Secret) { s.Annotations[corev1.ServiceAccountNameKey] = "default" }),
			[]string{"--name", "west", "--server", "https://w:6443"}, "is not the token Secret of ServiceAccount mrtr-operator-member"},
		{"token not filled in yet", memberTokenSecret(func(s *corev1.Secret) { delete(s.Data, corev1.ServiceAccountTokenKey) }),
			[]string{"--name", "west", "--server", "https://w:6443"}, "token controller fills it in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"member", "kubeconfig", "-n", memberNS}, tc.args...)
			r := run(t, clusterOptions(tc.secret), "", args...)
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", r.err, tc.want)
			}
			if r.out != "" || strings.Contains(r.err.Error(), memberToken) {
				t.Errorf("printed %q, error %q: want nothing printed and no token in the error", r.out, r.err)
			}
		})
	}
}
