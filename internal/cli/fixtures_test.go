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

package cli

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// The fixtures: keyrings in each situation status can describe, with the workloads and pods they
// select, at times relative to the tests' clock. Fingerprints are made up (16 hex digits, as
// keyring.Keyring.Fingerprint makes them); nothing here is key material.
const (
	fpOld = "1e8b8922b457e694" // the keyring before the rotation
	fpNew = "caeb40852251138a" // the keyring the rotation rolls out
)

func at(d time.Duration) metav1.Time   { return metav1.NewTime(now.Add(d)) }
func atp(d time.Duration) *metav1.Time { t := at(d); return &t }

const day = 24 * time.Hour

// spec is a keyring spec with the API's defaults, as the API server fills them in.
func spec() mrtrv1alpha1.MRTRKeyringSpec {
	return mrtrv1alpha1.MRTRKeyringSpec{
		RotationInterval:       metav1.Duration{Duration: 30 * day},
		TokenTTL:               metav1.Duration{Duration: 5 * time.Minute},
		ClockSkew:              metav1.Duration{Duration: 30 * time.Second},
		TerminationGracePeriod: metav1.Duration{Duration: 30 * time.Second},
		RolloutDeadline:        metav1.Duration{Duration: 10 * time.Minute},
		PropagationDelay:       metav1.Duration{Duration: 2 * time.Minute},
		ReloadDeadline:         metav1.Duration{Duration: 2 * time.Minute},
		KeyBytes:               32,
		Delivery:               mrtrv1alpha1.DeliveryReload,
	}
}

func cond(typ string, status metav1.ConditionStatus, reason, message string, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: at(since)}
}

// healthy are the conditions of a keyring in phase, with the Reconciling message given ("" for
// Idle).
func healthy(secret string, phase mrtrv1alpha1.Phase, fp, reconciling string, since time.Duration) []metav1.Condition {
	rec := cond(mrtrv1alpha1.ConditionReconciling, metav1.ConditionFalse, mrtrv1alpha1.ReasonIdle,
		"no rotation under way; every target runs the current keyring", since)
	if reconciling != "" {
		rec = cond(mrtrv1alpha1.ConditionReconciling, metav1.ConditionTrue, mrtrv1alpha1.ReasonRotating, reconciling, since)
	}
	return []metav1.Condition{
		cond(mrtrv1alpha1.ConditionReady, metav1.ConditionTrue, mrtrv1alpha1.ReasonReady,
			"keyring "+fp+" in Secret "+secret+", phase "+string(phase), since),
		rec,
		cond(mrtrv1alpha1.ConditionStalled, metav1.ConditionFalse, mrtrv1alpha1.ReasonNotStalled, "nothing blocks progress", -30*day),
	}
}

