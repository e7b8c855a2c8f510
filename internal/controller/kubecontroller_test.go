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
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// This file plays the Deployment, StatefulSet and DaemonSet controllers, which do not run in
// envtest: the tests decide when and how far a rollout gets by writing the workload's status the
// way the real controller would. The reconciler only reads status, so this is all it can observe.

// daemonSetNodes is how many nodes the simulated DaemonSets run on.
const daemonSetNodes = 2

// newWorkload returns a minimal valid workload of kind with replicas pods (ignored for DaemonSets)
// and the given labels.
func newWorkload(kind workload.Kind, namespace, name string, replicas int32, labels map[string]string) client.Object {
	sel := map[string]string{"app": name}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: sel},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1"}}},
	}
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}
	switch kind {
	case workload.Deployment:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}
	case workload.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl, ServiceName: name}}
	case workload.DaemonSet:
		return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl}}
	}
	Fail("unknown kind " + string(kind))
	return nil
}

// createWorkload creates the workload and rolls it out at once, as a healthy cluster would.
func createWorkload(kind workload.Kind, namespace, name string, replicas int32, labels map[string]string) client.Object {
	GinkgoHelper()
	obj := newWorkload(kind, namespace, name, replicas, labels)
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	rollOut(obj, -1)
	return obj
}

// rollOutTarget completes w's rollout once w carries kr's status.targetFingerprint. The operator
// stamps a workload after the status write that enters a phase, so a rollout right after that
// write is seen could roll out the template from before the stamp, and prove nothing.
func rollOutTarget(kr *mrtrv1alpha1.MRTRKeyring, w client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		fp, _ := stampOf(g, w)
		g.Expect(fp).To(Equal(getKeyring(g, kr).Status.TargetFingerprint))
	}).Should(Succeed())
	rollOut(w, -1)
}

// rollOut plays the workload's controller up to `updated` pods running the current template
// (-1: all of them, a completed rollout), everything else still on the old template but available.
// It re-reads obj first, so it acts on the template as it is now.
func rollOut(obj client.Object, updated int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		gen := obj.GetGeneration()
		// The revision name depends on the template, as the real one does (a hash of it).
		rev := fmt.Sprintf("%s-%s", obj.GetName(), workload.Fingerprint(obj))
		switch o := obj.(type) {
		case *appsv1.Deployment:
			n := *o.Spec.Replicas
			u := clamp(updated, n)
			o.Status = appsv1.DeploymentStatus{ObservedGeneration: gen, Replicas: n + min(n-u, 1),
				UpdatedReplicas: u, ReadyReplicas: n, AvailableReplicas: n}
			if u == n {
				o.Status.Replicas = n
			}
		case *appsv1.StatefulSet:
			n := *o.Spec.Replicas
			u := clamp(updated, n)
			cur := o.Status.CurrentRevision
			if u == n || cur == "" {
				cur = rev
			}
			o.Status = appsv1.StatefulSetStatus{ObservedGeneration: gen, Replicas: n, UpdatedReplicas: u,
				ReadyReplicas: n, AvailableReplicas: n, CurrentReplicas: n, CurrentRevision: cur, UpdateRevision: rev}
		case *appsv1.DaemonSet:
			u := clamp(updated, daemonSetNodes)
			o.Status = appsv1.DaemonSetStatus{ObservedGeneration: gen, DesiredNumberScheduled: daemonSetNodes,
				CurrentNumberScheduled: daemonSetNodes, UpdatedNumberScheduled: u, NumberReady: daemonSetNodes,
				NumberAvailable: daemonSetNodes}
		}
		g.Expect(k8sClient.Status().Update(ctx, obj)).To(Succeed())
	}).Should(Succeed())
}

// stallDeployment plays a Deployment whose new pods never become ready: after its progress
// deadline the controller sets Progressing=False with ProgressDeadlineExceeded.
func stallDeployment(d *appsv1.Deployment) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n + 1, UpdatedReplicas: 1,
			ReadyReplicas: n, AvailableReplicas: n, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message:            fmt.Sprintf("ReplicaSet %q has timed out progressing.", d.Name+"-new"),
				LastUpdateTime:     metav1.Now(),
				LastTransitionTime: metav1.Now(),
			}}}
		g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())
	}).Should(Succeed())
}

func clamp(updated, n int32) int32 {
	if updated < 0 || updated > n {
		return n
	}
	return updated
}

// stampOf returns the keyring fingerprint on the workload's pod template and its generation, which counts
// the writes to its spec (a second stamp of the same value would not change it; a new value does).
func stampOf(g Gomega, obj client.Object) (string, int64) {
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return workload.Fingerprint(obj), obj.GetGeneration()
}
