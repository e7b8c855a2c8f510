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

// Package members reaches the member clusters of ClusterMRTRKeyrings: one controller-runtime
// cluster (a client and a cache scoped as the operator's own, and to the namespaces the keyrings
// select there: scope.go) per kubeconfig Secret, and whether it can be reached. It decides
// nothing about rotation: an unreachable member is a fact the controller hands to
// internal/rotation, which holds the phases for it.
package members

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// State is whether a member can be reached, and why not.
type State struct {
	Reachable bool
	// Message says why it is not (never a credential): the kubeconfig's fault as RESTConfig names
	// it, a cache that did not sync, or a health check that failed.
	Message string
	// Since is when Reachable last changed.
	Since time.Time
	// Connecting: the member has not had its first chance yet (its cluster is being made, or its
	// cache is syncing within SyncTimeout). It is not reachable, but not known to be unreachable
	// either.
	Connecting bool
}

// Registry runs one cluster per member kubeconfig Secret that some keyring names, and knows
// whether each can be reached. Ensure is cheap and never blocks on a member: a member starts
// unreachable ("connecting") and Changed is called when its state changes, so that the keyrings
// naming it are reconciled again.
type Registry struct {
	// Reader reads the kubeconfig Secrets in Namespace, uncached: the manager's cache holds keyring
	// Secrets only, and must not hold every Secret of the operator's namespace.
	Reader client.Reader
	// Versions, when set, reads the metadata of the kubeconfig Secrets from a cache (the
	// manager's metadata-only cache of Secrets): while it gives the resourceVersion the running
	// member was built from, Ensure does not read the Secret from the API server.
	Versions  client.Reader
	Namespace string
	Scheme    *runtime.Scheme
	// CacheOptions are the member cache's options: the operator's own (keyring Secrets by type,
	// stripped pods and workloads), so a member's cache never holds its other Secrets.
	CacheOptions func() cache.Options
	// Scoped are the kinds the member's cache holds only in the namespaces keyrings Select there
	// (pods, workloads, PDBs: one cache per namespace); every other kind is held cluster-wide.
	Scoped []client.Object
	// SyncTimeout bounds the wait for a new member's cache; HealthEvery and HealthTimeout pace the
	// live /readyz check that notices a member lost after its cache synced.
	SyncTimeout, HealthEvery, HealthTimeout time.Duration
	// Changed is called (from another goroutine) with the Secret name of a member whose state
	// changed, or whose cache saw a change, and the keyrings that change concerns: nil for all
	// those naming the member, else those whose selection holds the namespace of the change.
	Changed func(secret string, keyrings []string)
	// Now is the clock (tests use a fake one).
	Now func() time.Time
	// Prepare, when set, readies a member's cluster before it starts (the field indexes its cache
	// must have before its informers run).
	Prepare func(ctx context.Context, c cluster.Cluster) error
	// WrapClient, when set, wraps each member's client: the manager guards every member's writes
	// with its own leader-lease session, never a session of the member's (a second session would
	// end the manager's).
	WrapClient func(client.Client) client.Client

	mu      sync.Mutex
	members map[string]*member
	// base is the context members run under: the manager's, once Start runs.
	base context.Context
}

// Start runs the registry as the manager's: every member runs under ctx, and stops with it.
func (r *Registry) Start(ctx context.Context) error {
	r.mu.Lock()
	r.base = ctx
	r.mu.Unlock()
	<-ctx.Done()
	r.Retain(nil)
	return nil
}

// NeedLeaderElection: members are reached only by the leader, whose writes they serve.
func (r *Registry) NeedLeaderElection() bool { return true }

// States returns the state of each member running, by the name of its kubeconfig Secret.
func (r *Registry) States() map[string]State {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]State, len(r.members))
	for name, m := range r.members {
		out[name] = m.state
	}
	return out
}

