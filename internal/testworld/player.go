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

package testworld

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// defaultWorkers is how many writes a Player has in flight unless told otherwise: enough that a
// rotation of thousands of keyrings at once never waits for it.
const defaultWorkers = 8

// secretIndex indexes the Player's pods by the Secrets they mount.
const secretIndex = "testworld.mrtr.dev/mounted-secrets"

// Player plays a healthy cluster that keeps up, against an informer cache: every Deployment,
// StatefulSet and DaemonSet whose generation its status has not observed is rolled out at once
// (RollOut, Complete), and, with Acknowledge, every pod that mounts a keyring Secret acknowledges
// each keyring the Secret holds, as its server would once it reloaded it (Acknowledge). It reads
// from Cache and writes through Client.
type Player struct {
	Client client.Client
	Cache  cache.Cache
	// Acknowledge makes the pods acknowledge their keyrings (Reload delivery). Without it the
	// pods are objects nobody runs, as in Restart delivery, where a rollout is the proof.
	Acknowledge bool
	// Workers is how many writes are in flight at most; 0 means 8.
	Workers int

	// OnKeyring, if set, is called with each keyring a Secret is seen holding that differs from
	// the one before, and when the watch delivered it.
	OnKeyring func(secret types.NamespacedName, kr *keyring.Keyring, at time.Time)
	// OnRolledOut, if set, is called once a workload's rollout of the template stamped with the
	// keyring fingerprint fp was written.
	OnRolledOut func(obj types.NamespacedName, fp string, at time.Time)
	// OnAcknowledged, if set, is called once every pod that mounts the Secret acknowledged its
	// keyring of fingerprint fp.
	OnAcknowledged func(secret types.NamespacedName, fp string, at time.Time)

	mu       sync.Mutex
	loaded   map[types.NamespacedName]string // the last keyring fingerprint each Secret held
	rollouts workqueue.TypedRateLimitingInterface[workloadKey]
	acks     workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// workloadKey names a workload to roll out.
type workloadKey struct {
	kind workload.Kind
	types.NamespacedName
}

// Start registers the Player's handlers and index on the cache, which must not have started yet
// (an index cannot be added to a running informer), and starts the workers, which run until ctx
// ends and act once the cache has started and synced.
func (p *Player) Start(ctx context.Context) error {
	if p.Client == nil || p.Cache == nil {
		return errors.New("testworld: a Player needs a Client and a Cache")
	}
	p.loaded = map[types.NamespacedName]string{}
	p.rollouts = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[workloadKey]())
	p.acks = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	for _, kind := range []workload.Kind{workload.Deployment, workload.StatefulSet, workload.DaemonSet} {
		if err := p.watch(ctx, emptyObject(kind), func(o any) { p.workloadChanged(kind, o) }); err != nil {
			return err
		}
	}
	if err := p.watch(ctx, &corev1.Secret{}, p.secretChanged); err != nil {
		return err
	}
	if p.Acknowledge {
		if err := p.Cache.IndexField(ctx, &corev1.Pod{}, secretIndex, func(obj client.Object) []string {
			pod, _ := obj.(*corev1.Pod)
			return workload.MountedSecrets(pod)
		}); err != nil {
			return fmt.Errorf("testworld: index pods by Secret: %w", err)
		}
		// Only a new pod: a server loads its keyring when it starts, and after that only when the
		// Secret changes, whatever else changes on its Pod.
		inf, err := p.Cache.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			return fmt.Errorf("testworld: watch pods: %w", err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: p.podStarted}); err != nil {
			return err
		}
	}
	go func() {
		<-ctx.Done()
		p.rollouts.ShutDown()
		p.acks.ShutDown()
	}()
	for range p.workers() {
		go work(ctx, p.rollouts, p.rollOut)
		go work(ctx, p.acks, p.acknowledge)
	}
	return nil
}

func (p *Player) workers() int {
	if p.Workers > 0 {
		return p.Workers
	}
	return defaultWorkers
}

