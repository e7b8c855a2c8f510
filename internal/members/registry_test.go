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

package members

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// kubeconfigFor is a kubeconfig reaching cfg's API server at server, credentials inline.
func kubeconfigFor(t *testing.T, cfg *rest.Config, server string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["m"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["m"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	kc.CurrentContext = "m"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startAPIServer starts a real API server (envtest) for the test, stopped when it ends, and a
// client of it: the tests' hub, which is also, through kubeconfigs of its own, their member.
func startAPIServer(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: make envtest-assets")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// TestRegistryReachesAMember runs a real API server as both the hub (where the kubeconfig
// Secrets are) and the member, and checks that a good kubeconfig reaches it, and that a bad one,
// or one whose server does not answer, is unreachable with a message naming the Secret and never
// its bytes.
func TestRegistryReachesAMember(t *testing.T) {
	cfg, hub := startAPIServer(t)
	ctx := context.Background()
	const ns = "mrtr-system"
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	secret := func(name string, kubeconfig []byte) {
		t.Helper()
		if err := hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfig}}); err != nil {
			t.Fatal(err)
		}
	}
	secret("west-kubeconfig", kubeconfigFor(t, cfg, cfg.Host))
	secret("garbage-kubeconfig", []byte("not: [a kubeconfig"))
	secret("closed-kubeconfig", kubeconfigFor(t, cfg, "https://127.0.0.1:1"))

	var mu sync.Mutex
	changed := map[string]int{}
	r := &Registry{Reader: hub, Namespace: ns, Scheme: scheme.Scheme, CacheOptions: func() cache.Options { return cache.Options{} },
		SyncTimeout: 2 * time.Second, HealthEvery: 500 * time.Millisecond, HealthTimeout: time.Second, Now: time.Now,
		Changed: func(s string, _ []string) { mu.Lock(); changed[s]++; mu.Unlock() }}
	t.Cleanup(func() { r.Retain(nil) })

	eventually := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); {
			if time.Now().After(deadline) {
				t.Fatalf("never %s", what)
			}
			time.Sleep(100 * time.Millisecond) // polling a state another goroutine settles
		}
	}
	var c client.Client
	eventually("reached west", func() bool {
		var st State
		c, st = r.Ensure(ctx, "west-kubeconfig")
		return st.Reachable
	})
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss); err != nil || len(nss.Items) == 0 {
		t.Fatalf("listing the member's namespaces through its client: %v, %d", err, len(nss.Items))
	}
	// The member's cache watches with its cluster's config: no client-side rate limit (client-go's
	// default 5/s would pace a rotation), and no request timeout, which would end every watch.
	if cfg := r.Cluster("west-kubeconfig").GetConfig(); cfg.QPS >= 0 || cfg.Timeout != 0 {
		t.Fatalf("member config QPS %v, timeout %v: want no rate limit and no timeout on watches", cfg.QPS, cfg.Timeout)
	}

	// A failed read of the hub's own API server says nothing of the member: west runs on.
	r.Reader = failingReader{}
	if again, st := r.Ensure(ctx, "west-kubeconfig"); again != c || !st.Reachable {
		t.Fatalf("a failed read of the kubeconfig Secret replaced a reached member: client %v, state %+v", again, st)
	}
	r.Reader = hub

	c, st := r.Ensure(ctx, "garbage-kubeconfig")
	if c != nil || st.Reachable || !strings.Contains(st.Message, "garbage-kubeconfig") || strings.Contains(st.Message, "not: [a") {
		t.Fatalf("garbage: client %v, state %+v: want unreachable naming the Secret, without its bytes", c, st)
	}
	eventually("found the closed port unreachable", func() bool {
		_, st = r.Ensure(ctx, "closed-kubeconfig")
		return !st.Reachable && st.Message != "connecting"
	})
	if !strings.Contains(st.Message, "connection refused") && !strings.Contains(st.Message, "did not sync") {
		t.Fatalf("closed: %+v: want the refused connection, or a cache that did not sync", st)
	}
	if _, st := r.Ensure(ctx, "absent-kubeconfig"); st.Reachable || !strings.Contains(st.Message, "absent-kubeconfig") {
		t.Fatalf("absent: %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if changed["west-kubeconfig"] == 0 {
		t.Fatalf("no change was reported for west: %v", changed)
	}
}

// failingReader is a hub whose API server does not answer.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the hub's API server does not answer")
}

