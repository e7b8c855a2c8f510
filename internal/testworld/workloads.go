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

package testworld

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// DaemonSetNodes is how many nodes a simulated DaemonSet runs on.
const DaemonSetNodes = 2

// Complete, as the number of updated pods, is a completed rollout: every pod runs the current
// template.
const Complete int32 = -1

// Workload describes a workload to create: Replicas pods (ignored for a DaemonSet) selected by
// app=Name, carrying Labels on the workload itself. With Secret set, its pods mount that keyring
// Secret as a consumer's do (ConsumerPodSpec); without, they mount nothing.
type Workload struct {
	Kind            workload.Kind
	Namespace, Name string
	Replicas        int32
	Labels          map[string]string
	Secret          string
}

// New returns the workload w describes, not yet created.
func (w Workload) New() (client.Object, error) {
	sel := map[string]string{"app": w.Name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: containerImage}}}
	if w.Secret != "" {
		spec = ConsumerPodSpec(w.Secret)
	}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: spec}
	meta := metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name, Labels: w.Labels}
	replicas := w.Replicas
	switch w.Kind {
	case workload.Deployment:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}, nil
	case workload.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl, ServiceName: w.Name}}, nil
	case workload.DaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}, nil
	}
	return nil, fmt.Errorf("testworld: no controller plays workloads of kind %q", w.Kind)
}

// RollOut plays obj's controller up to updated pods running its current template (Complete: all
// of them), every other pod still on the old template but available. It reads obj again first,
// so that it rolls out the template as it is now.
func RollOut(ctx context.Context, c client.Client, obj client.Object, updated int32) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	return rollOut(ctx, c, obj, updated)
}

// rollOut writes the status of obj, as read, rolled out to updated pods.
func rollOut(ctx context.Context, c client.StatusClient, obj client.Object, updated int32) error {
	if err := setRolledOut(obj, updated); err != nil {
		return err
	}
	return writeStatus(ctx, c, obj)
}

// setRolledOut sets obj's status as its controller would with updated pods on the current
// template. The operator reads a rollout from nothing else.
func setRolledOut(obj client.Object, updated int32) error {
	gen := obj.GetGeneration()
	// The revision name depends on the template, as the real one does (a hash of it).
	rev := fmt.Sprintf("%s-%s", obj.GetName(), workload.Fingerprint(obj))
	switch o := obj.(type) {
	case *appsv1.Deployment:
		n := replicas(o.Spec.Replicas)
		u := clamp(updated, n)
		// One surge pod while the rollout is under way, as maxSurge 25% rounds up to.
		o.Status = appsv1.DeploymentStatus{ObservedGeneration: gen, Replicas: n + min(n-u, 1),
			UpdatedReplicas: u, ReadyReplicas: n, AvailableReplicas: n}
	case *appsv1.StatefulSet:
		n := replicas(o.Spec.Replicas)
		u := clamp(updated, n)
		cur := o.Status.CurrentRevision
		if u == n || cur == "" {
			cur = rev
		}
		o.Status = appsv1.StatefulSetStatus{ObservedGeneration: gen, Replicas: n, UpdatedReplicas: u,
			ReadyReplicas: n, AvailableReplicas: n, CurrentReplicas: n, CurrentRevision: cur, UpdateRevision: rev}
	case *appsv1.DaemonSet:
		u := clamp(updated, DaemonSetNodes)
		o.Status = appsv1.DaemonSetStatus{ObservedGeneration: gen, DesiredNumberScheduled: DaemonSetNodes,
			CurrentNumberScheduled: DaemonSetNodes, UpdatedNumberScheduled: u, NumberReady: DaemonSetNodes,
			NumberAvailable: DaemonSetNodes}
	default:
		return fmt.Errorf("testworld: no controller plays %T", obj)
	}
	return nil
}

// Stall plays a Deployment whose new pods never become ready: after its progress deadline the
// controller sets Progressing=False with ProgressDeadlineExceeded. It reads d again first.
func Stall(ctx context.Context, c client.Client, d *appsv1.Deployment) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		return err
	}
	setStalled(d, metav1.Now())
	return writeStatus(ctx, c, d)
}

// setStalled sets d's status as its controller does once its progress deadline passed at now, one
// new pod never ready beside all the old ones.
func setStalled(d *appsv1.Deployment, now metav1.Time) {
	n := replicas(d.Spec.Replicas)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n + 1, UpdatedReplicas: 1,
		ReadyReplicas: n, AvailableReplicas: n, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message:        fmt.Sprintf("ReplicaSet %q has timed out progressing.", d.Name+"-new"),
			LastUpdateTime: now, LastTransitionTime: now,
		}}}
}

// writeStatus replaces obj's whole status, as its controller's update would, provided its
// generation is still the one read: a status computed from a template that has changed since is
// refused, as an update of the controller that read the old one would be. Unlike an update it does
// not conflict with writes that leave the template alone (the operator's, in the cache's lag), so
// a player of thousands of workloads never writes twice for one rollout.
func writeStatus(ctx context.Context, c client.StatusClient, obj client.Object) error {
	status, err := statusOf(obj)
	if err != nil {
		return err
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/generation", "value": obj.GetGeneration()},
		{"op": "add", "path": "/status", "value": status},
	})
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}

func statusOf(obj client.Object) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Status, nil
	case *appsv1.StatefulSet:
		return o.Status, nil
	case *appsv1.DaemonSet:
		return o.Status, nil
	case *workload.ArgoRollout:
		return o.Status, nil
	}
	return nil, fmt.Errorf("testworld: no controller plays %T", obj)
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1 // the API server's default
	}
	return *n
}

func clamp(updated, n int32) int32 {
	if updated < 0 || updated > n {
		return n
	}
	return updated
}
