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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The members mode (-members): a hub envtest runs the manager, and one ClusterMRTRKeyring on it
// names M member clusters, each an envtest of its own (a real kube-apiserver and etcd) reached
// with a kubeconfig Secret, as a real hub reaches its members. Each member holds N namespaces
// selected by the keyring (-n counts them per member), each with its copy and a one-replica
// Deployment (and in Reload delivery its acknowledging Pod), played by a harness per member. The
// hub itself is not a member: it holds the lead Secret only.
//
// It measures what one rotation costs each member's API server and the hub's memory per member:
// the manager's requests to each member (client-go labels them by host) must grow linearly with
// the namespaces of a member and with the members, and the report says by how much.

// memberCluster is one member: its control plane, the harness's client of it, and what the
// harness saw there.
type memberCluster struct {
	name string
	cp   *controlPlane
	// host is its API server's host:port, as the manager's rest_client_requests_total labels
	// the requests it sent there.
	host string
	c    client.Client
	rec  *recorder
}

// kubeconfigSecret is the name of the hub's Secret that reaches the member.
func (m *memberCluster) kubeconfigSecret() string { return m.name + "-kubeconfig" }

// membersResult is one point of the grid: M members of N namespaces each. Counts and CPU are per
// rotation: the window over every rotation, divided by their number.
type membersResult struct {
	Members    int    `json:"members"`
	Namespaces int    `json:"namespaces_per_member"`
	Delivery   string `json:"delivery"`
	Rotations  int    `json:"rotations"`
	// Ready is from the keyring's creation to Ready over every member's namespaces.
	Ready time.Duration `json:"ready_ns"`
	// Rotate is each rotation's time, from its request to Stable with every namespace up to date.
	Rotate []time.Duration `json:"rotate_ns"`
	// MemberRequests are the manager's requests to every member, HubRequests to the hub.
	MemberRequests float64 `json:"member_requests_per_rotation"`
	HubRequests    float64 `json:"hub_requests_per_rotation"`
	// RequestsByMember are the manager's requests to each member, by member name; MemberRequestsBy
	// and HubRequestsBy the requests to all members and to the hub, by "method code".
	RequestsByMember map[string]float64 `json:"member_requests_by_member"`
	MemberRequestsBy map[string]float64 `json:"member_requests_by_method"`
	HubRequestsBy    map[string]float64 `json:"hub_requests_by_method"`
	// MemberWrites are the writes the members' API servers served, from every client (the
	// harness's acknowledgements too); WritesBy the same by "verb resource subresource".
	MemberWrites float64            `json:"member_writes_per_rotation"`
	WritesBy     map[string]float64 `json:"member_writes_by_verb"`
	// HubWritesBy are the writes the hub's API server served, by "verb resource subresource".
	HubWritesBy map[string]float64 `json:"hub_writes_by_verb"`
	// Reconciles are the manager's reconciles per rotation (the cluster keyring's passes).
	Reconciles float64 `json:"reconciles_per_rotation"`
	// Settled is how long after Ready the manager took to stop writing (its events of the
	// namespaces that joined, queued at Ready, among them): the rotations start after it.
	Settled time.Duration `json:"settled_ns"`
	CPU     time.Duration `json:"cpu_ns_per_rotation"`
	// CPUBy is every process's CPU over the whole window (all rotations), by command name.
	CPUBy map[string]time.Duration `json:"cpu_by_process_ns"`
	// Reactions are, per rotation, the time from the last acknowledgement (or rollout) of the
	// rotation's first keyring in any member to the manager's next write of a copy in any member
	// (see reactionTime); ReactionsMissing counts rotations where it could not be paired.
	Reactions        []time.Duration `json:"reaction_ns"`
	ReactionsMissing int             `json:"reactions_missing"`
	// The hub's heap in use after a forced collection, before the keyring was created (BaseHeap:
	// no member reached) and once every rotation is done; RSS is VmRSS then.
	BaseHeap float64 `json:"base_heap_bytes"`
	Heap     float64 `json:"heap_bytes"`
	RSS      float64 `json:"rss_bytes"`
	// SteadyByMember are the manager's requests to each member over the steady window after the
	// rotations: its health checks and watch renewals.
	SteadyByMember map[string]float64 `json:"steady_requests_by_member"`
}

