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
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// A keyring rotates with a TTL wait of 1 s (tokenTTL 1s, clockSkew 0s, terminationGracePeriod 0s),
// so that a rotation's time is almost all the operator's. rotationInterval 24h keeps a second
// rotation from starting within the benchmark.
const (
	tokenTTL         = "1s"
	clockSkew        = "0s"
	terminationGrace = "0s"
	rotationInterval = "24h"
	// reloadDeadline is long in Reload delivery so that a harness slowed down by a loaded machine
	// never gets a pod evicted: envtest has no controller to recreate it.
	reloadDeadline = "1h"
)

// target names one keyring and what it rotates: the keyring, its Secret, its Deployment (and in
// Reload delivery its one Pod) all share the name kr-%05d; the Deployment selects app=<name>.
type target struct {
	namespace, name string
}

func (t target) key() types.NamespacedName {
	return types.NamespacedName{Namespace: t.namespace, Name: t.name}
}
func (t target) podName() string { return t.name + "-0" }

// targets lays out n keyrings over namespacesFor(n) namespaces, in contiguous blocks.
func targets(n int) (namespaces []string, ts []target) {
	ns := namespacesFor(n)
	for j := range ns {
		namespaces = append(namespaces, fmt.Sprintf("bench-%03d", j))
	}
	for i := range n {
		ts = append(ts, target{namespace: namespaces[i*ns/n], name: fmt.Sprintf("kr-%05d", i)})
	}
	return namespaces, ts
}

// newKeyring is the keyring of t, unstructured: the typed spec omits zero durations (omitzero), so
// clockSkew and terminationGracePeriod 0s would be sent as absent and defaulted to 30s each.
func newKeyring(t target, delivery mrtrv1alpha1.Delivery, nextKey mrtrv1alpha1.NextKey) *unstructured.Unstructured {
	spec := map[string]any{
		"rotationInterval":       rotationInterval,
		"tokenTTL":               tokenTTL,
		"clockSkew":              clockSkew,
		"terminationGracePeriod": terminationGrace,
		"delivery":               string(delivery),
		"nextKey":                string(nextKey),
		"workloads":              []any{map[string]any{"kind": "Deployment", "name": t.name}},
	}
	if delivery == mrtrv1alpha1.DeliveryReload {
		spec["reloadDeadline"] = reloadDeadline
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(mrtrv1alpha1.GroupVersion.WithKind("MRTRKeyring"))
	u.SetNamespace(t.namespace)
	u.SetName(t.name)
	return u
}

// newDeployment is t's one-replica Deployment, whose pods mount t's keyring Secret.
func newDeployment(t target) (client.Object, error) {
	return testworld.Workload{Kind: workload.Deployment, Namespace: t.namespace, Name: t.name, Replicas: 1, Secret: t.name}.New()
}

// newPod is the one pod of t's Deployment in Reload delivery, labelled as the Deployment's pods
// are (testworld.Workload selects app=<name>).
func newPod(t target) *corev1.Pod {
	return testworld.NewPod(t.namespace, t.podName(), map[string]string{"app": t.name}, t.name)
}

// parallel runs fn(i) for every i < n on workers goroutines and returns the first error (the rest
// of the work is abandoned). It reports progress every quarter of the way for large n.
func parallel(ctx context.Context, what string, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, done atomic.Int64
		once       sync.Once
		firstErr   error
		wg         sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
				if d := done.Add(1); n >= 1000 && d%int64(n/4) == 0 {
					progress("  %s: %d/%d", what, d, n)
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}
