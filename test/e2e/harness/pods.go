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
	"maps"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// PodNetwork follows the pods of a namespace on the real node, where the kubelet runs them as
// containers, and keeps the Balancer's backends on their pod network addresses: one backend per
// Ready pod that is not terminating, at its IP and the server's port. It is what a Service's
// endpoints are, kept by the harness so that the balancer stays round-robin (kube-proxy's choice is
// random) and can say which replica answered.
type PodNetwork struct {
	Cache     crcache.Cache
	Namespace string
	Balancer  *Balancer
	// Port is the servers' port in the pods.
	Port int

	mu      sync.Mutex
	serving map[string]string // pod name: its address
}

// Run starts following the pods and returns once the handler is registered.
func (n *PodNetwork) Run(ctx context.Context) error {
	n.serving = map[string]string{}
	inf, err := n.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	follow := func(obj any, gone bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, gone = tomb.Obj, true
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Namespace != n.Namespace {
			return
		}
		addr := ""
		if !gone && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" && podReady(pod) {
			addr = net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(n.Port))
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		switch addr {
		case n.serving[pod.Name]:
		case "":
			delete(n.serving, pod.Name)
			n.Balancer.Remove(pod.Name)
		default:
			n.serving[pod.Name] = addr
			n.Balancer.Add(pod.Name, addr)
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { follow(o, false) },
		UpdateFunc: func(_, o any) { follow(o, false) },
		DeleteFunc: func(o any) { follow(o, true) },
	})
	return err
}

// Serving returns the address of every serving pod, by pod name.
func (n *PodNetwork) Serving() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.serving)
}
