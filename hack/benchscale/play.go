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

package main

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// playWorkers is how many status writes or acknowledgements the harness has in flight: enough that
// a rotation of thousands of keyrings at once never waits for the harness.
const playWorkers = 8

// secretVersion is one keyring a Secret held, as the harness's watch saw it arrive.
type secretVersion struct {
	at          time.Time
	fingerprint string
	ids         []string
}

// recorder keeps what the timings are computed from: every keyring each Secret held, stamped when
// the harness's watch delivered it, and when the harness completed each keyring's rollout (its
// rolled-out status write, or in Reload delivery its acknowledgement, returned), first time per
// fingerprint. Both ends are seen from the harness, so the latency between them includes one watch
// delivery, as the operator's own view of a rollout does.
type recorder struct {
	mu        sync.Mutex
	secrets   map[types.NamespacedName][]secretVersion
	completed map[types.NamespacedName]map[string]time.Time
}

func newRecorder() *recorder {
	return &recorder{secrets: map[types.NamespacedName][]secretVersion{},
		completed: map[types.NamespacedName]map[string]time.Time{}}
}

// secretSeen records the Secret's keyring if it differs from the last one seen, and says so.
func (r *recorder) secretSeen(key types.NamespacedName, v secretVersion) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.secrets[key]
	if len(h) > 0 && h[len(h)-1].fingerprint == v.fingerprint {
		return false
	}
	r.secrets[key] = append(h, v)
	return true
}

// latestSecret is the fingerprint of the last keyring the Secret was seen holding.
func (r *recorder) latestSecret(key types.NamespacedName) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.secrets[key]
	if len(h) == 0 {
		return "", false
	}
	return h[len(h)-1].fingerprint, true
}

// rolloutCompleted records that the harness completed the rollout of fingerprint fp at at, unless
// an earlier completion of fp was recorded.
func (r *recorder) rolloutCompleted(key types.NamespacedName, fp string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.completed[key]
	if m == nil {
		m = map[string]time.Time{}
		r.completed[key] = m
	}
	if _, ok := m[fp]; !ok {
		m[fp] = at
	}
}

// snapshot copies what was recorded, for computing the timings without the lock.
func (r *recorder) snapshot() (map[types.NamespacedName][]secretVersion, map[types.NamespacedName]map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(map[types.NamespacedName][]secretVersion, len(r.secrets))
	for k, v := range r.secrets {
		s[k] = append([]secretVersion(nil), v...)
	}
	c := make(map[types.NamespacedName]map[string]time.Time, len(r.completed))
	for k, v := range r.completed {
		m := make(map[string]time.Time, len(v))
		maps.Copy(m, v)
		c[k] = m
	}
	return s, c
}

// player plays, against the harness's cache, what envtest lacks: the Deployment controller (every
// Deployment whose generation its status has not observed is rolled out at once) and, in Reload
// delivery, each pod's acknowledgement of every keyring its Secret gets.
type player struct {
	client      client.Client
	cache       cache.Cache
	rec         *recorder
	reload      bool
	deployments workqueue.TypedRateLimitingInterface[types.NamespacedName]
	acks        workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// newPlayer registers the player's handlers on the cache's informers; run starts its workers.
func newPlayer(ctx context.Context, c client.Client, ca cache.Cache, rec *recorder, reload bool) (*player, error) {
	p := &player{client: c, cache: ca, rec: rec, reload: reload,
		deployments: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		acks:        workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
	di, err := ca.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	if _, err := di.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    p.deploymentChanged,
		UpdateFunc: func(_, obj any) { p.deploymentChanged(obj) },
	}); err != nil {
		return nil, err
	}
	si, err := ca.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, err
	}
	if _, err := si.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    p.secretChanged,
		UpdateFunc: func(_, obj any) { p.secretChanged(obj) },
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// run processes both queues until ctx ends.
func (p *player) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		p.deployments.ShutDown()
		p.acks.ShutDown()
	}()
	for range playWorkers {
		go work(ctx, p.deployments, p.rollOut)
		go work(ctx, p.acks, p.acknowledge)
	}
}

func work(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName],
	fn func(context.Context, types.NamespacedName) error) {
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

func (p *player) deploymentChanged(obj any) {
	if d, ok := obj.(*appsv1.Deployment); ok && d.Generation > d.Status.ObservedGeneration {
		p.deployments.Add(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
	}
}

// rollOut writes the status of a Deployment whose rollout completed at once: every replica updated,
// ready and available, the current generation observed (what the operator reads, see
// internal/controller/kubecontroller_test.go rollOut). A merge patch without a resourceVersion
// never conflicts: if the template changed again meanwhile, the generation written is older than
// the new one, and the update event of that change brings the Deployment back here.
func (p *player) rollOut(ctx context.Context, key types.NamespacedName) error {
	var d appsv1.Deployment
	if err := p.cache.Get(ctx, key, &d); err != nil {
		return client.IgnoreNotFound(err)
	}
	if d.Generation <= d.Status.ObservedGeneration {
		return nil
	}
	n := int32(1)
	if d.Spec.Replicas != nil {
		n = *d.Spec.Replicas
	}
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`,
		d.Generation, n, n, n, n)
	if err := p.client.Status().Patch(ctx, &d, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !p.reload {
		p.rec.rolloutCompleted(key, d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation], time.Now())
	}
	return nil
}

// secretChanged records the keyring a Secret holds, and in Reload delivery has its pod
// acknowledge it.
func (p *player) secretChanged(obj any) {
	at := time.Now() // before parsing: the time the write reached the harness
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	kr, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	if err != nil {
		return // not a keyring Secret (or not yet a valid one): nothing a server would load
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	if p.rec.secretSeen(key, secretVersion{at: at, fingerprint: kr.Fingerprint(), ids: kr.IDs()}) && p.reload {
		p.acks.Add(key)
	}
}

// acknowledge writes on the Secret's pod the acknowledgement of the last keyring the Secret was
// seen holding, as the ack package of a server that reloaded it would. The pod and the Secret of a
// target share its name (see target).
func (p *player) acknowledge(ctx context.Context, key types.NamespacedName) error {
	fp, ok := p.rec.latestSecret(key)
	if !ok {
		return nil
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: target{key.Namespace, key.Name}.podName()}}
	patch := client.RawPatch(types.MergePatchType, ack.Patch(key.Name, fp))
	if err := p.client.Patch(ctx, pod, patch, client.FieldOwner(ack.FieldManager)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	p.rec.rolloutCompleted(key, fp, time.Now())
	return nil
}
