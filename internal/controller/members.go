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

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// A ClusterMRTRKeyring with spec.members reaches the namespaces of each member cluster. Its pass
// gathers every member it can reach through that member's own cluster (internal/members: a
// client and a cache per kubeconfig Secret), names each place MEMBER/NAMESPACE, and does every
// step of a place (its copy, the nudges, the stamps, the evictions) through the place's cluster.
// A member it cannot reach is handed to rotation as places it cannot see (rotation.Place.
// Unreachable), which hold every phase: the namespaces status listed for it, or, when none, one
// place MEMBER/* for all of them.

// memberCluster is one cluster a pass reaches: the operator's own (name "" without spec.members,
// or the local member), or a member reached through its kubeconfig Secret.
type memberCluster struct {
	name  string
	local bool
	// secret is the kubeconfig Secret of a remote member, "" for the operator's own cluster.
	secret string
	// shared does the pass's steps in the cluster; nil while it cannot be reached.
	shared *Shared
	// unreachable says why it cannot be reached ("" when it can).
	unreachable string
	// connecting: the member has not had its first chance yet (members.State.Connecting).
	connecting bool
	status     mrtrv1alpha1.MemberStatus
}

// qualify is the place name of namespace ns in c: MEMBER/NAMESPACE with members.
func (c *memberCluster) qualify(ns string) string {
	if c.name == "" {
		return ns
	}
	return c.name + "/" + ns
}

// memberViews remembers, per member kubeconfig Secret, the Shared that does the steps through
// its client, so that what a Shared remembers (its own writes, the evictions under way) lasts
// from one pass to the next; a member rebuilt (its Secret changed) gets a new one.
type memberViews struct {
	mu sync.Mutex // one Shared per member, also when two workers pass keyrings that name it
	m  map[string]*Shared
}

// clusters are the clusters of ck's pass, in spec.members order; the operator's own alone without
// members.
func (r *ClusterMRTRKeyringReconciler) clusters(ctx context.Context, ck *mrtrv1alpha1.ClusterMRTRKeyring) []*memberCluster {
	if len(ck.Spec.Members) == 0 {
		return []*memberCluster{{shared: r.Shared}}
	}
	out := make([]*memberCluster, 0, len(ck.Spec.Members))
	for _, m := range ck.Spec.Members {
		c := &memberCluster{name: m.Name, local: m.Local, secret: m.KubeconfigSecret}
		if m.Local {
			c.shared = r.Shared
			c.status = mrtrv1alpha1.MemberStatus{Name: m.Name, Reachable: true, LastTransitionTime: r.memberSince(ck, m.Name, true)}
			out = append(out, c)
			continue
		}
		cl, st := r.Members.Ensure(ctx, m.KubeconfigSecret)
		reachable := cl != nil
		c.connecting = st.Connecting
		since, ok := lastTransition(ck, m.Name, reachable)
		if !ok {
			since = metav1.NewTime(st.Since.UTC().Truncate(1e9))
		}
		// The time of the last change of reachability, as status holds it: not the registry's
		// time of its latest attempt, which would rewrite status on every pass of a member that
		// stays unreachable, and would never let it stall after rolloutDeadline.
		c.status = mrtrv1alpha1.MemberStatus{Name: m.Name, Reachable: reachable, Message: rotation.Truncate(st.Message, 1024), LastTransitionTime: since}
		if prev := memberStatus(ck, m.Name); prev != nil && c.connecting {
			// Not seen yet since the operator started: as status last said.
			c.status = *prev
		}
		if cl == nil {
			c.unreachable = st.Message
			if c.unreachable == "" {
				c.unreachable = "not reached yet"
			}
		} else {
			c.shared = r.memberShared(m.KubeconfigSecret, cl)
		}
		out = append(out, c)
	}
	return out
}

// memberSince is when the local member became reachable: as status said, else now.
func (r *ClusterMRTRKeyringReconciler) memberSince(ck *mrtrv1alpha1.ClusterMRTRKeyring, name string, reachable bool) metav1.Time {
	if t, ok := lastTransition(ck, name, reachable); ok {
		return t
	}
	return metav1.NewTime(r.now().Now().UTC().Truncate(1e9))
}

// memberStatus is status.members' entry for member name, nil when none.
func memberStatus(ck *mrtrv1alpha1.ClusterMRTRKeyring, name string) *mrtrv1alpha1.MemberStatus {
	for i := range ck.Status.Members {
		if ck.Status.Members[i].Name == name {
			return &ck.Status.Members[i]
		}
	}
	return nil
}

