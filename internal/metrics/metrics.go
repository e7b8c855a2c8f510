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

// Package metrics exposes the operator's Prometheus metrics, per keyring, on controller-runtime's
// registry (served by the manager's metrics endpoint):
//
//	mrtr_keyring_phase{namespace,name,phase}                       1, for the current phase only
//	mrtr_keyring_primary_key_age_seconds{namespace,name}           how long the sealing key has sealed, at scrape time
//	mrtr_keyring_next_rotation_timestamp_seconds{namespace,name}   when the next rotation is due (Unix time)
//	mrtr_keyring_rotation_interval_seconds{namespace,name}         spec.rotationInterval (none with a key source)
//	mrtr_keyring_source_version_age_seconds{namespace,name}        how long the source version in service has sealed (key source only)
//	mrtr_keyring_source_refused{namespace,name}                    1 while KeySourceReady is False (key source only)
//	mrtr_keyring_stalled{namespace,name}                           1 while the Stalled condition is True
//	mrtr_keyring_rotations_completed_total{namespace,name}         status.rotationsCompleted
//	mrtr_keyring_rotations_failed_total{namespace,name,reason}     times a rotation got stuck, by condition reason
//	mrtr_keyring_rollout_wait_seconds{phase}                       time each phase waited for its rollout, all keyrings
//	mrtr_keyring_pods{namespace,name}                              consumer pods gated by acknowledgement
//	mrtr_keyring_pods_acknowledged{namespace,name}                 those that run the current keyring
//	mrtr_keyring_pods_restarted_total{namespace,name}              pods evicted for not acknowledging in time
//	mrtr_member_reachable{namespace,name,member}                   1 while a ClusterMRTRKeyring's member can be reached (status.members)
//
// The phase, key age, next rotation, interval, stalled, rotations completed and pod counts are read from the keyring's
// status (Observe), so they are right after an operator restart and cost nothing to keep up to
// date; the others count what this process saw. Labels
// identify a keyring: namespace and name, the namespace empty for a ClusterMRTRKeyring (the
// alerts name it by kind from that); nothing that depends on key material is ever a label or a value. Forget
// removes every series of a deleted keyring.
//
// A keyring has few series (MaxSeriesPerKeyring): one for its phase, not one per phase, and the
// distributions (histograms, a dozen series each) are over all keyrings, so that /metrics grows
// by a few hundred bytes per keyring, not by kilobytes.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Label names. Every series is per keyring: namespace and name.
const (
	labelNamespace = "namespace"
	labelName      = "name"
	labelPhase     = "phase"
	labelReason    = "reason"
	labelMember    = "member"
)

var (
	phaseDesc = prometheus.NewDesc("mrtr_keyring_phase",
		"Rotation phase of the keyring: 1, with the current phase as its label.",
		[]string{labelNamespace, labelName, labelPhase}, nil)
	primaryAgeDesc = prometheus.NewDesc("mrtr_keyring_primary_key_age_seconds",
		"Seconds since the keyring's primary key began to seal (status.keys[0].sealingSince).",
		[]string{labelNamespace, labelName}, nil)
	nextRotationDesc = prometheus.NewDesc("mrtr_keyring_next_rotation_timestamp_seconds",
		"Unix time at which the keyring's next rotation is due.",
		[]string{labelNamespace, labelName}, nil)
	completedDesc = prometheus.NewDesc("mrtr_keyring_rotations_completed_total",
		"Rotations the keyring has completed (status.rotationsCompleted).",
		[]string{labelNamespace, labelName}, nil)
	intervalDesc = prometheus.NewDesc("mrtr_keyring_rotation_interval_seconds",
		"The keyring's spec.rotationInterval, in seconds: the primary key should never be much older.",
		[]string{labelNamespace, labelName}, nil)
	stalledDesc = prometheus.NewDesc("mrtr_keyring_stalled",
		"1 while the keyring's Stalled condition is True (progress blocked; the condition's reason says why), else 0.",
		[]string{labelNamespace, labelName}, nil)
	podsDesc = prometheus.NewDesc("mrtr_keyring_pods",
		"Consumer pods of the keyring gated by their acknowledgement (status.podCount).",
		[]string{labelNamespace, labelName}, nil)
	sourceAgeDesc = prometheus.NewDesc("mrtr_keyring_source_version_age_seconds",
		"Seconds since the source version in service began to seal (status.keySource.inServiceSince), for a keyring with a key source: a source that stops changing shows here.",
		[]string{labelNamespace, labelName}, nil)
	sourceRefusedDesc = prometheus.NewDesc("mrtr_keyring_source_refused",
		"1 while the keyring's KeySourceReady condition is False (its source Secret holds nothing it takes; the reason says why), else 0; key source only.",
		[]string{labelNamespace, labelName}, nil)
	podsAckedDesc = prometheus.NewDesc("mrtr_keyring_pods_acknowledged",
		"Consumer pods that run the keyring's current target (status.podsAcknowledged).",
		[]string{labelNamespace, labelName}, nil)
	memberReachableDesc = prometheus.NewDesc("mrtr_member_reachable",
		"1 while the operator's cache of a ClusterMRTRKeyring's member cluster is synced and its API server answers (status.members[].reachable), else 0.",
		[]string{labelNamespace, labelName, labelMember}, nil)
)