// totalNamespaces is how many namespaces the keyring selects, over every member.
func (r membersResult) totalNamespaces() int { return r.Members * r.Namespaces }

// perMember and perNamespace are the manager's requests to the members per rotation, per member
// and per selected namespace.
func (r membersResult) perMember() float64 { return r.MemberRequests / float64(r.Members) }
func (r membersResult) perNamespace() float64 {
	return r.MemberRequests / float64(r.totalNamespaces())
}

// heapPerMember is what the keyring added to the hub's heap, per member: the member's cluster
// (clients, informers, caches) and its namespaces' objects.
func (r membersResult) heapPerMember() float64 { return (r.Heap - r.BaseHeap) / float64(r.Members) }

// meanRotate is the mean time of one rotation.
func (r membersResult) meanRotate() time.Duration {
	if len(r.Rotate) == 0 {
		return 0
	}
	var t time.Duration
	for _, d := range r.Rotate {
		t += d
	}
	return t / time.Duration(len(r.Rotate))
}

// growth is how the cost grew from a smaller point of the grid: requests added per namespace
// added (from the point with as many members and the next fewer namespaces), and requests and
// heap added per member added (from the point with as many namespaces per member and the next
// fewer members). A constant growth across the grid is linear cost.
type growth struct {
	perNamespace          float64
	perMember, heapMember float64
	hasNamespace, hasMem  bool
}

func growthOf(rs []membersResult, i int) growth {
	r := rs[i]
	var g growth
	var byNS, byM *membersResult
	for j := range rs {
		p := &rs[j]
		if p.Members == r.Members && p.Namespaces < r.Namespaces && (byNS == nil || p.Namespaces > byNS.Namespaces) {
			byNS = p
		}
		if p.Namespaces == r.Namespaces && p.Members < r.Members && (byM == nil || p.Members > byM.Members) {
			byM = p
		}
	}
	if byNS != nil {
		g.hasNamespace = true
		g.perNamespace = (r.MemberRequests - byNS.MemberRequests) / float64(r.totalNamespaces()-byNS.totalNamespaces())
	}
	if byM != nil {
		g.hasMem = true
		added := float64(r.Members - byM.Members)
		g.perMember = (r.MemberRequests - byM.MemberRequests) / added
		g.heapMember = (r.Heap - byM.Heap) / added
	}
	return g
}

// copyHistory is what the harness saw of one copy: each keyring it held, and when its pods
// completed each (acknowledged it, or in Restart delivery had it rolled out), by fingerprint.
type copyHistory struct {
	versions  []secretVersion
	completed map[string]time.Time
}

// reactionTime is the hub's reaction across every copy of every member: from the last completion
// of the rotation's first keyring (the first seen after since with two keys, the same keyring in
// every copy) to the first copy holding the next one. Only then may the manager advance, so it is
// what a rotation waits on the manager for each phase. False if any copy lacks either end.
func reactionTime(copies []copyHistory, since time.Time) (time.Duration, bool) {
	var fp string
	var lastDone, firstNext time.Time
	for _, c := range copies {
		j := -1
		for k, v := range c.versions {
			if !v.at.Before(since) && len(v.ids) == 2 {
				j = k
				break
			}
		}
		if j < 0 || j+1 == len(c.versions) {
			return 0, false
		}
		if v := c.versions[j]; fp == "" {
			fp = v.fingerprint
		} else if v.fingerprint != fp {
			return 0, false
		}
		done, ok := c.completed[fp]
		if !ok {
			return 0, false
		}
		if done.After(lastDone) {
			lastDone = done
		}
		if next := c.versions[j+1].at; firstNext.IsZero() || next.Before(firstNext) {
			firstNext = next
		}
	}
	if fp == "" {
		return 0, false
	}
	return firstNext.Sub(lastDone), true
}