// watch calls changed with every object of obj's kind the cache adds or updates.
func (p *Player) watch(ctx context.Context, obj client.Object, changed func(any)) error {
	inf, err := p.Cache.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("testworld: watch %T: %w", obj, err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { changed(o) },
		UpdateFunc: func(_, o any) { changed(o) },
	})
	return err
}

func work[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], fn func(context.Context, T) error) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		if err := fn(ctx, key); err != nil && ctx.Err() == nil {
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func (p *Player) workloadChanged(kind workload.Kind, obj any) {
	if o, ok := obj.(client.Object); ok && !observed(o) {
		p.rollouts.Add(workloadKey{kind: kind, NamespacedName: client.ObjectKeyFromObject(o)})
	}
}

// emptyObject is an object of one of the kinds a Player rolls out.
func emptyObject(kind workload.Kind) client.Object {
	switch kind {
	case workload.StatefulSet:
		return &appsv1.StatefulSet{}
	case workload.DaemonSet:
		return &appsv1.DaemonSet{}
	}
	return &appsv1.Deployment{}
}

// observed says whether obj's status has observed its generation, and so whether its controller
// has nothing left to do.
func observed(obj client.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Status.ObservedGeneration >= o.Generation
	case *appsv1.StatefulSet:
		return o.Status.ObservedGeneration >= o.Generation
	case *appsv1.DaemonSet:
		return o.Status.ObservedGeneration >= o.Generation
	}
	return true
}

// rollOut completes the rollout of a workload whose status has not observed its generation. The
// status write is refused if the template changed since the cache showed it; the update event of
// that change brings the workload back here.
func (p *Player) rollOut(ctx context.Context, key workloadKey) error {
	obj := emptyObject(key.kind)
	if err := p.Cache.Get(ctx, key.NamespacedName, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if observed(obj) {
		return nil
	}
	if err := rollOut(ctx, p.Client, obj, Complete); err != nil {
		return client.IgnoreNotFound(err)
	}
	if p.OnRolledOut != nil {
		p.OnRolledOut(key.NamespacedName, workload.Fingerprint(obj), time.Now())
	}
	return nil
}

// secretChanged records the keyring a Secret holds, and has its pods acknowledge a new one.
func (p *Player) secretChanged(obj any) {
	at := time.Now() // before parsing: when the write reached the Player
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	kr, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	if err != nil {
		return // not a keyring Secret (or not yet a valid one): nothing a server would load
	}
	key := client.ObjectKeyFromObject(s)
	fp := kr.Fingerprint()
	p.mu.Lock()
	changed := p.loaded[key] != fp
	p.loaded[key] = fp
	p.mu.Unlock()
	if !changed {
		return
	}
	if p.OnKeyring != nil {
		p.OnKeyring(key, kr, at)
	}
	if p.Acknowledge {
		p.acks.Add(key)
	}
}

// podStarted has a new pod acknowledge the keyring its Secret holds, as its server does once it
// started and loaded it.
func (p *Player) podStarted(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range workload.MountedSecrets(pod) {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: s}
		if fp, ok := p.loaded[key]; ok && pod.Annotations[ack.AnnotationKey(s)] != fp {
			p.acks.Add(key)
		}
	}
}

// acknowledge writes, on every pod that mounts the Secret and has not acknowledged it yet, the
// acknowledgement of the last keyring the Secret was seen holding.
func (p *Player) acknowledge(ctx context.Context, key types.NamespacedName) error {
	p.mu.Lock()
	fp, ok := p.loaded[key]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	var pods corev1.PodList
	if err := p.Cache.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingFields{secretIndex: key.Name}); err != nil {
		return err
	}
	annotation := ack.AnnotationKey(key.Name)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Annotations[annotation] == fp || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if err := Acknowledge(ctx, p.Client, pod, key.Name, fp); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if p.OnAcknowledged != nil && len(pods.Items) > 0 {
		p.OnAcknowledged(key, fp, time.Now())
	}
	return nil
}