// payments is mid-rotation in Reload delivery: the new key seals, one pod of its Deployment and
// the canary pod its podSelector selects have not acknowledged the new keyring yet.
func payments() *mrtrv1alpha1.MRTRKeyring {
	s := spec()
	s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindDeployment, Name: "payments-mcp"}}
	s.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "payments-canary"}}
	return &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "mcp", Generation: 2,
			Annotations: map[string]string{mrtrv1alpha1.RotateAnnotation: "2026-12-01T11:58:00Z"}},
		Spec: s,
		Status: mrtrv1alpha1.MRTRKeyringStatus{
			ObservedGeneration: 2,
			Phase:              mrtrv1alpha1.PhaseSealingWithNew,
			SecretName:         "payments",
			Keys: []mrtrv1alpha1.KeyStatus{
				{ID: "k20261201-115800", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: at(-2 * time.Minute)},
				{ID: "k20261101-120000", Role: mrtrv1alpha1.KeyRetiring, CreatedAt: at(-30 * day)},
			},
			SecretFingerprint: fpNew,
			TargetFingerprint: fpNew,
			Workloads: []mrtrv1alpha1.WorkloadStatus{{
				Kind: mrtrv1alpha1.KindDeployment, Name: "payments-mcp", Found: true,
				ReadyReplicas: 3, DesiredReplicas: 3, Pods: 3, PodsAcknowledged: 2,
				Laggards: []string{"payments-mcp-7d9f-c"},
				Message:  "2 of 3 pods run keyring " + fpNew + " (not yet: payments-mcp-7d9f-c)",
			}},
			WorkloadCount:            1,
			PodCount:                 4,
			PodsAcknowledged:         2,
			SelectedPods:             &mrtrv1alpha1.SelectedPodsStatus{Pods: 1, Laggards: []string{"payments-canary-0"}},
			RestartedPods:            []string{"payments-mcp-7d9f-e"},
			PhaseStartedAt:           atp(-90 * time.Second),
			LastRotationTime:         atp(-30 * day),
			NextRotationTime:         atp(-2 * time.Minute),
			LastHandledRotateRequest: "2026-12-01T11:58:00Z",
			RotationsCompleted:       4,
			TTLWaits:                 ttlWaits(true),
			WaitingFor: &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitDelivery,
				For:     []string{"Deployment/payments-mcp", "payments-mcp-7d9f-c", "payments-canary-0"},
				Message: "2 of 4 pods to acknowledge keyring " + fpNew + " (laggards: payments-mcp-7d9f-c, payments-canary-0), so that no pod seals with the old key any more"},
			Conditions: healthy("payments", mrtrv1alpha1.PhaseSealingWithNew, fpNew,
				"SealingWithNew: waiting for every pod to acknowledge keyring "+fpNew+": Deployment/payments-mcp: 2 of 3 pods", -2*time.Minute),
		},
	}
}

// paymentsObjects are the Deployment and the pods that payments's status counts, and one pod of
// another app that it must not show.
func paymentsObjects() []client.Object {
	key := ack.AnnotationKey("payments")
	pod := func(name, app, acked string, created time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mcp", CreationTimestamp: at(created),
			Labels: map[string]string{"app": app}}}
		if acked != "" {
			p.Annotations = map[string]string{key: acked}
		}
		return p
	}
	terminating := pod("payments-mcp-7d9f-d", "payments", fpOld, -2*day)
	terminating.DeletionTimestamp = atp(-10 * time.Second)
	terminating.Finalizers = []string{"example.com/drain"} // the fake client keeps only objects with finalizers terminating
	return []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "payments-mcp", Namespace: "mcp"},
			Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "payments"}}},
		},
		pod("payments-mcp-7d9f-a", "payments", fpNew, -2*day),
		pod("payments-mcp-7d9f-b", "payments", fpNew, -2*day),
		pod("payments-mcp-7d9f-c", "payments", fpOld, -2*day),
		terminating,
		pod("payments-canary-0", "payments-canary", "", -30*time.Second),
		pod("search-worker-0", "search-worker", fpNew, -2*day),
	}
}

// weatherObjects are weather's Deployment and pod: the pod acknowledged weather's Secret.
func weatherObjects() []client.Object {
	return []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "weather-mcp", Namespace: "mcp"},
			Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "weather"}}},
		},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "weather-mcp-1", Namespace: "mcp", CreationTimestamp: at(-30 * day),
			Labels: map[string]string{"app": "weather"}, Annotations: map[string]string{ack.AnnotationKey("weather"): fpNew}}},
	}
}

