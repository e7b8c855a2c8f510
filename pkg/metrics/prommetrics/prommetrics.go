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

// Package prommetrics records what a keyring consumer reports (package metrics) as Prometheus
// metrics, with the names and labels of the contract (docs/consumers.md, "Metrics"). It is a module
// of its own so that the library, github.com/mrtr-dev/mrtr-operator/pkg, depends on no metrics
// client: a server that wants Prometheus metrics imports this module, one that does not never
// downloads client_golang.
//
//	rec, err := prommetrics.New(prometheus.DefaultRegisterer)
//	src, err := keyring.NewFileSource(path, keyring.WithMetrics(rec))
//	codec, err := token.NewSealed(src, server, token.SealedMetrics(rec))
//	reporter, err := ack.New(ack.Config{Secret: secret, Metrics: rec})
package prommetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// Recorder is a metrics.Recorder over Prometheus collectors. It is safe for concurrent use.
type Recorder struct {
	sealed      *prometheus.CounterVec
	opened      *prometheus.CounterVec
	keyring     *prometheus.GaugeVec
	reloadFails prometheus.Counter
	ack         *prometheus.GaugeVec

	mu          sync.Mutex // guards fingerprint
	fingerprint string     // the label of the keyring_info series that is set, "" before the first
	// formats holds each format's series, resolved once (*formatSeries): a seal or an open then
	// increments a counter without a lock or a label lookup.
	formats sync.Map
}

// formatSeries are the series of one format.
type formatSeries struct {
	sealed prometheus.Counter
	opened map[metrics.Result]prometheus.Counter
}

var _ metrics.Recorder = (*Recorder)(nil)

// New returns a Recorder whose collectors are registered with reg (prometheus.DefaultRegisterer,
// or a registry of the server's). It fails if reg already holds metrics of these names: one
// Recorder per registry, shared by the codecs, the source and the reporter of the process.
func New(reg prometheus.Registerer) (*Recorder, error) {
	r := &Recorder{
		sealed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metrics.TokensSealedTotal,
			Help: "Request-state tokens sealed, by format.",
		}, []string{metrics.LabelFormat}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metrics.TokensOpenedTotal,
			Help: "Request-state tokens opened, by format and result (docs/consumers.md, Metrics).",
		}, []string{metrics.LabelFormat, metrics.LabelResult}),
		keyring: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metrics.KeyringInfo,
			Help: "The keyring in service: 1 for its fingerprint.",
		}, []string{metrics.LabelFingerprint}),
		reloadFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metrics.ReloadFailuresTotal,
			Help: "Reloads of the keyring volume that kept the last good keyring (unreadable or invalid snapshot).",
		}),
		ack: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metrics.AckStateGauge,
			Help: "The acknowledgement's state (pending, acknowledged, retrying): 1 for the current one.",
		}, []string{metrics.LabelState}),
	}
	for _, c := range []prometheus.Collector{r.sealed, r.opened, r.keyring, r.reloadFails, r.ack} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// format returns the series of format, creating them all at 0 the first time it is seen, so that
// the first rejection of a result is an increase that rate() and increase() see, not a new series.
func (r *Recorder) format(format string) *formatSeries {
	if f, ok := r.formats.Load(format); ok {
		return f.(*formatSeries) //nolint:forcetypeassert // only *formatSeries is stored
	}
	f := &formatSeries{sealed: r.sealed.WithLabelValues(format), opened: map[metrics.Result]prometheus.Counter{}}
	for _, res := range metrics.Results() {
		f.opened[res] = r.opened.WithLabelValues(format, string(res))
	}
	got, _ := r.formats.LoadOrStore(format, f)
	return got.(*formatSeries) //nolint:forcetypeassert // only *formatSeries is stored
}

// TokenSealed counts one sealed token of format.
func (r *Recorder) TokenSealed(format string) {
	r.format(format).sealed.Inc()
}

// TokenOpened counts one open of a token of format that ended with result; a result the contract
// does not name is counted under its own label, as before.
func (r *Recorder) TokenOpened(format string, result metrics.Result) {
	if c, ok := r.format(format).opened[result]; ok {
		c.Inc()
		return
	}
	r.opened.WithLabelValues(format, string(result)).Inc()
}

// KeyringInService moves keyring_info to the fingerprint: the series of the previous one is
// removed, so that exactly one series is 1.
func (r *Recorder) KeyringInService(fingerprint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fingerprint == r.fingerprint {
		return
	}
	if r.fingerprint != "" {
		r.keyring.DeleteLabelValues(r.fingerprint)
	}
	r.fingerprint = fingerprint
	r.keyring.WithLabelValues(fingerprint).Set(1)
}

// ReloadFailed counts one failed reload.
func (r *Recorder) ReloadFailed() { r.reloadFails.Inc() }

// AckStateChanged sets the series of state to 1 and the others to 0.
func (r *Recorder) AckStateChanged(state metrics.AckState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range metrics.AckStates() {
		v := 0.0
		if s == state {
			v = 1
		}
		r.ack.WithLabelValues(string(s)).Set(v)
	}
}
