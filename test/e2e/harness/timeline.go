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
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// EventKind says what a timeline Event records.
type EventKind string

const (
	// EventPhase: the keyring's status.phase changed (Phase).
	EventPhase EventKind = "phase"
	// EventSecret: the Secret's keyring changed (KeyIDs, Fingerprint; Phase, the phase the write
	// entered).
	EventSecret EventKind = "secret"
	// EventStamp: the Deployment's pod template got a new fingerprint (Fingerprint, Generation).
	EventStamp EventKind = "stamp"
	// EventRolledOut: the Deployment finished rolling out its current template (Fingerprint).
	EventRolledOut EventKind = "rolledOut"
	// EventPodAdded and EventPodDeleted: a pod of the namespace appeared or went (Pod).
	EventPodAdded   EventKind = "podAdded"
	EventPodDeleted EventKind = "podDeleted"
	// EventAck: a pod acknowledged a keyring (Pod, Fingerprint).
	EventAck EventKind = "ack"
)

// Event is one change the Timeline saw, stamped with the time this process saw it.
type Event struct {
	At          time.Time
	Kind        EventKind
	Phase       mrtrv1alpha1.Phase
	KeyIDs      []string
	Fingerprint string
	Generation  int64
	Pod         string
	// RV is the resourceVersion of the object the event was seen on, for the Secret, pod and
	// acknowledgement events: etcd's revision, so it orders writes to different objects, which
	// times seen through two watches cannot.
	RV uint64
}

func (e Event) String() string {
	switch e.Kind {
	case EventPhase:
		return "phase " + string(e.Phase)
	case EventSecret:
		return fmt.Sprintf("secret [%s] %s", strings.Join(e.KeyIDs, ", "), e.Fingerprint)
	case EventStamp:
		return fmt.Sprintf("template stamped %s (generation %d)", e.Fingerprint, e.Generation)
	case EventPodAdded:
		return "pod " + e.Pod + " added"
	case EventPodDeleted:
		return "pod " + e.Pod + " deleted"
	case EventAck:
		return fmt.Sprintf("pod %s acknowledged %s", e.Pod, e.Fingerprint)
	default:
		return fmt.Sprintf("rolled out %s", e.Fingerprint)
	}
}

// Timeline records, from watches, what the operator and the Deployment controller do to one keyring,
// its Secret and one Deployment: the raw material for the suite's assertions and the demo's lines.
type Timeline struct {
	Namespace, Keyring, Secret, Deployment string
	// ArgoRollout: the workload named Deployment is an Argo Rollout (Options.ArgoRollout), whose
	// stamps and rollouts the timeline records in the Deployment's place.
	ArgoRollout bool
	// ClusterKeyring: Keyring is a ClusterMRTRKeyring (its phases), and Namespace the one of its
	// namespaces whose Secret, Deployment and pods are recorded.
	ClusterKeyring bool
	// OnEvent, if set, is called with each event as it is recorded (on an informer goroutine).
	OnEvent func(Event)

	mu         sync.Mutex
	events     []Event
	phase      mrtrv1alpha1.Phase
	secretFP   string
	stamp      string
	rolledOut  string
	ttlUntil   map[string]time.Time // status.ttlWaitUntil values seen, by their RFC 3339 text
	ttlUntilSq []time.Time
	acks       map[string]string // the last acknowledgement of each pod
}

// Run registers the watches; events are recorded until the cache stops.
func (t *Timeline) Run(ctx context.Context, c crcache.Cache) error {
	t.ttlUntil, t.acks = map[string]time.Time{}, map[string]string{}
	var keyringObj client.Object = &mrtrv1alpha1.MRTRKeyring{}
	if t.ClusterKeyring {
		keyringObj = &mrtrv1alpha1.ClusterMRTRKeyring{}
	}
	type watch struct {
		obj    client.Object
		handle func(any)
	}
	watches := []watch{
		{keyringObj, t.keyringChanged},
		{&corev1.Secret{}, t.secretChanged},
		{&appsv1.Deployment{}, t.deploymentChanged},
		{&corev1.Pod{}, t.podChanged},
	}
	if t.ArgoRollout {
		ro := &unstructured.Unstructured{}
		ro.SetGroupVersionKind(RolloutGVK)
		watches = append(watches, watch{ro, t.rolloutChanged})
	}
	for _, w := range watches {
		handle := w.handle
		inf, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: handle, UpdateFunc: func(_, o any) { handle(o) }, DeleteFunc: t.podDeleted,
		}); err != nil {
			return err
		}
	}
	return nil
}

