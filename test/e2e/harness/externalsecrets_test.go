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
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// esoView reads an ExternalSecret's data the way ESO does with the fake store: each data entry
// is the property of the store's JSON value that its remoteRef names (decodingStrategy aside).
func esoView(t *testing.T, store, es *unstructured.Unstructured) map[string]string {
	t.Helper()
	data, _, _ := unstructured.NestedSlice(store.Object, "spec", "provider", "fake", "data")
	if len(data) != 1 {
		t.Fatalf("store data: %v", data)
	}
	var value map[string]string
	if err := json.Unmarshal([]byte(data[0].(map[string]any)["value"].(string)), &value); err != nil {
		t.Fatal(err)
	}
	entries, _, _ := unstructured.NestedSlice(es.Object, "spec", "data")
	out := map[string]string{}
	for _, e := range entries {
		m := e.(map[string]any)
		ref := m["remoteRef"].(map[string]any)
		out[m["secretKey"].(string)] = value[ref["property"].(string)]
	}
	return out
}

func render(t *testing.T, tmpl string, data map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	if err := template.Must(template.New("").Parse(tmpl)).Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDirectExternalSecretWritesAKeyringOfTheCurrentKey(t *testing.T) {
	secret := FakeSecret{Version: "v7", Key: bytes.Repeat([]byte{0xa5}, 32)}
	store, err := FakeClusterSecretStore("sm", "mcp/weather", secret)
	if err != nil {
		t.Fatal(err)
	}
	es := DirectExternalSecret("direct", "weather", "sm", "mcp/weather", "weather", time.Second)
	if got := es.GetObjectKind().GroupVersionKind(); got != ExternalSecretGVK {
		t.Fatalf("kind %v", got)
	}
	if ref, _, _ := unstructured.NestedString(es.Object, "spec", "secretStoreRef", "name"); ref != "sm" {
		t.Fatalf("secretStoreRef.name %q", ref)
	}
	tmpl, _, _ := unstructured.NestedString(es.Object, "spec", "target", "template", "data", keyring.SecretDataKey)
	r, err := keyring.Parse([]byte(render(t, tmpl, esoView(t, store, es))))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.IDs(), []string{"v7"}) {
		t.Fatalf("key ids %v", r.IDs())
	}
	if !bytes.Equal(r.Keys()[0].Secret(), secret.Key) {
		t.Fatal("the keyring's key is not the store's")
	}
}

func TestSourceExternalSecretAnnotatesTheVersionAndDecodesTheKey(t *testing.T) {
	secret := FakeSecret{Version: "v2", Key: bytes.Repeat([]byte{1}, 32)}
	store, err := FakeClusterSecretStore("sm", "mcp/weather", secret)
	if err != nil {
		t.Fatal(err)
	}
	es := SourceExternalSecret("mcp", "weather-source", "sm", "mcp/weather", "weather-source", time.Second)
	ann, _, _ := unstructured.NestedString(es.Object, "spec", "target", "template", "metadata", "annotations",
		mrtrv1alpha1.KeyVersionAnnotation)
	if got := render(t, ann, esoView(t, store, es)); got != "v2" {
		t.Fatalf("version annotation renders %q", got)
	}
	entries, _, _ := unstructured.NestedSlice(es.Object, "spec", "data")
	key := entries[0].(map[string]any)
	if key["secretKey"] != SourceDataKey || key["remoteRef"].(map[string]any)["decodingStrategy"] != "Base64" {
		t.Fatalf("key entry %v: want %q decoded from base64", key, SourceDataKey)
	}
	if _, ok, _ := unstructured.NestedMap(es.Object, "spec", "target", "template", "data"); ok {
		t.Fatal("a template.data would replace the key ESO copies")
	}
}