// search rotates by rollout (Restart delivery) and is between rotations.
func search() *mrtrv1alpha1.MRTRKeyring {
	s := spec()
	s.Delivery = mrtrv1alpha1.DeliveryRestart
	s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindStatefulSet, Name: "search"}}
	return &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "search", Namespace: "mcp", Generation: 1},
		Spec:       s,
		Status: mrtrv1alpha1.MRTRKeyringStatus{
			ObservedGeneration: 1,
			Phase:              mrtrv1alpha1.PhaseStable,
			SecretName:         "search",
			Keys:               []mrtrv1alpha1.KeyStatus{{ID: "k20261121-090000", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: at(-10*day - 3*time.Hour)}},
			SecretFingerprint:  fpOld,
			TargetFingerprint:  fpOld,
			Workloads: []mrtrv1alpha1.WorkloadStatus{{Kind: mrtrv1alpha1.KindStatefulSet, Name: "search", Found: true,
				UpToDate: true, ReadyReplicas: 2, DesiredReplicas: 2}},
			WorkloadCount:      1,
			WorkloadsUpToDate:  1,
			PhaseStartedAt:     atp(-10 * day),
			LastRotationTime:   atp(-10 * day),
			NextRotationTime:   atp(20 * day),
			RotationsCompleted: 1,
			TTLWaits:           ttlWaits(false),
			WaitingFor: &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitNextRotation, Until: atp(20 * day),
				Message: "the next rotation, due at 2026-12-21T12:00:00Z"},
			Conditions: healthy("search", mrtrv1alpha1.PhaseStable, fpOld, "", -10*day),
		},
	}
}

// weather waits out the TTL: every pod seals with the new key.
func weather() *mrtrv1alpha1.MRTRKeyring {
	s := spec()
	s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindDeployment, Name: "weather-mcp"}}
	until := at(4*time.Minute + 12*time.Second)
	return &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "weather", Namespace: "mcp", Generation: 1},
		Spec:       s,
		Status: mrtrv1alpha1.MRTRKeyringStatus{
			ObservedGeneration: 1,
			Phase:              mrtrv1alpha1.PhaseWaitingTTL,
			SecretName:         "weather",
			Keys: []mrtrv1alpha1.KeyStatus{
				{ID: "k20261201-115500", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: at(-5 * time.Minute), PythonKid: "6fe650ea"},
				{ID: "k20261101-115500", Role: mrtrv1alpha1.KeyRetiring, CreatedAt: at(-30*day - 5*time.Minute), PythonKid: "61c00936"},
			},
			SecretFingerprint: fpNew,
			TargetFingerprint: fpNew,
			Workloads: []mrtrv1alpha1.WorkloadStatus{{Kind: mrtrv1alpha1.KindDeployment, Name: "weather-mcp", Found: true,
				UpToDate: true, ReadyReplicas: 1, DesiredReplicas: 1, Pods: 1, PodsAcknowledged: 1}},
			WorkloadCount:     1,
			WorkloadsUpToDate: 1,
			PodCount:          1,
			PodsAcknowledged:  1,
			PhaseStartedAt:    atp(-108 * time.Second),
			TTLWaitUntil:      &until,
			TTLWaits:          ttlWaits(true),
			WaitingFor: &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitTokenExpiry, Until: &until,
				Message: "the tokens sealed with the old keys to expire: the TTL wait ends at 2026-12-01T12:04:12Z; then the old keys are removed"},
			NextRotationTime: atp(-5 * time.Minute),
			RevokedKeys: []mrtrv1alpha1.RevokedKey{
				{ID: "k20261015-000000", Role: mrtrv1alpha1.KeyPrimary, RevokedAt: at(-10 * day)},
			},
			Conditions: healthy("weather", mrtrv1alpha1.PhaseWaitingTTL, fpNew,
				"WaitingTTL: tokens sealed with the old keys expire by 2026-12-01T12:04:12Z", -108*time.Second),
		},
	}
}

