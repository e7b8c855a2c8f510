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

// Package leaderguard keeps a replica that does not hold the leader lease from writing. A leader
// that is paused (SIGSTOP, a long GC, a frozen VM) past its lease learns that it lost it only when
// its next renewal fails, seconds after it resumes; in between, the controllers it runs still act on
// what they read before, while another replica leads. Lease records, through the lock the leader
// elector renews, when this replica last held the lease, by its own clock; Client refuses every
// mutating request unless that was recent enough that no other replica can have taken over since.
package leaderguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// ErrNotLeader is the error of every write Client refuses (wrapped with what it was and why).
var ErrNotLeader = errors.New("this replica does not hold the leader lease")

// Lease is a resourcelock.Interface (give it to the manager's LeaderElectionResourceLockInterface)
// that records when this replica last held the lease: the moment it sent a renewal (or acquisition)
// that the API server accepted. Other candidates take over only once they have seen the lease
// unchanged for the lease duration, counted from when they read it, which is after that moment: so
// until that moment plus the lease duration, nobody else leads (with clocks that run at the same
// rate; the validity below keeps a margin for the drift and for the write in flight).
//
// One Lease serves every manager the process starts: a manager started again after losing the
// lease competes under the same identity, and so takes the lease back at once when nobody took it
// meanwhile, instead of waiting for its own previous term to expire.
type Lease struct {
	resourcelock.Interface
	clock clock.PassiveClock
	// validity is how long after a renewal was sent the lease counts as held.
	validity time.Duration

	mu        sync.Mutex
	renewedAt time.Time // when the last accepted renewal was sent; zero when not held
	session   uint64    // the current Session's number
	stop      func()
}

// LeaseConfig says which lease, and for how long a renewal holds it.
type LeaseConfig struct {
	// Namespace and Name name the Lease object; an empty Namespace is the one the process runs in
	// (its service account's), which outside a cluster must be given.
	Namespace, Name string
	// Validity is how long after a renewal is sent the lease counts as held: at most the manager's
	// LeaseDuration, less a margin. The manager's RenewDeadline is a good choice: a leader that
	// cannot renew for that long steps down anyway.
	Validity time.Duration
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock
}

// NewLease makes the lock of the Lease c names, with the identity hostname_uuid that controller-runtime
// gives its own, and its leader election events on the Lease. Those events are writes like any
// other, behind the guard (guardedSink): "became leader" is written while the lease is held;
// "stopped leading", which client-go records once this replica no longer holds it, is logged
// instead, so that a deposed leader writes nothing at all.
func NewLease(config *rest.Config, c LeaseConfig) (*Lease, error) {
	if c.Name == "" {
		return nil, errors.New("leaderguard: the lease needs a name")
	}
	if c.Validity <= 0 {
		return nil, fmt.Errorf("leaderguard: validity %v: must be positive", c.Validity)
	}
	ns := c.Namespace
	if ns == "" {
		b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return nil, fmt.Errorf("leaderguard: no namespace given for the lease, and not running in a cluster: %w", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leaderguard: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	config = rest.AddUserAgent(rest.CopyConfig(config), "leader-election")
	// A hung renewal must not outlive the validity (client-go's heuristic: half the renew deadline).
	config.Timeout = max(c.Validity/2, time.Second)
	core, err := corev1client.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("leaderguard: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("leaderguard: %w", err)
	}
	events := record.NewBroadcaster()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, c.Name, core, coordination, resourcelock.ResourceLockConfig{
		Identity:      id,
		EventRecorder: events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: id}),
	})
	if err != nil {
		events.Shutdown()
		return nil, fmt.Errorf("leaderguard: %w", err)
	}
	l := Wrap(lock, c.Validity, c.Clock)
	events.StartRecordingToSink(&guardedSink{EventSink: &corev1client.EventSinkImpl{Interface: core.Events(ns)}, lease: l})
	l.stop = events.Shutdown
	return l, nil
}

