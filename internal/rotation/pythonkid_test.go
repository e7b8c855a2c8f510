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
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Every key in status names the kid python-sdk puts in the tokens it seals with it, from the
// keyring in the Secret: through a phase change, and for a status written before the field existed.
func TestKeyStatusesNamePythonKids(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	for name, in := range map[string]Input{
		"a phase change": input(status(t, mrtrv1alpha1.PhaseAccepting, time.Hour, a, b), ours(t, mrtrv1alpha1.PhaseAccepting, a, b), deployment("api", fp(t, a, b), true)),
		"a stable keyring whose status has no kids yet": input(status(t, mrtrv1alpha1.PhaseStable, time.Hour, a), ours(t, mrtrv1alpha1.PhaseStable, a), deployment("api", fp(t, a), true)),
	} {
		t.Run(name, func(t *testing.T) {
			in.Status.RolledOutAt = at(-time.Minute)
			d := Step(in)
			kr := in.Secret.Keyring
			if d.Secret != nil {
				kr = d.Secret
			}
			if len(d.Status.Keys) != kr.Len() {
				t.Fatalf("status has %d keys, the keyring %d", len(d.Status.Keys), kr.Len())
			}
			for i, k := range kr.Keys() {
				if got := d.Status.Keys[i]; got.ID != k.ID() || got.PythonKid != k.PythonKid() || len(got.PythonKid) != 8 {
					t.Errorf("status.keys[%d] = %s %q, want %s %q", i, got.ID, got.PythonKid, k.ID(), k.PythonKid())
				}
			}
		})
	}
}