// lastTransition is the time status gives member name's reachability, when status says it is
// reachable, or not, as now.
func lastTransition(ck *mrtrv1alpha1.ClusterMRTRKeyring, name string, reachable bool) (metav1.Time, bool) {
	if s := memberStatus(ck, name); s != nil && s.Reachable == reachable && !s.LastTransitionTime.IsZero() {
		return s.LastTransitionTime, true
	}
	return metav1.Time{}, false
}

// memberShared is the Shared that does the steps of the member of kubeconfig Secret secret through
// c: the hub's recorder, clock and metrics, the member's client and reader.
func (r *ClusterMRTRKeyringReconciler) memberShared(secret string, c client.Client) *Shared {
	r.views.mu.Lock()
	defer r.views.mu.Unlock()
	if s := r.views.m[secret]; s != nil && s.Client == c {
		return s
	}
	var reader client.Reader = c
	served := func(workload.Kind) bool { return false }
	if cl := r.Members.Cluster(secret); cl != nil {
		reader, served = cl.GetAPIReader(), r.memberKinds.served(cl)
	}
	s := &Shared{Client: c, APIReader: reader, Recorder: r.Recorder, Clock: r.Clock, Metrics: r.Metrics,
		ClusterKeyrings: r.ClusterKeyrings, KindRecheck: r.KindRecheck, hub: r.Shared, served: served}
	if r.views.m == nil {
		r.views.m = map[string]*Shared{}
	}
	r.views.m[secret] = s
	return s
}

// unreachablePlaces are the places of member c, which cannot be reached, as status last listed
// them: those it listed as left stay left; the others are unreachable, or, when status listed
// none, one place MEMBER/* stands for all of them.
func unreachablePlaces(ck *mrtrv1alpha1.ClusterMRTRKeyring, c *memberCluster) (places, left []rotation.Place) {
	for _, it := range ck.Status.Namespaces.Items {
		if it.Cluster != c.name {
			continue
		}
		if it.State == mrtrv1alpha1.NamespaceLeft {
			left = append(left, leftMemberPlace(ck, it))
			continue
		}
		places = append(places, c.unreachablePlace(it.Name, it.UID))
	}
	if len(places) == 0 {
		places = []rotation.Place{c.unreachablePlace("*", "")}
	}
	return places, left
}

// unreachablePlace is namespace ns of member c, which cannot be reached: pending while c is
// connecting, else lost since status says.
func (c *memberCluster) unreachablePlace(ns, uid string) rotation.Place {
	p := rotation.Place{Name: c.qualify(ns), UID: uid, Unreachable: c.unreachable, Pending: c.connecting}
	if !c.connecting {
		p.UnreachableSince = c.status.LastTransitionTime.Time
	}
	return p
}

// leftMemberPlace is a place status listed in a member no longer reached as left: a copy this
// keyring wrote, whose keys it cannot see any more.
func leftMemberPlace(ck *mrtrv1alpha1.ClusterMRTRKeyring, it mrtrv1alpha1.NamespaceStatus) rotation.Place {
	return rotation.Place{Name: it.Cluster + "/" + it.Name, UID: it.UID, Copy: observeSecret(nil),
		Ownership: rotation.Ownership{ClusterKeyring: ck.Name, WriterUID: string(ck.UID)}}
}

// removedMembers are the members status knew that spec.members no longer names, and the places
// status listed in them, which left: removing a member is an explicit act, reported once
// (MemberRemoved) and handled as its namespaces leaving (spec.onLeave applies). Their copies stay.
func removedMembers(ck *mrtrv1alpha1.ClusterMRTRKeyring) (names []string, left []rotation.Place) {
	named := map[string]bool{}
	for _, m := range ck.Spec.Members {
		named[m.Name] = true
	}
	for _, s := range ck.Status.Members {
		if !named[s.Name] {
			names = append(names, s.Name)
		}
	}
	if len(named) == 0 {
		return names, nil
	}
	for _, it := range ck.Status.Namespaces.Items {
		if it.Cluster != "" && !named[it.Cluster] {
			left = append(left, leftMemberPlace(ck, it))
		}
	}
	return names, left
}

// membersStatus is status.members: each cluster's, in spec order.
func membersStatus(cs []*memberCluster) []mrtrv1alpha1.MemberStatus {
	var out []mrtrv1alpha1.MemberStatus
	for _, c := range cs {
		if c.name != "" {
			out = append(out, c.status)
		}
	}
	return out
}

// memberChanged wakes the keyrings that name the member of kubeconfig Secret secret (of those,
// only keyrings, when not nil: those selecting the namespace of a pod or workload that changed):
// its state changed, or its cache saw a change.
func (r *ClusterMRTRKeyringReconciler) memberChanged(secret string, keyrings []string) {
	q := r.queue.Load()
	if q == nil {
		return
	}
	ctx := context.Background()
	for _, req := range r.clusterKeyrings(ctx, func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
		return (keyrings == nil || slices.Contains(keyrings, ck.Name)) &&
			slices.ContainsFunc(ck.Spec.Members, func(m mrtrv1alpha1.Member) bool { return m.KubeconfigSecret == secret })
	}) {
		addAt(*q, r.progressOf(ctx, req), []reconcile.Request{req})
	}
}

