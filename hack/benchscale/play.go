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

package main

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// secretVersion is one keyring a Secret held, as the harness's watch saw it arrive.
type secretVersion struct {
	at          time.Time
	fingerprint string
	ids         []string
}

// recorder keeps what the timings are computed from: every keyring each Secret held, stamped when
// the harness's watch delivered it, and when the harness completed each keyring's rollout (its
// rolled-out status write, or in Reload delivery its acknowledgement, returned), first time per
// fingerprint. Both ends are seen from the harness, so the latency between them includes one watch
// delivery, as the operator's own view of a rollout does.
type recorder struct {
	mu        sync.Mutex
	secrets   map[types.NamespacedName][]secretVersion
	completed map[types.NamespacedName]map[string]time.Time
}

func newRecorder() *recorder {
	return &recorder{secrets: map[types.NamespacedName][]secretVersion{},
		completed: map[types.NamespacedName]map[string]time.Time{}}
}

// secretSeen records a new keyring of the Secret.
func (r *recorder) secretSeen(key types.NamespacedName, v secretVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[key] = append(r.secrets[key], v)
}

// rolloutCompleted records that the harness completed the rollout of fingerprint fp at at, unless
// an earlier completion of fp was recorded.
func (r *recorder) rolloutCompleted(key types.NamespacedName, fp string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.completed[key]
	if m == nil {
		m = map[string]time.Time{}
		r.completed[key] = m
	}
	if _, ok := m[fp]; !ok {
		m[fp] = at
	}
}

// snapshot copies what was recorded, for computing the timings without the lock.
func (r *recorder) snapshot() (map[types.NamespacedName][]secretVersion, map[types.NamespacedName]map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(map[types.NamespacedName][]secretVersion, len(r.secrets))
	for k, v := range r.secrets {
		s[k] = append([]secretVersion(nil), v...)
	}
	c := make(map[types.NamespacedName]map[string]time.Time, len(r.completed))
	for k, v := range r.completed {
		m := make(map[string]time.Time, len(v))
		maps.Copy(m, v)
		c[k] = m
	}
	return s, c
}

// startPlayer has internal/testworld play, against the harness's cache, what envtest lacks: the
// Deployment controller (every Deployment whose generation its status has not observed is rolled
// out at once) and, in Reload delivery, each pod's acknowledgement of every keyring its Secret gets.
// It records, for the timings, each keyring the Secrets hold and when each rollout was completed:
// its rolled-out status write returned in Restart delivery, the pod's acknowledgement in Reload.
func startPlayer(ctx context.Context, c client.Client, ca cache.Cache, rec *recorder, reload bool) error {
	pl := &testworld.Player{Client: c, Cache: ca, Acknowledge: reload,
		OnKeyring: func(key types.NamespacedName, kr *keyring.Keyring, at time.Time) {
			rec.secretSeen(key, secretVersion{at: at, fingerprint: kr.Fingerprint(), ids: kr.IDs()})
		},
		// The Deployment and the Secret of a target share its name (see target).
		OnRolledOut: func(key types.NamespacedName, fp string, at time.Time) {
			if !reload {
				rec.rolloutCompleted(key, fp, at)
			}
		},
		OnAcknowledged: rec.rolloutCompleted,
	}
	return pl.Start(ctx)
}
