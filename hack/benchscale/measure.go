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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// bench is one size's run: the manager, the harness's client and cache, and what it records.
type bench struct {
	cfg   config
	n     int
	mgr   *manager
	c     client.Client
	cache cache.Cache
	// apiserver is the admin's config, for the API server's own metrics and profile.
	apiserver *rest.Config
	rec       *recorder
	ts        []target
	wait      waiter
}

// measure runs the whole benchmark for n keyrings on a fresh control plane and manager, both gone
// when it returns (also on error or interrupt).
func measure(ctx context.Context, cfg config, bin string, n int) (res result, err error) {
	res = result{n: n, namespaces: namespacesFor(n), delivery: cfg.delivery, nextKey: cfg.nextKey,
		managerEnv: cfg.managerEnv, steadyWindow: cfg.steadyWindow}
	dir, err := os.MkdirTemp("", fmt.Sprintf("benchscale-n%d-", n))
	if err != nil {
		return res, err
	}
	progress("N=%d: %d namespace(s), delivery %s, next key %s; starting envtest (files in %s)",
		n, res.namespaces, cfg.delivery, cfg.nextKey, dir)
	cp, err := startControlPlane(ctx, dir)
	if err != nil {
		return res, err
	}
	defer cp.stop()
	mgr, err := startManager(ctx, bin, cp.kubeconfig, dir, cfg.managerArgs, cfg.managerEnv, cfg.profileDir != "")
	if err != nil {
		return res, err
	}
	defer mgr.kill()
	res.logPath = mgr.LogPath()

	hctx, stopHarness := context.WithCancel(ctx)
	defer stopHarness()
	b, err := startHarness(hctx, cfg, cp, mgr, n)
	if err != nil {
		return res, err
	}
	namespaces, ts := targets(n)
	b.ts = ts
	if err := b.createWorkloads(ctx, namespaces); err != nil {
		return res, err
	}
	if err := b.measureReady(ctx, &res); err != nil {
		return res, err
	}
	if err := b.measureRotation(ctx, &res); err != nil {
		return res, err
	}
	if err := b.measureSteady(ctx, &res); err != nil {
		return res, err
	}
	return res, mgr.exited()
}

