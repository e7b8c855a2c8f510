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

package controller

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientevents "k8s.io/client-go/tools/events"
	kclock "k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/events"
	"github.com/mrtr-dev/mrtr-operator/internal/metrics"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Shared is what the two keyring reconcilers (MRTRKeyringReconciler, ClusterMRTRKeyringReconciler)
// share: the readers and writers of every step of a pass (gather a place's Secret and consumers,
// write a keyring Secret, stamp, nudge, evict), the memory that only spares work (ownWrites,
// evictions) and the registry of the workload kinds the API server serves. Each reconciler is a
// thin shell over it: how its keyring is stored and which places it has. One Shared serves both,
// so that a kind served later is watched for both and a write of one is known to the other.
//
// The Secret carries the label mrtr.dev/keyring=<name> but no owner reference: like cert-manager's
// Certificate Secrets, it outlives its keyring, so deleting (or re-creating) the keyring never
// takes the keys away from running servers. A re-created keyring resumes from the Secret.
type Shared struct {
	client.Client
	// APIReader reads the Secret live when the cache cannot be trusted to hold it (readSecret): the
	// manager caches keyring Secrets only, and a copy may be a moment behind the operator's write.
	APIReader client.Reader
	// Recorder emits the events of each decision; nil means an events.Recorder that setup adds to
	// the manager.
	Recorder clientevents.EventRecorder
	// Clock is the time source; nil means the real clock.
	Clock kclock.PassiveClock
	// Metrics receives the keyring metrics; nil means metrics.Default (the manager's registry).
	Metrics *metrics.Recorder
	// GenerateKey makes the candidate key of each pass; nil means keyring.GenerateKey.
	GenerateKey func(id string, n int) (keyring.Key, error)
	// ReadNodes: the operator may read Nodes (a cluster-wide install), and so spares the pods of
	// a node that is not Ready the restart for a missing acknowledgement. A namespace-scoped install
	// cannot be granted Nodes: their readiness is then unknown, and the status says so.
	ReadNodes bool
	// ClusterKeyrings, when not empty, says that ClusterMRTRKeyrings are turned on
	// (--cluster-keyrings): the namespace, the operator's own, that holds their lead Secrets. Only a
	// cluster-wide install may: a cluster keyring writes Secrets into the namespaces it selects.
	ClusterKeyrings string
	// KindRecheck is how often a workload kind the API server did not serve is asked about again
	// (and a keyring that names one looks again); 0 means DefaultKindRecheck.
	KindRecheck time.Duration
	// Namespaces are the namespaces the operator watches (--namespaces), all when empty: the
	// cache of Secret metadata that wakes keyrings on a change of their source Secret watches
	// the same (keysource.go).
	Namespaces []string

	sourcesOnce sync.Once
	sources     cache.Cache
	sourcesErr  error

	// hub, set on the Shared of a member cluster (ClusterMRTRKeyringReconciler.memberShared), is
	// the operator's own: the keyrings live there, not in the member.
	hub *Shared
	// served, set on the Shared of a member cluster, is which workload kinds the member serves
	// (and its cache indexes).
	served func(workload.Kind) bool

	once      sync.Once
	setupErr  error
	kinds     *servedKinds
	written   ownWrites
	evictions evictions
}

// setup completes s for mgr, once for both reconcilers: the live reader, the events recorder (with
// a writer per reconcile worker) and the registry of served kinds (which the manager runs).
func (s *Shared) setup(mgr ctrl.Manager, workers int) error {
	s.once.Do(func() {
		if s.APIReader == nil {
			s.APIReader = mgr.GetAPIReader()
		}
		if s.Client == nil {
			s.Client = mgr.GetClient()
		}
		if s.Recorder == nil {
			// Through s.Client, so that the lease guard in front of it (internal/leaderguard) holds
			// back the events of a replica that no longer leads, as it does its other writes.
			rec := events.NewRecorder(s.Client, mgr.GetScheme(), "mrtr-operator", workers)
			if s.setupErr = mgr.Add(rec); s.setupErr != nil {
				return
			}
			s.Recorder = rec
		}
		interval := s.KindRecheck
		if interval <= 0 {
			interval = DefaultKindRecheck
		}
		s.kinds = &servedKinds{mapper: mgr.GetRESTMapper(), interval: interval, served: map[workload.Kind]bool{},
			index: func(ctx context.Context, obj client.Object) error {
				return mgr.GetFieldIndexer().IndexField(ctx, obj, workload.SecretRefIndex, workload.ReferencedSecrets)
			}}
		s.setupErr = mgr.Add(s.kinds)
	})
	return s.setupErr
}

