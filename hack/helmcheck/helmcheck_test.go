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

// Package helmcheck checks that the Helm chart (dist/chart) and kustomize's config/ install the same
// operator: the chart is rendered with Helm's own packages (as `helm install --dry-run` does) and
// config/ built with kustomize's, and the two are compared object by object. It also checks the
// chart's namespace-scoped mode, what each value changes, and that wrong values fail with a message.
package helmcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// chartOnly are the objects of the default install that kustomize's config/default does not have.
var chartOnly = []string{
	// Keeps one of the two manager replicas up through node drains (config/default runs one).
	objectKey("PodDisruptionBudget", releaseNS, managerName),
}

// TestDefaultsAgreeWithKustomize compares the chart with its default values against
// `kustomize build` of config/default, config/consumer and config/admission: the same objects under the
// same names, the same CRDs, RBAC rules and bindings, consumer role and admission policy, metrics
// Service, and a manager container that kustomize's args, ports, probes and securityContext hold in.
func TestDefaultsAgreeWithKustomize(t *testing.T) {
	want := union(t, union(t, kustomize(t, "default"), kustomize(t, "consumer")), kustomize(t, "admission"))
	// kustomize's YAML library reads a folded scalar's more-indented lines with an extra line break
	// (in the admission policy's CEL expressions: harmless there), which YAML, kubectl and Helm do not:
	// the policy compares with its file as those read it.
	for _, file := range []string{"consumer/acknowledgement_policy.yaml", "admission/pod_annotation_policy.yaml"} {
		for k, o := range configFile(t, file) {
			if _, ok := want[k]; !ok {
				t.Fatalf("config/%s does not install %s", filepath.Dir(file), k)
			}
			want[k] = o
		}
	}
	got := render(t, nil).objects

	for _, k := range want.keys() {
		w := want[k]
		if w.kind() == "Namespace" {
			continue // Helm installs into a namespace it does not own (--create-namespace).
		}
		g, ok := got[k]
		if !ok {
			t.Errorf("%s installs %s; the chart does not", w.source, k)
			continue
		}
		if err := agree(got, g, w); err != nil {
			t.Errorf("%s (%s) and %s disagree: %v", k, g.source, w.source, err)
		}
	}
	for _, k := range got.keys() {
		if _, ok := want[k]; !ok && !slices.Contains(chartOnly, k) {
			t.Errorf("the chart renders %s (%s), which kustomize does not install: add it to chartOnly if it is meant", k, got[k].source)
		}
	}
}

// agree compares what must be equal in a kind of object; got is the chart's install.
func agree(chart objects, g, w object) error {
	switch w.kind() {
	case "CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return equal(g.get("spec"), w.get("spec"), "spec")
	case "ClusterRole", "Role":
		want := w.get("rules")
		if w.name() == "mrtr-operator-manager-role" {
			want = withoutClusterKeyrings(want) // config/default grants them; the chart only with clusterKeyrings.enable
		}
		return equal(g.get("rules"), want, "rules")
	case "ClusterRoleBinding", "RoleBinding":
		if err := equal(g.get("roleRef"), w.get("roleRef"), "roleRef"); err != nil {
			return err
		}
		return equal(g.get("subjects"), w.get("subjects"), "subjects")
	case "ServiceAccount":
		return nil // what matters is its name, which the bindings name
	case "Service":
		return agreeService(chart, g, w)
	case "Deployment":
		return agreeManager(g, w)
	default:
		return fmt.Errorf("no comparison for the kind %s: add one", w.kind())
	}
}

