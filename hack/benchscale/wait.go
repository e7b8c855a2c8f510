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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// isReady, isIdle and isRotated are the states the benchmark waits for, every keyring in them:
// Ready; Ready and not Reconciling (rolled out to its keyring); one rotation completed and back in
// Stable.
func isReady(kr *mrtrv1alpha1.MRTRKeyring) bool {
	return meta.IsStatusConditionTrue(kr.Status.Conditions, mrtrv1alpha1.ConditionReady)
}

func isIdle(kr *mrtrv1alpha1.MRTRKeyring) bool {
	return isReady(kr) && meta.IsStatusConditionFalse(kr.Status.Conditions, mrtrv1alpha1.ConditionReconciling)
}

func isRotated(kr *mrtrv1alpha1.MRTRKeyring) bool {
	return kr.Status.RotationsCompleted >= 1 && kr.Status.Phase == mrtrv1alpha1.PhaseStable
}

// waiter waits on the keyrings through the harness's cache.
type waiter struct {
	cache cache.Cache
	mgr   *manager
	n     int
}

// pollInterval is how often the waiter looks at the keyrings; the times it measures are up to this
// much too long.
const pollInterval = 200 * time.Millisecond

// wait polls until all n keyrings satisfy done and returns the time since from; after timeout it
// fails, saying how many got there and in which phases the keyrings are.
func (w waiter) wait(ctx context.Context, from time.Time, timeout time.Duration, what string,
	done func(*mrtrv1alpha1.MRTRKeyring) bool) (time.Duration, error) {
	deadline := from.Add(timeout)
	lastReport := time.Now()
	for {
		var list mrtrv1alpha1.MRTRKeyringList
		// No deep copies: the keyrings are only read, and at 10000 of them every 200 ms copying them
		// would cost the harness more CPU than the manager spends.
		if err := w.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		count := 0
		for i := range list.Items {
			if done(&list.Items[i]) {
				count++
			}
		}
		now := time.Now()
		if count == w.n {
			return now.Sub(from), nil
		}
		if err := w.mgr.exited(); err != nil {
			return 0, err
		}
		if now.After(deadline) {
			return 0, fmt.Errorf("after %v only %d of %d keyrings are %s; %s", timeout, count, w.n, what, describe(list.Items))
		}
		if now.Sub(lastReport) >= 10*time.Second {
			progress("  %d/%d %s", count, w.n, what)
			lastReport = now
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// describe counts the keyrings per phase and per Ready status, for a timeout's message.
func describe(krs []mrtrv1alpha1.MRTRKeyring) string {
	phases := map[string]int{}
	ready := 0
	for i := range krs {
		p := string(krs[i].Status.Phase)
		if p == "" {
			p = "(no phase yet)"
		}
		phases[p]++
		if isReady(&krs[i]) {
			ready++
		}
	}
	return fmt.Sprintf("phases %s; %d Ready", formatCounts(phases), ready)
}