// startHarness starts the harness's cache (Deployments, Secrets and keyrings, watched) and the
// player of the Deployment controller and the pods, until ctx ends.
func startHarness(ctx context.Context, cfg config, cp *controlPlane, mgr *manager, n int) (*bench, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mrtrv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cp.config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ca, err := cache.New(cp.config, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	rec := newRecorder()
	if err := startPlayer(ctx, c, ca, rec, cfg.delivery == mrtrv1alpha1.DeliveryReload); err != nil {
		return nil, err
	}
	// The keyrings are watched too, so that waiting on them costs the API server nothing.
	if _, err := ca.GetInformer(ctx, &mrtrv1alpha1.MRTRKeyring{}); err != nil {
		return nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's cache did not sync")
	}
	return &bench{cfg: cfg, n: n, mgr: mgr, c: c, cache: ca, apiserver: cp.config, rec: rec,
		wait: waiter{cache: ca, mgr: mgr, n: n}}, nil
}

// measureReady creates the keyrings and measures ready_s: from the first keyring's creation to
// every keyring Ready. It returns once none is Reconciling either.
func (b *bench) measureReady(ctx context.Context, res *result) (err error) {
	progress("N=%d: creating %d keyrings", b.n, b.n)
	t0 := time.Now()
	if err := parallel(ctx, "keyrings created", b.n, b.cfg.workers, func(ctx context.Context, i int) error {
		return b.c.Create(ctx, newKeyring(b.ts[i], b.cfg.delivery, b.cfg.nextKey))
	}); err != nil {
		return fmt.Errorf("create the keyrings: %w", err)
	}
	res.created = time.Since(t0)
	if err := checkSpec(ctx, b.c, b.ts[0]); err != nil {
		return err
	}
	if res.ready, err = b.wait.wait(ctx, t0, b.cfg.readyTimeout, "Ready", isReady); err != nil {
		return err
	}
	progress("N=%d: all %d keyrings Ready after %s", b.n, b.n, fmtDur(res.ready))
	// A keyring may still be rolling its targets out to the first keyring when it is Ready; the
	// rotation starts once none is, so that its window holds the rotation only.
	res.settled, err = b.wait.wait(ctx, t0, b.cfg.readyTimeout, "idle (Reconciling=False)", isIdle)
	return err
}

// measureRotation requests a rotation of every keyring at once and measures rotate_all_s (from the
// first request to every keyring rotated and Stable), the manager's requests, reconciles and CPU
// over that window, and the write latencies.
func (b *bench) measureRotation(ctx context.Context, res *result) (err error) {
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
	busyBefore, idleBefore, err := machineCPU()
	if err != nil {
		return err
	}
	servedBefore, err := apiServerMetrics(ctx, b.apiserver)
	if err != nil {
		return err
	}
	progress("N=%d: requesting a rotation of all %d keyrings", b.n, b.n)
	request := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RotateAnnotation,
		fmt.Sprintf("benchscale-%d", time.Now().UnixNano()))
	t1 := time.Now()
	if err := parallel(ctx, "rotations requested", b.n, b.cfg.workers, func(ctx context.Context, i int) error {
		kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: b.ts[i].namespace, Name: b.ts[i].name}}
		return b.c.Patch(ctx, kr, client.RawPatch(types.MergePatchType, []byte(request)))
	}); err != nil {
		return fmt.Errorf("request the rotations: %w", err)
	}
	res.requested = time.Since(t1)
	if dir := b.cfg.profileDir; dir != "" {
		defer profileCPU(ctx, b.apiserver, b.mgr, 30*time.Second, dir, b.n)()
		defer saveObjects(ctx, b.apiserver, b.ts[0], dir)
	}
	if res.rotateAll, err = b.wait.wait(ctx, t1, b.cfg.rotateTimeout, "rotated (rotationsCompleted=1, Stable)", isRotated); err != nil {
		return err
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
	busyAfter, idleAfter, err := machineCPU()
	if err != nil {
		return err
	}
	servedAfter, err := apiServerMetrics(ctx, b.apiserver)
	if err != nil {
		return err
	}
	progress("N=%d: all %d keyrings rotated after %s", b.n, b.n, fmtDur(res.rotateAll))
	res.rotateRequests = after.sum(metricRequests) - before.sum(metricRequests)
	res.rotateReconciles = after.sum(metricReconciles) - before.sum(metricReconciles)
	res.requestsBy = diff(after.sumBy(metricRequests, "method", "code"), before.sumBy(metricRequests, "method", "code"))
	res.rotateCPU = cpuAfter - cpuBefore
	for k, v := range diff(servedAfter.sumBy(metricServed, servedLabels...), servedBefore.sumBy(metricServed, servedLabels...)) {
		if mutating(strings.Fields(k)[0]) {
			res.served += v
			if res.writesBy == nil {
				res.writesBy = map[string]float64{}
			}
			res.writesBy[strings.TrimSpace(k)] = v
		}
	}
	res.cpuBy = map[string]time.Duration{}
	for name, d := range allAfter {
		res.cpuBy[name] = d - allBefore[name]
	}
	res.machineBusy, res.machineIdle = busyAfter-busyBefore, idleAfter-idleBefore
	res.queueWait, res.reconcileTime = after.mean(before, metricQueueWait), after.mean(before, metricReconcileTime)

	secrets, completed := b.rec.snapshot()
	res.writeLatencies, res.writeMissing = writeLatencies(b.ts, secrets, completed, t1)
	first := b.ts[0].key()
	res.trace = timeline(b.ts[0], secrets[first], completed[first], t1, completionLabel(b.cfg.delivery))
	return nil
}

// quietFor is how long the manager makes no request before the steady state is counted: the
// events of the last keyrings' completion are written a few milliseconds after they read Stable,
// and are the rotation's, not steady traffic. quietWithin bounds the wait for it.
const (
	quietFor    = time.Second
	quietWithin = 10 * time.Second
)

