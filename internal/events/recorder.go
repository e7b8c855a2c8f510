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

// Package events writes the operator's Kubernetes Events (events.k8s.io/v1), each one as its own
// object, from a bounded queue, off the reconciler's path.
//
// Why not client-go's events broadcaster, which the manager's GetEventRecorder returns: to fold
// repeats of an event into a series, it keeps a copy of every event it wrote for 6 minutes, keyed
// by the event's object reference, resourceVersion included. The operator's events never repeat:
// it emits one per phase change, never one per pass, and each comes after a status write, so the
// reference differs anyway. The copies were all cost: 30 000 events, 40 MB of heap, while 10 000
// keyrings rotate.
package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/leaderguard"
)

const (
	// QueueSize bounds the events waiting to be written. A rotation of every keyring at once queues
	// one event per keyring faster than they are written; past this many, an event is dropped
	// (and counted) rather than held in memory without bound or made to slow the rotation down.
	QueueSize = 4096
	// maxTries and firstRetry: an event whose write fails for a reason that may pass (the API
	// server unreachable or overloaded) is retried with doubling waits from 0.5 s, 15.5 s in all.
	maxTries   = 6
	firstRetry = 500 * time.Millisecond
	// flushTimeout is how long, once the manager stops, the events in flight or still queued may
	// take to be written: the reconcilers have stopped by then, so the queue holds their last events.
	flushTimeout = 5 * time.Second

	// The events.k8s.io/v1 limits (k8s.io/kubernetes/pkg/apis/core/validation).
	noteLimit     = 1024
	instanceLimit = 128
)

// Why an event was dropped: the values of mrtr_events_dropped_total's reason label.
const (
	DropQueueFull = "queue_full"
	DropInvalid   = "invalid"
	DropRejected  = "rejected"
	DropRetries   = "retries_exhausted"
	DropShutdown  = "shutdown"
	DropNotLeader = "not_leader"
)

var dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mrtr_events_dropped_total",
	Help: "Events the operator did not write, by reason: queue_full (more queued than QueueSize), invalid (not an event the API accepts), rejected (refused by the API server), retries_exhausted, shutdown (still queued when the manager's flush on stopping ended).",
}, []string{"reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(dropped)
}

// Recorder queues events and writes them. It implements client-go's events.EventRecorder, which the
// reconciler is given, and controller-runtime's manager.Runnable, which writes the queue.
type Recorder struct {
	client     client.Client
	scheme     *runtime.Scheme
	controller string // reportingController
	instance   string // reportingInstance: controller-hostname, as client-go's recorder names it
	queue      chan *eventsv1.Event
	now        func() time.Time
	firstRetry time.Duration
	flushFor   time.Duration
	writers    int
}

// NewRecorder returns a Recorder that reports as controller and writes up to writers events at once
// (at least 1); add it to the manager to start it. Give it as many writers as the reconcilers have
// workers, each of which queues at most one event per status write: with 4 writers for 8 workers,
// a rotation of 1000 keyrings ended with about 250 events still queued.
func NewRecorder(c client.Client, scheme *runtime.Scheme, controller string, writers int) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{
		client:     c,
		scheme:     scheme,
		controller: controller,
		instance:   truncate(controller+"-"+host, instanceLimit),
		queue:      make(chan *eventsv1.Event, QueueSize),
		now:        time.Now,
		firstRetry: firstRetry,
		flushFor:   flushTimeout,
		writers:    max(writers, 1),
	}
}

// Eventf queues an event about regarding (and related, which may be nil). It never blocks: an event
// that finds the queue full is dropped and counted.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	log := logf.Log.WithName("events")
	ev, err := r.event(regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		dropped.WithLabelValues(DropInvalid).Inc()
		log.Error(err, "event not written", "reason", reason)
		return
	}
	select {
	case r.queue <- ev:
	default:
		dropped.WithLabelValues(DropQueueFull).Inc()
		log.V(1).Info("event dropped: the queue is full", "reason", reason, "regarding", ev.Regarding.Name, "queued", QueueSize)
	}
}