// Recorder holds the metrics. It is safe for concurrent use. The zero value is not usable; use New.
type Recorder struct {
	now func() time.Time

	mu       sync.Mutex
	keyrings map[types.NamespacedName]snapshot
	// members is, per cluster keyring with spec.members, whether each member can be reached.
	members map[types.NamespacedName]map[string]bool

	failed      *prometheus.CounterVec
	rolloutWait *prometheus.HistogramVec
	restarted   *prometheus.CounterVec
}

// snapshot is what Observe keeps of a keyring's status.
type snapshot struct {
	phase          mrtrv1alpha1.Phase
	primarySealing time.Time // when the primary began to seal; zero: unknown
	nextRotation   time.Time // zero: none scheduled
	completed      int64
	pods, acked    int32
	interval       time.Duration
	stalled        bool
	// source: the keyring has a key source; sourceSince is when its version in service began to
	// seal (zero: none), sourceRefused whether KeySourceReady is False.
	source, sourceRefused bool
	sourceSince           time.Time
}

// New returns an unregistered Recorder; now is the clock used for the key age at scrape time.
func New(now func() time.Time) *Recorder {
	return &Recorder{
		now:      now,
		keyrings: map[types.NamespacedName]snapshot{},
		members:  map[types.NamespacedName]map[string]bool{},
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_keyring_rotations_failed_total",
			Help: "Times a rotation of the keyring got stuck (Stalled became True), by condition reason.",
		}, []string{labelNamespace, labelName, labelReason}),
		rolloutWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mrtr_keyring_rollout_wait_seconds",
			Help: "Seconds a rotation phase waited for its keyring to reach every pod (acknowledgements or a rollout), over all keyrings.",
			// 0.5s to ~1.4h: pods that reload acknowledge in a second, a large StatefulSet rolls out in an hour.
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
		}, []string{labelPhase}),
		restarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_keyring_pods_restarted_total",
			Help: "Pods the operator evicted because they did not acknowledge a keyring within spec.reloadDeadline.",
		}, []string{labelNamespace, labelName}),
	}
}

// Default is the Recorder registered on controller-runtime's metrics.Registry.
var Default = New(time.Now)

func init() {
	ctrlmetrics.Registry.MustRegister(Default)
}

// Describe implements prometheus.Collector.
func (r *Recorder) Describe(ch chan<- *prometheus.Desc) {
	ch <- phaseDesc
	ch <- primaryAgeDesc
	ch <- nextRotationDesc
	ch <- completedDesc
	ch <- intervalDesc
	ch <- stalledDesc
	ch <- sourceAgeDesc
	ch <- sourceRefusedDesc
	ch <- podsDesc
	ch <- podsAckedDesc
	ch <- memberReachableDesc
	r.failed.Describe(ch)
	r.rolloutWait.Describe(ch)
	r.restarted.Describe(ch)
}

// Collect implements prometheus.Collector.
func (r *Recorder) Collect(ch chan<- prometheus.Metric) {
	now := r.now()
	r.mu.Lock()
	for k, s := range r.keyrings {
		if s.phase != "" {
			ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, 1, k.Namespace, k.Name, string(s.phase))
		}
		if !s.primarySealing.IsZero() {
			ch <- prometheus.MustNewConstMetric(primaryAgeDesc, prometheus.GaugeValue,
				now.Sub(s.primarySealing).Seconds(), k.Namespace, k.Name)
		}
		if !s.nextRotation.IsZero() {
			ch <- prometheus.MustNewConstMetric(nextRotationDesc, prometheus.GaugeValue,
				float64(s.nextRotation.UnixNano())/1e9, k.Namespace, k.Name)
		}
		ch <- prometheus.MustNewConstMetric(completedDesc, prometheus.CounterValue, float64(s.completed), k.Namespace, k.Name)
		if !s.source { // a key source's rotations follow the source, not an interval
			ch <- prometheus.MustNewConstMetric(intervalDesc, prometheus.GaugeValue, s.interval.Seconds(), k.Namespace, k.Name)
		}
		if s.source {
			if !s.sourceSince.IsZero() {
				ch <- prometheus.MustNewConstMetric(sourceAgeDesc, prometheus.GaugeValue, now.Sub(s.sourceSince).Seconds(), k.Namespace, k.Name)
			}
			refused := 0.0
			if s.sourceRefused {
				refused = 1
			}
			ch <- prometheus.MustNewConstMetric(sourceRefusedDesc, prometheus.GaugeValue, refused, k.Namespace, k.Name)
		}
		stalled := 0.0
		if s.stalled {
			stalled = 1
		}
		ch <- prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, stalled, k.Namespace, k.Name)
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(s.pods), k.Namespace, k.Name)
		ch <- prometheus.MustNewConstMetric(podsAckedDesc, prometheus.GaugeValue, float64(s.acked), k.Namespace, k.Name)
	}
	for k, ms := range r.members {
		for member, reachable := range ms {
			v := 0.0
			if reachable {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(memberReachableDesc, prometheus.GaugeValue, v, k.Namespace, k.Name, member)
		}
	}
	r.mu.Unlock()
	r.failed.Collect(ch)
	r.rolloutWait.Collect(ch)
	r.restarted.Collect(ch)
}