// measureMembers runs one point of the grid on fresh control planes: a hub and m members.
func measureMembers(ctx context.Context, cfg config, bin string, m, n int) (res membersResult, err error) {
	res = membersResult{Members: m, Namespaces: n, Delivery: string(cfg.delivery), Rotations: cfg.rotations}
	dir, err := os.MkdirTemp("", fmt.Sprintf("benchscale-members-m%d-n%d-", m, n))
	if err != nil {
		return res, err
	}
	progress("%d member(s) of %d namespaces each, delivery %s; starting %d envtests (files in %s)", m, n, cfg.delivery, m+1, dir)
	hub, err := startControlPlane(ctx, dir)
	if err != nil {
		return res, fmt.Errorf("the hub: %w", err)
	}
	defer hub.stop()
	ms, err := startMembers(ctx, m)
	defer func() {
		for _, mc := range ms {
			if mc != nil {
				mc.cp.stop()
			}
		}
	}()
	if err != nil {
		return res, err
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		return res, err
	}
	hubClient, err := client.New(hub.config, client.Options{Scheme: scheme})
	if err != nil {
		return res, err
	}
	if err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}); err != nil {
		return res, err
	}
	for _, mc := range ms {
		kubeconfig, err := mc.cp.env.Kubeconfig("benchscale-hub")
		if err != nil {
			return res, fmt.Errorf("member %s: %w", mc.name, err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: mc.kubeconfigSecret()},
			Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfig}}
		if err := hubClient.Create(ctx, s); err != nil {
			return res, fmt.Errorf("the kubeconfig Secret of member %s: %w", mc.name, err)
		}
	}

	// The manager serves pprof so that a heap profile request can force a collection before its
	// heap is read: what it keeps, not what it has not yet collected.
	args := append([]string{"--cluster-keyrings", "--cluster-resource-namespace=" + clusterNamespace}, cfg.managerArgs...)
	mgr, err := startManager(ctx, bin, hub.kubeconfig, dir, args, cfg.managerEnv, true)
	if err != nil {
		return res, err
	}
	defer mgr.kill()
	hctx, stopHarness := context.WithCancel(ctx)
	defer stopHarness()
	for _, mc := range ms {
		if err := startMemberHarness(hctx, cfg, mc, scheme); err != nil {
			return res, fmt.Errorf("member %s: %w", mc.name, err)
		}
		if err := createTenants(ctx, mc.c, cfg, n); err != nil {
			return res, fmt.Errorf("member %s: %w", mc.name, err)
		}
	}
	if res.BaseHeap, err = liveHeap(ctx, mgr); err != nil {
		return res, err
	}

	b := &bench{cfg: cfg, n: n, mgr: mgr, c: hubClient}
	total := m * n
	t0 := time.Now()
	if err := hubClient.Create(ctx, newMembersKeyring(cfg, ms)); err != nil {
		return res, fmt.Errorf("create the ClusterMRTRKeyring: %w", err)
	}
	ready := func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
		return meta.IsStatusConditionTrue(ck.Status.Conditions, mrtrv1alpha1.ConditionReady) &&
			meta.IsStatusConditionFalse(ck.Status.Conditions, mrtrv1alpha1.ConditionReconciling) && int(ck.Status.Namespaces.UpToDate) == total
	}
	if res.Ready, err = b.waitCluster(ctx, t0, cfg.readyTimeout, "Ready over every member's namespaces", ready); err != nil {
		return res, err
	}
	progress("cluster keyring Ready over %d members x %d namespaces after %s", m, n, fmtDur(res.Ready))
	if res.Settled, err = waitWritesSettled(ctx, mgr, cfg.readyTimeout); err != nil {
		return res, err
	}
	if err := b.measureMemberRotations(ctx, ms, hub, &res); err != nil {
		return res, err
	}
	if err := measureMembersSteady(ctx, cfg, mgr, ms, &res); err != nil {
		return res, err
	}
	return res, mgr.exited()
}

