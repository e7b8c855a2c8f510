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

package harness

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The External Secrets Operator's objects, as unstructured objects: its Go types would make the
// operator's module depend on ESO's (hack/external-secrets keeps that module apart).
var (
	// ClusterSecretStoreGVK is ESO's ClusterSecretStore.
	ClusterSecretStoreGVK = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ClusterSecretStore"}
	// ExternalSecretGVK is ESO's ExternalSecret.
	ExternalSecretGVK = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}
)

// versionProperty is the property of a FakeSecret's value, and the ExternalSecrets' data key, that
// holds its version (the templates read it as .version).
const versionProperty = "version"

// SourceDataKey is the data key of the key source Secret that holds the key's bytes.
const SourceDataKey = "key"

// FakeSecret is what a secret manager holds under one name: the current version of a key. ESO's
// fake provider keeps it as one JSON value, {"key":"<standard base64>","version":"<version>"},
// whose properties the ExternalSecrets read (remoteRef.property): the provider matches a remote
// version only exactly, so the version travels inside the value, as AWS Secrets Manager's
// AWSCURRENT stage moves to the newest version under one name.
type FakeSecret struct {
	Version string
	Key     []byte
}

// The fields of ESO's objects that these tests set, in ESO's JSON names.
type (
	esoMeta struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	}
	fakeData struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	fakeStoreSpec struct {
		Provider struct {
			Fake struct {
				Data []fakeData `json:"data"`
			} `json:"fake"`
		} `json:"provider"`
	}
	remoteRef struct {
		Key              string `json:"key"`
		Property         string `json:"property"`
		DecodingStrategy string `json:"decodingStrategy,omitempty"`
	}
	esData struct {
		SecretKey string    `json:"secretKey"`
		RemoteRef remoteRef `json:"remoteRef"`
	}
	esTemplate struct {
		Metadata *struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata,omitempty"`
		Data map[string]string `json:"data,omitempty"`
	}
	esSpec struct {
		RefreshInterval string `json:"refreshInterval"`
		SecretStoreRef  struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"secretStoreRef"`
		Target struct {
			Name           string     `json:"name"`
			CreationPolicy string     `json:"creationPolicy"`
			Template       esTemplate `json:"template"`
		} `json:"target"`
		Data []esData `json:"data"`
	}
)

// esoObject is an unstructured object of kind gvk with metadata meta and spec.
func esoObject(gvk schema.GroupVersionKind, meta esoMeta, spec any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(struct {
		Metadata esoMeta `json:"metadata"`
		Spec     any     `json:"spec"`
	}{meta, spec})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(append(fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,`, gvk.GroupVersion(), gvk.Kind), b[1:]...)); err != nil {
		return nil, err
	}
	return u, nil
}

// fakeStore is the spec of a fake store that holds secret under remoteKey.
func fakeStore(remoteKey string, secret FakeSecret) (fakeStoreSpec, error) {
	var spec fakeStoreSpec
	v, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString(secret.Key), versionProperty: secret.Version})
	spec.Provider.Fake.Data = []fakeData{{Key: remoteKey, Value: string(v)}}
	return spec, err
}

// FakeClusterSecretStore is a ClusterSecretStore of ESO's fake provider that holds secret under
// remoteKey.
func FakeClusterSecretStore(name, remoteKey string, secret FakeSecret) (*unstructured.Unstructured, error) {
	spec, err := fakeStore(remoteKey, secret)
	if err != nil {
		return nil, err
	}
	return esoObject(ClusterSecretStoreGVK, esoMeta{Name: name}, spec)
}

// RotateFakeSecret replaces what the fake ClusterSecretStore name holds under remoteKey with
// secret: a secret manager's rotation, as ESO sees it on its next refresh.
func RotateFakeSecret(ctx context.Context, c client.Client, name, remoteKey string, secret FakeSecret) error {
	spec, err := fakeStore(remoteKey, secret)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(struct {
		Spec fakeStoreSpec `json:"spec"`
	}{spec})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ClusterSecretStoreGVK)
	u.SetName(name)
	return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
}