func (s *Shared) now() kclock.PassiveClock {
	if s.Clock == nil {
		return kclock.RealClock{}
	}
	return s.Clock
}

func (s *Shared) metrics() *metrics.Recorder {
	if s.Metrics == nil {
		return metrics.Default
	}
	return s.Metrics
}

// keyringPlace is a keyring as the shared steps see it in one place (a namespace): an
// MRTRKeyring in its own (placeOf), a ClusterMRTRKeyring in each namespace it selects and in the
// operator's, for its lead Secret (ClusterMRTRKeyringReconciler.placeOf).
type keyringPlace struct {
	Namespace string
	// Name is the name the keyring signs what it owns with: the KeyringLabel of its Secret, the
	// StampedByAnnotation of a workload (an MRTRKeyring's name, a ClusterKeyringClaim).
	Name string
	// SecretName is the name of its Secret there.
	SecretName string
	Spec       *mrtrv1alpha1.MRTRKeyringSpec
	// Fingerprint is status.secretFingerprint: what the operator last wrote to the Secret.
	Fingerprint string
	// Keyring is the keyring as its metrics and events name it.
	Keyring types.NamespacedName
}

// EffectiveSecretName is the name of the keyring's Secret in the place.
func (p keyringPlace) EffectiveSecretName() string { return p.SecretName }

// placeOf is an MRTRKeyring in its namespace.
func placeOf(kr *mrtrv1alpha1.MRTRKeyring) keyringPlace {
	return keyringPlace{Namespace: kr.Namespace, Name: kr.Name, SecretName: kr.EffectiveSecretName(), Spec: &kr.Spec,
		Fingerprint: kr.Status.SecretFingerprint, Keyring: types.NamespacedName{Namespace: kr.Namespace, Name: kr.Name}}
}

// recordTransitions feeds the event-like metrics of keyring kr from a status change that was written:
// a rotation that became stuck, and how long a phase that waited for a rollout took.
func (s *Shared) recordTransitions(kr types.NamespacedName, next, prev mrtrv1alpha1.MRTRKeyringStatus) {
	old := meta.FindStatusCondition(prev.Conditions, mrtrv1alpha1.ConditionStalled)
	if c := meta.FindStatusCondition(next.Conditions, mrtrv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue &&
		(old == nil || old.Status != metav1.ConditionTrue || old.Reason != c.Reason) {
		s.metrics().RotationFailed(kr.Namespace, kr.Name, c.Reason)
	}
	if prev.Phase != next.Phase && prev.PhaseStartedAt != nil && next.PhaseStartedAt != nil && rotation.WaitsForRollout(prev.Phase) {
		s.metrics().RolloutWaited(prev.Phase, next.PhaseStartedAt.Sub(prev.PhaseStartedAt.Time))
	}
}

// stampAndEvict does the stamps and evictions a Decision asks of one place: stamps the targets
// stampTargets names (already qualified by the caller's place) with stamp, evicts evict. It returns
// how soon to run again (0: no need) and the errors that are not races.
func (s *Shared) stampAndEvict(ctx context.Context, p keyringPlace, stamp string, stampTargets func(ref string) bool,
	targets []client.Object, evict []string, pods map[string]seenPod) (time.Duration, []error) {
	var requeue time.Duration
	var errs []error
	if stamp != "" {
		for _, obj := range targets {
			if ref, _ := workload.RefOf(obj); !stampTargets(ref.String()) {
				continue
			}
			wrote, err := workload.Stamp(ctx, s.Client, obj, stamp, p.Name)
			switch {
			case apierrors.IsConflict(err):
				// The workload changed since it was read: the next pass decides from its new state.
				requeue = soonest(requeue, conflictRetry)
			case err != nil && !apierrors.IsNotFound(err):
				errs = append(errs, err)
			}
			if wrote {
				s.written.wrote(obj)
			}
		}
	}
	if len(evict) > 0 {
		retry, err := s.evict(ctx, p, evict, pods)
		if err != nil {
			errs = append(errs, err)
		}
		if retry {
			requeue = soonest(requeue, evictionRetry)
		}
	}
	return requeue, errs
}