type member struct {
	version string // the resourceVersion of the Secret the cluster was built from
	cl      cluster.Cluster
	client  client.Client // cl's, wrapped (WrapClient)
	cache   *scopedCache  // cl's
	cancel  context.CancelFunc
	state   State
	// selections are the namespaces each keyring naming the member selects there (Select): the
	// member's cache holds the scoped kinds in their union.
	selections map[string][]string
	scoping    sync.Mutex // see rescope
}

// Ensure returns the client of the member whose kubeconfig is in Secret name, and its state; a
// nil client while it is unreachable. A changed Secret replaces the member's cluster.
func (r *Registry) Ensure(ctx context.Context, name string) (client.Client, State) {
	key := types.NamespacedName{Namespace: r.Namespace, Name: name}
	if r.Versions != nil {
		// The Secret's data is read only when it changed: its metadata, cached, tells.
		var md metav1.PartialObjectMetadata
		md.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.Versions.Get(ctx, key, &md); err == nil {
			r.mu.Lock()
			m := r.members[name]
			if m != nil && m.version == md.ResourceVersion {
				defer r.mu.Unlock()
				return m.reached()
			}
			r.mu.Unlock()
		}
	}
	var sec corev1.Secret
	err := r.Reader.Get(ctx, key, &sec)
	version := sec.ResourceVersion
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.members == nil {
		r.members = map[string]*member{}
	}
	m := r.members[name]
	if err != nil && !apierrors.IsNotFound(err) && m != nil {
		// A failed read of the hub's own API server says nothing of the member: the member runs on
		// with the kubeconfig it was built from. Only a Secret deleted or changed replaces it.
		return m.reached()
	}
	if m != nil && (err != nil || m.version != version) {
		m.cancel()
		delete(r.members, name)
		m = nil
	}
	if err != nil {
		// The error of a Get names the Secret and the API server's reason, never its data.
		return nil, State{Message: fmt.Sprintf("kubeconfig Secret %s/%s cannot be read: %v", r.Namespace, name, err), Since: r.Now()}
	}
	if m == nil {
		m = r.start(name, &sec)
		r.members[name] = m
	}
	return m.reached()
}

// reached is the member's client and state: a nil client while it is unreachable. The registry's
// lock is held.
func (m *member) reached() (client.Client, State) {
	if !m.state.Reachable {
		return nil, m.state
	}
	return m.client, m.state
}

// Cluster is the cluster of the member whose kubeconfig is in Secret name, nil when it is not
// running: its uncached reader, and what Prepare made of it.
func (r *Registry) Cluster(name string) cluster.Cluster {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.members[name]; m != nil && m.cl != nil {
		return m.cl
	}
	return nil
}

// Retain stops the members whose Secret is not in named (each Secret's name, and the keyrings
// that name it): no keyring names them any more. A keyring that no longer names a member drops
// its selection there.
func (r *Registry) Retain(named map[string][]string) {
	r.mu.Lock()
	kept := map[string]*member{}
	for name, m := range r.members {
		keyrings, ok := named[name]
		if !ok {
			m.cancel()
			delete(r.members, name)
			continue
		}
		for k := range m.selections {
			if !slices.Contains(keyrings, k) {
				kept[name] = m
			}
		}
	}
	r.mu.Unlock()
	for name, m := range kept {
		if err := r.rescope(m, func() {
			for k := range m.selections {
				if !slices.Contains(named[name], k) {
					delete(m.selections, k)
				}
			}
		}); err != nil {
			logf.Log.WithName("members").Error(err, "scope the member's cache", "kubeconfigSecret", name)
		}
	}
}

// rescope changes the member's selections (update, under the registry's lock) and scopes its
// cache to their union. Scopings of a member are serialized (m.scoping), so that the union a
// slower one computed never undoes a later one's; never under the registry's lock, since a
// namespace's cache asks the member which kinds it serves.
func (r *Registry) rescope(m *member, update func()) error {
	m.scoping.Lock()
	defer m.scoping.Unlock()
	r.mu.Lock()
	update()
	union, c := m.selected(), m.cache
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.scope(union)
}

