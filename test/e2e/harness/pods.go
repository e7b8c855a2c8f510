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
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodNetwork follows the pods of some namespaces on the real node, where the kubelet runs them as
// containers, and keeps the Balancer's backends on their pod network addresses: one backend per
// Ready pod that is not terminating, at its IP and the server's port. It is what a Service's
// endpoints are, kept by the harness so that the balancer stays round-robin (kube-proxy's choice is
// random) and can say which replica answered. Over several namespaces it is one balancer over all
// their pods, as a gateway in front of one server deployed per tenant namespace is.
type PodNetwork struct {
	Cache crcache.Cache
	// Namespaces are the namespaces followed from Run on; Follow and Forget change them.
	Namespaces []string
	Balancer   *Balancer
	// Port is the servers' port in the pods.
	Port int

	mu       sync.Mutex
	followed map[string]bool
	serving  map[string]podBackend // by pod name
}

// podBackend is a serving pod's namespace and address.
type podBackend struct{ namespace, addr string }

// Run starts following the pods and returns once the handler is registered.
func (n *PodNetwork) Run(ctx context.Context) error {
	n.serving, n.followed = map[string]podBackend{}, map[string]bool{}
	for _, ns := range n.Namespaces {
		n.followed[ns] = true
	}
	inf, err := n.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { n.follow(o, false) },
		UpdateFunc: func(_, o any) { n.follow(o, false) },
		DeleteFunc: func(o any) { n.follow(o, true) },
	})
	return err
}

func (n *PodNetwork) follow(obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, gone = tomb.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.followed[pod.Namespace] {
		return
	}
	addr := ""
	if !gone && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" && podReady(pod) {
		addr = net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(n.Port))
	}
	switch addr {
	case n.serving[pod.Name].addr:
	case "":
		delete(n.serving, pod.Name)
		n.Balancer.Remove(pod.Name)
	default:
		n.serving[pod.Name] = podBackend{pod.Namespace, addr}
		n.Balancer.Add(pod.Name, addr)
	}
}

// Follow adds namespace's pods to the balancer: those serving now, and those that serve later.
func (n *PodNetwork) Follow(ctx context.Context, namespace string) error {
	n.mu.Lock()
	n.followed[namespace] = true
	n.mu.Unlock()
	var pods corev1.PodList
	if err := n.Cache.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range pods.Items {
		n.follow(&pods.Items[i], false)
	}
	return nil
}

// Forget takes namespace's pods out of the balancer; no new request goes to them once it returns.
func (n *PodNetwork) Forget(namespace string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.followed, namespace)
	for name, b := range n.serving {
		if b.namespace == namespace {
			delete(n.serving, name)
			n.Balancer.Remove(name)
		}
	}
}

// Serving returns the address of every serving pod, by pod name.
func (n *PodNetwork) Serving() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(n.serving))
	for name, b := range n.serving {
		out[name] = b.addr
	}
	return out
}
