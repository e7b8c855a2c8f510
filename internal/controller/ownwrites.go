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
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheLagRetry is how soon a pass that found the cache behind the operator's own write runs again.
// The cache is usually a few milliseconds behind, and under load up to a second.
const cacheLagRetry = 100 * time.Millisecond

// ownWrites remembers the resourceVersion of this operator's last write of each object (a keyring's
// status, a workload's stamp) that the cache has not shown yet. A pass that would decide from an
// older cached copy waits for the cache instead: a copy that predates the operator's own last step
// has it redo that step (the stamps again, status the same again) and end in a write conflict. It
// happens when one object's watch event arrives before another's (the stamp's before the status
// write made just before it), which under load is most of the time. It is a hint, not state: a
// restarted operator starts with none and at worst takes the conflict. An entry goes once the cache
// has shown the write, or with its keyring.
type ownWrites struct {
	rv sync.Map // objectKey -> string
}

// objectKey names an object across kinds: the Go type of the cached object and its name.
type objectKey struct {
	kind reflect.Type
	types.NamespacedName
}

func keyOf(obj client.Object) objectKey {
	return objectKey{kind: reflect.TypeOf(obj), NamespacedName: client.ObjectKeyFromObject(obj)}
}

// wrote records obj, as the API server returned it from the operator's write.
func (w *ownWrites) wrote(obj client.Object) { w.rv.Store(keyOf(obj), obj.GetResourceVersion()) }

// forget drops what is recorded of obj (a keyring that is gone).
func (w *ownWrites) forget(obj client.Object) { w.rv.Delete(keyOf(obj)) }

// behind reports whether any of objs, as the cache holds them, is older than the operator's last
// write of it. Resource versions are comparable integers since Kubernetes 1.35 (KEP-5504); where
// they are not, the cache is trusted, as it would be without this check.
func (w *ownWrites) behind(objs ...client.Object) bool {
	for _, obj := range objs {
		key := keyOf(obj)
		v, ok := w.rv.Load(key)
		if !ok {
			continue
		}
		c, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), v.(string))
		if err == nil && c < 0 {
			return true
		}
		w.rv.CompareAndDelete(key, v) // caught up: nothing left to wait for
	}
	return false
}