// TestRegistryScopesAMembersCache checks that a member's cache holds pods only in the namespaces
// keyrings Select there: a read elsewhere, or across all namespaces, is an error and never an
// empty answer; a namespace that joins is read once its cache synced, and one no keyring selects
// any more is dropped. A change of a pod wakes the keyrings selecting its namespace.
func TestRegistryScopesAMembersCache(t *testing.T) {
	cfg, hub := startAPIServer(t)
	ctx := context.Background()
	for _, ns := range []string{"mrtr-system", "blue", "green"} {
		if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name string) {
		t.Helper()
		if err := hub.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	pod("blue", "b1")
	pod("green", "g1")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mrtr-system", Name: "west-kubeconfig"},
		Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfigFor(t, cfg, cfg.Host)}}
	if err := hub.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	woken := map[string]int{}
	versions := &countingReader{Reader: hub}
	live := &countingReader{Reader: hub}
	r := &Registry{Reader: live, Versions: versions, Namespace: "mrtr-system", Scheme: scheme.Scheme,
		CacheOptions: func() cache.Options { return cache.Options{} }, Scoped: []client.Object{&corev1.Pod{}, &appsv1.Deployment{}},
		SyncTimeout: 10 * time.Second, HealthEvery: 500 * time.Millisecond, HealthTimeout: time.Second, Now: time.Now,
		Changed: func(_ string, keyrings []string) {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keyrings {
				woken[k]++
			}
		}}
	t.Cleanup(func() { r.Retain(nil) })
	eventually := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); {
			if time.Now().After(deadline) {
				t.Fatalf("never %s", what)
			}
			time.Sleep(50 * time.Millisecond) // polling a state another goroutine settles
		}
	}
	if _, st := r.Ensure(ctx, "west-kubeconfig"); !st.Connecting || st.Reachable {
		t.Fatalf("a member just started: %+v, want connecting", st)
	}
	eventually("reached west", func() bool {
		_, st := r.Ensure(ctx, "west-kubeconfig")
		if st.Reachable && st.Connecting {
			t.Fatalf("reachable and connecting: %+v", st)
		}
		return st.Reachable
	})
	// The kubeconfig Secret's data is read again only when its resourceVersion changes.
	reads := live.n.Load()
	for range 3 {
		r.Ensure(ctx, "west-kubeconfig")
	}
	if got := live.n.Load(); got != reads || versions.n.Load() == 0 {
		t.Fatalf("the unchanged kubeconfig Secret was read live %d more times (its metadata %d times)", got-reads, versions.n.Load())
	}

	c := r.Cluster("west-kubeconfig").GetCache()
	list := func(opts ...client.ListOption) ([]string, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, opts...); err != nil {
			return nil, err
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, nil
	}
	if _, err := list(client.InNamespace("blue")); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pods of blue before any selection: %v, want ErrNotSelected", err)
	}
	syncing, _, err := r.Select("west-kubeconfig", "k", []string{"blue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(syncing) == 1 {
		if _, err := list(client.InNamespace("blue")); err != nil && !errors.Is(err, ErrSyncing) {
			t.Fatalf("pods of blue while syncing: %v, want ErrSyncing", err)
		}
	}
	eventually("synced blue", func() bool {
		syncing, _, err = r.Select("west-kubeconfig", "k", []string{"blue"})
		return err == nil && len(syncing) == 0
	})
	if names, err := list(client.InNamespace("blue")); err != nil || !slices.Equal(names, []string{"b1"}) {
		t.Fatalf("pods of blue: %v, %v", names, err)
	}
	if _, err := list(client.InNamespace("green")); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pods of green, selected by none: %v, want ErrNotSelected", err)
	}
	if _, err := list(); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pods of all namespaces: %v, want ErrNotSelected", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "green", Name: "g1"}, &corev1.Pod{}); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pod green/g1: %v, want ErrNotSelected", err)
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("an informer of every pod: %v, want ErrNotSelected", err)
	}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss); err != nil || len(nss.Items) < 3 {
		t.Fatalf("namespaces, cluster-wide: %d, %v", len(nss.Items), err)
	}

	// A pod's change wakes the keyrings selecting its namespace.
	mu.Lock()
	before := woken["k"]
	mu.Unlock()
	pod("blue", "b2")
	eventually("woke k for blue/b2", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return woken["k"] > before
	})
	eventually("cached blue/b2", func() bool {
		names, err := list(client.InNamespace("blue"))
		return err == nil && slices.Equal(names, []string{"b1", "b2"})
	})
	// So does a workload's: a Restart delivery waits on them.
	mu.Lock()
	before = woken["k"]
	mu.Unlock()
	labels := map[string]string{"app": "web"}
	if err := hub.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "blue", Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}); err != nil {
		t.Fatal(err)
	}
	eventually("woke k for the Deployment blue/web", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return woken["k"] > before
	})
	eventually("cached the Deployment blue/web", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "blue", Name: "web"}, &appsv1.Deployment{}) == nil
	})
	if err := c.Get(ctx, client.ObjectKey{Namespace: "green", Name: "web"}, &appsv1.Deployment{}); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("a Deployment in green: %v, want ErrNotSelected", err)
	}

	// Another keyring selects green; k moves from blue to green: blue is dropped.
	if _, _, err := r.Select("west-kubeconfig", "other", []string{"green"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Select("west-kubeconfig", "k", []string{"green"}); err != nil {
		t.Fatal(err)
	}
	if _, err := list(client.InNamespace("blue")); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pods of blue, no longer selected: %v, want ErrNotSelected", err)
	}
	eventually("read green", func() bool {
		names, err := list(client.InNamespace("green"))
		return err == nil && slices.Equal(names, []string{"g1"})
	})
	// Retain drops the selection of a keyring that no longer names the member.
	r.Retain(map[string][]string{"west-kubeconfig": {"other"}})
	if names, err := list(client.InNamespace("green")); err != nil || len(names) != 1 {
		t.Fatalf("green, still selected by other: %v, %v", names, err)
	}
	r.Retain(map[string][]string{"west-kubeconfig": {}})
	if _, err := list(client.InNamespace("green")); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("pods of green, selected by none: %v, want ErrNotSelected", err)
	}
}

