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

package ack

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// stateLog is a Recorder that keeps the acknowledgement's states in the order they came.
type stateLog struct {
	metrics.Nop
	mu     sync.Mutex
	states []metrics.AckState
}

func (l *stateLog) AckStateChanged(s metrics.AckState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states = append(l.states, s)
}

func (l *stateLog) get() []metrics.AckState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states)
}

// The reporter tells its Recorder each change of state: pending at a new fingerprint, retrying
// after a failure, acknowledged once the API server accepts it; a return to the fingerprint the Pod
// carries is acknowledged at once.
func TestReporterRecordsAckState(t *testing.T) {
	s := newFakeAPI(t)
	var mu sync.Mutex
	fail := 1
	s.setRespond(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail > 0 {
			fail--
			status(http.StatusInternalServerError, "etcdserver: request timed out")(w, req)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	log := &stateLog{}
	c := s.config()
	c.Metrics = log
	r := mustNew(t, c)
	run(t, r)

	r.Report("f1")
	eventually(t, "f1 acknowledged", func() bool { return r.Acknowledged() == "f1" })
	want := make([]metrics.AckState, 0, 5)
	want = append(want, metrics.AckPending, metrics.AckRetrying, metrics.AckAcknowledged)
	eventually(t, "the states of f1", func() bool { return slices.Equal(log.get(), want) })

	r.Report("f2")
	eventually(t, "f2 acknowledged", func() bool { return r.Acknowledged() == "f2" })
	want = append(want, metrics.AckPending, metrics.AckAcknowledged)
	eventually(t, "the states of f2", func() bool { return slices.Equal(log.get(), want) })
	if got := log.get(); !slices.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
}
