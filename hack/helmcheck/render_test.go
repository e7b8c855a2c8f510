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
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The release the tests install: with this name the chart's objects have kustomize's names
// (namePrefix mrtr-operator-), so the two installs compare object by object.
const (
	releaseName = "mrtr-operator"
	releaseNS   = "mrtr-operator-system"
	// The manager's Deployment, ServiceAccount and PodDisruptionBudget.
	managerName = "mrtr-operator-controller-manager"
)

var (
	repoRoot = filepath.Join("..", "..")
	chartDir = filepath.Join(repoRoot, "dist", "chart")
)

// object is one Kubernetes object as its JSON decodes (numbers are float64), with the file it came
// from: the chart's template, or the kustomization.
type object struct {
	source string
	fields map[string]any
}

func (o object) kind() string      { return str(o.fields, "kind") }
func (o object) name() string      { return str(o.fields, "metadata", "name") }
func (o object) namespace() string { return str(o.fields, "metadata", "namespace") }
func (o object) key() string       { return objectKey(o.kind(), o.namespace(), o.name()) }
func (o object) get(path ...string) any {
	return lookup(o.fields, path...)
}

func objectKey(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// objects are the objects of one install, by key.
type objects map[string]object

func (objs objects) keys() []string {
	return slices.Sorted(maps.Keys(objs))
}

// ofKind lists the objects of a kind, by key.
func (objs objects) ofKind(kind string) []object {
	var out []object
	for _, k := range objs.keys() {
		if objs[k].kind() == kind {
			out = append(out, objs[k])
		}
	}
	return out
}

// must returns the object of that key, failing the test if there is none.
func (objs objects) must(t *testing.T, kind, namespace, name string) object {
	t.Helper()
	o, ok := objs[objectKey(kind, namespace, name)]
	if !ok {
		t.Fatalf("no %s among %v", objectKey(kind, namespace, name), objs.keys())
	}
	return o
}

// loadChart loads dist/chart as helm install does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart %s: %v", chartDir, err)
	}
	return c
}

// valuesFile reads one of the chart's values files (ci/...).
func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rendering is what helm install renders: the objects and the NOTES.
type rendering struct {
	objects objects
	notes   string
}

// render renders the chart as `helm install --dry-run` (client only, as `helm template`) installs
// it as release mrtr-operator in mrtr-operator-system, with these values over the defaults.
func render(t *testing.T, values map[string]any) rendering {
	t.Helper()
	r, err := tryRender(t, values)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return r
}

func tryRender(t *testing.T, values map[string]any) (rendering, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.ClientOnly = true
	install.DryRun = true
	install.ReleaseName = releaseName
	install.Namespace = releaseNS
	if values == nil {
		values = map[string]any{}
	}
	rel, err := install.Run(loadChart(t), values)
	if err != nil {
		return rendering{}, err
	}
	if len(rel.Hooks) > 0 {
		t.Errorf("the chart has %d hooks; the checks here do not look at hooks", len(rel.Hooks))
	}
	objs, err := decode(rel.Manifest)
	if err != nil {
		t.Fatalf("the chart's manifest: %v", err)
	}
	return rendering{objects: objs, notes: rel.Info.Notes}, nil
}

// kustomize builds config/<dir> as `kustomize build` does.
func kustomize(t *testing.T, dir string) objects {
	t.Helper()
	path := filepath.Join(repoRoot, "config", dir)
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", path, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(string(out))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", path, err)
	}
	for k, o := range objs {
		o.source = "config/" + dir
		objs[k] = o
	}
	return objs
}

// union merges installs that must not overlap (config/default and config/consumer).
func union(t *testing.T, sets ...objects) objects {
	t.Helper()
	out := objects{}
	for _, set := range sets {
		for k, o := range set {
			if prev, ok := out[k]; ok {
				t.Fatalf("%s is in both %s and %s", k, prev.source, o.source)
			}
			out[k] = o
		}
	}
	return out
}

// decode splits a multi-document manifest into its objects. A second object with the same key is
// an error: one install would overwrite the other.
func decode(manifest string) (objects, error) {
	objs := objects{}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var fields map[string]any
		if err := yaml.Unmarshal([]byte(doc), &fields); err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		if len(fields) == 0 {
			continue
		}
		o := object{source: source(doc), fields: fields}
		if o.kind() == "" || o.name() == "" {
			return nil, fmt.Errorf("%s: an object without kind or name:\n%s", o.source, doc)
		}
		if prev, ok := objs[o.key()]; ok {
			return nil, fmt.Errorf("%s is rendered twice, by %s and %s", o.key(), prev.source, o.source)
		}
		objs[o.key()] = o
	}
	return objs, nil
}

// source is the template a document of Helm's manifest came from ("# Source: <chart>/templates/...").
func source(doc string) string {
	for line := range strings.Lines(doc) {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
			return s
		}
	}
	return ""
}

// lookup walks maps by key; nil where a step is missing.
func lookup(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := lookup(v, path...).(string)
	return s
}

func list(v any, path ...string) []any {
	l, _ := lookup(v, path...).([]any)
	return l
}

func strs(v any, path ...string) []string {
	l := list(v, path...)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// managerOf is the pod template's container "manager", nil if there is none.
func managerOf(deployment object) map[string]any {
	for _, c := range list(deployment.fields, "spec", "template", "spec", "containers") {
		if str(c, "name") == "manager" {
			return c.(map[string]any)
		}
	}
	return nil
}

// covers reports whether got holds everything want does: every key of a map with a value that
// covers want's, every other value equal. It says where they differ.
func covers(got, want any, at string) error {
	wm, ok := want.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: %s, want %s", at, asJSON(got), asJSON(want))
		}
		return nil
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %s, want the map %s", at, asJSON(got), asJSON(want))
	}
	for k, w := range wm {
		if err := covers(gm[k], w, at+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// selects reports whether a label selector's matchLabels (or a Service's selector) all hold in labels.
func selects(selector, labels any) bool {
	sm, _ := selector.(map[string]any)
	lm, _ := labels.(map[string]any)
	if len(sm) == 0 {
		return false
	}
	for k, v := range sm {
		if lm[k] != v {
			return false
		}
	}
	return true
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// hasArg reports whether a container's args hold that argument.
func hasArg(c map[string]any, arg string) bool {
	return slices.Contains(strs(c, "args"), arg)
}