// Select makes the cache of the member of kubeconfig Secret name hold the scoped kinds in
// namespaces, the selection of keyring there, as long as the keyring Selects them (a later call
// replaces them; Retain drops them when the keyring no longer names the member), besides the
// namespaces of the other keyrings. It returns those of namespaces whose cache has not synced
// yet: a read there fails (ErrSyncing) until it has, and the member's Changed reports it; and,
// of those, the ones that did not sync within SyncTimeout.
func (r *Registry) Select(name, keyring string, namespaces []string) (syncing, late []string, err error) {
	r.mu.Lock()
	m := r.members[name]
	var c *scopedCache
	if m != nil {
		c = m.cache
	}
	r.mu.Unlock()
	if c == nil {
		return nil, nil, fmt.Errorf("member of kubeconfig Secret %s is not running", name)
	}
	if err := r.rescope(m, func() {
		if m.selections == nil {
			m.selections = map[string][]string{}
		}
		m.selections[keyring] = slices.Clone(namespaces)
	}); err != nil {
		return nil, nil, fmt.Errorf("the member's cache of the selected namespaces: %w", err)
	}
	// Real time, not Now: how long a cache takes to sync is the member's, not the rotation's clock.
	for ns, since := range c.syncing(namespaces) {
		syncing = append(syncing, ns)
		if time.Since(since) > r.SyncTimeout {
			late = append(late, ns)
		}
	}
	slices.Sort(syncing)
	slices.Sort(late)
	return syncing, late, nil
}

// selected is the union of the member's selections. The registry's lock is held.
func (m *member) selected() map[string]bool {
	out := map[string]bool{}
	for _, nss := range m.selections {
		for _, ns := range nss {
			out[ns] = true
		}
	}
	return out
}

