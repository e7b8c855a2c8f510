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

package members

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// A member's cache holds the scoped kinds (Registry.Scoped: pods, workloads, PDBs) only in the
// namespaces the keyrings naming the member select there (Registry.Select), and every other kind
// it reads (Namespaces, which the selection is made from; Secrets, which its options restrict to
// the copies) cluster-wide. controller-runtime fixes a cache's namespaces when it is made, so the
// scoped kinds live in one cache per selected namespace, made when a keyring first selects it and
// stopped when none does: the cluster-wide cache, and so the member's reachability and the events
// it delivers, never restart for a change of selection. Reads route by namespace; a read in a
// namespace not selected, or whose cache has not synced yet, is an error, never "not found".

// ErrNotSelected is the error of a read of a scoped kind in a namespace no keyring selects, or
// across all namespaces.
var ErrNotSelected = errors.New("not held by the member's cache: it holds pods, workloads and PDBs only in the namespaces the keyrings select")

// ErrSyncing is the error of a read of a scoped kind in a namespace whose cache has not synced yet.
var ErrSyncing = errors.New("the member's cache of the namespace has not synced yet")

// scopedCache is a member's cache: the cluster-wide one (embedded), and one per selected namespace
// for the scoped kinds.
type scopedCache struct {
	cache.Cache
	config *rest.Config
	opts   cache.Options
	scoped map[schema.GroupVersionKind]client.Object
	// notify is called with the namespace of each change a namespace's cache sees, and once it
	// syncs.
	notify func(namespace string)

	mu      sync.Mutex
	ctx     context.Context // Start's
	indexes []fieldIndex
	spaces  map[string]*space
}

// fieldIndex is an IndexField call on a scoped kind, made again on each namespace's cache.
type fieldIndex struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// space is the cache of one selected namespace.
type space struct {
	cache.Cache
	ns     string
	ctx    context.Context
	cancel context.CancelFunc
	since  time.Time
	synced chan struct{} // closed once it synced

	mu       sync.Mutex
	informed map[schema.GroupVersionKind]bool
	// indexed is how many of scopedCache.indexes start applied: one added while the namespace's
	// cache was being made is applied when it joins (scope).
	indexed int
}

func (s *space) ready() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// newScopedCache makes the cluster-wide cache of opts, for Namespaces, Secrets and the kinds not
// in scoped, which get a cache per selected namespace.
func newScopedCache(config *rest.Config, opts cache.Options, scoped []client.Object, notify func(string)) (*scopedCache, error) {
	base, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	s := &scopedCache{Cache: base, config: config, opts: opts, scoped: map[schema.GroupVersionKind]client.Object{},
		notify: notify, spaces: map[string]*space{}}
	for _, obj := range scoped {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, err
		}
		s.scoped[gvk] = obj
	}
	return s, nil
}

// kind is obj's kind (a list's, its items'), and whether it is scoped.
func (s *scopedCache) kind(obj runtime.Object) (schema.GroupVersionKind, bool) {
	gvk, err := apiutil.GVKForObject(obj, s.opts.Scheme)
	if err != nil {
		return gvk, false
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	_, ok := s.scoped[gvk]
	return gvk, ok
}

// space is namespace's cache, synced, or why it cannot be read.
func (s *scopedCache) space(gvk schema.GroupVersionKind, namespace string) (*space, error) {
	if namespace == "" {
		return nil, fmt.Errorf("%s across all namespaces: %w", gvk.Kind, ErrNotSelected)
	}
	s.mu.Lock()
	sp := s.spaces[namespace]
	s.mu.Unlock()
	switch {
	case sp == nil:
		return nil, fmt.Errorf("%s in namespace %s: %w", gvk.Kind, namespace, ErrNotSelected)
	case !sp.ready():
		return nil, fmt.Errorf("%s in namespace %s: %w", gvk.Kind, namespace, ErrSyncing)
	}
	return sp, nil
}

func (s *scopedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, scoped := s.kind(obj)
	if !scoped {
		return s.Cache.Get(ctx, key, obj, opts...)
	}
	sp, err := s.space(gvk, key.Namespace)
	if err != nil {
		return err
	}
	return sp.Get(ctx, key, obj, opts...)
}

func (s *scopedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, scoped := s.kind(list)
	if !scoped {
		return s.Cache.List(ctx, list, opts...)
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	sp, err := s.space(gvk, lo.Namespace)
	if err != nil {
		return err
	}
	return sp.List(ctx, list, opts...)
}

// GetInformer refuses a scoped kind: an informer of it would watch every namespace of the member.
func (s *scopedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk, scoped := s.kind(obj); scoped {
		return nil, fmt.Errorf("an informer of %s: %w", gvk.Kind, ErrNotSelected)
	}
	return s.Cache.GetInformer(ctx, obj, opts...)
}

func (s *scopedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if _, scoped := s.scoped[gvk]; scoped {
		return nil, fmt.Errorf("an informer of %s: %w", gvk.Kind, ErrNotSelected)
	}
	return s.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (s *scopedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if gvk, scoped := s.kind(obj); scoped {
		return fmt.Errorf("an informer of %s: %w", gvk.Kind, ErrNotSelected)
	}
	return s.Cache.RemoveInformer(ctx, obj)
}

// IndexField indexes a scoped kind in each namespace's cache, those to come too. A kind indexed
// while the namespaces' caches run (a workload kind the member serves since, as
// controller.servedKinds finds it) is informed there from then on.
func (s *scopedCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	gvk, scoped := s.kind(obj)
	if !scoped {
		return s.Cache.IndexField(ctx, obj, field, extract)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := fieldIndex{obj: obj, field: field, extract: extract}
	s.indexes = append(s.indexes, ix)
	for _, sp := range s.spaces {
		if err := s.apply(ctx, sp, gvk, ix); err != nil {
			return err
		}
	}
	return nil
}

// apply adds index ix, of scoped kind gvk, to sp's cache, and makes that cache watch gvk. Under s.mu.
func (s *scopedCache) apply(ctx context.Context, sp *space, gvk schema.GroupVersionKind, ix fieldIndex) error {
	if err := sp.IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
		return err
	}
	return s.inform(sp, gvk)
}

// inform makes sp's cache watch gvk, each change notifying; once per kind.
func (s *scopedCache) inform(sp *space, gvk schema.GroupVersionKind) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.informed[gvk] {
		return nil
	}
	inf, err := sp.GetInformer(sp.ctx, s.scoped[gvk], cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("its %s cannot be watched: %w", gvk.Kind, err)
	}
	changed := func(any) { s.notify(sp.ns) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed,
	}); err != nil {
		return fmt.Errorf("its %s cannot be watched: %w", gvk.Kind, err)
	}
	sp.informed[gvk] = true
	return nil
}

// Start runs the cluster-wide cache; the namespaces' caches run under ctx as they are selected.
func (s *scopedCache) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	err := s.Cache.Start(ctx)
	s.mu.Lock()
	for ns, sp := range s.spaces {
		sp.cancel()
		delete(s.spaces, ns)
	}
	s.mu.Unlock()
	return err
}

