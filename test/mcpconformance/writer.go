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
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/conformance/check"
)

// writer plays the operator and the kubelet: it rotates the keyring in the volume through the four
// phases, and before each next phase waits until every replica serves the keyring just written
// (the operator waits for the replicas' acknowledgements).
type writer struct {
	vol      *check.Volume
	ttl      time.Duration
	replicas []string // their addresses, asked for the keyring in service
	current  *keyring.Keyring
	n        int // keys made so far
	writes   int
	rotated  atomic.Int64
}

func newWriter(dir string, ttl time.Duration) (*writer, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	w := &writer{vol: check.NewVolume(dir), ttl: ttl}
	k, err := w.newKey()
	if err != nil {
		return nil, err
	}
	return w, w.write(k)
}

func (w *writer) newKey() (keyring.Key, error) {
	w.n++
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return keyring.Key{}, err
	}
	return keyring.NewKey(fmt.Sprintf("conformance-%d", w.n), secret), nil
}

// write puts a keyring of keys (the first seals) into the volume, with the token-ttl.
func (w *writer) write(keys ...keyring.Key) error {
	r, err := keyring.New(keys...)
	if err != nil {
		return err
	}
	data, err := keyring.Marshal(r)
	if err != nil {
		return err
	}
	w.current, w.writes = r, w.writes+1
	return w.vol.Write(map[string][]byte{
		keyring.SecretDataKey:   data,
		keyring.TokenTTLDataKey: fmt.Appendf(nil, "%d", int(w.ttl/time.Second)),
	}, nil)
}

// completed is the number of whole rotations so far.
func (w *writer) completed() int { return int(w.rotated.Load()) }

// rotate rotates until ctx is done; it returns nil then, or the first error.
func (w *writer) rotate(ctx context.Context) error {
	for {
		old := w.current.Primary()
		next, err := w.newKey()
		if err != nil {
			return err
		}
		for _, phase := range []func() error{
			func() error { return w.write(old, next) }, // 1: every replica accepts the new key
			func() error { return w.write(next, old) }, // 2: every replica seals with it
			func() error { // 3: no token sealed with the old key outlives this wait
				select {
				case <-time.After(w.ttl):
				case <-ctx.Done():
				}
				return nil
			},
			func() error { return w.write(next) }, // 4: the old key goes
		} {
			if ctx.Err() != nil {
				return nil
			}
			if err := phase(); err != nil {
				return err
			}
			if err := w.awaitAll(ctx, 30*time.Second); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		w.rotated.Add(1)
	}
}

// awaitAll waits until every replica serves the keyring last written.
func (w *writer) awaitAll(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := w.current.Fingerprint()
	for _, addr := range w.replicas {
		for {
			got, err := fingerprint(ctx, addr)
			if err == nil && got == want {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("replica at %s serves keyring %q (err %v), not %q (%v)", addr, got, err, want, w.current.IDs())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// fingerprint asks the replica at addr for the fingerprint of the keyring in service.
func fingerprint(ctx context.Context, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/keyring", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("GET /debug/keyring: %w", err)
	}
	return body.Fingerprint, nil
}