// measureSteady counts what the manager does once nothing changes (from when it has made no
// request for quietFor), then reads its memory.
func (b *bench) measureSteady(ctx context.Context, res *result) (err error) {
	from, err := scrape(ctx, b.mgr.metricsURL)
	if err != nil {
		return err
	}
	for quiet, start := time.Duration(0), time.Now(); quiet < quietFor && time.Since(start) < quietWithin; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
		now, err := scrape(ctx, b.mgr.metricsURL)
		if err != nil {
			return err
		}
		if quiet += pollInterval; now.sum(metricRequests) != from.sum(metricRequests) {
			quiet = 0
		}
		from = now
	}
	progress("N=%d: counting steady-state traffic for %v", b.n, b.cfg.steadyWindow)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.steadyWindow):
	}
	steady, err := scrape(ctx, b.mgr.metricsURL)
	if err != nil {
		return err
	}
	res.steadyRequests = steady.sum(metricRequests) - from.sum(metricRequests)
	res.steadyBy = diff(steady.sumBy(metricRequests, "method", "code"), from.sumBy(metricRequests, "method", "code"))
	res.steadyReconciles = steady.sum(metricReconciles) - from.sum(metricReconciles)
	res.heapBytes = steady.sum(metricHeapInuse)
	res.rssBytes, err = processRSS(b.mgr.PID())
	if err != nil {
		return err
	}
	res.rssFileBytes, err = processStatus(b.mgr.PID(), "RssFile")
	if dir := b.cfg.profileDir; dir != "" {
		profileManagerHeap(ctx, b.mgr, filepath.Join(dir, fmt.Sprintf("manager-heap-n%d.pprof", b.n)))
	}
	return err
}

// createWorkloads creates the namespaces and every target's Deployment (and Pod, in Reload
// delivery), and waits until the harness has rolled every Deployment out, so that the keyrings
// created next find their targets healthy and the ready time is the operator's alone.
func (b *bench) createWorkloads(ctx context.Context, namespaces []string) error {
	c, ca, cfg, ts := b.c, b.cache, b.cfg, b.ts
	for _, ns := range namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	progress("N=%d: creating %d Deployments", len(ts), len(ts))
	if err := parallel(ctx, "Deployments created", len(ts), cfg.workers, func(ctx context.Context, i int) error {
		d, err := newDeployment(ts[i])
		if err != nil {
			return err
		}
		return c.Create(ctx, d)
	}); err != nil {
		return fmt.Errorf("create the Deployments: %w", err)
	}
	if cfg.delivery == mrtrv1alpha1.DeliveryReload {
		progress("N=%d: creating %d Pods", len(ts), len(ts))
		if err := parallel(ctx, "Pods created", len(ts), cfg.workers, func(ctx context.Context, i int) error {
			return c.Create(ctx, newPod(ts[i]))
		}); err != nil {
			return fmt.Errorf("create the Pods: %w", err)
		}
	}
	// The cache lags the API server, never leads it: a rollout it shows done is done.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var list appsv1.DeploymentList
		if err := ca.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		done := 0
		for i := range list.Items {
			if d := &list.Items[i]; d.Status.ObservedGeneration >= d.Generation {
				done++
			}
		}
		if done == len(ts) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the harness rolled out only %d of %d Deployments within 2m", done, len(ts))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// checkSpec makes sure the API server kept the durations benchscale relies on (a TTL wait of 1s),
// rather than defaulting them.
func checkSpec(ctx context.Context, c client.Client, t target) error {
	var kr mrtrv1alpha1.MRTRKeyring
	if err := c.Get(ctx, t.key(), &kr); err != nil {
		return err
	}
	s := kr.Spec
	if got := s.TokenTTL.Duration + s.ClockSkew.Duration + s.TerminationGracePeriod.Duration; got != time.Second {
		return fmt.Errorf("keyring %s has a TTL wait of %v (tokenTTL %v, clockSkew %v, terminationGracePeriod %v), not 1s",
			t.key(), got, s.TokenTTL.Duration, s.ClockSkew.Duration, s.TerminationGracePeriod.Duration)
	}
	return nil
}

// diff subtracts before from after, per key.
func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
