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
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mrtr-dev/mrtr-operator/internal/members"
)

// memberKubeconfigKey is the data key of a member's kubeconfig Secret on the hub, the one Cluster
// API writes in its <cluster>-kubeconfig Secrets, so that either kind of Secret serves.
const memberKubeconfigKey = "value"

// secretKind is the kind of the manifest member kubeconfig prints.
const secretKind = "Secret"

// newMemberCommand groups what concerns member clusters of a ClusterMRTRKeyring
// (docs/multi-cluster.md).
func newMemberCommand(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "member",
		Short: "Connect member clusters of a ClusterMRTRKeyring to the hub",
	}
	c.AddCommand(newMemberKubeconfigCommand(e))
	return c
}

// memberKubeconfigOptions are the flags of member kubeconfig.
type memberKubeconfigOptions struct {
	name, server, serviceAccount, tokenSecret, hubNamespace string
}

// newMemberKubeconfigCommand prints the hub's Secret for one member, built from what the chart's
// member mode installed on the member: the ServiceAccount's long-lived token Secret (its token and
// the member's CA). It reads the member (the kubeconfig context given) and writes nothing: pipe the
// output to kubectl apply against the hub. The kubeconfig it prints passes the operator's own
// validation (internal/members.RESTConfig), which it runs before printing.
func newMemberKubeconfigCommand(e *env) *cobra.Command {
	var o memberKubeconfigOptions
	c := &cobra.Command{
		Use:   "kubeconfig --name NAME",
		Short: "Print the hub's <NAME>-kubeconfig Secret for this member cluster (run against the member)",
		Long: "member kubeconfig reads the token Secret of the member ServiceAccount that the chart's member mode\n" +
			"installed (in -n, the chart's namespace) and prints a Secret <NAME>-kubeconfig for the hub's operator\n" +
			"namespace whose data key value holds a kubeconfig: https server, the member's CA and the token, inline.\n" +
			"The output holds a credential: pipe it to the hub, do not keep it.",
		Example: "  kubectl mrtr member kubeconfig --name west --context west -n mrtr-operator-system \\\n" +
			"    | kubectl --context hub apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.memberKubeconfig(cmd, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.name, "name", "", "the member's name in spec.members (a DNS label); the Secret is <name>-kubeconfig")
	f.StringVar(&o.server, "server", "", "the member API server's https URL as the hub reaches it (default: the kubeconfig context's)")
	f.StringVar(&o.serviceAccount, "service-account", "mrtr-operator-member", "the member ServiceAccount the chart installed")
	f.StringVar(&o.tokenSecret, "token-secret", "", "its token Secret (default: <service-account>-token, as the chart names it)")
	f.StringVar(&o.hubNamespace, "hub-namespace", "mrtr-operator-system", "the operator's namespace on the hub, where the Secret goes")
	return c
}

func (e *env) memberKubeconfig(cmd *cobra.Command, o memberKubeconfigOptions) error {
	if errs := validation.IsDNS1123Label(o.name); len(errs) > 0 {
		return fmt.Errorf("--name %q is not a member name (a DNS label): %s", o.name, errs[0])
	}
	if o.tokenSecret == "" {
		o.tokenSecret = o.serviceAccount + "-token"
	}
	server := o.server
	if server == "" {
		cfg, err := e.flags.ToRESTConfig()
		if err != nil {
			return fmt.Errorf("kubeconfig: %w (or give --server)", err)
		}
		server = cfg.Host
	}
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("server %q is not an https URL without user info; the hub connects to members over https only (give --server)", server)
	}
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.kube()
	if err != nil {
		return err
	}
	var s corev1.Secret
	if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: o.tokenSecret}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no Secret %s/%s: is the chart installed with mode member in namespace %s (-n)?", ns, o.tokenSecret, ns)
		}
		return fmt.Errorf("read Secret %s/%s: %w", ns, o.tokenSecret, err)
	}
	if s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != o.serviceAccount {
		return fmt.Errorf("the Secret %s/%s is not the token Secret of ServiceAccount %s (type %s, for %q)",
			ns, o.tokenSecret, o.serviceAccount, s.Type, s.Annotations[corev1.ServiceAccountNameKey])
	}
	token, ca := s.Data[corev1.ServiceAccountTokenKey], s.Data[corev1.ServiceAccountRootCAKey]
	if len(token) == 0 || len(ca) == 0 {
		return fmt.Errorf("the Secret %s/%s has no %s or %s yet: the API server's token controller fills it in; try again",
			ns, o.tokenSecret, corev1.ServiceAccountTokenKey, corev1.ServiceAccountRootCAKey)
	}
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{o.name: {Server: server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{o.serviceAccount: {Token: string(token)}},
		Contexts:       map[string]*clientcmdapi.Context{o.name: {Cluster: o.name, AuthInfo: o.serviceAccount}},
		CurrentContext: o.name,
	})
	if err != nil {
		return errors.New("cannot write the kubeconfig")
	}
	// What the operator will refuse is refused here, where it can still be fixed.
	if _, err := members.RESTConfig(kubeconfig); err != nil {
		return fmt.Errorf("the kubeconfig would be refused by the operator: %w", err)
	}
	out := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: secretKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.name + "-kubeconfig", Namespace: o.hubNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{memberKubeconfigKey: kubeconfig},
	}
	y, err := yaml.Marshal(out)
	if err != nil {
		return errors.New("cannot write the Secret manifest")
	}
	_, err = cmd.OutOrStdout().Write(y)
	return err
}
