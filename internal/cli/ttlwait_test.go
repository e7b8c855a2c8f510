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
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// After tokenTTL is lowered, the operator keeps the longest TTL wait declared while the primary
// key sealed (status.ttlWaits): a token sealed before the change may live that long. The plugin
// shows that wait, from the status the operator's own Step writes, not one computed from the
// lowered spec.
func TestStatusShowsTheTTLWaitTheOperatorKeeps(t *testing.T) {
	kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "lowered", Namespace: "mcp", Generation: 1}, Spec: spec()}
	kr.Spec.TokenTTL = metav1.Duration{Duration: 15 * time.Minute}
	fresh := [2]keyring.Key{keyring.NewKey("x", bytes.Repeat([]byte{1}, 32)), keyring.NewKey("x", bytes.Repeat([]byte{2}, 32))}
	in := rotation.Input{Now: now.Add(-time.Hour), Generation: 1, Settings: rotation.SettingsFrom(kr.Spec), SecretName: "lowered",
		Secret: rotation.SecretObservation{State: rotation.SecretAbsent}, FreshKeys: fresh}
	d := rotation.Step(in) // creates the Secret while tokenTTL is 15m

	kr.Spec.TokenTTL = metav1.Duration{Duration: time.Minute}
	kr.Generation = 2
	in.Now, in.Generation, in.Settings, in.Status = now, 2, rotation.SettingsFrom(kr.Spec), d.Status
	in.Secret = rotation.SecretObservation{State: rotation.SecretValid, Keyring: d.Secret, WrittenPhase: d.SecretPhase,
		WrittenFingerprint: d.Secret.Fingerprint(), TokenTTL: time.Minute}
	kr.Status = rotation.Step(in).Status
	if got := kr.Status.TTLWaits.Primary.Duration; got != 16*time.Minute {
		t.Fatalf("the operator keeps a TTL wait of %v, want 16m0s (15m + clockSkew 30s + terminationGracePeriod 30s)", got)
	}

	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects([]client.Object{kr}...).Build()}
	r := run(t, o, "", "status", "lowered", "-n", "mcp")
	assertOutput(t, r, "TTL wait: none under way; 16m once the primary key stops sealing")
}