// event builds what Eventf queues; it checks what the API server would refuse.
func (r *Recorder) event(regarding, related runtime.Object, eventtype, reason, action, note string) (*eventsv1.Event, error) {
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q is neither %s nor %s", eventtype, corev1.EventTypeNormal, corev1.EventTypeWarning)
	}
	if reason == "" || action == "" {
		return nil, fmt.Errorf("event needs a reason and an action (reason %q, action %q)", reason, action)
	}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("reference to the event's object: %w", err)
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if relatedRef, err = reference.GetReference(r.scheme, related); err != nil {
			return nil, fmt.Errorf("reference to the event's related object: %w", err)
		}
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault // where events about cluster-scoped objects go
	}
	now := r.now()
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                truncate(note, noteLimit),
		Type:                eventtype,
	}, nil
}

// NeedLeaderElection is false: the writers start with the manager, before any reconciler can queue.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start writes queued events until ctx is done, then what is still queued: the manager stops its
// reconcilers before this. The writes outlive ctx by flushFor, so that an event in flight when the
// manager stops is still written rather than failed at once, and the whole stop takes at most
// flushFor more.
func (r *Recorder) Start(ctx context.Context) error {
	writeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(r.flushFor, cancel) })()
	var wg sync.WaitGroup
	for range r.writers {
		wg.Go(func() {
			for {
				select { // a stop first: once ctx is done, the queue is the flush's
				case <-ctx.Done():
					return
				default:
				}
				select {
				case <-ctx.Done():
					return
				case ev := <-r.queue:
					r.write(writeCtx, ev)
				}
			}
		})
	}
	wg.Wait() // the writers return once ctx is done and their last write ended
	for writeCtx.Err() == nil {
		select {
		case ev := <-r.queue:
			r.write(writeCtx, ev)
		default:
			return nil
		}
	}
	// Out of time: what is left is counted with one log line, not tried and logged one by one.
	left := 0
	for len(r.queue) > 0 {
		<-r.queue
		left++
	}
	if left > 0 {
		dropped.WithLabelValues(DropShutdown).Add(float64(left))
		logf.FromContext(ctx).WithName("events").Info("events not written: the flush on stopping ended", "left", left)
	}
	return nil
}

// write creates ev, retrying what may pass. Events are best effort: a failure is logged and
// counted, never returned to a reconciler.
func (r *Recorder) write(ctx context.Context, ev *eventsv1.Event) {
	log := logf.FromContext(ctx).WithName("events")
	wait := r.firstRetry
	for try := 1; ; try++ {
		err := r.client.Create(ctx, ev.DeepCopy(), client.FieldOwner(mrtrv1alpha1.FieldManager))
		switch {
		case err == nil:
			return
		case apierrors.IsAlreadyExists(err):
			// On the first try, another event about the object took this nanosecond's name: take
			// a new one. On a retry, it is this event's earlier try that landed, its answer lost.
			if try == 1 {
				ev.Name = util.GenerateEventName(ev.Regarding.Name, r.now().UnixNano())
				continue
			}
			return
		case errors.Is(err, leaderguard.ErrNotLeader):
			// A replica that no longer leads writes nothing, its events included; nor later, should it
			// lead again: the event told of a pass of its earlier term.
			dropped.WithLabelValues(DropNotLeader).Inc()
			log.Info("event not written: this replica no longer holds the leader lease", "reason", ev.Reason, "regarding", ev.Regarding.Name)
			return
		case !retriable(err):
			dropped.WithLabelValues(DropRejected).Inc()
			log.Error(err, "event refused by the API server", "reason", ev.Reason, "regarding", ev.Regarding.Name)
			return
		case try == maxTries || ctx.Err() != nil:
			dropped.WithLabelValues(DropRetries).Inc()
			log.Error(err, "event not written", "reason", ev.Reason, "regarding", ev.Regarding.Name, "tries", try)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// retriable reports whether a failed write may succeed later: the API server was not reached, or
// said it is overloaded, timed out or failed inside.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
