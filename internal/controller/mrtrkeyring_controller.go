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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
)

// MRTRKeyringReconciler observes a keyring, its Secret and its target workloads in its namespace,
// asks rotation.Step what to do, and does it: write the Secret, write status (once, only if
// changed), emit events, stamp the workloads, evict. An MRTRKeyring has one place, its own
// namespace, whose consumers read the Secret itself. What it keeps in memory between passes
// (Shared's ownWrites) only spares work; every decision comes from what it reads.
type MRTRKeyringReconciler struct {
	*Shared
	// MaxConcurrentReconciles is how many keyrings are reconciled at once; 0 means
	// DefaultConcurrency. controller-runtime never runs two passes of one keyring at once.
	MaxConcurrentReconciles int
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
		if err := r.writeSecret(ctx, placeOf(&kr), obs.secret, d); err != nil {
			return retryOnConflict(ctx, err)
		}
		annotated = r.syncPods(ctx, placeOf(&kr), d.Secret.Fingerprint(), d.Nudge, obs.pods)
	}
	if !equality.Semantic.DeepEqual(kr.Status, d.Status) {
		previous := kr.Status
		kr.Status = d.Status
		if err := r.Status().Update(ctx, &kr, client.FieldOwner(mrtrv1alpha1.FieldManager)); err != nil {
			// A conflict means this pass decided from a stale copy. Our own status writes do not
			// trigger a pass (the For predicate ignores them), so the requeue is what brings a fresh one.
			r.recordCommitted(&kr, d)
			return retryOnConflict(ctx, err)
		}
		r.written.wrote(&kr)
		// Only after the write: a pass retried after a conflict must not count the same transition twice.
		r.recordTransitions(placeOf(&kr).Keyring, kr.Status, previous)
	}
	r.metrics().Observe(placeOf(&kr).Keyring, rotation.SettingsFrom(kr.Spec).RotationInterval, &kr.Status)
	r.record(&kr, d.Events)
	requeue := d.RequeueAfter
	if r.kinds != nil && slices.ContainsFunc(in.Workloads, func(w rotation.Workload) bool { return w.NotServed != "" }) {
		// No event comes when the kind becomes served and the target turns out missing or there.
		requeue = soonest(requeue, r.kinds.interval)
	}
	retry, errs := r.stampAndEvict(ctx, placeOf(&kr), d.Stamp, func(ref string) bool { return slices.Contains(d.StampTargets, ref) },
		obs.targets, d.Evict, obs.pods)
	if retry > 0 {
		requeue = soonest(requeue, retry)
	}
	log.V(1).Info("reconciled", "phase", d.Status.Phase, "fingerprint", d.Status.SecretFingerprint,
		"target", d.Status.TargetFingerprint, "requeueAfter", requeue, "evicted", len(d.Evict), "podsAnnotated", annotated)
	return ctrl.Result{RequeueAfter: requeue, Priority: requeuePriority(d.Status.Phase)}, errors.Join(errs...)
}

// record emits the events of a pass about obj.
func (r *Shared) record(obj runtime.Object, events []rotation.Event) {
	for _, e := range events {
		r.Recorder.Eventf(obj, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
}

// recordCommitted emits the events of d when its status write failed after its Secret write: the
// Secret commits the step (the next pass resumes in the phase it was written for, with an event
// that says so, not these), so what they tell happened. Without a Secret write nothing did.
func (r *Shared) recordCommitted(obj runtime.Object, d rotation.Decision) {
	if d.Secret != nil {
		r.record(obj, d.Events)
	}
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
