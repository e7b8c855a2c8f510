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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// evictionMemory is how long an accepted eviction is remembered at most: the cache shows the pod
// terminating (or gone) within seconds, under any load.
const evictionMemory = 2 * time.Minute

// evictions remembers the pods whose eviction the API server accepted until the cache shows them
// terminating. The restarts of a workload are paced by the pods it has out of service
// (rotation.restartBudget); a pass that ran on a cache still showing an evicted pod serving would
// count one too few, and could evict one more than the workload can lose. Such a pod counts as
// terminating, which it is. Keyed by uid: a pod re-created under the same name is another pod. It
// is a hint, not state: a restarted operator starts with none.
type evictions struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// accepted records the accepted eviction of the pod of uid, at now.
func (e *evictions) accepted(uid types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at == nil {
		e.at = map[types.UID]time.Time{}
	}
	e.at[uid] = now
}

// pending reports whether pod, as the cache shows it, was evicted but does not show it yet. An
// entry goes once the cache shows the pod terminating, or after evictionMemory.
func (e *evictions) pending(pod *corev1.Pod, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.at[pod.UID]
	switch {
	case !ok:
		return false
	case pod.DeletionTimestamp != nil || now.Sub(at) > evictionMemory:
		delete(e.at, pod.UID)
		return false
	}
	return true
}