func rv(obj client.Object) uint64 {
	n, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return n
}

func (t *Timeline) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Namespace != t.Namespace {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fp, known := t.acks[p.Name]
	if !known {
		t.acks[p.Name] = ""
		t.record(Event{Kind: EventPodAdded, Pod: p.Name, RV: rv(p)})
	}
	if a := p.Annotations[ack.AnnotationKey(t.Secret)]; a != "" && a != fp {
		t.acks[p.Name] = a
		t.record(Event{Kind: EventAck, Pod: p.Name, Fingerprint: a, RV: rv(p)})
	}
}

func (t *Timeline) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Namespace != t.Namespace {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.acks, p.Name)
	t.record(Event{Kind: EventPodDeleted, Pod: p.Name, RV: rv(p)})
}

// Events returns the events so far, in order.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// TTLWaitUntils returns the distinct status.ttlWaitUntil values seen, in order.
func (t *Timeline) TTLWaitUntils() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Time(nil), t.ttlUntilSq...)
}

func (t *Timeline) record(e Event) {
	e.At = time.Now()
	t.events = append(t.events, e)
	if t.OnEvent != nil {
		t.OnEvent(e)
	}
}

func (t *Timeline) keyringChanged(obj any) {
	var status *mrtrv1alpha1.MRTRKeyringStatus
	switch k := obj.(type) {
	case *mrtrv1alpha1.MRTRKeyring:
		if k.Namespace == t.Namespace && k.Name == t.Keyring {
			status = &k.Status
		}
	case *mrtrv1alpha1.ClusterMRTRKeyring:
		if k.Name == t.Keyring {
			status = &k.Status.MRTRKeyringStatus
		}
	}
	if status == nil {
		return
	}
	k := obj.(client.Object)
	t.mu.Lock()
	defer t.mu.Unlock()
	if u := status.TTLWaitUntil; u != nil {
		s := u.UTC().Format(time.RFC3339Nano)
		if _, seen := t.ttlUntil[s]; !seen {
			t.ttlUntil[s] = u.Time
			t.ttlUntilSq = append(t.ttlUntilSq, u.Time)
		}
	}
	if status.Phase != "" && status.Phase != t.phase {
		t.phase = status.Phase
		t.record(Event{Kind: EventPhase, Phase: status.Phase, RV: rv(k)})
	}
}

func (t *Timeline) secretChanged(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Namespace != t.Namespace || s.Name != t.Secret {
		return
	}
	r, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Fingerprint() != t.secretFP {
		t.secretFP = r.Fingerprint()
		t.record(Event{Kind: EventSecret, KeyIDs: r.IDs(), Fingerprint: r.Fingerprint(), RV: rv(s),
			Phase: mrtrv1alpha1.Phase(s.Annotations[mrtrv1alpha1.PhaseAnnotation])})
	}
}

func (t *Timeline) deploymentChanged(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d.Namespace != t.Namespace || d.Name != t.Deployment {
		return
	}
	t.workloadChanged(d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation], d.Generation, RolledOut(d))
}

func (t *Timeline) rolloutChanged(obj any) {
	ro, ok := obj.(*unstructured.Unstructured)
	if !ok || ro.GetNamespace() != t.Namespace || ro.GetName() != t.Deployment {
		return
	}
	t.workloadChanged(rolloutStamp(ro), ro.GetGeneration(), RolloutRolledOut(ro))
}

// workloadChanged records the stamp and the rollout of the workload's template fingerprint fp.
func (t *Timeline) workloadChanged(fp string, generation int64, rolledOut bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fp != t.stamp {
		t.stamp = fp
		t.record(Event{Kind: EventStamp, Fingerprint: fp, Generation: generation})
	}
	if fp != "" && fp != t.rolledOut && rolledOut {
		t.rolledOut = fp
		t.record(Event{Kind: EventRolledOut, Fingerprint: fp, Generation: generation})
	}
}

// RolledOut is `kubectl rollout status` for a Deployment, plus "no pod of an old template is left"
// (status.replicas counts them) and no pod still terminating.
//
// It is an oracle of the suite's own, on purpose, not internal/workload.RolloutStatus: the suite
// checks the operator's decisions (that a phase waited for the rollout), and a check that called
// the operator's own function would agree with it even where it is wrong. It restates the rules for
// the one kind the suite rolls through its timeline, from the Deployment's status alone.
func RolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	terminating := s.TerminatingReplicas != nil && *s.TerminatingReplicas > 0
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.AvailableReplicas == want && !terminating
}
