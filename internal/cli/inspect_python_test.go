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
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// pythonTokens are tokens the real python-sdk sealed with keyA and keyB (testdata/python-tokens.py).
func pythonTokens(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "python-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tokens map[string]string `json:"tokens"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Tokens
}

// pythonKeyring is an MRTRKeyring whose status lists keyB (primary) and keyA, with their kids as
// the operator writes them.
func pythonKeyring() *mrtrv1alpha1.MRTRKeyring {
	return &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "weather-py", Namespace: "mcp"},
		Status: mrtrv1alpha1.MRTRKeyringStatus{Keys: []mrtrv1alpha1.KeyStatus{
			{ID: keyB.ID(), Role: mrtrv1alpha1.KeyPrimary, PythonKid: keyB.PythonKid()},
			{ID: keyA.ID(), Role: mrtrv1alpha1.KeyRetiring, PythonKid: keyA.PythonKid()},
		}},
	}
}

// A python-sdk token names no key id; inspect maps its kid to the key through the keyring's status
// or a keyring file, and refuses one whose kid no key has, as the SDK does.
func TestInspectPythonToken(t *testing.T) {
	toks := pythonTokens(t)
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(pythonKeyring()).Build()}
	path := writeKeyring(t, keyA, keyB)
	other := writeKeyring(t, keyAOther)
	for _, tc := range []struct {
		golden string
		args   []string
		ok     bool
	}{
		{"inspect-python", []string{toks["key-a"]}, true},
		{"inspect-python-status", []string{toks["key-a"], "--mrtrkeyring", "weather-py", "-n", "mcp"}, true},
		{"inspect-python-status-primary", []string{toks["key-b"], "--mrtrkeyring", "weather-py", "-n", "mcp"}, true},
		{"inspect-python-keyring", []string{toks["key-b"], "--keyring", path}, true},
		{"inspect-python-unknown", []string{toks["key-a"], "--keyring", other}, false},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, o, "", append([]string{"inspect"}, tc.args...)...)
			assertNoSecrets(t, r.out+r.errOut+errText(r.err))
			if tc.ok != (r.err == nil) || (r.err != nil && !errors.Is(r.err, errRejected)) {
				t.Fatalf("inspect: %v; want success: %v\n%s", r.err, tc.ok, r.out)
			}
			out := strings.ReplaceAll(strings.ReplaceAll(r.out, filepath.Dir(path), "$TMP"), filepath.Dir(other), "$OTHER")
			golden(t, tc.golden, out)
		})
	}
	if r := run(t, o, "", "inspect", "--mrtrkeyring", "weather-py", "mrtr2.key-a.abc.def"); r.err == nil || !strings.Contains(r.err.Error(), "not one") {
		t.Errorf("--mrtrkeyring with a token of pkg/token: %v, want an error", r.err)
	}
}
