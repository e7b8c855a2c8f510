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

package check

import (
	"sync"
	"time"
)

// recorder numbers everything that happens (a line from the consumer, a request to the API server)
// and lets the driver wait for a condition on it without polling on a timer: every event wakes the
// waiters.
type recorder struct {
	mu      sync.Mutex
	n       int           // events so far; guarded by mu
	changed chan struct{} // closed and replaced at every event
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

// event records one event: f runs with the recorder locked and rec.n already counting it.
func (r *recorder) event(f func()) {
	r.mu.Lock()
	r.n++
	f()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// now is the number of events so far: a mark to look for what happens after it.
func (r *recorder) now() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// await waits until cond holds, checking it at every event, for at most timeout. cond runs without
// the recorder's lock.
func (r *recorder) await(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}