// countingReader counts its Gets.
type countingReader struct {
	client.Reader
	n atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestRegistryMemberThatStopsAnswering checks that a read past a member's cache gives up after
// HealthTimeout when the member stops answering, as its client's do, rather than holding the
// worker until the pass's own context ends; and that a namespace selected then is syncing, then
// late, and never read as empty.
func TestRegistryMemberThatStopsAnswering(t *testing.T) {
	cfg, hub := startAPIServer(t)
	ctx := context.Background()
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mrtr-system"}}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := newMute(t, u.Host)
	if err := hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mrtr-system", Name: "west-kubeconfig"},
		Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfigFor(t, cfg, "https://"+p.addr)}}); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Reader: hub, Namespace: "mrtr-system", Scheme: scheme.Scheme, CacheOptions: func() cache.Options { return cache.Options{} },
		Scoped: []client.Object{&corev1.Pod{}}, SyncTimeout: 2 * time.Second, HealthEvery: 500 * time.Millisecond, HealthTimeout: time.Second, Now: time.Now}
	t.Cleanup(func() { r.Retain(nil) })
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, st := r.Ensure(ctx, "west-kubeconfig"); st.Reachable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never reached west")
		}
		time.Sleep(100 * time.Millisecond) // polling a state another goroutine settles
	}
	p.mute.Store(true)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = r.Cluster("west-kubeconfig").GetAPIReader().Get(rctx, client.ObjectKey{Namespace: "default", Name: "x"}, &corev1.Secret{})
	// The request carries its own timeout (client-go names it in the request, and ends it then).
	if err == nil || rctx.Err() != nil || !strings.Contains(err.Error(), "timeout=1s") {
		t.Fatalf("a read of a member that does not answer: %v (the caller's context: %v), want its own timeout of 1s", err, rctx.Err())
	}

	// A namespace selected now cannot sync: it is syncing, a read there is ErrSyncing (never an
	// empty list), and past SyncTimeout it is late.
	syncing, late, err := r.Select("west-kubeconfig", "k", []string{"default"})
	if err != nil || !slices.Equal(syncing, []string{"default"}) || len(late) != 0 {
		t.Fatalf("a namespace selected in a member that does not answer: syncing %v, late %v, %v", syncing, late, err)
	}
	if err := r.Cluster("west-kubeconfig").GetCache().List(ctx, &corev1.PodList{}, client.InNamespace("default")); !errors.Is(err, ErrSyncing) {
		t.Fatalf("pods of a namespace whose cache has not synced: %v, want ErrSyncing", err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(late) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the namespace never was late")
		}
		time.Sleep(100 * time.Millisecond) // polling a state another goroutine settles
		if _, late, err = r.Select("west-kubeconfig", "k", []string{"default"}); err != nil {
			t.Fatal(err)
		}
	}
}

// mute is a TCP proxy in front of an API server that, once muted, forwards requests but drops
// every answer: a member that stops answering, its connections open.
type mute struct {
	addr string
	mute atomic.Bool
}

