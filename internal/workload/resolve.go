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

package workload

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Targets are the workloads a keyring targets, as found in its namespace.
type Targets struct {
	// Found holds the existing targets, each once, sorted by Ref.Compare.
	Found []client.Object
	// Missing holds the named targets that do not exist, sorted. They are not an error: the
	// rotation reports them and waits.
	Missing []Ref
	// Unserved holds the named targets of a kind the API server does not serve (its CRD is not
	// installed), sorted: reported, and waited for, like missing ones.
	Unserved []Ref
}

// Served tells which kinds the API server serves, and the cache can read: the manager watches a
// kind only once it is served (a CRD may be installed after the manager started).
type Served func(Kind) bool

// Resolve reads the targets of a keyring in namespace: each workload named in refs, every
// Deployment, StatefulSet and DaemonSet whose labels match selector, and every one whose pod
// template references the Secret named secret (ReferencedSecrets; "" for none), through the
// reader's SecretRefIndex. A nil selector selects nothing; an empty one selects every workload of
// the three kinds (metav1.LabelSelectorAsSelector). A workload found more than one way appears
// once. Only the kinds served reports served are read (nil: all of them); a named target of
// another kind is Unserved. Errors are the reader's, other than NotFound, or an invalid selector.
func Resolve(ctx context.Context, c client.Reader, served Served, namespace string, refs []Ref, selector *metav1.LabelSelector, secret string) (Targets, error) {
	if served == nil {
		served = func(Kind) bool { return true }
	}
	var t Targets
	seen := map[Ref]bool{}
	add := func(obj client.Object) {
		ref, _ := RefOf(obj)
		if !seen[ref] {
			seen[ref] = true
			t.Found = append(t.Found, obj)
		}
	}
	for _, ref := range refs {
		obj, err := New(ref.Kind)
		if err != nil {
			return Targets{}, err
		}
		if !served(ref.Kind) {
			if !slices.Contains(t.Unserved, ref) {
				t.Unserved = append(t.Unserved, ref)
			}
			continue
		}
		err = c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			if !slices.Contains(t.Missing, ref) {
				t.Missing = append(t.Missing, ref)
			}
		case err != nil:
			return Targets{}, fmt.Errorf("read %s in namespace %s: %w", ref, namespace, err)
		default:
			add(obj)
		}
	}
	if selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return Targets{}, fmt.Errorf("workload selector: %w", err)
		}
		for _, a := range adapters {
			k, list := a.kind(), a.newList()
			if !served(k) {
				continue
			}
			if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
				return Targets{}, fmt.Errorf("list %ss matching %s in namespace %s: %w", k, sel, namespace, err)
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				add(o.(client.Object))
				return nil
			}); err != nil {
				return Targets{}, err
			}
		}
	}
	if secret != "" {
		for _, a := range adapters {
			k, list := a.kind(), a.newList()
			if !served(k) {
				continue
			}
			if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{SecretRefIndex: secret}); err != nil {
				return Targets{}, fmt.Errorf("list %ss that reference Secret %s in namespace %s: %w", k, secret, namespace, err)
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				add(o.(client.Object))
				return nil
			}); err != nil {
				return Targets{}, err
			}
		}
	}
	slices.SortFunc(t.Found, func(a, b client.Object) int {
		ra, _ := RefOf(a)
		rb, _ := RefOf(b)
		return ra.Compare(rb)
	})
	slices.SortFunc(t.Missing, Ref.Compare)
	slices.SortFunc(t.Unserved, Ref.Compare)
	return t, nil
}
