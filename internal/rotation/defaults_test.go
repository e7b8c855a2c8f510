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

package rotation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// crdDefaults reads the defaults of spec's fields from the generated CRD (make manifests).
func crdDefaults(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "mrtr.dev_mrtrkeyrings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties map[string]struct {
									Default any `json:"default"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, v := range crd.Spec.Versions {
		if v.Name != mrtrv1alpha1.GroupVersion.Version {
			continue
		}
		for name, p := range v.Schema.OpenAPIV3Schema.Properties.Spec.Properties {
			if p.Default != nil {
				out[name] = p.Default
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the CRD declares no default for spec")
	}
	return out
}

// specOf is a spec holding fields, decoded as the API server would store them.
func specOf(t *testing.T, fields map[string]any) mrtrv1alpha1.MRTRKeyringSpec {
	t.Helper()
	raw, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	var spec mrtrv1alpha1.MRTRKeyringSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// One home for the defaults: Defaults is what the CRD's defaults make of a spec, and SettingsFrom
// falls back to the CRD's default for every field the API server would have defaulted, except
// those whose zero value the API accepts (which SettingsFrom must keep, as a user may set it).
func TestSettingsFromDefaultsAreTheCRDs(t *testing.T) {
	defaults := crdDefaults(t)
	if got := SettingsFrom(specOf(t, defaults)); got != Defaults {
		t.Fatalf("SettingsFrom(the CRD's defaults) = %+v\nDefaults = %+v", got, Defaults)
	}
	zeroAllowed := map[string]bool{"clockSkew": true, "terminationGracePeriod": true, "propagationDelay": true}
	for name := range defaults {
		t.Run(name, func(t *testing.T) {
			fields := map[string]any{}
			for k, v := range defaults {
				if k != name {
					fields[k] = v
				}
			}
			got := SettingsFrom(specOf(t, fields))
			if zeroAllowed[name] {
				if got == Defaults {
					t.Errorf("SettingsFrom replaced an absent %s by its default, but a zero %s is valid", name, name)
				}
				return
			}
			if got != Defaults {
				t.Errorf("without %s: %+v\nwant the CRD's default: %+v", name, got, Defaults)
			}
		})
	}
}

// The ceiling of spec.tokenTTL is the library's, keyring.MaxTokenTTL, which the codecs enforce: the
// CRD's validation rule states the same value.
func TestTokenTTLCeilingIsTheLibrarys(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "mrtr.dev_mrtrkeyrings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rule := fmt.Sprintf("duration(self) <= duration('%dm')", int(keyring.MaxTokenTTL.Minutes()))
	if !strings.Contains(string(raw), rule) {
		t.Errorf("the CRD's rule for spec.tokenTTL lacks %q (keyring.MaxTokenTTL is %v)", rule, keyring.MaxTokenTTL)
	}
}
