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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
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

// pollInterval is how often the polling waits (a cluster keyring's, the harness's rollouts) look;
// the times they measure are up to this much too long.
const pollInterval = 200 * time.Millisecond

// checkInterval is how often the waiter looks at the deadline and reports progress. It does not
// bound what it measures: the keyrings' events are counted as they arrive.
const checkInterval = 200 * time.Millisecond

// wait returns the time from from to the event that brought the last of the n keyrings to done, as
// the harness's cache receives them (an informer handler counts them: the moment is exact, and
// costs the harness no listing); after timeout it fails, saying how many got there and in which
// phases the keyrings are.
func (w waiter) wait(ctx context.Context, from time.Time, timeout time.Duration, what string,
	done func(*mrtrv1alpha1.MRTRKeyring) bool) (time.Duration, error) {
	inf, err := w.cache.GetInformer(ctx, &mrtrv1alpha1.MRTRKeyring{})
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	in := map[types.NamespacedName]bool{}
	reached := make(chan time.Time, 1)
	observe := func(obj any, deleted bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		kr, ok := obj.(*mrtrv1alpha1.MRTRKeyring)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if key := client.ObjectKeyFromObject(kr); !deleted && done(kr) {
			in[key] = true
		} else {
			delete(in, key)
		}
		if len(in) == w.n {
			select {
			case reached <- time.Now():
			default:
			}
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(in)
	}

	deadline := from.Add(timeout)
	lastReport := time.Now()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case at := <-reached:
			return at.Sub(from), nil
		case <-time.After(checkInterval):
		}
		if err := w.mgr.exited(); err != nil {
			return 0, err
		}
		now := time.Now()
		if now.After(deadline) {
			var list mrtrv1alpha1.MRTRKeyringList
			if err := w.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("after %v only %d of %d keyrings are %s; %s", timeout, count(), w.n, what, describe(list.Items))
		}
		if now.Sub(lastReport) >= 10*time.Second {
			progress("  %d/%d %s", count(), w.n, what)
			lastReport = now
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
