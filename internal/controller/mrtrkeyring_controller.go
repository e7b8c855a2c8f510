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
	"errors"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"
	kclock "k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/metrics"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// MRTRKeyringReconciler observes a keyring, its Secret and its target workloads, asks
// rotation.Step what to do, and does it: write the Secret, write status (once, only if changed),
// emit events, stamp the workloads. What it keeps in memory between passes (ownWrites) only spares
// work; every decision comes from what it reads.
//
// The Secret carries the label mrtr.dev/keyring=<name> but no owner reference: like cert-manager's
// Certificate Secrets, it outlives its MRTRKeyring, so deleting (or re-creating) the keyring never
// takes the keys away from running servers. A re-created keyring resumes from the Secret.
type MRTRKeyringReconciler struct {
	client.Client
	// APIReader reads the Secret live when the cache cannot be trusted to hold it (readSecret): the
	// manager caches keyring Secrets only, and a copy may be a moment behind the operator's write.
	APIReader client.Reader
	// Recorder emits the events of each decision; nil means an events.Recorder that SetupWithManager
	// adds to the manager.
	Recorder clientevents.EventRecorder
	// Clock is the time source; nil means the real clock.
	Clock kclock.PassiveClock
	// Metrics receives the keyring metrics; nil means metrics.Default (the manager's registry).
	Metrics *metrics.Recorder
	// GenerateKey makes the candidate key of each pass; nil means keyring.GenerateKey.
	GenerateKey func(id string, n int) (keyring.Key, error)
	// MaxConcurrentReconciles is how many keyrings are reconciled at once; 0 means
	// DefaultConcurrency. controller-runtime never runs two passes of one keyring at once.
	MaxConcurrentReconciles int
	// ReadNodes: the operator may read Nodes (a cluster-wide install), and so spares the pods of
	// a node that is not Ready the restart for a missing acknowledgement. A namespace-scoped
	// install cannot be granted Nodes: their readiness is then unknown, and the status says so.
	ReadNodes bool

	// ClusterKeyrings, when not empty, turns on ClusterMRTRKeyrings (--cluster-keyrings): the
	// namespace, the operator's own, that holds their lead Secrets. Only a cluster-wide install
	// may: a cluster keyring writes Secrets into the namespaces it selects.
	ClusterKeyrings string

	// KindRecheck is how often a workload kind the API server did not serve is asked about again
	// (and a keyring that names one looks again); 0 means DefaultKindRecheck.
	KindRecheck time.Duration

	kinds     *servedKinds
	written   ownWrites
	evictions evictions
}

// DefaultConcurrency is the default MaxConcurrentReconciles. A pass spends most of its time
// waiting on its few API requests, so workers beyond the cores still help; past a handful, the
// API server's fairness queues and the client's rate limit do the waiting instead.
const DefaultConcurrency = 8

