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
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator is installed as users install it, from the Helm chart (dist/chart), release
// ReleaseName in OperatorNamespace, with the chart's Deployment at zero replicas: the harness runs
// the manager itself (Operator), with the Deployment's flags and as the chart's ServiceAccount, so
// that every request it makes goes through the RBAC the chart installed.
const (
	ReleaseName            = "mrtr-operator"
	OperatorNamespace      = "mrtr-operator-system"
	OperatorServiceAccount = ReleaseName + "-controller-manager"
	// MetricsReaderRole is the chart's ClusterRole that lets a scraper read the manager's /metrics.
	MetricsReaderRole = ReleaseName + "-metrics-reader"
	managerDeployment = ReleaseName + "-controller-manager"
	managerContainer  = "manager"
)

// installChart installs the chart with bin/helm (make helm builds it from Helm's Go module), with
// the cluster keyrings turned on (clusterKeyrings.enable: their flag and their RBAC) when asked.
func installChart(ctx context.Context, root, kubeconfig string, clusterKeyrings bool) error {
	values := []string{"manager.replicas=0"}
	if clusterKeyrings {
		values = append(values, "clusterKeyrings.enable=true")
	}
	return runHelm(ctx, root, kubeconfig, []string{"install", ReleaseName, "--create-namespace"}, values...)
}

// runHelm runs bin/helm's verb and release (args) on the chart dist/chart in OperatorNamespace of
// the cluster of kubeconfig, with values (key=value) set.
func runHelm(ctx context.Context, root, kubeconfig string, args []string, values ...string) error {
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		return fmt.Errorf("%s is missing: run make helm (make test-e2e and make demo do)", helm)
	}
	full := append(slices.Clone(args[:2]), filepath.Join(root, "dist", "chart"))
	full = append(append(full, args[2:]...), "--namespace", OperatorNamespace, "--kubeconfig", kubeconfig)
	for _, v := range values {
		full = append(full, "--set", v)
	}
	cmd := exec.CommandContext(ctx, helm, full...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitForCRDs waits until the API server serves every CustomResourceDefinition the chart installed.
func waitForCRDs(ctx context.Context, c client.Client) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := c.List(ctx, &crds); err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		found := false
		for _, crd := range crds.Items {
			if !strings.HasSuffix(crd.Spec.Group, "mrtr.dev") {
				continue
			}
			found = true
			established := false
			for _, cond := range crd.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return false, nil
			}
		}
		return found, nil
	})
}

// managerArgs are the manager container's args in the chart's Deployment.
func managerArgs(ctx context.Context, c client.Client) ([]string, error) {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: managerDeployment}, &d); err != nil {
		return nil, fmt.Errorf("the chart's Deployment: %w", err)
	}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name == managerContainer {
			return ctr.Args, nil
		}
	}
	return nil, fmt.Errorf("the chart's Deployment %s has no container %q", managerDeployment, managerContainer)
}

// writeServiceAccount writes into dir what a kubelet mounts at
// /var/run/secrets/kubernetes.io/serviceaccount for a pod of ServiceAccount ns/name: a token
// (TokenRequest, bound to the pod when bound is set, so that userInfo.extra names it), the
// cluster's CA and the namespace.
func writeServiceAccount(ctx context.Context, c client.Client, ca []byte, ns, name string,
	bound *authenticationv1.BoundObjectReference, dir string) error {
	token, err := serviceAccountToken(ctx, c, ns, name, bound)
	if err != nil {
		return err
	}
	// World-readable, as a projected volume's files are by default (defaultMode 0644): the container
	// runs as its image's user, not as root. (The folder is in the test's temporary directory.)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for file, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil { //nolint:gosec // see above
			return err
		}
	}
	return nil
}

// serviceAccountToken requests a token of ServiceAccount ns/name for two hours, longer than a
// suite runs (bound to a pod when bound is set).
func serviceAccountToken(ctx context.Context, c client.Client, ns, name string,
	bound *authenticationv1.BoundObjectReference) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: new(int64(2 * 3600)), BoundObjectRef: bound,
	}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// serviceAccountKubeconfig writes a kubeconfig that speaks as the ServiceAccount mounted in dir
// (writeServiceAccount), for a process outside a container, where client-go's in-cluster config
// cannot be used: it reads the mount at its fixed path only.
func serviceAccountKubeconfig(server, dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: filepath.Join(dir, "ca.crt")}
	cfg.AuthInfos["serviceaccount"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "token")}
	cfg.Contexts["serviceaccount"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "serviceaccount", Namespace: OperatorNamespace}
	cfg.CurrentContext = "serviceaccount"
	path := filepath.Join(dir, "..", filepath.Base(dir)+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// inClusterEnv is what a kubelet sets for a container to find the API server.
func inClusterEnv(server string) ([]string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("API server URL %q: %w", server, err)
	}
	return []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()}, nil
}

// MetricsScraperToken makes a ServiceAccount bound to the chart's metrics-reader ClusterRole, as
// a Prometheus is, and returns a token of it.
func (e *Env) MetricsScraperToken(ctx context.Context) (string, error) {
	const name = "metrics-scraper"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: name}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kindClusterRole, Name: MetricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: OperatorNamespace, Name: name}},
	}
	for _, obj := range []client.Object{sa, binding} {
		if err := e.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	return serviceAccountToken(ctx, e.Client, OperatorNamespace, name, nil)
}

// StrangerToken returns a token of a ServiceAccount no role is bound to: the API server
// authenticates it, and the metrics endpoint must still refuse it.
func (e *Env) StrangerToken(ctx context.Context) (string, error) {
	const name = "metrics-stranger"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: name}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return serviceAccountToken(ctx, e.Client, OperatorNamespace, name, nil)
}

// ScrapeMetrics GETs the running manager's /metrics with token ("" for none) and returns the body;
// a status other than 200 is an error naming it. The manager's serving certificate is
// self-signed (no cert-manager here), so it is not verified: what this checks is who may read.
func (e *Env) ScrapeMetrics(ctx context.Context, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.Operator.MetricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close() //nolint:errcheck // read only
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}
