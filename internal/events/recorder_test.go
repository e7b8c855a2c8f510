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

package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mrtr-dev/mrtr-operator/internal/leaderguard"
)

// The API server's own validation of what the Recorder writes is exercised by the controller's
// envtest suite, whose every event goes through a Recorder; these tests cover the queue and the
// retries, with a client that fails on demand.

var pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-0", UID: "u-1"}}

// newTestRecorder returns a Recorder over a fake client whose creates go through create, given the
// try's number (from 1) and the real create to call (nil: always call it), and a function listing
// what was written.
func newTestRecorder(t *testing.T, create func(try int, do func() error) error) (*Recorder, func() []eventsv1.Event) {
	t.Helper()
	var mu sync.Mutex
	tries := 0
	if create == nil {
		create = func(_ int, do func() error) error { return do() }
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			tries++
			n := tries
			mu.Unlock()
			return create(n, func() error { return c.Create(ctx, obj, opts...) })
		},
	}).Build()
	r := NewRecorder(c, clientgoscheme.Scheme, "mrtr-operator", 4)
	r.firstRetry = time.Millisecond
	return r, func() []eventsv1.Event {
		var l eventsv1.EventList
		if err := c.List(context.Background(), &l); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
}

// run starts r and returns a function that stops it and waits for Start to return.
func run(t *testing.T, r *Recorder) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond for up to 10 s: the writers run on their own goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestEventsAreObjectsOfTheirOwn(t *testing.T) {
	r, written := newTestRecorder(t, nil)
	stop := run(t, r)
	defer stop()
	// Same type, reason, action and object: neither is folded into the other.
	r.Eventf(pod, nil, corev1.EventTypeNormal, "RotationStarted", "Rotate", "created key %s", "k-1")
	r.Eventf(pod, nil, corev1.EventTypeNormal, "RotationStarted", "Rotate", "created key %s", "k-2")
	waitFor(t, "two events", func() bool { return len(written()) == 2 })

	notes := map[string]bool{}
	for _, ev := range written() {
		notes[ev.Note] = true
		if ev.Series != nil {
			t.Errorf("event %s has a series: %+v", ev.Name, ev.Series)
		}
		if ev.Namespace != "shop" || ev.Regarding.Name != "api-0" || ev.Regarding.Kind != "Pod" || ev.Regarding.UID != "u-1" {
			t.Errorf("event %s is about %+v in %q, want the pod shop/api-0", ev.Name, ev.Regarding, ev.Namespace)
		}
		if !strings.HasPrefix(ev.Name, "api-0.") {
			t.Errorf("event name %q does not start with its object's name", ev.Name)
		}
		if ev.ReportingController != "mrtr-operator" || !strings.HasPrefix(ev.ReportingInstance, "mrtr-operator-") ||
			ev.Action != "Rotate" || ev.Type != corev1.EventTypeNormal || ev.EventTime.IsZero() {
			t.Errorf("event %s: %+v", ev.Name, ev)
		}
	}
	if !notes["created key k-1"] || !notes["created key k-2"] {
		t.Errorf("notes %v, want each event's own", notes)
	}
}

func TestLongNotesAreCutOnARuneBoundary(t *testing.T) {
	r, _ := newTestRecorder(t, nil)
	note := strings.Repeat("a", noteLimit-1) + "é and more"
	ev, err := r.event(pod, nil, corev1.EventTypeWarning, "KeyRevoked", "Revoke", note)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Note) > noteLimit || !utf8.ValidString(ev.Note) || !strings.HasPrefix(note, ev.Note) {
		t.Errorf("note cut to %d bytes (valid UTF-8: %v), want a prefix of at most %d", len(ev.Note), utf8.ValidString(ev.Note), noteLimit)
	}
	if len(ev.Note) != noteLimit-1 {
		t.Errorf("note cut to %d bytes, want %d: the 2-byte rune across the limit goes whole", len(ev.Note), noteLimit-1)
	}
}

func TestInvalidEventsAreDroppedAndCounted(t *testing.T) {
	r, _ := newTestRecorder(t, nil)
	for name, call := range map[string]func(){
		"type":      func() { r.Eventf(pod, nil, "Info", "R", "A", "n") },
		"reason":    func() { r.Eventf(pod, nil, corev1.EventTypeNormal, "", "A", "n") },
		"action":    func() { r.Eventf(pod, nil, corev1.EventTypeNormal, "R", "", "n") },
		"reference": func() { r.Eventf(&struct{ corev1.Pod }{}, nil, corev1.EventTypeNormal, "R", "A", "n") },
	} {
		before := testutil.ToFloat64(dropped.WithLabelValues(DropInvalid))
		call()
		if got := testutil.ToFloat64(dropped.WithLabelValues(DropInvalid)) - before; got != 1 {
			t.Errorf("%s: %v events counted as invalid, want 1", name, got)
		}
		if len(r.queue) != 0 {
			t.Errorf("%s: an invalid event was queued", name)
		}
	}
}