// externalSecret is an ExternalSecret in ns that reads the key (as key) and version (as version)
// of remoteKey from the ClusterSecretStore store every refresh, into the Secret target, shaped by
// template.
func externalSecret(ns, name, store, remoteKey, target string, refresh time.Duration, key remoteRef,
	template esTemplate) *unstructured.Unstructured {
	var spec esSpec
	spec.RefreshInterval = refresh.String()
	spec.SecretStoreRef.Kind, spec.SecretStoreRef.Name = ClusterSecretStoreGVK.Kind, store
	spec.Target.Name, spec.Target.CreationPolicy, spec.Target.Template = target, "Owner", template
	key.Key, key.Property = remoteKey, "key"
	spec.Data = []esData{
		{SecretKey: SourceDataKey, RemoteRef: key},
		{SecretKey: versionProperty, RemoteRef: remoteRef{Key: remoteKey, Property: versionProperty}},
	}
	u, err := esoObject(ExternalSecretGVK, esoMeta{Namespace: ns, Name: name}, spec)
	if err != nil { // unreachable: every field is a string
		panic(err)
	}
	return u
}

// SourceExternalSecret is the ExternalSecret that writes a keyring's key source, the Secret
// target: the key's bytes in data key SourceDataKey, and its version in the annotation
// mrtrv1alpha1.KeyVersionAnnotation (template.metadata; with no template.data ESO copies the data
// as it reads it, so the version stays in a data key of its own too).
func SourceExternalSecret(ns, name, store, remoteKey, target string, refresh time.Duration) *unstructured.Unstructured {
	var t esTemplate
	t.Metadata = &struct {
		Annotations map[string]string `json:"annotations"`
	}{map[string]string{mrtrv1alpha1.KeyVersionAnnotation: "{{ .version }}"}}
	return externalSecret(ns, name, store, remoteKey, target, refresh, remoteRef{DecodingStrategy: "Base64"}, t)
}

// DirectExternalSecret is the ExternalSecret of a keyring without the operator: it writes the
// Secret target as the servers mount it, keyring.json made of the current key alone (its id the
// version), which the servers follow as ESO rewrites it. That is what the users of ESO live with
// today.
func DirectExternalSecret(ns, name, store, remoteKey, target string, refresh time.Duration) *unstructured.Unstructured {
	t := esTemplate{Data: map[string]string{
		keyring.SecretDataKey: `{"keys":[{"id":"{{ .version }}","secret":"{{ .key }}"}]}`,
	}}
	return externalSecret(ns, name, store, remoteKey, target, refresh, remoteRef{}, t)
}

// Unmanaged are the example servers deployed in a namespace of their own whose keyring Secret the
// operator does not manage, behind a balancer of their own.
type Unmanaged struct {
	Namespace string
	// MCPURL is their balancer's MCP endpoint.
	MCPURL string
	Pods   *PodNetwork
}

// Keyrings asks every serving replica which keyring it has loaded, sorted by pod name.
func (u *Unmanaged) Keyrings() []ReplicaKeyring {
	serving := u.Pods.Serving()
	addrs := make([]string, 0, len(serving))
	for _, a := range serving {
		addrs = append(addrs, a)
	}
	return replicaKeyrings(addrs)
}

// DeployUnmanaged deploys in namespace ns, which must exist, the same servers as Start, mounting
// Secret Name of ns, which something other than the operator writes, behind a balancer of their
// own, on the real node only. No keyring selects or targets them. Env.Stop stops the balancer.
func (e *Env) DeployUnmanaged(ctx context.Context, ns string) (*Unmanaged, error) {
	if !e.Real() || e.Opts.ClusterKeyring || e.Opts.ArgoRollout {
		return nil, errors.New("unmanaged servers: on the real node, beside an MRTRKeyring's Deployments only")
	}
	objs, err := e.serverObjects(ns)
	if err != nil {
		return nil, err
	}
	if err := e.create(ctx, objs...); err != nil {
		return nil, err
	}
	c, err := crcache.New(e.Cluster.RESTConfig(), crcache.Options{Scheme: Scheme(), DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(runCtx) }()
	lb := NewBalancer()
	u := &Unmanaged{Namespace: ns, Pods: &PodNetwork{Cache: c, Namespaces: []string{ns}, Balancer: lb, Port: serverPort}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		<-done
		return nil, err
	}
	srv := &http.Server{Handler: lb, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	e.stops = append(e.stops, func() error {
		err := srv.Close()
		lb.Close()
		cancel()
		<-done
		return err
	})
	u.MCPURL = "http://" + l.Addr().String() + "/mcp"
	if err := u.Pods.Run(runCtx); err != nil {
		return nil, fmt.Errorf("following the pods of %s: %w", ns, err)
	}
	return u, nil
}
