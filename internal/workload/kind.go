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
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Kind is one of the workload kinds a keyring can target: the API's WorkloadKind, one type.
type Kind = mrtrv1alpha1.WorkloadKind

// adapter is everything the operator knows of one workload kind. Each kind is one file
// (deployment.go, statefulset.go, daemonset.go) that builds its adapter with adapt and registers
// it; the functions of this package dispatch to it by the object's Go type or by Kind.
type adapter interface {
	kind() Kind
	// gvk is the kind's group, version and kind, which the manager asks the API server's
	// RESTMapper about before it watches the kind.
	gvk() schema.GroupVersionKind
	// rank orders the kinds (Kinds, Ref.Compare).
	rank() int
	newObject() client.Object
	newList() client.ObjectList
	// is reports whether obj is of this kind (its Go type: a typed object read through a client
	// has an empty TypeMeta).
	is(obj client.Object) bool
	template(obj client.Object) *corev1.PodTemplateSpec
	selector(obj client.Object) *metav1.LabelSelector
	countedPods(obj client.Object) int32
	rollout(obj client.Object) Rollout
	strip(obj client.Object) client.Object
	status(obj client.Object) any
}

// kindOf is a kind's adapter, written over its typed object T.
type kindOf[T client.Object] struct {
	name  Kind
	order int
	// version is the kind's API group and version (mrtrv1alpha1.APIVersionApps, ...).
	version schema.GroupVersion
	// object and list return an empty object and an empty list of the kind.
	object func() T
	list   func() client.ObjectList
	// podTemplate returns the pod template, which the caller may read or modify in place.
	podTemplate func(T) *corev1.PodTemplateSpec
	// podSelector is spec.selector.
	podSelector func(T) *metav1.LabelSelector
	// counted is how many pods, terminating ones aside, its controller counts as its own.
	counted func(T) int32
	// rolledOut is RolloutStatus for the kind.
	rolledOut func(T) Rollout
	// stripped keeps what the operator reads (StripWorkload), given the stripped template.
	stripped func(T, corev1.PodTemplateSpec) T
	// statusOf is its status, whose changes wake the keyrings that target it.
	statusOf func(T) any
}

func (k kindOf[T]) kind() Kind                   { return k.name }
func (k kindOf[T]) gvk() schema.GroupVersionKind { return k.version.WithKind(string(k.name)) }
func (k kindOf[T]) rank() int                    { return k.order }
func (k kindOf[T]) newList() client.ObjectList   { return k.list() }
func (k kindOf[T]) newObject() client.Object     { return k.object() }
func (k kindOf[T]) is(obj client.Object) bool    { _, ok := obj.(T); return ok }
func (k kindOf[T]) template(obj client.Object) *corev1.PodTemplateSpec {
	return k.podTemplate(obj.(T)) //nolint:forcetypeassert // dispatched by is
}
func (k kindOf[T]) selector(obj client.Object) *metav1.LabelSelector {
	return k.podSelector(obj.(T)) //nolint:forcetypeassert // dispatched by is
}
func (k kindOf[T]) countedPods(obj client.Object) int32 { return k.counted(obj.(T)) }   //nolint:forcetypeassert // dispatched by is
func (k kindOf[T]) rollout(obj client.Object) Rollout   { return k.rolledOut(obj.(T)) } //nolint:forcetypeassert // dispatched by is
func (k kindOf[T]) status(obj client.Object) any        { return k.statusOf(obj.(T)) }  //nolint:forcetypeassert // dispatched by is
func (k kindOf[T]) strip(obj client.Object) client.Object {
	o := obj.(T) //nolint:forcetypeassert // dispatched by is
	return k.stripped(o, stripTemplate(k.podTemplate(o)))
}

// adapters are the registered kinds, in their sort order.
var adapters []adapter

// register adds a kind's adapter; each kind's file calls it once, from a package variable.
func register[T client.Object](k kindOf[T]) adapter {
	adapters = append(adapters, k)
	slices.SortFunc(adapters, func(a, b adapter) int { return a.rank() - b.rank() })
	return k
}

// adapterFor returns the adapter of obj's kind.
func adapterFor(obj client.Object) (adapter, error) {
	for _, a := range adapters {
		if a.is(obj) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%T is not a supported workload: use %s", obj, kindNames("a "))
}

// adapterOf returns the adapter of kind k.
func adapterOf(k Kind) (adapter, error) {
	for _, a := range adapters {
		if a.kind() == k {
			return a, nil
		}
	}
	return nil, fmt.Errorf("workload kind %q is not supported: use %s", string(k), kindNames(""))
}

// kindNames lists the supported kinds for an error: "Deployment, StatefulSet or DaemonSet".
func kindNames(article string) string {
	names := make([]string, len(adapters))
	for i, a := range adapters {
		names[i] = article + string(a.kind())
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
