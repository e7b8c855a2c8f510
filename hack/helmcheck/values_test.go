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

package helmcheck

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func managerContainer(t *testing.T, objs objects) map[string]any {
	t.Helper()
	c := managerOf(objs.must(t, "Deployment", releaseNS, managerName))
	if c == nil {
		t.Fatal("the manager Deployment has no container manager")
	}
	return c
}

// TestDefaults checks what the default values promise: two replicas with a PodDisruptionBudget and
// apart from each other, the image of appVersion, the manager's flags, no GOMEMLIMIT (the manager
// takes 90% of its container's memory limit itself), and the CRD kept on uninstall.
func TestDefaults(t *testing.T) {
	got := render(t, nil).objects
	d := got.must(t, "Deployment", releaseNS, managerName)
	if r := d.get("spec", "replicas"); r != 2.0 {
		t.Errorf("replicas = %v, want 2", r)
	}
	pdb := got.must(t, "PodDisruptionBudget", releaseNS, managerName)
	if m := pdb.get("spec", "minAvailable"); m != 1.0 {
		t.Errorf("PodDisruptionBudget minAvailable = %v, want 1", m)
	}
	if !selects(pdb.get("spec", "selector", "matchLabels"), d.get("spec", "template", "metadata", "labels")) {
		t.Error("the PodDisruptionBudget does not select the manager's pods")
	}
	affinity := d.get("spec", "template", "spec", "affinity")
	term := list(affinity, "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	if len(term) != 1 || str(term[0], "podAffinityTerm", "topologyKey") != "kubernetes.io/hostname" ||
		!selects(lookup(term[0], "podAffinityTerm", "labelSelector", "matchLabels"), d.get("spec", "template", "metadata", "labels")) {
		t.Errorf("affinity = %s, want a preferred anti-affinity of the manager's pods by hostname", asJSON(affinity))
	}

	c := managerContainer(t, got)
	if img, want := str(c, "image"), "ghcr.io/mrtr-dev/mrtr-operator:"+loadChart(t).Metadata.AppVersion; img != want {
		t.Errorf("image = %q, want %q (the chart's appVersion)", img, want)
	}
	for _, arg := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081",
		"--zap-log-level=info"} {
		if !hasArg(c, arg) {
			t.Errorf("args %v lack %s", strs(c, "args"), arg)
		}
	}
	if slices.ContainsFunc(strs(c, "args"), func(a string) bool { return strings.HasPrefix(a, "--namespaces") }) {
		t.Errorf("args %v restrict the namespaces, want every namespace by default", strs(c, "args"))
	}
	if e := env(c, "GOMEMLIMIT"); e != nil {
		t.Errorf("GOMEMLIMIT = %s; the manager sets 90%% of its memory limit itself, and an env var would override that", asJSON(e))
	}
	if err := covers(c["securityContext"], map[string]any{
		"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}},
	}, "securityContext"); err != nil {
		t.Error(err)
	}
	if err := covers(d.get("spec", "template", "spec", "securityContext"), map[string]any{
		"runAsNonRoot": true, "runAsUser": 65532.0, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}, "pod securityContext"); err != nil {
		t.Error(err)
	}

	crd := got.must(t, "CustomResourceDefinition", "", "mrtrkeyrings.mrtr.dev")
	if p := crd.get("metadata", "annotations", "helm.sh/resource-policy"); p != "keep" {
		t.Errorf("CRD helm.sh/resource-policy = %v, want keep", p)
	}
	if v := crd.get("metadata", "annotations", "controller-gen.kubebuilder.io/version"); v == nil {
		t.Error("the CRD lost controller-gen's version annotation")
	}
	for _, role := range []string{"admin", "editor", "viewer"} {
		r := got.must(t, "ClusterRole", "", "mrtr-operator-mrtrkeyring-"+role+"-role")
		aggregate := map[string]string{"admin": "admin", "editor": "edit", "viewer": "view"}[role]
		if l := r.get("metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-"+aggregate); l != "true" {
			t.Errorf("ClusterRole %s is not aggregated to %s", r.name(), aggregate)
		}
		// Whoever may create a ClusterMRTRKeyring may put keys into, and read them out of, any
		// namespace: only its viewer role joins a built-in role (view, which a RoleBinding cannot
		// widen to a cluster-scoped kind).
		c := got.must(t, "ClusterRole", "", "mrtr-operator-clustermrtrkeyring-"+role+"-role")
		for label := range c.get("metadata", "labels").(map[string]any) {
			if strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") && label != "rbac.authorization.k8s.io/aggregate-to-view" {
				t.Errorf("ClusterRole %s is aggregated (%s): cluster keyrings are for cluster admins", c.name(), label)
			}
		}
		if l := c.get("metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-view"); (role == "viewer") != (l == "true") {
			t.Errorf("ClusterRole %s: aggregate-to-view = %v", c.name(), l)
		}
	}
}