// scope makes the cache hold the scoped kinds in namespaces, and in no other: a namespace's cache
// is made, informed of each scoped kind the member serves and started when it joins, stopped
// when it leaves.
// Its caller serializes the calls (Registry.rescope).
func (s *scopedCache) scope(namespaces map[string]bool) error {
	s.mu.Lock()
	ctx := s.ctx
	var joining []string
	for ns, sp := range s.spaces {
		if !namespaces[ns] {
			sp.cancel()
			delete(s.spaces, ns)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		if s.spaces[ns] == nil {
			joining = append(joining, ns)
		}
	}
	s.mu.Unlock()
	if ctx == nil {
		return errors.New("the member's cache has not started")
	}
	var errs []error
	for _, ns := range joining {
		// Not under s.mu: a namespace's cache asks the member which kinds it serves, and reads of
		// the other namespaces go on meanwhile.
		sp, err := s.start(ctx, ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
			continue
		}
		if err := s.join(sp); err != nil {
			sp.cancel()
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// join adds sp to the namespaces' caches, with the indexes IndexField added since start cloned
// them (a workload kind found served meanwhile): IndexField reaches only the caches joined.
func (s *scopedCache) join(sp *space) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ix := range s.indexes[sp.indexed:] { // IndexField keeps only those of scoped kinds
		gvk, _ := s.kind(ix.obj)
		if err := s.apply(sp.ctx, sp, gvk, ix); err != nil {
			return err
		}
	}
	s.spaces[sp.ns] = sp
	return nil
}

// start makes, informs and starts namespace ns's cache, under base.
func (s *scopedCache) start(base context.Context, ns string) (*space, error) {
	opts := s.opts
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	c, err := cache.New(s.config, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(base)
	sp := &space{Cache: c, ns: ns, ctx: ctx, cancel: cancel, since: time.Now(), synced: make(chan struct{}),
		informed: map[schema.GroupVersionKind]bool{}}
	s.mu.Lock()
	indexes := slices.Clone(s.indexes)
	s.mu.Unlock()
	sp.indexed = len(indexes)
	indexed := map[schema.GroupVersionKind]bool{}
	for _, ix := range indexes {
		if err := c.IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			cancel()
			return nil, err
		}
		if gvk, scoped := s.kind(ix.obj); scoped {
			indexed[gvk] = true
		}
	}
	for _, gvk := range slices.SortedFunc(maps.Keys(s.scoped), func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) }) {
		// A kind the member does not serve (Argo Rollouts without their CRD) is not informed: its
		// informer would never sync. The controller does not read it (it asks what is served). A
		// kind indexed is served (its index made an informer already).
		if _, err := s.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) && !indexed[gvk] {
			continue
		} else if err != nil && !indexed[gvk] {
			cancel()
			return nil, fmt.Errorf("ask whether the member serves %s: %w", gvk, err)
		}
		if err := s.inform(sp, gvk); err != nil {
			cancel()
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	go func() {
		if c.WaitForCacheSync(ctx) && ctx.Err() == nil {
			close(sp.synced)
			s.notify(ns)
		}
	}()
	return sp, nil
}

// syncing are the namespaces among names whose cache has not synced yet, with the time each
// started.
func (s *scopedCache) syncing(names []string) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[string]time.Time
	for _, ns := range names {
		if sp := s.spaces[ns]; sp != nil && !sp.ready() {
			if out == nil {
				out = map[string]time.Time{}
			}
			out[ns] = sp.since
		}
	}
	return out
}
