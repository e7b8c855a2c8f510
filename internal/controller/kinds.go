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

package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// DefaultKindRecheck is how often the manager asks again whether the API server serves a workload
// kind it did not serve before (a CRD installed since), and how often a keyring that names such a
// kind looks again.
const DefaultKindRecheck = 30 * time.Second

// servedKinds knows which workload kinds the manager watches: each kind the API server serves,
// asked of the RESTMapper when the manager is set up, and, for a kind not served then (the Argo
// Rollouts CRD not installed yet), asked again every interval until it is, when its watch and
// index are added to the running manager. A watch of a kind the API server does not serve would
// keep the cache from syncing, and so the manager from starting; a kind served later is watched
// without a restart. Reads of a kind go through the cache only once it is watched (Served).
type servedKinds struct {
	mapper   meta.RESTMapper
	interval time.Duration
	// index adds the field index of a kind's objects that every controller reads them by.
	index func(ctx context.Context, obj client.Object) error

	mu     sync.RWMutex
	served map[workload.Kind]bool
	// watches add a controller's watch of a kind's objects, one per controller (subscribe).
	watches []func(ctx context.Context, obj client.Object) error
}

// subscribe adds a controller's watch of each workload kind: of those watched already at once, of
// any other once it is served.
func (s *servedKinds) subscribe(ctx context.Context, watch func(ctx context.Context, obj client.Object) error) error {
	s.mu.Lock()
	s.watches = append(s.watches, watch)
	var served []workload.Kind
	for k, ok := range s.served {
		if ok {
			served = append(served, k)
		}
	}
	s.mu.Unlock()
	for _, k := range served {
		obj, err := workload.New(k)
		if err == nil {
			err = watch(ctx, obj)
		}
		if err != nil {
			return err
		}
	}
	return s.add(ctx)
}

// watch adds the index and every controller's watch of a kind's objects.
func (s *servedKinds) watch(ctx context.Context, obj client.Object) error {
	if s.index != nil {
		if err := s.index(ctx, obj); err != nil {
			return err
		}
	}
	s.mu.RLock()
	watches := slices.Clone(s.watches)
	s.mu.RUnlock()
	for _, w := range watches {
		if err := w(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// Served reports whether kind k is watched.
func (s *servedKinds) Served(k workload.Kind) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.served[k]
}

// unserved lists the kinds not watched yet.
func (s *servedKinds) unserved() []workload.Kind {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []workload.Kind
	for _, k := range workload.Kinds() {
		if !s.served[k] {
			out = append(out, k)
		}
	}
	return out
}

// serves asks the RESTMapper whether the API server serves kind k. The manager's mapper caches
// what it found, but not what it did not: it asks discovery again for a group it does not know.
func (s *servedKinds) serves(k workload.Kind) (bool, error) {
	gvk, err := workload.GVK(k)
	if err != nil {
		return false, err
	}
	if _, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("ask the API server whether it serves %s: %w", gvk, err)
	}
	return true, nil
}

// add watches every kind served now that is not watched yet; it returns the first error.
func (s *servedKinds) add(ctx context.Context) error {
	var first error
	for _, k := range s.unserved() {
		ok, err := s.serves(k)
		if err == nil && ok {
			var obj client.Object
			if obj, err = workload.New(k); err == nil {
				err = s.watch(ctx, obj)
			}
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		if ok {
			s.mu.Lock()
			s.served[k] = true
			s.mu.Unlock()
			gvk, _ := workload.GVK(k)
			logf.FromContext(ctx).Info("watching a workload kind the API server serves", "kind", gvk.String())
		}
	}
	return first
}

// Start asks again about the kinds not watched yet, at once (a replica that becomes leader long
// after it was set up may find a CRD installed since) and then every interval, until every kind
// is watched. A CRD deleted after its kind is watched is not noticed: its informer fails its lists
// (logged) until the CRD is back.
func (s *servedKinds) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("kinds")
	ctx = logf.IntoContext(ctx, log)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for len(s.unserved()) > 0 {
		if err := s.add(ctx); err != nil {
			log.Error(err, "watch a workload kind served since the manager started")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}