// env is the container's environment variable of that name, nil if there is none.
func env(c map[string]any, name string) any {
	for _, e := range list(c, "env") {
		if str(e, "name") == name {
			return e
		}
	}
	return nil
}

// TestValues checks what each value changes.
func TestValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		check  func(t *testing.T, objs objects)
	}{{
		name:   "one replica: no PodDisruptionBudget, no anti-affinity",
		values: `manager: {replicas: 1}`,
		check: func(t *testing.T, objs objects) {
			if len(objs.ofKind("PodDisruptionBudget")) != 0 {
				t.Error("a PodDisruptionBudget with one replica would block every node drain")
			}
			if a := objs.must(t, "Deployment", releaseNS, managerName).get("spec", "template", "spec", "affinity"); a != nil {
				t.Errorf("affinity = %s with one replica", asJSON(a))
			}
		},
	}, {
		name: "image, log level and extra args",
		values: `manager: {image: {repository: example.com/mrtr, tag: v1.2.3, pullPolicy: Always}, logLevel: debug, ` +
			`extraArgs: [--max-concurrent-reconciles=16]}`,
		check: func(t *testing.T, objs objects) {
			c := managerContainer(t, objs)
			if img := str(c, "image"); img != "example.com/mrtr:v1.2.3" {
				t.Errorf("image = %q", img)
			}
			if p := str(c, "imagePullPolicy"); p != "Always" {
				t.Errorf("imagePullPolicy = %q", p)
			}
			args := strs(c, "args")
			if !hasArg(c, "--zap-log-level=debug") || args[len(args)-1] != "--max-concurrent-reconciles=16" {
				t.Errorf("args = %v, want --zap-log-level=debug and the extra arg last (the last of a flag wins)", args)
			}
		},
	}, {
		name:   "an existing ServiceAccount",
		values: `serviceAccount: {create: false, name: existing}`,
		check: func(t *testing.T, objs objects) {
			if sas := objs.ofKind("ServiceAccount"); len(sas) != 0 {
				t.Errorf("renders ServiceAccount %s though serviceAccount.create is false", sas[0].name())
			}
			if sa := objs.must(t, "Deployment", releaseNS, managerName).get("spec", "template", "spec", "serviceAccountName"); sa != "existing" {
				t.Errorf("serviceAccountName = %v", sa)
			}
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, b := range objs.ofKind(kind) {
					if err := equal(b.get("subjects"), managerSubject("existing"), "subjects"); err != nil {
						t.Errorf("%s: %v", b.key(), err)
					}
				}
			}
		},
	}, {
		name:   "ServiceAccount name and annotations",
		values: `serviceAccount: {name: mrtr, annotations: {eks.amazonaws.com/role-arn: arn}}`,
		check: func(t *testing.T, objs objects) {
			sa := objs.must(t, "ServiceAccount", releaseNS, "mrtr")
			if a := sa.get("metadata", "annotations", "eks.amazonaws.com/role-arn"); a != "arn" {
				t.Errorf("ServiceAccount annotations = %s", asJSON(sa.get("metadata", "annotations")))
			}
		},
	}, {
		name:   "no CRD",
		values: `crd: {enable: false}`,
		check: func(t *testing.T, objs objects) {
			if n := len(objs.ofKind("CustomResourceDefinition")); n != 0 {
				t.Errorf("%d CRDs with crd.enable false", n)
			}
		},
	}, {
		name:   "CRD not kept",
		values: `crd: {keep: false}`,
		check: func(t *testing.T, objs objects) {
			crd := objs.must(t, "CustomResourceDefinition", "", "mrtrkeyrings.mrtr.dev")
			if p := crd.get("metadata", "annotations", "helm.sh/resource-policy"); p != nil {
				t.Errorf("helm.sh/resource-policy = %v with crd.keep false", p)
			}
		},
	}, {
		name:   "no consumer part",
		values: `consumer: {enable: false}`,
		check: func(t *testing.T, objs objects) {
			for _, k := range []string{
				objectKey("ClusterRole", "", "mrtr-keyring-consumer"),
				objectKey("ValidatingAdmissionPolicy", "", "mrtr-keyring-acknowledgements"),
				objectKey("ValidatingAdmissionPolicyBinding", "", "mrtr-keyring-acknowledgements"),
				objectKey("ValidatingAdmissionPolicy", "", "mrtr-keyring-acknowledgement-bindings"),
				objectKey("ValidatingAdmissionPolicyBinding", "", "mrtr-keyring-acknowledgement-bindings"),
			} {
				if _, ok := objs[k]; ok {
					t.Errorf("%s rendered with consumer.enable false", k)
				}
			}
		},
	}, {
		name:   "no metrics",
		values: `metrics: {enable: false}`,
		check: func(t *testing.T, objs objects) {
			c := managerContainer(t, objs)
			if !hasArg(c, "--metrics-bind-address=0") {
				t.Errorf("args %v do not turn the metrics endpoint off", strs(c, "args"))
			}
			for _, k := range objs.keys() {
				if strings.Contains(k, "metrics") {
					t.Errorf("%s rendered with metrics.enable false", k)
				}
			}
		},
	}, {
		name:   "no helper roles",
		values: `rbac: {helpers: {enable: false}}`,
		check: func(t *testing.T, objs objects) {
			for _, k := range objs.keys() {
				if strings.Contains(k, "mrtrkeyring-") {
					t.Errorf("%s rendered with rbac.helpers.enable false", k)
				}
			}
		},
	}, {
		name:   "the release namespace only",
		values: `scope: {watchNamespaces: [.Release.Namespace]}`,
		check: func(t *testing.T, objs objects) {
			if c := managerContainer(t, objs); !hasArg(c, "--namespaces="+releaseNS) {
				t.Errorf("args %v lack --namespaces=%s", strs(c, "args"), releaseNS)
			}
			objs.must(t, "Role", releaseNS, "mrtr-operator-manager-role")
			objs.must(t, "RoleBinding", releaseNS, "mrtr-operator-manager-rolebinding")
		},
	}, {
		name:   "another release name prefixes every name",
		values: `fullnameOverride: keyrings`,
		check: func(t *testing.T, objs objects) {
			objs.must(t, "Deployment", releaseNS, "keyrings-controller-manager")
			b := objs.must(t, "ClusterRoleBinding", "", "keyrings-manager-rolebinding")
			if ref := str(b.fields, "roleRef", "name"); ref != "keyrings-manager-role" {
				t.Errorf("roleRef = %s", ref)
			}
			// The consumer's names are a contract with the servers' RoleBindings: never prefixed.
			objs.must(t, "ClusterRole", "", "mrtr-keyring-consumer")
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, render(t, parseValues(t, tc.values)).objects)
		})
	}
}