// broken cannot leave Accepting: its Deployment has not rolled out within the deadline.
func broken() *mrtrv1alpha1.MRTRKeyring {
	s := spec()
	s.Delivery = mrtrv1alpha1.DeliveryRestart
	s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindDeployment, Name: "broken-mcp"}}
	msg := "Deployment/broken-mcp has not rolled out keyring " + fpNew + " within spec.rolloutDeadline (10m0s): 1 of 2 replicas updated"
	return &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "mcp", Generation: 1},
		Spec:       s,
		Status: mrtrv1alpha1.MRTRKeyringStatus{
			ObservedGeneration: 1,
			Phase:              mrtrv1alpha1.PhaseAccepting,
			SecretName:         "broken",
			Keys: []mrtrv1alpha1.KeyStatus{
				{ID: "k20261101-000000", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: at(-30*day - 12*time.Hour)},
				{ID: "k20261201-114000", Role: mrtrv1alpha1.KeyAccepted, CreatedAt: at(-20 * time.Minute)},
			},
			SecretFingerprint: fpNew,
			TargetFingerprint: fpNew,
			Workloads: []mrtrv1alpha1.WorkloadStatus{{Kind: mrtrv1alpha1.KindDeployment, Name: "broken-mcp", Found: true,
				ReadyReplicas: 1, DesiredReplicas: 2, Message: "1 of 2 replicas updated"}},
			WorkloadCount:  1,
			PhaseStartedAt: atp(-20 * time.Minute),
			TTLWaits:       ttlWaits(false),
			WaitingFor: &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitFix,
				Message: "a fix: the rotation is stalled (" + mrtrv1alpha1.ReasonRolloutDeadlineExceeded + "): " + msg + "; it resumes by itself once that is resolved"},
			Conditions: []metav1.Condition{
				cond(mrtrv1alpha1.ConditionReady, metav1.ConditionFalse, mrtrv1alpha1.ReasonRolloutDeadlineExceeded, msg, -10*time.Minute),
				cond(mrtrv1alpha1.ConditionReconciling, metav1.ConditionFalse, mrtrv1alpha1.ReasonRolloutDeadlineExceeded,
					"blocked: see the Stalled condition", -10*time.Minute),
				cond(mrtrv1alpha1.ConditionStalled, metav1.ConditionTrue, mrtrv1alpha1.ReasonRolloutDeadlineExceeded, msg, -10*time.Minute),
			},
		},
	}
}

// paused is suspended, with a rotation requested that waits for the resume.
func paused() *mrtrv1alpha1.MRTRKeyring {
	kr := search()
	kr.Name, kr.Status.SecretName = "paused", "paused"
	kr.Spec.Suspend, kr.Spec.Workloads, kr.Status.Workloads = true, nil, nil
	kr.Status.WorkloadCount, kr.Status.WorkloadsUpToDate = 0, 0
	kr.Annotations = map[string]string{mrtrv1alpha1.RotateAnnotation: "2026-12-01T11:00:00Z"}
	kr.Status.Conditions = healthy("paused", mrtrv1alpha1.PhaseStable, fpOld, "", -10*day)
	kr.Status.WaitingFor = &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitResume,
		Message: "a resume: rotations are suspended (spec.suspend), and the rotation requested by mrtr.dev/rotate=2026-12-01T11:00:00Z starts once they are resumed"}
	return kr
}

// fresh was just created: the operator has not written its status yet.
func fresh() *mrtrv1alpha1.MRTRKeyring {
	return &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "mcp", Generation: 1}, Spec: spec()}
}

// ttlWaits are the TTL waits of spec(), as the operator keeps them (retiring: while old keys are
// left from a rotation under way).
func ttlWaits(retiring bool) *mrtrv1alpha1.TTLWaits {
	w := &mrtrv1alpha1.TTLWaits{Primary: metav1.Duration{Duration: 6 * time.Minute}}
	if retiring {
		w.Retiring = &metav1.Duration{Duration: 6 * time.Minute}
	}
	return w
}

// tools is a keyring of another namespace, for -A.
func tools() *mrtrv1alpha1.MRTRKeyring {
	kr := search()
	kr.Name, kr.Namespace, kr.Status.SecretName = "tools", "tools", "tools"
	kr.Status.Conditions = healthy("tools", mrtrv1alpha1.PhaseStable, fpOld, "", -10*day)
	return kr
}