func TestAFullQueueDropsWithoutBlocking(t *testing.T) {
	r, _ := newTestRecorder(t, nil) // not started: nothing drains the queue
	before := testutil.ToFloat64(dropped.WithLabelValues(DropQueueFull))
	for range QueueSize + 3 {
		r.Eventf(pod, nil, corev1.EventTypeNormal, "R", "A", "n")
	}
	if len(r.queue) != QueueSize {
		t.Errorf("%d queued, want %d", len(r.queue), QueueSize)
	}
	if got := testutil.ToFloat64(dropped.WithLabelValues(DropQueueFull)) - before; got != 3 {
		t.Errorf("%v counted as dropped for a full queue, want 3", got)
	}
}

func TestWritesRetryWhatMayPass(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is gone")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("no"))
	cases := []struct {
		name    string
		create  func(try int, do func() error) error
		written int
		tries   int
		drop    string // the reason counted, if any
	}{
		{"a transport error, then success", func(try int, do func() error) error {
			if try < 3 {
				return errors.New("connection refused")
			}
			return do()
		}, 1, 3, ""},
		{"overloaded, then success", func(try int, do func() error) error {
			if try == 1 {
				return apierrors.NewTooManyRequests("slow down", 1)
			}
			return do()
		}, 1, 2, ""},
		{"written, the answer lost: the retry finds it and stops", func(try int, do func() error) error {
			if err := do(); err != nil || try > 1 {
				return err
			}
			return errors.New("connection reset")
		}, 1, 2, ""},
		{"refused: not retried", func(int, func() error) error { return forbidden }, 0, 1, DropRejected},
		{"unavailable every time", func(int, func() error) error { return unavailable }, 0, maxTries, DropRetries},
		{"refused by the lease guard: not retried", func(int, func() error) error {
			return fmt.Errorf("not sending a create of *v1.Event: %w", leaderguard.ErrNotLeader)
		}, 0, 1, DropNotLeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			r, written := newTestRecorder(t, func(try int, do func() error) error { tries = try; return tc.create(try, do) })
			var before float64
			if tc.drop != "" {
				before = testutil.ToFloat64(dropped.WithLabelValues(tc.drop))
			}
			ev, err := r.event(pod, nil, corev1.EventTypeNormal, "R", "A", "n")
			if err != nil {
				t.Fatal(err)
			}
			r.write(context.Background(), ev)
			if got := len(written()); got != tc.written {
				t.Errorf("%d written, want %d", got, tc.written)
			}
			if tries != tc.tries {
				t.Errorf("%d tries, want %d", tries, tc.tries)
			}
			if tc.drop != "" {
				if got := testutil.ToFloat64(dropped.WithLabelValues(tc.drop)) - before; got != 1 {
					t.Errorf("%v counted as %s, want 1", got, tc.drop)
				}
			}
		})
	}
}

func TestANameTakenIsTakenAgain(t *testing.T) {
	r, written := newTestRecorder(t, nil)
	ev, err := r.event(pod, nil, corev1.EventTypeNormal, "R", "A", "first")
	if err != nil {
		t.Fatal(err)
	}
	r.write(context.Background(), ev)
	clash := ev.DeepCopy() // another event that got the same nanosecond
	clash.Note = "second"
	r.write(context.Background(), clash)
	notes := map[string]bool{}
	for _, e := range written() {
		notes[e.Note] = true
	}
	if !notes["first"] || !notes["second"] {
		t.Errorf("written %v, want both events", notes)
	}
}

func TestAFlushOutOfTimeCountsWhatIsLeft(t *testing.T) {
	unavailable := func(int, func() error) error { return apierrors.NewServiceUnavailable("down") }
	r, _ := newTestRecorder(t, unavailable)
	r.flushFor = 10 * time.Millisecond // less than one event's retries (31 ms)
	retried, left := testutil.ToFloat64(dropped.WithLabelValues(DropRetries)), testutil.ToFloat64(dropped.WithLabelValues(DropShutdown))
	for range 20 {
		r.Eventf(pod, nil, corev1.EventTypeNormal, "R", "A", "n")
	}
	// Started stopped, so that the writers take nothing: every event is the flush's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	gotRetried := testutil.ToFloat64(dropped.WithLabelValues(DropRetries)) - retried
	gotLeft := testutil.ToFloat64(dropped.WithLabelValues(DropShutdown)) - left
	if gotRetried != 1 || gotLeft != 19 {
		t.Errorf("dropped %v after retries and %v left at shutdown, want 1 and 19: the flush tries one event until it ends, "+
			"and counts the rest", gotRetried, gotLeft)
	}
}

func TestStopWritesWhatIsStillQueued(t *testing.T) {
	r, written := newTestRecorder(t, nil)
	for range 20 {
		r.Eventf(pod, nil, corev1.EventTypeNormal, "R", "A", "n")
	}
	stop := run(t, r)
	stop()
	if got := len(written()); got != 20 {
		t.Errorf("%d written by the time Start returned, want all 20", got)
	}
}
