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

package keyring_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// TestPythonKid checks PythonKid and PythonTokenKid against what the real python-sdk computed:
// testdata/pythonkid.json was written by testdata/pythonkid.py with mcp 2.3.0 from PyPI, each kid
// read out of a token the SDK sealed.
func TestPythonKid(t *testing.T) {
	b, err := os.ReadFile("testdata/pythonkid.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		MCP   string `json:"mcp"`
		Cases []struct {
			Secret    string `json:"secret"`
			PythonKid string `json:"pythonKid"`
			Token     string `json:"token"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Cases) == 0 {
		t.Fatal("no cases")
	}
	for i, c := range vectors.Cases {
		secret, err := base64.StdEncoding.DecodeString(c.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if got := keyring.NewKey("k", secret).PythonKid(); got != c.PythonKid {
			t.Errorf("case %d (%d bytes): PythonKid = %s, mcp %s says %s", i, len(secret), got, vectors.MCP, c.PythonKid)
		}
		if got, ok := keyring.PythonTokenKid(c.Token); !ok || got != c.PythonKid {
			t.Errorf("case %d: PythonTokenKid = %q, %v; want %s", i, got, ok, c.PythonKid)
		}
	}
}

func TestPythonTokenKidRefuses(t *testing.T) {
	for name, tok := range map[string]string{
		"empty":           "",
		"no prefix":       "b-ZQ6tNEnEMrH-OJxhATi-3IuSXgCPpurhpPDmDXiavK8Q",
		"other prefix":    "v2.b-ZQ6tNEnEMrH-OJxhATi-3IuSXgCPpurhpPDmDXiavK8Q",
		"padded":          "v1.b-ZQ6tNEnEMrH-OJxhATi-3IuSXgCPpurhpPDmDXiavK8Q==",
		"standard base64": "v1.b+ZQ6tNEnEMrH+OJxhATi+3IuSXgCPpurhpPDmDXiavK8Q",
		"too short":       "v1.b-ZQ6tNEnEMrH-OJxhATi-3Iu",
		"snodo token":     "mrtr2.abc.def",
	} {
		if kid, ok := keyring.PythonTokenKid(tok); ok {
			t.Errorf("%s: PythonTokenKid(%q) = %q, true; want false", name, tok, kid)
		}
	}
	if got := (keyring.Key{}).PythonKid(); got != "" {
		t.Errorf("zero Key: PythonKid = %q, want \"\"", got)
	}
}