// selecting are the keyrings whose selection in the member holds namespace ns: none (not nil,
// which notify takes for all) once no keyring selects it.
func (r *Registry) selecting(m *member, ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for k, nss := range m.selections {
		if slices.Contains(nss, ns) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// start builds and runs the member's cluster; its state is settled asynchronously.
func (r *Registry) start(name string, sec *corev1.Secret) *member {
	m := &member{version: sec.ResourceVersion, state: State{Message: "connecting", Since: r.Now(), Connecting: true}}
	m.cancel = func() {}
	cfg, err := RESTConfig(sec.Data[mrtrv1alpha1.MemberKubeconfigKey])
	if err != nil {
		m.state.Message = fmt.Sprintf("kubeconfig Secret %s/%s (key %s): %v", r.Namespace, name, mrtrv1alpha1.MemberKubeconfigKey, err)
		m.state.Connecting = false
		return m
	}
	// client-go's default of 5 requests/s would pace a rotation over a member of many namespaces
	// by the client, not by the member: the manager's own client is not limited either.
	cfg.QPS, cfg.Burst = -1, 0
	// Uncompressed, as the hub's own: each selected namespace has a watch per kind, and each gzip
	// stream keeps a 32 KB window for as long as its watch lasts (43 % of the hub's heap per member
	// namespace, docs/benchmarks.md), to save little on objects this small, stripped or not.
	cfg.DisableCompression = true
	base := r.base
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithCancel(base)
	m.cancel = cancel
	// Making the cluster asks the member's discovery: never under the registry's lock, so that a
	// member that does not answer holds nobody but itself.
	go r.run(ctx, name, m, cfg)
	return m
}

// run makes the member's cluster (again every HealthEvery while its API server does not answer
// discovery), starts it, and watches it until the member is stopped.
func (r *Registry) run(ctx context.Context, name string, m *member, cfg *rest.Config) {
	var cl cluster.Cluster
	for {
		var err error
		if cl, err = r.build(ctx, name, m, cfg); err == nil {
			break
		}
		r.set(name, m, false, fmt.Sprintf("member of kubeconfig Secret %s: %v", name, err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.HealthEvery):
		}
	}
	c := cl.GetClient()
	if r.WrapClient != nil {
		c = r.WrapClient(c)
	}
	r.mu.Lock()
	m.cl, m.client = cl, c
	r.mu.Unlock()
	go func() {
		// A cluster that cannot start (its API server gone) must not stop the manager: its error
		// is the member's state.
		if err := cl.Start(ctx); err != nil && ctx.Err() == nil {
			r.set(name, m, false, "the member's cache stopped: "+err.Error())
		}
	}()
	r.watch(ctx, name, m)
}

// build makes the member's cluster and Prepares it.
func (r *Registry) build(ctx context.Context, name string, m *member, cfg *rest.Config) (cluster.Cluster, error) {
	// Requests (discovery, reads past the cache, every write) time out after HealthTimeout, so
	// that a member gone mid-pass holds no worker; the cache's watches do not, since a timeout
	// would end every watch after it, and list the member again.
	timed := rest.CopyConfig(cfg)
	timed.Timeout = r.HealthTimeout
	var scoped *scopedCache
	inner, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = r.Scheme
		o.Cache = r.CacheOptions()
		o.NewCache = func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
			var err error
			scoped, err = newScopedCache(config, opts, r.Scoped, func(ns string) { r.notify(name, m, r.selecting(m, ns)) })
			return scoped, err
		}
		o.MapperProvider = func(_ *rest.Config, _ *http.Client) (meta.RESTMapper, error) {
			hc, err := rest.HTTPClientFor(timed)
			if err != nil {
				return nil, err
			}
			return apiutil.NewDynamicRESTMapper(timed, hc)
		}
		o.NewClient = func(_ *rest.Config, options client.Options) (client.Client, error) {
			hc, err := rest.HTTPClientFor(timed)
			if err != nil {
				return nil, err
			}
			options.HTTPClient = hc
			return client.New(timed, options)
		}
	})
	if err != nil {
		return nil, err
	}
	// Reads past the cache time out as the client's do: a member gone mid-pass holds no worker.
	hc, err := rest.HTTPClientFor(timed)
	if err != nil {
		return nil, err
	}
	reader, err := client.New(timed, client.Options{HTTPClient: hc, Scheme: r.Scheme, Mapper: inner.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	cl := &timedCluster{Cluster: inner, reader: reader}
	r.mu.Lock()
	m.cache = scoped
	r.mu.Unlock()
	if r.Prepare != nil {
		if err := r.Prepare(ctx, cl); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

// watch waits for the member's cache to sync, then checks its API server's /readyz until the
// member is stopped.
func (r *Registry) watch(ctx context.Context, name string, m *member) {
	// The kinds every pass reads are informed from the start, so that "synced" means the member
	// answered, and each change there reaches the keyrings that name the member. A member down
	// when it is added is retried at the health check's pace.
	for err := r.inform(ctx, name, m); err != nil; err = r.inform(ctx, name, m) {
		r.set(name, m, false, err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.HealthEvery):
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, r.SyncTimeout)
	synced := m.cl.GetCache().WaitForCacheSync(syncCtx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if !synced {
		// Why it did not, as the member's API server answers a live request (an untrusted
		// certificate, a refused credential), when it answers at all.
		why := ""
		if err := r.ready(ctx, m); err != nil {
			why = ": " + err.Error()
		}
		r.set(name, m, false, fmt.Sprintf("its cache did not sync within %s%s", r.SyncTimeout, why))
	}
	tick := time.NewTicker(r.HealthEvery)
	defer tick.Stop()
	lost := false
	for {
		if r.check(ctx, name, m, synced, lost) {
			lost = true
		} else if lost {
			r.renew(name, m)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !synced {
			syncCtx, cancel := context.WithTimeout(ctx, r.SyncTimeout)
			synced = m.cl.GetCache().WaitForCacheSync(syncCtx)
			cancel()
		}
	}
}

// check asks the member's API server whether it is ready, with a short timeout: a cache that
// synced once keeps serving what it last saw when the member is lost, so only a live request
// tells. It reports whether the member is lost: it does not answer, or, when it was lost, it
// answers again, and is left to renew, not set reachable.
func (r *Registry) check(ctx context.Context, name string, m *member, synced, lost bool) bool {
	if !synced {
		return lost
	}
	err := r.ready(ctx, m)
	if ctx.Err() != nil {
		return lost
	}
	if err != nil {
		r.set(name, m, false, "its API server does not answer /readyz: "+err.Error())
		return true
	}
	if !lost {
		r.set(name, m, true, "")
	}
	return false
}

// renew stops member m, which answers again after it was lost, so that the next Ensure builds it
// anew, and reports the change. Its cache may be stale for a while yet: client-go backs off a
// failed watch for up to half a minute, and an API server that restarted refuses to resume a
// watch from a resourceVersion it no longer holds, so the informers wait to list again, while
// the copies they hold are older than the member's. Writes from a stale cache are refused
// (conflicts) until then, which holds the member's phase for nothing: a new cache lists at once.
func (r *Registry) renew(name string, m *member) {
	r.mu.Lock()
	current := r.members[name] == m
	if current {
		m.cancel()
		delete(r.members, name)
	}
	r.mu.Unlock()
	if current && r.Changed != nil {
		logf.Log.WithName("members").Info("member answers again: its cache is built anew", "kubeconfigSecret", name)
		r.Changed(name, nil)
	}
}

// ready asks the member's API server's /readyz, within HealthTimeout.
func (r *Registry) ready(ctx context.Context, m *member) error {
	dc, err := discovery.NewDiscoveryClientForConfig(m.cl.GetConfig())
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, r.HealthTimeout)
	defer cancel()
	_, err = dc.RESTClient().Get().AbsPath("/readyz").DoRaw(cctx)
	return err
}

// inform makes the member's cache watch the kinds every pass reads, each change notifying.
func (r *Registry) inform(ctx context.Context, name string, m *member) error {
	// Namespaces and Secrets: the scoped kinds' events come from each namespace's cache.
	for _, obj := range []client.Object{&corev1.Namespace{}, &corev1.Secret{}} {
		inf, err := m.cl.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("its %T cannot be watched: %w", obj, err)
		}
		notify := func(any) { r.notify(name, m, nil) }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
		}); err != nil {
			return fmt.Errorf("its %T cannot be watched: %w", obj, err)
		}
	}
	return nil
}

// notify reports a change seen in the member's cache, while it is the member of that name, to
// keyrings (nil: all that name it).
func (r *Registry) notify(name string, m *member, keyrings []string) {
	r.mu.Lock()
	current := r.members[name] == m
	r.mu.Unlock()
	if current && r.Changed != nil && (keyrings == nil || len(keyrings) > 0) {
		r.Changed(name, keyrings)
	}
}

// timedCluster is a member's cluster whose uncached reader times out as its client does (the
// cluster's own has no timeout, as its watches must not).
type timedCluster struct {
	cluster.Cluster
	reader client.Reader
}

func (c *timedCluster) GetAPIReader() client.Reader { return c.reader }

// set records the member's state, and reports a change.
func (r *Registry) set(name string, m *member, reachable bool, message string) {
	r.mu.Lock()
	changed := m.state.Reachable != reachable || m.state.Message != message || m.state.Connecting
	if changed {
		since := m.state.Since
		if m.state.Reachable != reachable {
			since = r.Now()
		}
		m.state = State{Reachable: reachable, Message: message, Since: since}
	}
	current := r.members[name] == m
	r.mu.Unlock()
	if changed && current && r.Changed != nil {
		logf.Log.WithName("members").Info("member state changed", "kubeconfigSecret", name, "reachable", reachable, "message", message)
		r.Changed(name, nil)
	}
}