func newMute(t *testing.T, target string) *mute {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	m := &mute{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			t.Cleanup(func() { _ = c.Close(); _ = up.Close() })
			go func() { _, _ = io.Copy(up, c) }()
			go func() {
				buf := make([]byte, 32*1024)
				for {
					n, err := up.Read(buf)
					if n > 0 && !m.mute.Load() {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return m
}

// TestRegistryInformsOfAKindServedLater checks that a scoped kind the member did not serve when a
// namespace's cache was made (a CRD installed since) is held and informed there once it is
// indexed, as the controller indexes a workload kind it finds served later: its objects are read,
// and their changes wake the keyrings selecting the namespace.
func TestRegistryInformsOfAKindServedLater(t *testing.T) {
	cfg, hub := startAPIServer(t)
	ctx := context.Background()
	for _, ns := range []string{"mrtr-system", "blue"} {
		if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mrtr-system", Name: "west-kubeconfig"},
		Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfigFor(t, cfg, cfg.Host)}}); err != nil {
		t.Fatal(err)
	}
	widget := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		return u
	}
	var mu sync.Mutex
	woken := 0
	r := &Registry{Reader: hub, Namespace: "mrtr-system", Scheme: scheme.Scheme, CacheOptions: func() cache.Options { return cache.Options{} },
		Scoped: []client.Object{&corev1.Pod{}, widget()}, SyncTimeout: 10 * time.Second, HealthEvery: 500 * time.Millisecond,
		HealthTimeout: time.Second, Now: time.Now,
		Changed: func(_ string, keyrings []string) {
			if slices.Contains(keyrings, "k") {
				mu.Lock()
				woken++
				mu.Unlock()
			}
		}}
	t.Cleanup(func() { r.Retain(nil) })
	eventually := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); {
			if time.Now().After(deadline) {
				t.Fatalf("never %s", what)
			}
			time.Sleep(50 * time.Millisecond) // polling a state another goroutine settles
		}
	}
	eventually("reached west", func() bool { _, st := r.Ensure(ctx, "west-kubeconfig"); return st.Reachable })
	eventually("synced blue", func() bool {
		syncing, _, err := r.Select("west-kubeconfig", "k", []string{"blue"})
		return err == nil && len(syncing) == 0
	})

	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true)}}}}}}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	c := r.Cluster("west-kubeconfig")
	if err := c.GetFieldIndexer().IndexField(ctx, widget(), "name", func(o client.Object) []string { return []string{o.GetName()} }); err != nil {
		t.Fatalf("index the Widgets the member serves now: %v", err)
	}
	mu.Lock()
	before := woken
	mu.Unlock()
	w := widget()
	w.SetNamespace("blue")
	w.SetName("w1")
	if err := hub.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	eventually("woke k for the Widget blue/w1", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return woken > before
	})
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WidgetList"})
	if err := c.GetCache().List(ctx, list, client.InNamespace("blue"), client.MatchingFields{"name": "w1"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("the Widgets of blue by index: %d, %v", len(list.Items), err)
	}
}

// proxy is a TCP proxy to target that can be cut (the listener and every connection closed: the
// member's API server gone, as the hub sees it) and mended on the same address.
type proxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func (p *proxy) mend(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// TestRegistryRenewsAMemberThatAnswersAgain: a member lost after its cache synced, and back, is
// reached through a new cache, which holds what changed there meanwhile as soon as it is reported
// reachable; the old cache's watches, backed off by client-go, would still miss it.
func TestRegistryRenewsAMemberThatAnswersAgain(t *testing.T) {
	cfg, direct := startAPIServer(t)
	ctx := context.Background()
	const ns = "mrtr-system"
	if err := direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: u.Host, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	p.mend(t)
	t.Cleanup(p.cut)
	if err := direct.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "west-kubeconfig"},
		Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfigFor(t, cfg, "https://"+p.addr)}}); err != nil {
		t.Fatal(err)
	}
	r := &Registry{Reader: direct, Namespace: ns, Scheme: scheme.Scheme, CacheOptions: func() cache.Options { return cache.Options{} },
		SyncTimeout: 2 * time.Second, HealthEvery: 200 * time.Millisecond, HealthTimeout: time.Second, Now: time.Now}
	t.Cleanup(func() { r.Retain(nil) })
	eventually := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !f(); {
			if time.Now().After(deadline) {
				t.Fatalf("never %s", what)
			}
			time.Sleep(50 * time.Millisecond) // polling a state another goroutine settles
		}
	}
	reachable := func() bool { _, st := r.Ensure(ctx, "west-kubeconfig"); return st.Reachable }
	eventually("reached west", reachable)
	before := r.Cluster("west-kubeconfig")

	p.cut()
	eventually("found west lost", func() bool { return !reachable() })
	// Changed while the hub could not see it; the lost cache's watches back off meanwhile.
	changed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "made-while-lost"}}
	if err := direct.Create(ctx, changed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a few failed watch attempts, so that client-go backs them off
	p.mend(t)

	var c client.Client
	eventually("reached west again", func() bool {
		var st State
		c, st = r.Ensure(ctx, "west-kubeconfig")
		return st.Reachable
	})
	if r.Cluster("west-kubeconfig") == before {
		t.Fatal("west answers again through the cluster (and cache) it was lost with")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(changed), &corev1.Secret{}); err != nil {
		t.Fatalf("once west is reachable again, its cache does not hold what changed while it was lost: %v", err)
	}
}