// What the operator may do, verb by verb, and why (nothing else is granted):
//   - mrtrkeyrings: list, watch: the informer behind the cached reads of keyrings.
//   - mrtrkeyrings/status: update: the one status write of each pass (never patch, never get).
//   - secrets: list, watch: the informer of keyring Secrets (type mrtr.dev/keyring only, by field
//     selector), which wakes a keyring when its Secret changes and serves its reads; get: the
//     live read when the cache may be behind or the Secret is of another type; create: a
//     keyring's first Secret; update: each rotation step's write, conditional on the
//     resourceVersion read. Never patch, never delete: a Secret outlives its keyring.
//   - deployments, statefulsets, daemonsets, and argoproj.io rollouts: list, watch: the informers
//     behind the target reads (a Rollout's only once the cluster serves the kind); patch: the
//     stamp (a merge patch of two annotations). Never update or delete. Each kind's marker is
//     beside its adapter in internal/workload, so that a kind is one file there.
//   - events.k8s.io events: create: the event recorder (internal/events), one object per event;
//     never patch, as it folds no repeats into a series.
//   - pods: list, watch: the informer behind the pod reads of Reload delivery (stripped to
//     names, labels, acknowledgements and Secret references, see workload.StripPod).
//   - pods/eviction: create: restarting a pod that did not acknowledge in time. Never delete.
//   - poddisruptionbudgets: list, watch: the informer behind the budget that paces those restarts.
//   - nodes: list, watch: the informer (stripped to each node's Ready condition) that spares the
//     pods of a node that is not Ready those restarts. Cluster-scoped: a namespace-scoped install
//     goes without (ReadNodes).
//
// The manager reads keyrings and workloads from its cache only (list and watch); it reads keyring
// Secrets live (get) when the cache may be behind its own write. The e2e suite checks, from the API
// server's audit log, that the manager uses every permission it holds.
// +kubebuilder:rbac:groups=mrtr.dev,resources=mrtrkeyrings,verbs=list;watch
// +kubebuilder:rbac:groups=mrtr.dev,resources=mrtrkeyrings/status,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// Reconcile runs one pass: gather, rotation.Step, then the writes it decided (writeSecret, the
// status update, workload.Stamp, evict).
func (r *MRTRKeyringReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var kr mrtrv1alpha1.MRTRKeyring
	if err := r.Get(ctx, req.NamespacedName, &kr); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics().Forget(req.Namespace, req.Name)
			r.written.forget(&mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&kr) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	in, obs, err := r.gather(ctx, &kr)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.written.behind(obs.targets...) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	d := rotation.Step(in)

	// The Secret first: if we stop before the status write, the Secret's annotations let the next
	// pass resume in the phase it was written for.
	annotated := 0 // pods told to sync the Secret at once (reloadTrigger)
	if d.Secret != nil {
		if err := r.writeSecret(ctx, &kr, obs.secret, d); err != nil {
			return retryOnConflict(ctx, err)
		}
		annotated = r.syncPods(ctx, &kr, d.Secret.Fingerprint(), d.Nudge, obs.pods)
	}
	if !equality.Semantic.DeepEqual(kr.Status, d.Status) {
		previous := kr.Status
		kr.Status = d.Status
		if err := r.Status().Update(ctx, &kr, client.FieldOwner(mrtrv1alpha1.FieldManager)); err != nil {
			// A conflict means this pass decided from a stale copy. Our own status writes do not
			// trigger a pass (the For predicate ignores them), so the requeue is what brings a fresh one.
			return retryOnConflict(ctx, err)
		}
		r.written.wrote(&kr)
		// Only after the write: a pass retried after a conflict must not count the same transition twice.
		r.recordTransitions(&kr, previous)
	}
	r.metrics().Observe(&kr)
	for _, e := range d.Events {
		r.Recorder.Eventf(&kr, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
	var stampErrs []error // and eviction errors
	requeue := d.RequeueAfter
	if r.kinds != nil && slices.ContainsFunc(in.Workloads, func(w rotation.Workload) bool { return w.NotServed != "" }) {
		// No event comes when the kind becomes served and the target turns out missing or there.
		requeue = soonest(requeue, r.kinds.interval)
	}
	if d.Stamp != "" {
		for _, obj := range obs.targets {
			if ref, _ := workload.RefOf(obj); !slices.Contains(d.StampTargets, ref.String()) {
				continue
			}
			wrote, err := workload.Stamp(ctx, r.Client, obj, d.Stamp, kr.Name)
			switch {
			case apierrors.IsConflict(err):
				// The workload changed since it was read: the next pass decides from its new state.
				requeue = soonest(requeue, conflictRetry)
			case err != nil && !apierrors.IsNotFound(err):
				stampErrs = append(stampErrs, err)
			}
			if wrote {
				r.written.wrote(obj)
			}
		}
	}
	if len(d.Evict) > 0 {
		retry, err := r.evict(ctx, &kr, d.Evict, obs.pods)
		stampErrs = append(stampErrs, err)
		if retry {
			requeue = soonest(requeue, evictionRetry)
		}
	}
	log.V(1).Info("reconciled", "phase", d.Status.Phase, "fingerprint", d.Status.SecretFingerprint,
		"target", d.Status.TargetFingerprint, "requeueAfter", requeue, "evicted", len(d.Evict), "podsAnnotated", annotated)
	return ctrl.Result{RequeueAfter: requeue, Priority: requeuePriority(d.Status.Phase)}, errors.Join(stampErrs...)
}

// conflictRetry is how soon a pass that lost an optimistic-concurrency race runs again.
const conflictRetry = 250 * time.Millisecond

// retryOnConflict turns a conflict into a quiet requeue: it is routine (another writer got there
// first, or the cache was a moment behind), not an error worth a log line and a backoff. Any other
// error is returned as it is.
func retryOnConflict(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("write conflict, retrying", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// soonest is the earlier of two requeue delays, where 0 means none.
func soonest(requeue, d time.Duration) time.Duration {
	if requeue == 0 || requeue > d {
		return d
	}
	return requeue
}

func (r *MRTRKeyringReconciler) now() kclock.PassiveClock {
	if r.Clock == nil {
		return kclock.RealClock{}
	}
	return r.Clock
}

func (r *MRTRKeyringReconciler) metrics() *metrics.Recorder {
	if r.Metrics == nil {
		return metrics.Default
	}
	return r.Metrics
}

// recordTransitions feeds the event-like metrics from a status change that was written: a rotation
// that became stuck, and how long a phase that waited for a rollout took.
func (r *MRTRKeyringReconciler) recordTransitions(kr *mrtrv1alpha1.MRTRKeyring, prevStatus mrtrv1alpha1.MRTRKeyringStatus) {
	next := kr.Status
	old := meta.FindStatusCondition(prevStatus.Conditions, mrtrv1alpha1.ConditionStalled)
	if c := meta.FindStatusCondition(next.Conditions, mrtrv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue &&
		(old == nil || old.Status != metav1.ConditionTrue || old.Reason != c.Reason) {
		r.metrics().RotationFailed(kr.Namespace, kr.Name, c.Reason)
	}
	prev := prevStatus.Phase
	if prev != next.Phase && prevStatus.PhaseStartedAt != nil && next.PhaseStartedAt != nil && rotation.WaitsForRollout(prev) {
		r.metrics().RolloutWaited(prev, next.PhaseStartedAt.Sub(prevStatus.PhaseStartedAt.Time))
	}
}
