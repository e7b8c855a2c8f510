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
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// The cluster keyring mode (-cluster): one ClusterMRTRKeyring over N namespaces, each holding its
// copy of the Secret and a one-replica Deployment (and in Reload delivery its Pod) that consumes
// it; N counts namespaces. It measures what one rotation of the keyring costs the manager as the
// namespaces grow: its API requests per rotation must grow linearly with N (each namespace costs
// its copy's writes and its pods' reads), and the report says by how much per namespace.
const (
	clusterKeyringName = "bench"
	clusterSecretName  = "payments"
	// clusterNamespace holds the lead Secret (--cluster-resource-namespace).
	clusterNamespace = "mrtr-system"
	fleetLabel       = "mrtr.dev/bench-fleet"
)

// clusterResult is one size of the cluster keyring mode.
type clusterResult struct {
	Namespaces  int           `json:"namespaces"`
	Delivery    string        `json:"delivery"`
	Ready       time.Duration `json:"ready_ns"`
	Rotate      time.Duration `json:"rotate_ns"`
	Requests    float64       `json:"rotate_requests"`
	Writes      float64       `json:"rotate_writes"`
	Reconciles  float64       `json:"rotate_reconciles"`
	CPU         time.Duration `json:"rotate_cpu_ns"`
	PerNS       float64       `json:"rotate_requests_per_namespace"`
	RequestsBy  map[string]float64
	ServedWrite map[string]float64
}

// measureCluster runs the cluster keyring mode for n namespaces on a fresh control plane.
func measureCluster(ctx context.Context, cfg config, bin string, n int) (res clusterResult, err error) {
	res = clusterResult{Namespaces: n, Delivery: string(cfg.delivery)}
	dir, err := os.MkdirTemp("", fmt.Sprintf("benchscale-cluster-n%d-", n))
	if err != nil {
		return res, err
	}
	progress("cluster keyring over %d namespaces, delivery %s; starting envtest (files in %s)", n, cfg.delivery, dir)
	cp, err := startControlPlane(ctx, dir)
	if err != nil {
		return res, err
	}
	defer cp.stop()
	args := append([]string{"--cluster-keyrings", "--cluster-resource-namespace=" + clusterNamespace}, cfg.managerArgs...)
	mgr, err := startManager(ctx, bin, cp.kubeconfig, dir, args, cfg.managerEnv, false)
	if err != nil {
		return res, err
	}
	defer mgr.kill()
	hctx, stopHarness := context.WithCancel(ctx)
	defer stopHarness()
	b, err := startHarness(hctx, cfg, cp, mgr, n)
	if err != nil {
		return res, err
	}
	if err := b.createFleet(ctx, n); err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := b.c.Create(ctx, newClusterKeyring(cfg.delivery, cfg.nextKey)); err != nil {
		return res, fmt.Errorf("create the ClusterMRTRKeyring: %w", err)
	}
	if res.Ready, err = b.waitCluster(ctx, t0, cfg.readyTimeout, "Ready over every namespace", func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
		return meta.IsStatusConditionTrue(ck.Status.Conditions, mrtrv1alpha1.ConditionReady) &&
			meta.IsStatusConditionFalse(ck.Status.Conditions, mrtrv1alpha1.ConditionReconciling) && int(ck.Status.Namespaces.UpToDate) == n
	}); err != nil {
		return res, err
	}
	progress("cluster keyring Ready over %d namespaces after %s", n, fmtDur(res.Ready))
	return res, b.measureClusterRotation(ctx, cfg, &res)
}

// createFleet creates the operator's namespace and n namespaces labelled for the keyring, each with
// its Deployment (and Pod).
func (b *bench) createFleet(ctx context.Context, n int) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}); err != nil {
		return err
	}
	return createTenants(ctx, b.c, b.cfg, n)
}

// createTenants creates n namespaces labelled for the keyring through c, each with its Deployment
// (and in Reload delivery its Pod) consuming the keyring's copy.
func createTenants(ctx context.Context, c client.Client, cfg config, n int) error {
	reload := cfg.delivery == mrtrv1alpha1.DeliveryReload
	return parallel(ctx, "namespaces created", n, cfg.workers, func(ctx context.Context, i int) error {
		ns := tenantNamespace(i)
		labels := map[string]string{fleetLabel: clusterKeyringName}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			return err
		}
		d, err := testworld.Workload{Kind: workload.Deployment, Namespace: ns, Name: "api", Replicas: 1, Secret: clusterSecretName}.New()
		if err != nil {
			return err
		}
		if err := c.Create(ctx, d); err != nil {
			return err
		}
		if reload {
			return c.Create(ctx, testworld.NewPod(ns, "api-0", map[string]string{"app": "api"}, clusterSecretName))
		}
		return nil
	})
}

// tenantNamespace is the name of the i-th namespace the keyring selects.
func tenantNamespace(i int) string { return fmt.Sprintf("tenant-%04d", i) }

// newClusterKeyring is the benchmark's ClusterMRTRKeyring, unstructured for the zero durations (see
// newKeyring).
func newClusterKeyring(delivery mrtrv1alpha1.Delivery, nextKey mrtrv1alpha1.NextKey) *unstructured.Unstructured {
	spec := map[string]any{
		"secretName": clusterSecretName, "rotationInterval": rotationInterval, "tokenTTL": tokenTTL, "clockSkew": clockSkew,
		"terminationGracePeriod": terminationGrace, "delivery": string(delivery), "nextKey": string(nextKey),
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{fleetLabel: clusterKeyringName}},
	}
	if delivery == mrtrv1alpha1.DeliveryReload {
		spec["reloadDeadline"] = reloadDeadline
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(mrtrv1alpha1.GroupVersion.WithKind("ClusterMRTRKeyring"))
	u.SetName(clusterKeyringName)
	return u
}