// equal says where got and want first differ, nil if nowhere.
func equal(got, want any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		for _, k := range sortedKeys(w, g) {
			if err := equal(g[k], w[k], at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			if err := equal(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s: the chart has %s, want %s", at, asJSON(got), asJSON(want))
	}
	return nil
}

// sortedKeys are the keys of both maps, sorted.
func sortedKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// agreeService: the same ports, selecting the chart's manager pods.
func agreeService(chart objects, g, w object) error {
	if err := equal(g.get("spec", "ports"), w.get("spec", "ports"), "spec.ports"); err != nil {
		return err
	}
	manager, ok := chart[objectKey("Deployment", releaseNS, managerName)]
	if !ok {
		return fmt.Errorf("the chart renders no manager Deployment for it to select")
	}
	if !selects(g.get("spec", "selector"), manager.get("spec", "template", "metadata", "labels")) {
		return fmt.Errorf("its selector %s does not select the manager's pods", asJSON(g.get("spec", "selector")))
	}
	return nil
}

// agreeManager: the chart's manager container runs what kustomize's does (the same command, every
// one of its args, its ports, probes and securityContext), from the same ServiceAccount.
func agreeManager(g, w object) error {
	for _, path := range [][]string{
		{"spec", "template", "spec", "serviceAccountName"},
		{"spec", "template", "spec", "terminationGracePeriodSeconds"},
		{"spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/default-container"},
	} {
		if err := equal(g.get(path...), w.get(path...), strings.Join(path, ".")); err != nil {
			return err
		}
	}
	podSecurity := []string{"spec", "template", "spec", "securityContext"}
	if err := covers(g.get(podSecurity...), w.get(podSecurity...), "pod securityContext"); err != nil {
		return err
	}
	gc, wc := managerOf(g), managerOf(w)
	if gc == nil || wc == nil {
		return fmt.Errorf("no container manager (chart: %v, kustomize: %v)", gc != nil, wc != nil)
	}
	if err := equal(gc["command"], wc["command"], "command"); err != nil {
		return err
	}
	for _, arg := range strs(wc, "args") {
		if !hasArg(gc, arg) {
			return fmt.Errorf("args %v lack kustomize's %s", strs(gc, "args"), arg)
		}
	}
	for _, p := range list(wc, "ports") {
		if !slices.ContainsFunc(list(gc, "ports"), func(q any) bool { return reflect.DeepEqual(p, q) }) {
			return fmt.Errorf("ports %s lack kustomize's %s", asJSON(gc["ports"]), asJSON(p))
		}
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if err := equal(resolvePort(gc, gc[probe]), wc[probe], probe); err != nil {
			return err
		}
	}
	return covers(gc["securityContext"], wc["securityContext"], "container securityContext")
}

// resolvePort returns a probe with its httpGet port given by number, where the chart names it.
func resolvePort(c map[string]any, probe any) any {
	p, _ := probe.(map[string]any)
	httpGet, _ := p["httpGet"].(map[string]any)
	name, ok := httpGet["port"].(string)
	if !ok {
		return probe
	}
	for _, port := range list(c, "ports") {
		if str(port, "name") == name {
			httpGet = maps.Clone(httpGet)
			httpGet["port"] = lookup(port, "containerPort")
			p = maps.Clone(p)
			p["httpGet"] = httpGet
			return p
		}
	}
	return probe
}

// TestOptionalPartsAgreeWithConfig turns every optional part on (ci/all-values.yaml) and compares
// the alerts, the ServiceMonitor and the dashboard with config/prometheus and config/grafana; and
// checks that every template renders something, so that none is left untested.
func TestOptionalPartsAgreeWithConfig(t *testing.T) {
	r := render(t, valuesFile(t, "ci/all-values.yaml"))
	got := r.objects

	prometheus := kustomize(t, "prometheus")
	wantRules := prometheus.ofKind("PrometheusRule")
	gotRules := got.ofKind("PrometheusRule")
	if len(wantRules) != 1 || len(gotRules) != 1 {
		t.Fatalf("PrometheusRules: the chart renders %d, config/prometheus has %d; want one each", len(gotRules), len(wantRules))
	}
	if err := equal(gotRules[0].get("spec"), wantRules[0].get("spec"), "spec"); err != nil {
		t.Errorf("PrometheusRule: %v", err)
	}
	if l := gotRules[0].get("metadata", "labels", "release"); l != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule label release = %v, want prometheus.rules.labels' kube-prometheus-stack", l)
	}

	wantMonitors := prometheus.ofKind("ServiceMonitor")
	gotMonitors := got.ofKind("ServiceMonitor")
	if len(wantMonitors) != 1 || len(gotMonitors) != 1 {
		t.Fatalf("ServiceMonitors: the chart renders %d, config/prometheus has %d; want one each", len(gotMonitors), len(wantMonitors))
	}
	gotEndpoints, wantEndpoints := list(gotMonitors[0].fields, "spec", "endpoints"), list(wantMonitors[0].fields, "spec", "endpoints")
	if len(gotEndpoints) != 1 || len(wantEndpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints: the chart has %d, config/prometheus %d; want one each", len(gotEndpoints), len(wantEndpoints))
	}
	if err := covers(gotEndpoints[0], wantEndpoints[0], "endpoint"); err != nil {
		t.Errorf("ServiceMonitor: %v", err)
	}
	if i := str(gotEndpoints[0], "interval"); i != "30s" {
		t.Errorf("ServiceMonitor interval = %q, want prometheus.serviceMonitor.interval's 30s", i)
	}
	service := got.must(t, "Service", releaseNS, "mrtr-operator-controller-manager-metrics-service")
	if !selects(gotMonitors[0].get("spec", "selector", "matchLabels"), service.get("metadata", "labels")) {
		t.Errorf("the ServiceMonitor's selector %s does not select the metrics Service %s",
			asJSON(gotMonitors[0].get("spec", "selector")), asJSON(service.get("metadata", "labels")))
	}

	const dashboard = "mrtr-operator-dashboard.json"
	wantMap := kustomize(t, "grafana").must(t, "ConfigMap", "", "mrtr-operator-dashboard")
	gotMap := got.must(t, "ConfigMap", "monitoring", "mrtr-operator-dashboard")
	var gotJSON, wantJSON any
	if err := json.Unmarshal([]byte(str(gotMap.fields, "data", dashboard)), &gotJSON); err != nil {
		t.Fatalf("the chart's dashboard: %v", err)
	}
	if err := json.Unmarshal([]byte(str(wantMap.fields, "data", dashboard)), &wantJSON); err != nil {
		t.Fatalf("config/grafana's dashboard: %v", err)
	}
	if !reflect.DeepEqual(gotJSON, wantJSON) {
		t.Errorf("the chart's dashboard differs from config/grafana's")
	}
	if err := covers(gotMap.get("metadata", "labels"), wantMap.get("metadata", "labels"), "labels"); err != nil {
		t.Errorf("dashboard ConfigMap: %v (Grafana's sidecar finds it by its label)", err)
	}

	rendered := map[string]bool{}
	for _, o := range got {
		rendered[o.source] = true
	}
	for _, tpl := range loadChart(t).Templates {
		if !strings.HasSuffix(tpl.Name, ".yaml") {
			continue // _helpers.tpl, NOTES.txt
		}
		if strings.HasPrefix(tpl.Name, "templates/member/") {
			continue // mode member only: TestMemberMode
		}
		if !rendered["mrtr-operator/"+tpl.Name] {
			t.Errorf("%s renders nothing with every optional part on (ci/all-values.yaml)", tpl.Name)
		}
	}
	if !strings.Contains(r.notes, "rollout status deployment/mrtr-operator-controller-manager") {
		t.Errorf("NOTES.txt does not say how to check the Deployment:\n%s", r.notes)
	}
}

// TestNamespaceScoped renders ci/namespaced-values.yaml: the manager watches team-a, team-b and its
// own namespace (--namespaces), with controller-gen's rules as a Role in each, and holds no
// cluster-wide permission but the metrics endpoint's authentication and authorization.
func TestNamespaceScoped(t *testing.T) {
	r := render(t, valuesFile(t, "ci/namespaced-values.yaml"))
	got := r.objects
	watched := []string{"team-a", "team-b", releaseNS}

	manager := managerOf(got.must(t, "Deployment", releaseNS, managerName))
	if want := "--namespaces=" + strings.Join(watched, ","); !hasArg(manager, want) {
		t.Errorf("manager args %v lack %s", strs(manager, "args"), want)
	}
	if !hasArg(manager, "--leader-elect") {
		t.Errorf("manager args %v lack --leader-elect", strs(manager, "args"))
	}

	rules := withoutClusterKeyrings(controllerGenRules(t))
	for _, ns := range watched {
		role := got.must(t, "Role", ns, "mrtr-operator-manager-role")
		if err := equal(role.get("rules"), rules, "rules"); err != nil {
			t.Errorf("Role %s/%s: %v (want config/rbac/role.yaml's)", ns, role.name(), err)
		}
		binding := got.must(t, "RoleBinding", ns, "mrtr-operator-manager-rolebinding")
		if err := equal(binding.get("roleRef"), map[string]any{
			"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mrtr-operator-manager-role",
		}, "roleRef"); err != nil {
			t.Errorf("RoleBinding %s/%s: %v", ns, binding.name(), err)
		}
		if err := equal(binding.get("subjects"), managerSubject(managerName), "subjects"); err != nil {
			t.Errorf("RoleBinding %s/%s: %v", ns, binding.name(), err)
		}
	}
	if n := len(got.ofKind("Role")); n != len(watched)+1 {
		t.Errorf("%d Roles, want one per watched namespace and the leader election's", n)
	}

	// Cluster-wide, the manager's ServiceAccount may create TokenReviews and SubjectAccessReviews
	// (the metrics endpoint's authentication and authorization) and nothing else.
	for _, b := range got.ofKind("ClusterRoleBinding") {
		if !reflect.DeepEqual(b.get("subjects"), managerSubject(managerName)) {
			continue
		}
		if ref := str(b.fields, "roleRef", "name"); ref != "mrtr-operator-metrics-auth-role" {
			t.Errorf("ClusterRoleBinding %s binds the manager to the ClusterRole %s cluster-wide", b.name(), ref)
		}
	}
	if _, ok := got[objectKey("ClusterRole", "", "mrtr-operator-manager-role")]; ok {
		t.Error("the ClusterRole mrtr-operator-manager-role is rendered though the manager watches some namespaces only")
	}
	if !strings.Contains(r.notes, "team-a, team-b, "+releaseNS+" only") {
		t.Errorf("NOTES.txt does not name the watched namespaces:\n%s", r.notes)
	}
}

// controllerGenRules are the manager's rules as controller-gen writes them.
// clusterKeyringResources are the resources of controller-gen's rules that only cluster keyrings use.
var clusterKeyringResources = []any{"namespaces", "clustermrtrkeyrings", "clustermrtrkeyrings/status"}

// withoutClusterKeyrings is rules without clusterKeyringResources: the manager's rules of an install
// without cluster keyrings.
func withoutClusterKeyrings(rules any) any {
	var out []any
	for _, r := range rules.([]any) {
		rule := maps.Clone(r.(map[string]any))
		rule["resources"] = slices.DeleteFunc(slices.Clone(rule["resources"].([]any)), func(res any) bool {
			return slices.Contains(clusterKeyringResources, res)
		})
		if len(rule["resources"].([]any)) > 0 {
			out = append(out, rule)
		}
	}
	return out
}

// TestClusterKeyrings renders clusterKeyrings.enable: the manager runs with --cluster-keyrings and
// its namespace as POD_NAMESPACE, and holds controller-gen's rules whole; with
// scope.watchNamespaces set, the chart refuses to render.
func TestClusterKeyrings(t *testing.T) {
	r := render(t, map[string]any{"clusterKeyrings": map[string]any{"enable": true}})
	manager := managerOf(r.objects.must(t, "Deployment", releaseNS, managerName))
	if !hasArg(manager, "--cluster-keyrings") {
		t.Errorf("manager args %v lack --cluster-keyrings", strs(manager, "args"))
	}
	if env := fmt.Sprint(manager["env"]); !strings.Contains(env, "POD_NAMESPACE") || !strings.Contains(env, "metadata.namespace") {
		t.Errorf("manager env %s lacks POD_NAMESPACE from metadata.namespace", env)
	}
	role := r.objects.must(t, "ClusterRole", "", "mrtr-operator-manager-role")
	if err := equal(role.get("rules"), controllerGenRules(t), "rules"); err != nil {
		t.Errorf("ClusterRole %s: %v (want config/rbac/role.yaml's, whole)", role.name(), err)
	}
	rules := controllerGenRules(t)
	if filtered := withoutClusterKeyrings(rules); filtered == nil || fmt.Sprint(filtered) == fmt.Sprint(rules) {
		t.Errorf("config/rbac/role.yaml holds none of %v: the chart's filter filters nothing", clusterKeyringResources)
	}
	_, err := tryRender(t, map[string]any{"clusterKeyrings": map[string]any{"enable": true},
		"scope": map[string]any{"watchNamespaces": []any{"team-a"}}})
	if err == nil || !strings.Contains(err.Error(), "cluster-wide install") {
		t.Errorf("clusterKeyrings with scope.watchNamespaces rendered (error %v); want a refusal naming the cluster-wide install", err)
	}
}

func controllerGenRules(t *testing.T) any {
	t.Helper()
	return configFile(t, "rbac/role.yaml").must(t, "ClusterRole", "", "manager-role").get("rules")
}

// configFile reads the objects of a file of config/ as it is.
func configFile(t *testing.T, path string) objects {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", path))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(string(b))
	if err != nil {
		t.Fatalf("config/%s: %v", path, err)
	}
	for k, o := range objs {
		o.source = "config/" + path
		objs[k] = o
	}
	return objs
}

func managerSubject(name string) []any {
	return []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": releaseNS}}
}

// memberRules are exactly the rules the member mode grants the hub's ServiceAccount
// (docs/multi-cluster.md); TestMemberMode checks the chart renders these and that each is
// within config/rbac/role.yaml's, the manager's own.
var memberRules = []any{
	rule("", []string{"namespaces"}, "list", "watch"),
	rule("", []string{"pods"}, "list", "patch", "watch"),
	rule("", []string{"pods/eviction"}, "create"),
	rule("", []string{"secrets"}, "create", "get", "list", "update", "watch"),
	rule("apps", []string{"daemonsets", "deployments", "statefulsets"}, "list", "patch", "watch"),
	rule("argoproj.io", []string{"rollouts"}, "list", "patch", "watch"),
	rule("mrtr.dev", []string{"mrtrkeyrings/status"}, "update"),
	rule("policy", []string{"poddisruptionbudgets"}, "list", "watch"),
}

func rule(group string, resources []string, verbs ...string) any {
	return map[string]any{"apiGroups": []any{group}, "resources": anys(resources), "verbs": anys(verbs)}
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestMemberMode(t *testing.T) {
	r := render(t, valuesFile(t, "ci/member-values.yaml"))
	for _, kind := range []string{"Deployment", "CustomResourceDefinition", "ValidatingWebhookConfiguration",
		"MutatingWebhookConfiguration", "Service", "Role", "RoleBinding"} {
		if objs := r.objects.ofKind(kind); len(objs) > 0 {
			t.Errorf("member mode renders %d %s (%s ...), want none", len(objs), kind, objs[0].key())
		}
	}
	name := "mrtr-operator-member"
	r.objects.must(t, "ServiceAccount", releaseNS, name)
	token := r.objects.must(t, "Secret", releaseNS, name+"-token")
	if typ := str(token.fields, "type"); typ != "kubernetes.io/service-account-token" {
		t.Errorf("token Secret type %q", typ)
	}
	if sa := str(token.fields, "metadata", "annotations", "kubernetes.io/service-account.name"); sa != name {
		t.Errorf("token Secret is for ServiceAccount %q, want %q", sa, name)
	}
	role := r.objects.must(t, "ClusterRole", "", name)
	if err := equal(role.get("rules"), memberRules, "rules"); err != nil {
		t.Errorf("member ClusterRole: %v", err)
	}
	binding := r.objects.must(t, "ClusterRoleBinding", "", name)
	if err := equal(binding.get("subjects"), managerSubject(name), "subjects"); err != nil {
		t.Errorf("member ClusterRoleBinding: %v", err)
	}
	if ref := str(binding.fields, "roleRef", "name"); ref != name {
		t.Errorf("member ClusterRoleBinding binds %q", ref)
	}
	// The admission policies that confine the nudge and the acknowledgements, and the consumer
	// role, are those of operator mode, the same objects.
	operator := render(t, nil)
	for _, key := range []string{
		objectKey("ValidatingAdmissionPolicy", "", "mrtr-operator-pod-annotation"),
		objectKey("ValidatingAdmissionPolicyBinding", "", "mrtr-operator-pod-annotation"),
		objectKey("ValidatingAdmissionPolicy", "", "mrtr-keyring-acknowledgements"),
		objectKey("ClusterRole", "", "mrtr-keyring-consumer"),
	} {
		m, ok := r.objects[key]
		if !ok {
			t.Errorf("member mode lacks %s", key)
			continue
		}
		if err := equal(m.fields, operator.objects[key].fields, key); err != nil {
			t.Errorf("member mode's %s differs from operator mode's: %v", key, err)
		}
	}
	want := len(operator.objects.ofKind("ValidatingAdmissionPolicy")) + len(operator.objects.ofKind("ValidatingAdmissionPolicyBinding"))
	if got := len(r.objects.ofKind("ValidatingAdmissionPolicy")) + len(r.objects.ofKind("ValidatingAdmissionPolicyBinding")); got != want {
		t.Errorf("member mode renders %d admission policies and bindings, operator mode %d", got, want)
	}
	// Every member rule is within the manager's own (config/rbac/role.yaml).
	for _, mr := range memberRules {
		m := mr.(map[string]any)
		for _, res := range list(m, "resources") {
			for _, verb := range list(m, "verbs") {
				if !grants(list(controllerGenRules(t)), strs(m, "apiGroups")[0], res.(string), verb.(string)) {
					t.Errorf("member rule %s %s %s is not in config/rbac/role.yaml", strs(m, "apiGroups")[0], res, verb)
				}
			}
		}
	}
	_, err := tryRender(t, map[string]any{"mode": "hub"})
	if err == nil || !strings.Contains(err.Error(), `mode must be operator or member, not "hub"`) {
		t.Errorf("mode hub rendered (error %v); want a refusal", err)
	}
}

// grants reports whether rules grant verb on group/resource.
func grants(rules []any, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(strs(r, "apiGroups"), group) && slices.Contains(strs(r, "resources"), resource) &&
			slices.Contains(strs(r, "verbs"), verb) {
			return true
		}
	}
	return false
}