// memberSource hands the controller's queue to memberChanged.
func (r *ClusterMRTRKeyringReconciler) memberSource() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.queue.Store(&q)
		return nil
	})
}

// retainMembers stops the members no cluster keyring names any more.
func (r *ClusterMRTRKeyringReconciler) retainMembers(ctx context.Context) error {
	var list mrtrv1alpha1.ClusterMRTRKeyringList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list cluster keyrings for the members they name: %w", err)
	}
	named := map[string][]string{}
	for i := range list.Items {
		for _, m := range list.Items[i].Spec.Members {
			if m.KubeconfigSecret != "" {
				named[m.KubeconfigSecret] = append(named[m.KubeconfigSecret], list.Items[i].Name)
			}
		}
	}
	r.Members.Retain(named)
	r.views.mu.Lock()
	for secret := range r.views.m {
		if _, ok := named[secret]; !ok {
			delete(r.views.m, secret) // as the registry stops the member: nothing of it is kept
		}
	}
	r.views.mu.Unlock()
	return nil
}

// setupMembers completes the registry for this controller: its caches hold what the operator's
// hold, indexed as the hub's are, and each change there wakes the keyrings naming the member.
func (r *ClusterMRTRKeyringReconciler) setupMembers(mgr ctrl.Manager) error {
	m := r.Members
	if m.Reader == nil {
		m.Reader = mgr.GetAPIReader()
	}
	if m.Namespace == "" {
		m.Namespace = r.ClusterKeyrings
	}
	if m.Scheme == nil {
		m.Scheme = mgr.GetScheme()
	}
	if m.CacheOptions == nil {
		m.CacheOptions = MemberCacheOptions
	}
	if m.Scoped == nil {
		m.Scoped = memberScoped()
	}
	if m.Versions == nil {
		// The kubeconfig Secrets are in the operator's namespace, which the key sources' cache of
		// Secret metadata watches: a pass reads a kubeconfig's data only when it changed.
		versions, err := r.sourceCache(mgr)
		if err != nil {
			return err
		}
		m.Versions = versions
	}
	if m.Now == nil {
		m.Now = r.now().Now
	}
	m.Changed = r.memberChanged
	r.memberKinds.recheck = r.KindRecheck
	m.Prepare = r.memberKinds.index
	return mgr.Add(m)
}

// memberScoped are the kinds a member's cache holds only in the namespaces the keyrings select
// there: pods, PDBs and the workload kinds.
func memberScoped() []client.Object {
	out := []client.Object{&corev1.Pod{}, &policyv1.PodDisruptionBudget{}}
	for _, kind := range workload.Kinds() {
		if obj, err := workload.New(kind); err == nil {
			out = append(out, obj)
		}
	}
	return out
}

// memberKinds are the workload kinds each member serves, as servedKinds knows the hub's: asked
// when its cluster is made, and again every recheck while it runs, for a kind it did not serve
// (a CRD installed since). Their caches are indexed by the Secrets their pod templates reference
// (workload.Resolve reads through that index): before the cache starts for a kind served then,
// when it is found for one served later.
type memberKinds struct {
	recheck time.Duration
	m       sync.Map // cluster.Cluster -> *servedKinds
}

// index finds and indexes the kinds c serves, and keeps asking about the others while c runs
// (ctx); once c stops (its member rebuilt or no longer named) it is forgotten.
func (k *memberKinds) index(ctx context.Context, c cluster.Cluster) error {
	s := &servedKinds{mapper: c.GetRESTMapper(), interval: cmp.Or(k.recheck, DefaultKindRecheck), served: map[workload.Kind]bool{},
		index: func(ctx context.Context, obj client.Object) error {
			return c.GetFieldIndexer().IndexField(ctx, obj, workload.SecretRefIndex, workload.ReferencedSecrets)
		}}
	if err := s.add(ctx); err != nil {
		return err
	}
	k.m.Store(c, s)
	go func() {
		_ = s.Start(ctx) // returns once every kind is served, or ctx ends
		<-ctx.Done()
		k.m.Delete(c)
	}()
	return nil
}

// served is what index found for member cluster c, nothing when unknown.
func (k *memberKinds) served(c cluster.Cluster) func(workload.Kind) bool {
	v, _ := k.m.Load(c)
	s, _ := v.(*servedKinds)
	return func(kind workload.Kind) bool { return s != nil && s.Served(kind) }
}