// waitCluster polls the ClusterMRTRKeyring until done, and returns the time since from.
func (b *bench) waitCluster(ctx context.Context, from time.Time, timeout time.Duration, what string,
	done func(*mrtrv1alpha1.ClusterMRTRKeyring) bool) (time.Duration, error) {
	for {
		var ck mrtrv1alpha1.ClusterMRTRKeyring
		err := b.c.Get(ctx, types.NamespacedName{Name: clusterKeyringName}, &ck)
		if err == nil && done(&ck) {
			return time.Since(from), nil
		}
		if err := b.mgr.exited(); err != nil {
			return 0, err
		}
		if time.Since(from) > timeout {
			return 0, fmt.Errorf("after %v the ClusterMRTRKeyring is not %s: phase %s, namespaces %d selected, %d up to date%s (%v)",
				timeout, what, ck.Status.Phase, ck.Status.Namespaces.Selected, ck.Status.Namespaces.UpToDate, lagging(&ck), err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// lagging names up to three namespaces of ck that are not up to date, with what each waits for.
func lagging(ck *mrtrv1alpha1.ClusterMRTRKeyring) string {
	var out []string
	for _, it := range ck.Status.Namespaces.Items {
		if it.State != mrtrv1alpha1.NamespaceUpToDate && len(out) < 3 {
			out = append(out, fmt.Sprintf("%s %s %s: %s", it.Cluster, it.Name, it.State, it.Message))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// measureClusterRotation requests one rotation and counts what the manager did until it completed.
func (b *bench) measureClusterRotation(ctx context.Context, cfg config, res *clusterResult) error {
	before, err := scrape(ctx, b.mgr.metricsURL)
	if err != nil {
		return err
	}
	cpuBefore, err := processCPU(b.mgr.PID())
	if err != nil {
		return err
	}
	servedBefore, err := apiServerMetrics(ctx, b.apiserver)
	if err != nil {
		return err
	}
	request := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RotateAnnotation,
		fmt.Sprintf("benchscale-%d", time.Now().UnixNano()))
	t1 := time.Now()
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: clusterKeyringName}}
	if err := b.c.Patch(ctx, ck, client.RawPatch(types.MergePatchType, []byte(request))); err != nil {
		return fmt.Errorf("request the rotation: %w", err)
	}
	if res.Rotate, err = b.waitCluster(ctx, t1, cfg.rotateTimeout, "rotated (rotationsCompleted=1, Stable, every namespace up to date)",
		func(ck *mrtrv1alpha1.ClusterMRTRKeyring) bool {
			return ck.Status.RotationsCompleted >= 1 && ck.Status.Phase == mrtrv1alpha1.PhaseStable &&
				int(ck.Status.Namespaces.UpToDate) == res.Namespaces
		}); err != nil {
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
	servedAfter, err := apiServerMetrics(ctx, b.apiserver)
	if err != nil {
		return err
	}
	progress("cluster keyring over %d namespaces rotated after %s", res.Namespaces, fmtDur(res.Rotate))
	res.Requests = after.sum(metricRequests) - before.sum(metricRequests)
	res.Reconciles = after.sum(metricReconciles) - before.sum(metricReconciles)
	res.RequestsBy = diff(after.sumBy(metricRequests, "method", "code"), before.sumBy(metricRequests, "method", "code"))
	res.CPU = cpuAfter - cpuBefore
	res.PerNS = res.Requests / float64(res.Namespaces)
	res.ServedWrite = map[string]float64{}
	for k, v := range diff(servedAfter.sumBy(metricServed, servedLabels...), servedBefore.sumBy(metricServed, servedLabels...)) {
		if mutating(strings.Fields(k)[0]) {
			res.Writes += v
			res.ServedWrite[strings.TrimSpace(k)] = v
		}
	}
	return nil
}

// runCluster measures every size in the cluster keyring mode and prints a table, with each size's
// requests per namespace and the growth from the size before (requests added per namespace added):
// a constant growth is the linear cost the design promises.
func runCluster(ctx context.Context, cfg config, bin string) error {
	var results []clusterResult
	for _, n := range cfg.sizes {
		r, err := measureCluster(ctx, cfg, bin, n)
		if err != nil {
			return fmt.Errorf("a cluster keyring over %d namespaces: %w", n, err)
		}
		results = append(results, r)
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
	}
	fmt.Println()
	fmt.Println("| namespaces | ready | rotate | manager requests | per namespace | growth per added namespace | " +
		"API writes | reconciles | manager CPU |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for i, r := range results {
		growth := "-"
		if i > 0 {
			p := results[i-1]
			growth = fmt.Sprintf("%.1f", (r.Requests-p.Requests)/float64(r.Namespaces-p.Namespaces))
		}
		fmt.Printf("| %d | %s | %s | %.0f | %.1f | %s | %.0f | %.0f | %s |\n", r.Namespaces, fmtDur(r.Ready), fmtDur(r.Rotate),
			r.Requests, r.PerNS, growth, r.Writes, r.Reconciles, fmtDur(r.CPU))
	}
	if len(results) > 0 {
		last := results[len(results)-1]
		fmt.Printf("\nmanager requests of the last rotation, by method and code: %s\nAPI writes: %s\n",
			formatCounts(last.RequestsBy), formatCounts(last.ServedWrite))
	}
	return nil
}