// startMembers starts m member control planes at once (each start is mostly waiting), named
// member-1 to member-m. The members returned are those started, for the caller to stop, also on
// error.
func startMembers(ctx context.Context, m int) ([]*memberCluster, error) {
	ms := make([]*memberCluster, m)
	errs := make([]error, m)
	var wg sync.WaitGroup
	for i := range m {
		wg.Go(func() {
			// No kubeconfig file: the hub reaches a member with the Secret only.
			env, err := testenv.Start(ctx, testenv.Options{})
			if err != nil {
				errs[i] = fmt.Errorf("member-%d: %w", i+1, err)
				return
			}
			cp := &controlPlane{env: env, config: harnessConfig(env)}
			ms[i] = &memberCluster{name: fmt.Sprintf("member-%d", i+1), cp: cp, host: hostOf(env.Config.Host), rec: newRecorder()}
		})
	}
	wg.Wait()
	return ms, errors.Join(errs...)
}

// hostOf is the host:port of an API server address, with or without a scheme, as client-go labels
// the requests it sends there.
func hostOf(address string) string {
	if u, err := url.Parse(address); err == nil && u.Host != "" {
		return u.Host
	}
	host, _, _ := strings.Cut(address, "/")
	return host
}

// startMemberHarness starts, against member mc, the harness's client and cache and the player of
// the Deployment controller and the pods, until ctx ends; what it sees goes to mc.rec.
func startMemberHarness(ctx context.Context, cfg config, mc *memberCluster, scheme *runtime.Scheme) error {
	c, err := client.New(mc.cp.config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ca, err := cache.New(mc.cp.config, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	reload := cfg.delivery == mrtrv1alpha1.DeliveryReload
	pl := &testworld.Player{Client: c, Cache: ca, Acknowledge: reload,
		OnKeyring: func(key types.NamespacedName, kr *keyring.Keyring, at time.Time) {
			mc.rec.secretSeen(key, secretVersion{at: at, fingerprint: kr.Fingerprint(), ids: kr.IDs()})
		},
		// Every namespace's one Deployment consumes the copy: its rollout completes the copy's.
		OnRolledOut: func(key types.NamespacedName, fp string, at time.Time) {
			if !reload {
				mc.rec.rolloutCompleted(types.NamespacedName{Namespace: key.Namespace, Name: clusterSecretName}, fp, at)
			}
		},
		OnAcknowledged: mc.rec.rolloutCompleted,
	}
	if err := pl.Start(ctx); err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return errors.New("the harness's cache did not sync")
	}
	mc.c = c
	return nil
}

// newMembersKeyring is the cluster keyring of the cluster mode, naming every member (and not the
// hub, which then holds no copy).
func newMembersKeyring(cfg config, ms []*memberCluster) *unstructured.Unstructured {
	u := newClusterKeyring(cfg.delivery, cfg.nextKey)
	members := make([]any, 0, len(ms))
	for _, mc := range ms {
		members = append(members, map[string]any{"name": mc.name, "kubeconfigSecret": mc.kubeconfigSecret()})
	}
	if err := unstructured.SetNestedSlice(u.Object, members, "spec", "members"); err != nil {
		panic(err) // unreachable: spec is a map
	}
	return u
}

// measureMemberRotations requests cfg.rotations rotations, one after the other, and counts what the
// manager did over all of them: its requests by host, its CPU, and the writes each member served.
func (b *bench) measureMemberRotations(ctx context.Context, ms []*memberCluster, hub *controlPlane, res *membersResult) error {
	before, err := scrape(ctx, b.mgr.metricsURL)
	if err != nil {
		return err
	}
	cpuBefore, err := processCPU(b.mgr.PID())
	if err != nil {
		return err
	}
	allBefore, err := cpuByProcess()
	if err != nil {
		return err
	}
	servedBefore, err := membersServed(ctx, ms)
	if err != nil {
		return err
	}
	hubBefore, err := apiServerMetrics(ctx, hub.config)
	if err != nil {
		return err
	}
	total := res.totalNamespaces()
	var starts []time.Time
	for k := 1; k <= b.cfg.rotations; k++ {
		request := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RotateAnnotation,
			fmt.Sprintf("benchscale-%d", time.Now().UnixNano()))
		t := time.Now()
		starts = append(starts, t)
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: clusterKeyringName}}
		if err := b.c.Patch(ctx, ck, client.RawPatch(types.MergePatchType, []byte(request))); err != nil {
			return fmt.Errorf("request rotation %d: %w", k, err)
		}
		what := fmt.Sprintf("rotated (rotationsCompleted=%d, Stable, every namespace up to date)", k)
		d, err := b.waitCluster(ctx, t, b.cfg.rotateTimeout, what,
			func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
				return int(ck.Status.RotationsCompleted) >= k && ck.Status.Phase == mrtrv1alpha1.PhaseStable &&
					int(ck.Status.Namespaces.UpToDate) == total
			})
		if err != nil {
			return err
		}
		res.Rotate = append(res.Rotate, d)
		progress("rotation %d over %d members x %d namespaces done after %s", k, res.Members, res.Namespaces, fmtDur(d))
	}
	after, err := scrape(ctx, b.mgr.metricsURL)
	if err != nil {
		return err
	}
	cpuAfter, err := processCPU(b.mgr.PID())
	if err != nil {
		return err
	}
	allAfter, err := cpuByProcess()
	if err != nil {
		return err
	}
	servedAfter, err := membersServed(ctx, ms)
	if err != nil {
		return err
	}
	hubAfter, err := apiServerMetrics(ctx, hub.config)
	if err != nil {
		return err
	}
	rotations := float64(b.cfg.rotations)
	res.HubWritesBy = map[string]float64{}
	for k, v := range diff(hubAfter.sumBy(metricServed, servedLabels...), hubBefore.sumBy(metricServed, servedLabels...)) {
		if mutating(strings.Fields(k)[0]) {
			res.HubWritesBy[strings.TrimSpace(k)] = v / rotations
		}
	}
	byHost := diff(after.sumBy(metricRequests, "host"), before.sumBy(metricRequests, "host"))
	res.RequestsByMember = map[string]float64{}
	for _, mc := range ms {
		res.RequestsByMember[mc.name] = byHost[mc.host] / rotations
		res.MemberRequests += byHost[mc.host] / rotations
	}
	hubHost := hostOf(hub.config.Host)
	res.HubRequests = byHost[hubHost] / rotations
	isMember := map[string]bool{}
	for _, mc := range ms {
		isMember[mc.host] = true
	}
	res.MemberRequestsBy, res.HubRequestsBy = map[string]float64{}, map[string]float64{}
	for k, v := range diff(after.sumBy(metricRequests, "host", "method", "code"), before.sumBy(metricRequests, "host", "method", "code")) {
		host, methodCode, _ := strings.Cut(k, " ")
		switch {
		case isMember[host]:
			res.MemberRequestsBy[methodCode] += v / rotations
		case host == hubHost:
			res.HubRequestsBy[methodCode] += v / rotations
		}
	}
	res.Reconciles = (after.sum(metricReconciles) - before.sum(metricReconciles)) / rotations
	res.CPU = (cpuAfter - cpuBefore) / time.Duration(b.cfg.rotations)
	res.CPUBy = map[string]time.Duration{}
	for name, d := range allAfter {
		res.CPUBy[name] = d - allBefore[name]
	}
	res.WritesBy = map[string]float64{}
	for k, v := range diff(servedAfter, servedBefore) {
		if mutating(strings.Fields(k)[0]) {
			res.MemberWrites += v / rotations
			res.WritesBy[strings.TrimSpace(k)] = v / rotations
		}
	}
	copies := memberCopies(ms, res.Namespaces)
	for _, t := range starts {
		if d, ok := reactionTime(copies, t); ok {
			res.Reactions = append(res.Reactions, d)
		} else {
			res.ReactionsMissing++
		}
	}
	return nil
}