// guardedSink writes the leader election events only while lease is held. client-go's broadcaster
// writes them asynchronously, so the check is here, at the write, not where they are recorded.
type guardedSink struct {
	record.EventSink
	lease Holder
}

func (s *guardedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if !s.held(e) {
		return e, nil
	}
	return s.EventSink.Create(e)
}

func (s *guardedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	if !s.held(e) {
		return e, nil
	}
	return s.EventSink.Update(e)
}

func (s *guardedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if !s.held(e) {
		return e, nil
	}
	return s.EventSink.Patch(e, data)
}

// held reports whether the lease is held, and logs e when it is not. An event held back counts as
// written for the broadcaster (an error would be retried, and a retry might land once this replica
// leads again, out of its time): a later event of the same kind is then a patch of one the API
// server never had, which fails as not found and is created instead.
func (s *guardedSink) held(e *corev1.Event) bool {
	if _, err := s.lease.HeldUntil(); err != nil {
		logf.Log.WithName("leaderguard").Info("leader election event not written: "+err.Error(),
			"reason", e.Reason, "message", e.Message)
		return false
	}
	return true
}

// Wrap records when lock last held its lease; a nil clock means the real one.
func Wrap(lock resourcelock.Interface, validity time.Duration, c clock.PassiveClock) *Lease {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Lease{Interface: lock, clock: c, validity: validity}
}

// Close flushes the leader election events.
func (l *Lease) Close() {
	if l.stop != nil {
		l.stop()
	}
}

// Create acquires the lease for the first time; an accepted one holds it.
func (l *Lease) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.clock.Now()
	err := l.Interface.Create(ctx, ler)
	l.record(sent, ler, err)
	return err
}

// Update renews, acquires or releases the lease.
func (l *Lease) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.clock.Now()
	// Released or not, a replica that is giving the lease up stops writing before it asks.
	if ler.HolderIdentity != l.Identity() {
		l.lose()
	}
	err := l.Interface.Update(ctx, ler)
	l.record(sent, ler, err)
	return err
}

// record notes an accepted write of ler, sent at sent, that names this replica the holder. A
// refused one changes nothing: the lease may still be held until its validity runs out.
func (l *Lease) record(sent time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	if err != nil || ler.HolderIdentity != l.Identity() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if sent.After(l.renewedAt) {
		l.renewedAt = sent
	}
}

func (l *Lease) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewedAt = time.Time{}
}

// HeldUntil returns until when this replica holds the lease by its own clock, and an error wrapping
// ErrNotLeader when it does not hold it now.
func (l *Lease) HeldUntil() (time.Time, error) {
	l.mu.Lock()
	renewed := l.renewedAt
	l.mu.Unlock()
	if renewed.IsZero() {
		return time.Time{}, fmt.Errorf("%w %s", ErrNotLeader, l.Describe())
	}
	until := renewed.Add(l.validity)
	if now := l.clock.Now(); !now.Before(until) {
		return time.Time{}, fmt.Errorf("%w %s: last renewed %v ago, it counts as held for %v",
			ErrNotLeader, l.Describe(), now.Sub(renewed).Round(time.Millisecond), l.validity)
	}
	return until, nil
}

// Session starts a new term of use of the lease, for a manager about to start, and returns what
// says whether that manager holds it. Every earlier Session's holder says no from now on: the
// controllers of a manager that stopped after losing the lease may still be finishing a pass while
// the next manager, under the same identity, takes the lease back, and they must not write.
func (l *Lease) Session() Holder {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.session++
	l.renewedAt = time.Time{}
	return session{lease: l, n: l.session}
}

type session struct {
	lease *Lease
	n     uint64
}

func (s session) HeldUntil() (time.Time, error) {
	s.lease.mu.Lock()
	current := s.lease.session
	s.lease.mu.Unlock()
	if current != s.n {
		return time.Time{}, fmt.Errorf("%w %s: the manager this client belongs to has stopped", ErrNotLeader, s.lease.Describe())
	}
	return s.lease.HeldUntil()
}
