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
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// TestRevocationsAccumulate drives Step through seeded random sequences in which revocations are
// appended to mrtr.dev/revoke (as kubectl mrtr revoke does), several of them while the operator is
// away, naming the primary, the staged key, the key on its way, an id no key has yet, or every
// key, in whatever phase the rotations are. After every pass it checks that no request was dropped
// (each is recorded as handled), that no key a request names is in the Secret, and so that none
// seals.
func TestRevocationsAccumulate(t *testing.T) {
	for _, m := range nextKeyModes {
		for seed := uint64(1); seed <= 30; seed++ {
			t.Run(fmt.Sprintf("%s seed %d", m.mode, seed), func(t *testing.T) {
				rnd := mathrand.New(mathrand.NewPCG(seed, 31))
				st := settings
				st.NextKey, st.PropagationDelay = m.mode, 0
				var (
					clock    = now
					secret   *keyring.Keyring
					phase    mrtrv1alpha1.Phase
					staged   string
					status   mrtrv1alpha1.MRTRKeyringStatus
					requests []string
					log      []string
				)
				pass := func() {
					sec := SecretObservation{State: SecretAbsent}
					if secret != nil {
						sec = SecretObservation{State: SecretValid, Keyring: secret, WrittenPhase: phase, WrittenFingerprint: secret.Fingerprint(),
							Staged: staged, TokenTTL: st.TokenTTL}
					}
					in := Input{Now: clock, Generation: 1, Settings: st, Status: status, SecretName: "s", Secret: sec,
						FreshKeys: freshKeys(), RevokeRequest: strings.Join(requests, ",")}
					d := Step(in)
					if d.Secret != nil {
						secret, phase, staged = d.Secret, d.SecretPhase, d.SecretStaged
						log = append(log, fmt.Sprintf("%s write %v for %s", clock.Format(time.TimeOnly), secret.IDs(), phase))
					}
					status = d.Status
					if got, want := status.LastHandledRevokeRequest, strings.Join(requests, ","); got != want {
						// What the runbook waits for: requests only appended read back the same once handled.
						t.Fatalf("lastHandledRevokeRequest = %q, want the annotation's %q\n%s", got, want, strings.Join(log, "\n"))
					}
					handled := splitIDs(status.LastHandledRevokeRequest)
					for _, r := range requests {
						if !slices.Contains(handled, r) {
							t.Fatalf("request %q was dropped: handled %v\n%s", r, handled, strings.Join(log, "\n"))
						}
						if _, ok := secret.Lookup(r); ok {
							t.Fatalf("the Secret holds %s, which a request names: keys %v\n%s", r, secret.IDs(), strings.Join(log, "\n"))
						}
					}
				}
				pass()
				for step := 0; step < 300 && len(requests) < maxHandledRevokeRequests; step++ {
					switch r := rnd.IntN(10); {
					case r < 2: // a revocation, perhaps while the operator is away
						ids := secret.IDs()
						var item string
						switch k := rnd.IntN(10); {
						case k < 7:
							item = ids[rnd.IntN(len(ids))]
						case k < 8:
							item = NewKeyID(clock.Add(time.Duration(rnd.IntN(3600)) * time.Second)) // an id a fresh key may get
						default:
							item = fmt.Sprintf("%s%d", mrtrv1alpha1.RevokeAll, step)
						}
						if !slices.Contains(requests, item) {
							requests = append(requests, item)
							log = append(log, fmt.Sprintf("%s request %s", clock.Format(time.TimeOnly), item))
						}
					case r < 7:
						pass()
					default:
						clock = clock.Add(time.Duration(1+rnd.IntN(600)) * time.Second)
						if rnd.IntN(4) == 0 {
							status.NextRotationTime = nil // due at once, so that rotations run between the revocations
							clock = clock.Add(st.RotationInterval)
						}
					}
				}
			})
		}
	}
}