// membersServed is what every member's API server served so far, summed, by "verb resource
// subresource".
func membersServed(ctx context.Context, ms []*memberCluster) (map[string]float64, error) {
	out := map[string]float64{}
	for _, mc := range ms {
		served, err := apiServerMetrics(ctx, mc.cp.config)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", mc.name, err)
		}
		for k, v := range served.sumBy(metricServed, servedLabels...) {
			out[k] += v
		}
	}
	return out, nil
}

// memberCopies is what the harness saw of each copy, in every member's n namespaces.
func memberCopies(ms []*memberCluster, n int) []copyHistory {
	out := make([]copyHistory, 0, n*len(ms))
	for _, mc := range ms {
		secrets, completed := mc.rec.snapshot()
		for i := range n {
			key := types.NamespacedName{Namespace: tenantNamespace(i), Name: clusterSecretName}
			out = append(out, copyHistory{versions: secrets[key], completed: completed[key]})
		}
	}
	return out
}

// measureMembersSteady counts the manager's requests to each member once nothing changes (its
// health checks of the members), then reads its memory.
func measureMembersSteady(ctx context.Context, cfg config, mgr *manager, ms []*memberCluster, res *membersResult) error {
	before, err := scrape(ctx, mgr.metricsURL)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.steadyWindow):
	}
	after, err := scrape(ctx, mgr.metricsURL)
	if err != nil {
		return err
	}
	byHost := diff(after.sumBy(metricRequests, "host"), before.sumBy(metricRequests, "host"))
	res.SteadyByMember = map[string]float64{}
	for _, mc := range ms {
		res.SteadyByMember[mc.name] = byHost[mc.host]
	}
	if res.Heap, err = liveHeap(ctx, mgr); err != nil {
		return err
	}
	if dir := cfg.profileDir; dir != "" {
		profileManagerHeap(ctx, mgr, filepath.Join(dir, fmt.Sprintf("manager-heap-m%d-n%d.pprof", res.Members, res.Namespaces)))
	}
	res.RSS, err = processRSS(mgr.PID())
	return err
}

