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

package cli

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// A command names its keyring as kubectl names an object: NAME, or TYPE/NAME, TYPE being any name
// kubectl knows the kind by (kind, singular, plural, short name, each optionally qualified by the
// group). A bare NAME is an MRTRKeyring in the namespace of -n, as it always was; a
// ClusterMRTRKeyring is named clustermrtrkeyring/NAME, or cmkr/NAME.

// namespacedTypes and clusterTypes are the names of the two kinds, lower-cased, without the group.
var (
	namespacedTypes = []string{"mrtrkeyring", "mrtrkeyrings", "mkr"}
	clusterTypes    = []string{"clustermrtrkeyring", "clustermrtrkeyrings", "cmkr"}
)

// keyringRef is the keyring a command names.
type keyringRef struct {
	cluster   bool
	namespace string // "" for a ClusterMRTRKeyring
	name      string
}

// kindOf reads a TYPE: whether it names a ClusterMRTRKeyring, and whether it names either kind.
func kindOf(typ string) (cluster, ok bool) {
	t := strings.ToLower(typ)
	for _, suffix := range []string{"." + mrtrv1alpha1.GroupVersion.Version + "." + mrtrv1alpha1.GroupVersion.Group, "." + mrtrv1alpha1.GroupVersion.Group} {
		t = strings.TrimSuffix(t, suffix)
	}
	switch {
	case slices.Contains(clusterTypes, t):
		return true, true
	case slices.Contains(namespacedTypes, t):
		return false, true
	}
	return false, false
}

// listsClusterKeyrings reports whether arg is a ClusterMRTRKeyring's TYPE alone ("cmkr"), which
// status takes as a request for the table of every cluster keyring, as kubectl get cmkr does.
func listsClusterKeyrings(arg string) bool {
	cluster, ok := kindOf(arg)
	return ok && cluster && !strings.Contains(arg, "/")
}

// parseRef reads NAME or TYPE/NAME; ns is the namespace of -n, for an MRTRKeyring.
func parseRef(arg, ns string) (keyringRef, error) {
	typ, name, typed := strings.Cut(arg, "/")
	if !typed {
		return keyringRef{namespace: ns, name: arg}, nil
	}
	cluster, ok := kindOf(typ)
	switch {
	case !ok:
		return keyringRef{}, fmt.Errorf("%q is not a keyring: name an MRTRKeyring as NAME or mrtrkeyring/NAME (mkr/NAME), a ClusterMRTRKeyring as clustermrtrkeyring/NAME (cmkr/NAME)", arg)
	case name == "" || strings.Contains(name, "/"):
		return keyringRef{}, fmt.Errorf("%q: give one name after %s/", arg, typ)
	case cluster:
		return keyringRef{cluster: true, name: name}, nil
	}
	return keyringRef{namespace: ns, name: name}, nil
}

// refOf is the keyring that kr, as keyringOf made it, stands for: an MRTRKeyring always has a
// namespace, so a view without one is a ClusterMRTRKeyring's.
func refOf(kr *mrtrv1alpha1.MRTRKeyring) keyringRef {
	return keyringRef{cluster: kr.Namespace == "", namespace: kr.Namespace, name: kr.Name}
}

// kind is the API kind of the keyring.
func (r keyringRef) kind() string {
	if r.cluster {
		return "ClusterMRTRKeyring"
	}
	return "MRTRKeyring"
}

// String names the keyring in a sentence: "MRTRKeyring mcp/payments", "ClusterMRTRKeyring payments".
func (r keyringRef) String() string {
	if r.cluster {
		return r.kind() + " " + r.name
	}
	return r.kind() + " " + r.namespace + "/" + r.name
}

// args are the arguments that name the keyring to another kubectl mrtr command: "payments -n mcp",
// "cmkr/payments".
func (r keyringRef) args() string {
	if r.cluster {
		return "cmkr/" + r.name
	}
	return r.name + " -n " + r.namespace
}

// notFound is the error of a keyring the API server does not have.
func (r keyringRef) notFound() error {
	if r.cluster {
		return fmt.Errorf("ClusterMRTRKeyring %s not found", r.name)
	}
	return fmt.Errorf("MRTRKeyring %s not found in namespace %s", r.name, r.namespace)
}

// object is an empty API object of the keyring, named, to read into or patch.
func (r keyringRef) object() client.Object {
	if r.cluster {
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{}
		ck.Name = r.name
		return ck
	}
	kr := &mrtrv1alpha1.MRTRKeyring{}
	kr.Namespace, kr.Name = r.namespace, r.name
	return kr
}

// keyringOf is obj, an object of keyringRef.object, as the commands read a keyring: an MRTRKeyring
// as it is, a ClusterMRTRKeyring as an MRTRKeyring of no namespace with its metadata, its rotation
// policy and the status of its keyring (the same fields, so one code renders and patches both).
// Its namespaces are returned apart, nil for an MRTRKeyring.
func keyringOf(obj client.Object) (*mrtrv1alpha1.MRTRKeyring, *mrtrv1alpha1.NamespacesStatus) {
	switch o := obj.(type) {
	case *mrtrv1alpha1.MRTRKeyring:
		return o, nil
	case *mrtrv1alpha1.ClusterMRTRKeyring:
		kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: *o.ObjectMeta.DeepCopy(), Spec: o.Spec.MRTRKeyringSpec, Status: o.Status.MRTRKeyringStatus}
		kr.Namespace = ""
		return kr, &o.Status.Namespaces
	}
	panic(fmt.Sprintf("keyringOf(%T)", obj)) // keyringRef.object makes only these
}
