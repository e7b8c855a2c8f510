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

// Package workload is the operator's typed view of the workloads that consume a keyring:
// Deployments, StatefulSets and DaemonSets (apps/v1), and Argo Rollouts (argoproj.io/v1alpha1).
// It answers three questions — which workloads a keyring targets (Resolve), which keyring
// fingerprint their pod template carries (Fingerprint) and whether that template has rolled out
// (RolloutStatus) — and makes one write: stamping a fingerprint onto a pod template (Stamp). It
// knows nothing of rotation phases; internal/rotation decides what to stamp and when.
//
// # A kind is one file
//
// Everything the package knows of a kind is its adapter, in the kind's own file (deployment.go,
// statefulset.go, daemonset.go, argorollout.go): its group, version and kind, the empty object and
// list, the pod template, the selector, the pods its controller counts, the rollout status, what
// the cache keeps of it (stripping) and the status whose changes wake a keyring, with the RBAC
// marker that lets the reconciler list, watch and stamp it. A kind no client-go package has gets
// a Go type of its own in that file, with only the fields the adapter reads (AddToScheme
// registers it). The functions of the package dispatch to the adapter by Kind or by the object's
// Go type. Adding a kind is that one file, plus its value in the API's enum
// (mrtrv1alpha1.WorkloadKind's +kubebuilder:validation:Enum marker; Kind is that type) and its
// apiVersion in WorkloadReference's apiVersion enum and rule; TestEveryKindIsInTheAPIAndTheRole
// fails, naming what is missing, until all three agree with the generated CRD and ClusterRole.
//
// The manager watches a kind only while the API server serves it (internal/controller asks the
// RESTMapper with GVK, at start and then periodically, so a CRD installed later is watched
// without a restart), and Resolve reads only the kinds it is told are served: a keyring that names
// another is told so (Targets.Unserved), instead of a manager that cannot start.
//
// The types of kinds that no client-go package has (ArgoRollout) are no API of this operator:
// the skip marker keeps controller-gen from making a CRD of them.
//
// +kubebuilder:skip
package workload

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// StampedBy is the keyring that claims obj's stamp, "" when none does.
func StampedBy(obj client.Object) string {
	return obj.GetAnnotations()[mrtrv1alpha1.StampedByAnnotation]
}

// SharedBy returns the keyrings that share obj (mrtrv1alpha1.SharedByAnnotation), nil when it is not shared.
func SharedBy(obj client.Object) []string {
	v := obj.GetAnnotations()[mrtrv1alpha1.SharedByAnnotation]
	if v == "" {
		return nil
	}
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// StampKey returns the pod-template annotation that carries keyring's stamp on obj:
// mrtrv1alpha1.FingerprintAnnotation, unless obj is shared and keyring is not the first of those sharing it. It is ""
// when obj is shared by others only, or when keyring's name does not fit an annotation key (63
// characters).
func StampKey(obj client.Object, keyring string) string {
	shared := SharedBy(obj)
	switch i := slices.Index(shared, keyring); {
	case len(shared) == 0 || i == 0:
		return mrtrv1alpha1.FingerprintAnnotation
	case i < 0 || len(keyring) > 63:
		return ""
	}
	return mrtrv1alpha1.FingerprintAnnotationPrefix + keyring
}

// FingerprintAt returns the fingerprint in the pod-template annotation key of obj, "" when none.
func FingerprintAt(obj client.Object, key string) string {
	t, err := PodTemplate(obj)
	if err != nil {
		return ""
	}
	return t.Annotations[key]
}

// Kinds lists the supported kinds in their sort order.
func Kinds() []Kind {
	out := make([]Kind, len(adapters))
	for i, a := range adapters {
		out[i] = a.kind()
	}
	return out
}

// GVK returns the group, version and kind of kind k: the RESTMapper tells from it whether the
// cluster serves the kind.
func GVK(k Kind) (schema.GroupVersionKind, error) {
	a, err := adapterOf(k)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return a.gvk(), nil
}

// APIVersion is the apiVersion of kind k, "" for an unsupported one.
func APIVersion(k Kind) string {
	gvk, err := GVK(k)
	if err != nil {
		return ""
	}
	return gvk.GroupVersion().String()
}

// New returns an empty object of kind k, for Get and Watch.
func New(k Kind) (client.Object, error) {
	a, err := adapterOf(k)
	if err != nil {
		return nil, err
	}
	return a.newObject(), nil
}

// Is reports whether obj is a workload of a supported kind.
func Is(obj client.Object) bool {
	_, err := adapterFor(obj)
	return err == nil
}

// KindOf returns the kind of a typed workload object. Typed objects read through a client have an
// empty TypeMeta, so the Go type decides, not obj.GetObjectKind().
func KindOf(obj client.Object) (Kind, error) {
	a, err := adapterFor(obj)
	if err != nil {
		return "", err
	}
	return a.kind(), nil
}

// Ref names a workload within the keyring's namespace.
type Ref struct {
	Kind Kind
	Name string
}

// RefOf returns the Ref of a typed workload object.
func RefOf(obj client.Object) (Ref, error) {
	k, err := KindOf(obj)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Kind: k, Name: obj.GetName()}, nil
}

// String is "Kind/name", the form used in messages and as the controller's field-index key.
func (r Ref) String() string { return string(r.Kind) + "/" + r.Name }

// Compare orders refs by kind (in the order of Kinds), then by name.
func (r Ref) Compare(o Ref) int {
	return cmp.Or(cmp.Compare(kindRank(r.Kind), kindRank(o.Kind)), cmp.Compare(r.Name, o.Name))
}

func kindRank(k Kind) int {
	if a, err := adapterOf(k); err == nil {
		return a.rank()
	}
	return len(adapters)
}

// PodTemplate returns the pod template of a typed workload object, which the caller may read or
// modify in place.
func PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	a, err := adapterFor(obj)
	if err != nil {
		return nil, err
	}
	return a.template(obj), nil
}

// Status is the status of a typed workload object, nil for another object: a change of it may
// move a rollout.
func Status(obj client.Object) any {
	a, err := adapterFor(obj)
	if err != nil {
		return nil
	}
	return a.status(obj)
}

// Fingerprint returns the keyring fingerprint stamped on the workload's pod template, or "" when there is
// none (or obj is not a supported workload).
func Fingerprint(obj client.Object) string {
	return FingerprintAt(obj, mrtrv1alpha1.FingerprintAnnotation)
}