// waitWritesSettled waits until the manager has sent no write (a request other than a GET) for
// a second, and returns how long that took: the rotation's window must hold the rotation's
// writes only, not the tail of what Ready queued (an event per namespace joined).
func waitWritesSettled(ctx context.Context, mgr *manager, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	writes := func() (float64, error) {
		m, err := scrape(ctx, mgr.metricsURL)
		if err != nil {
			return 0, err
		}
		var n float64
		for k, v := range m.sumBy(metricRequests, "method") {
			if k != http.MethodGet {
				n += v
			}
		}
		return n, nil
	}
	last, err := writes()
	if err != nil {
		return 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := writes()
		if err != nil {
			return 0, err
		}
		if now == last {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return 0, fmt.Errorf("the manager still writes %v after Ready", timeout)
		}
		last = now
	}
}

// liveHeap is the manager's heap in use just after a collection, which a heap profile's gc=1
// forces: what it keeps.
func liveHeap(ctx context.Context, mgr *manager) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mgr.pprofURL+"/heap?gc=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("force a collection in the manager: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	m, err := scrape(ctx, mgr.metricsURL)
	if err != nil {
		return 0, err
	}
	return m.sum(metricHeapInuse), nil
}

// runMembers measures every point of the grid, members outermost, and prints a table with the
// growth per namespace and per member added.
func runMembers(ctx context.Context, cfg config, bin string) error {
	var results []membersResult
	for _, m := range cfg.members {
		for _, n := range cfg.sizes {
			r, err := measureMembers(ctx, cfg, bin, m, n)
			if err != nil {
				if len(results) > 0 {
					fmt.Print(membersTable(results))
				}
				return fmt.Errorf("%d member(s) of %d namespaces each: %w", m, n, err)
			}
			results = append(results, r)
			fmt.Print(r.block())
			line, _ := json.Marshal(r)
			fmt.Println(string(line))
		}
	}
	fmt.Println()
	fmt.Print(membersTable(results))
	return nil
}