// Observe records the state of a keyring from its status and its spec.rotationInterval: call it
// after each reconcile. A keyring with a key source (status.keySource) has no interval series,
// but the age of its source version and whether the source is refused. A ClusterMRTRKeyring is keyring {Namespace: "", Name: its name}. A keyring
// without a phase yet (never reconciled) reports 0 for every phase.
func (r *Recorder) Observe(keyring types.NamespacedName, interval time.Duration, st *mrtrv1alpha1.MRTRKeyringStatus) {
	s := snapshot{phase: st.Phase, completed: st.RotationsCompleted, pods: st.PodCount, acked: st.PodsAcknowledged,
		interval: interval}
	if c := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		s.stalled = true
	}
	for _, k := range st.Keys {
		if k.Role == mrtrv1alpha1.KeyPrimary {
			s.primarySealing = k.Sealing().Time
			break
		}
	}
	if st.NextRotationTime != nil {
		s.nextRotation = st.NextRotationTime.Time
	}
	if ks := st.KeySource; ks != nil {
		s.source = true
		if ks.InServiceSince != nil {
			s.sourceSince = ks.InServiceSince.Time
		}
		c := meta.FindStatusCondition(st.Conditions, mrtrv1alpha1.ConditionKeySourceReady)
		s.sourceRefused = c != nil && c.Status == metav1.ConditionFalse
	}
	r.mu.Lock()
	r.keyrings[keyring] = s
	r.mu.Unlock()
}

// ObserveMembers records whether each member of a ClusterMRTRKeyring can be reached, from its
// status.members: call it after each reconcile. A member no longer listed loses its series.
func (r *Recorder) ObserveMembers(keyring types.NamespacedName, members []mrtrv1alpha1.MemberStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(members) == 0 {
		delete(r.members, keyring)
		return
	}
	ms := make(map[string]bool, len(members))
	for _, m := range members {
		ms[m.Name] = m.Reachable
	}
	r.members[keyring] = ms
}

// RotationFailed counts one stuck rotation of the keyring, with the reason of its Stalled
// condition (one of the API's Reason* constants, so the label stays bounded). Call it when Stalled
// becomes True, not on every pass while it stays True.
func (r *Recorder) RotationFailed(namespace, name, reason string) {
	r.failed.WithLabelValues(namespace, name, reason).Inc()
}

// RolloutWaited records how long a phase waited for its keyring to reach every pod, when that
// phase ends.
func (r *Recorder) RolloutWaited(phase mrtrv1alpha1.Phase, d time.Duration) {
	r.rolloutWait.WithLabelValues(string(phase)).Observe(d.Seconds())
}

// MaxSeriesPerKeyring bounds the series one keyring adds, but for its members: phase, key age,
// next rotation, interval (with a key source: none, but the source key's age and whether the
// source is refused), stalled, rotations completed, pods, pods acknowledged, pods restarted, and a
// failure counter for each of the few reasons it ever got stuck for (usually none or one). A
// ClusterMRTRKeyring with spec.members adds one series per member on top (mrtr_member_reachable;
// the API allows at most 64 members).
const MaxSeriesPerKeyring = 10

// PodsRestarted counts n pods of the keyring evicted for not acknowledging its keyring in time.
func (r *Recorder) PodsRestarted(namespace, name string, n int) {
	r.restarted.WithLabelValues(namespace, name).Add(float64(n))
}

// Forget removes every series of a keyring: call it when the keyring is gone, so a deleted keyring
// does not linger as a stale series.
func (r *Recorder) Forget(namespace, name string) {
	r.mu.Lock()
	delete(r.keyrings, types.NamespacedName{Namespace: namespace, Name: name})
	delete(r.members, types.NamespacedName{Namespace: namespace, Name: name})
	r.mu.Unlock()
	labels := prometheus.Labels{labelNamespace: namespace, labelName: name}
	r.failed.DeletePartialMatch(labels)
	r.restarted.DeletePartialMatch(labels)
}