func parseValues(t *testing.T, y string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(y))
	if err != nil {
		t.Fatalf("values %s: %v", y, err)
	}
	return v
}

// TestWrongValuesFail checks that values the manager cannot run with fail the install, saying why.
func TestWrongValuesFail(t *testing.T) {
	for _, tc := range []struct{ values, want string }{
		{`scope: {watchNamespaces: [Team_A]}`, `scope.watchNamespaces: "Team_A" is not a namespace name`},
		{`manager: {replicas: -1}`, `manager.replicas must be 0 (no manager runs, e.g. while you upgrade by hand) or more, not -1`},
		{`manager: {podAntiAffinity: sometimes}`, `manager.podAntiAffinity must be soft, hard or none, not "sometimes"`},
		{`serviceAccount: {create: false}`, `serviceAccount.name must name the ServiceAccount to use`},
		{`{metrics: {enable: false}, prometheus: {serviceMonitor: {enable: true}}}`, `prometheus.serviceMonitor.enable needs metrics.enable`},
	} {
		t.Run(tc.values, func(t *testing.T) {
			_, err := tryRender(t, parseValues(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestObjectsDecodeStrictly decodes every object the chart renders, in each of its test
// configurations, into its Go type with unknown fields refused: a misspelt or misplaced field,
// which the API server would drop silently (or refuse), fails here.
func TestObjectsDecodeStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The Prometheus operator's kinds have no Go types here; their specs are compared with config/.
	untyped := []string{"monitoring.coreos.com/v1, Kind=ServiceMonitor", "monitoring.coreos.com/v1, Kind=PrometheusRule"}

	for name, vals := range map[string]map[string]any{
		"defaults":   nil,
		"namespaced": valuesFile(t, "ci/namespaced-values.yaml"),
		"all":        valuesFile(t, "ci/all-values.yaml"),
		"member":     valuesFile(t, "ci/member-values.yaml"),
	} {
		for _, o := range render(t, vals).objects {
			gvk := schema.FromAPIVersionAndKind(str(o.fields, "apiVersion"), o.kind())
			if slices.Contains(untyped, gvk.String()) {
				continue
			}
			typed, err := scheme.New(gvk)
			if err != nil {
				t.Errorf("%s: %s (%s): %v", name, o.key(), o.source, err)
				continue
			}
			dec := json.NewDecoder(bytes.NewReader([]byte(asJSON(o.fields))))
			dec.DisallowUnknownFields()
			if err := dec.Decode(typed); err != nil {
				t.Errorf("%s: %s (%s) does not decode as %s: %v", name, o.key(), o.source, gvk.Kind, err)
			}
		}
	}
}