// block is the readable summary of one point of the grid.
func (r membersResult) block() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("")
	p("%d member(s) x %d namespaces (delivery %s), %d rotation(s)", r.Members, r.Namespaces, r.Delivery, r.Rotations)
	p("  Ready over every member       %s", fmtDur(r.Ready))
	rotations := make([]string, len(r.Rotate))
	for i, d := range r.Rotate {
		rotations[i] = fmtDur(d)
	}
	p("  rotations                     %s", strings.Join(rotations, ", "))
	p("  manager requests per rotation %.0f to the members (%.1f per member, %.2f per namespace), %.0f to the hub",
		r.MemberRequests, r.perMember(), r.perNamespace(), r.HubRequests)
	p("    by member:                  %s", formatCounts(r.RequestsByMember))
	p("    to the members, by method:  %s", formatCounts(r.MemberRequestsBy))
	p("    to the hub, by method:      %s; %.1f reconciles per rotation", formatCounts(r.HubRequestsBy), r.Reconciles)
	p("  settled after Ready           %s (the manager's last write before the rotations)", fmtDur(r.Settled))
	p("  member API writes / rotation  %.0f, every client (%s)", r.MemberWrites, formatCounts(r.WritesBy))
	p("  hub API writes / rotation     %s", formatCounts(r.HubWritesBy))
	p("  manager CPU per rotation      %s; CPU of every process over the %d rotation(s): %s", fmtDur(r.CPU), r.Rotations, formatCPU(r.CPUBy))
	reactions := make([]string, len(r.Reactions))
	for i, d := range r.Reactions {
		reactions[i] = fmtDur(d)
	}
	p("  last %s in any member -> next copy written: %s (%d not measurable)",
		completionLabel(mrtrv1alpha1.Delivery(r.Delivery)), strings.Join(reactions, ", "), r.ReactionsMissing)
	p("  steady state (requests per member): %s", formatCounts(r.SteadyByMember))
	p("  hub heap in use (after a GC)  %.1f MB, %.1f MB before the keyring: %.2f MB per member; RSS %.1f MB",
		r.Heap/1e6, r.BaseHeap/1e6, r.heapPerMember()/1e6, r.RSS/1e6)
	return b.String()
}

// membersTable compares the points of the grid, one row each, with the growth from the smaller
// points (growthOf).
func membersTable(rs []membersResult) string {
	var b strings.Builder
	b.WriteString("| members | namespaces per member | Ready | rotation (mean) | requests to members per rotation | per member | " +
		"per namespace | added per added namespace | added per added member | to the hub | member API writes | " +
		"manager CPU per rotation | reaction (max) | hub heap / RSS | heap per member (vs. no keyring) | heap added per added member |\n")
	b.WriteString("|" + strings.Repeat("---|", 16) + "\n")
	for i, r := range rs {
		g := growthOf(rs, i)
		perNS, perM, heapM := "-", "-", "-"
		if g.hasNamespace {
			perNS = fmt.Sprintf("%.2f", g.perNamespace)
		}
		if g.hasMem {
			perM = fmt.Sprintf("%.1f", g.perMember)
			heapM = fmt.Sprintf("%.2f MB", g.heapMember/1e6)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %.0f | %.1f | %.2f | %s | %s | %.0f | %.0f | %s | %s | %.1f MB / %.1f MB | %.2f MB | %s |\n",
			r.Members, r.Namespaces, fmtDur(r.Ready), fmtDur(r.meanRotate()), r.MemberRequests, r.perMember(), r.perNamespace(),
			perNS, perM, r.HubRequests, r.MemberWrites, fmtDur(r.CPU), fmtDur(percentile(r.Reactions, 100)),
			r.Heap/1e6, r.RSS/1e6, r.heapPerMember()/1e6, heapM)
	}
	return b.String()
}
