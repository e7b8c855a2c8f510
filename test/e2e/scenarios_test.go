//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// The scenarios that both suites run, each on its own node: kwok's (e2e_test.go) and the real one
// (realnode_test.go). Each function is the body of one spec.

// leaderFailover hands the keyring over from one manager to another mid-rotation: in place of
// the single manager (launched again when the spec ends), two with leader election, the first
// leading; one rotation requested under live traffic (startLoad); the leader killed with SIGKILL,
// so that it cannot hand its Lease over, once its pods seal with the new key. finish waits until
// the keyring has completed n rotations and settled, stops the load and checks that nothing was
// rejected or failed. The standby must resume the phase where it was: the phases in order, each
// Secret write once, every step gated on the pods' acknowledgements, the TTL wait not restarted,
// and no container or pod restarted.
func leaderFailover(ctx context.Context, env *harness.Env, request string, startLoad func(), finish func(n int64) harness.Counts) {
	GinkgoHelper()
	By("running two managers with leader election, the first one leading")
	Expect(env.Operator.Stop()).To(Succeed())
	first, second := env.Operator.Replica("leader-a"), env.Operator.Replica("leader-b")
	DeferCleanup(func() {
		Expect(first.Stop()).To(Succeed())
		Expect(second.Stop()).To(Succeed())
		Expect(env.Operator.Launch()).To(Succeed()) // the single manager, for the specs after this one
	})
	Expect(first.Launch()).To(Succeed())
	Eventually(first.Leads).WithTimeout(time.Minute).Should(BeTrue())
	Expect(second.Launch()).To(Succeed())

	done, err := rotationsCompleted(env)()
	Expect(err).NotTo(HaveOccurred())
	startLoad()
	from := len(env.Timeline.Events())
	waitsBefore := len(env.Timeline.TTLWaitUntils())
	restarts, uids, err := env.Restarts(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.RequestRotation(ctx, request)).To(Succeed())
	Eventually(func() []mrtrv1alpha1.Phase { return phasesSince(env.Timeline.Events(), from) }).
		WithTimeout(2 * time.Minute).Should(ContainElement(mrtrv1alpha1.PhaseSealingWithNew))
	Expect(second.Leads()).To(BeFalse(), "two leaders")

	By("killing the leader with SIGKILL: it cannot hand its Lease over")
	Expect(first.Kill()).To(Succeed())
	killed := time.Now()
	Eventually(second.Leads).WithTimeout(time.Minute).Should(BeTrue())
	failover := time.Since(killed)
	c := finish(done + 1)

	after, uidsAfter, err := env.Restarts(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(after).To(Equal(restarts), "containers restarted")
	Expect(uidsAfter).To(Equal(uids), "pods were replaced")
	events := env.Timeline.Events()
	rotations := harness.Rotations(events[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
	Expect(rotations).To(HaveLen(1))
	Expect(rotations[0].Phases).To(Equal(harness.StagedRotationPhases))
	Expect(rotations[0].Secrets).To(HaveLen(2), "a Secret write was repeated or skipped: %v", rotations[0].Secrets)
	Expect(rotations[0].GateViolations(events)).To(BeEmpty())
	Expect(env.Timeline.TTLWaitUntils()).To(HaveLen(waitsBefore+1), "the TTL wait was restarted")
	AddReportEntry(fmt.Sprintf("two managers, leader killed (%s node)", env.Cluster.Node()),
		fmt.Sprintf("failover (SIGKILL to the standby leading): %v\nrotation: %s\nround trips: %s",
			failover.Round(100*time.Millisecond), rotations[0], c))
}

// rotateBatch rotates, in Restart delivery, a keyring whose targets are a StatefulSet and a
// DaemonSet (batchWorkloads, in a namespace of their own), and checks that both templates are
// stamped with the keyring's fingerprint once the rotation is done.
func rotateBatch(ctx context.Context, env *harness.Env) {
	GinkgoHelper()
	const ns = "batch"
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	sts, ds := batchWorkloads(ns)
	Expect(env.Client.Create(ctx, sts)).To(Succeed())
	Expect(env.Client.Create(ctx, ds)).To(Succeed())
	kr := &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
		Spec: mrtrv1alpha1.MRTRKeyringSpec{
			RotationInterval: metav1.Duration{Duration: time.Hour}, TokenTTL: metav1.Duration{Duration: 5 * time.Second},
			ClockSkew: metav1.Duration{Duration: time.Second}, TerminationGracePeriod: metav1.Duration{Duration: time.Second},
			Delivery: mrtrv1alpha1.DeliveryRestart,
			Workloads: []mrtrv1alpha1.WorkloadReference{
				{Kind: mrtrv1alpha1.KindStatefulSet, Name: sts.Name}, {Kind: mrtrv1alpha1.KindDaemonSet, Name: ds.Name},
			},
		},
	}
	Expect(env.Client.Create(ctx, kr)).To(Succeed())
	batch := func(g Gomega) *mrtrv1alpha1.MRTRKeyring {
		var k mrtrv1alpha1.MRTRKeyring
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(kr), &k)).To(Succeed())
		return &k
	}
	settled := func(g Gomega) {
		k := batch(g)
		g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
		g.Expect(k.Status.WorkloadsUpToDate).To(BeEquivalentTo(2), "%+v", k.Status.Workloads)
	}
	Eventually(settled).WithTimeout(2 * time.Minute).Should(Succeed())
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"batch-1"}}}`, mrtrv1alpha1.RotateAnnotation)
	Expect(env.Client.Patch(ctx, kr, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	Eventually(func(g Gomega) {
		settled(g)
		g.Expect(batch(g).Status.RotationsCompleted).To(BeEquivalentTo(1))
	}).WithTimeout(3 * time.Minute).Should(Succeed())
	k := batch(Default)
	for _, obj := range []client.Object{sts, ds} {
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		Expect(workload.Fingerprint(obj)).To(Equal(k.Status.SecretFingerprint), "%s stamped with the keyring after the rotation", obj.GetName())
	}
}

// batchWorkloads are a StatefulSet and a DaemonSet that mount the keyring Secret "batch". Their
// container is the pause image, which the real node always has (it imports it) and which stops at
// once on SIGTERM; kwok runs their pods without a process. Restart delivery needs no more.
func batchWorkloads(ns string) (*appsv1.StatefulSet, *appsv1.DaemonSet) {
	labels := map[string]string{"app": "batch"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers: []corev1.Container{{Name: "batch", Image: localcluster.PauseImage, ImagePullPolicy: corev1.PullNever,
				VolumeMounts: []corev1.VolumeMount{{Name: "keyring", MountPath: "/etc/mrtr", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "keyring", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "batch"}}}},
		},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
		Spec: appsv1.StatefulSetSpec{Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			ServiceName: "batch", Template: tmpl},
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	return sts, ds
}

// metricsAccess checks that the running manager serves its metrics to a scraper bound to the
// chart's metrics-reader role, and to no one else: 401 without a token, 403 with the token of a
// ServiceAccount the API server authenticates but nothing authorizes.
func metricsAccess(ctx context.Context, env *harness.Env) {
	GinkgoHelper()
	token, err := env.MetricsScraperToken(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.ScrapeMetrics(ctx, token)).To(ContainSubstring("mrtr_keyring_phase"))
	_, err = env.ScrapeMetrics(ctx, "")
	Expect(err).To(MatchError(ContainSubstring("401")))
	stranger, err := env.StrangerToken(ctx)
	Expect(err).NotTo(HaveOccurred())
	_, err = env.ScrapeMetrics(ctx, stranger)
	Expect(err).To(MatchError(ContainSubstring("403")), "authenticated, but not allowed")
}

// leastPrivilege checks, from the API server's audit log of the whole run, that the API server
// refused the operator's ServiceAccount nothing and that it used every permission the chart grants
// it. It belongs after every other scenario of its suite: an unused permission is one that no
// scenario up to then needed.
func leastPrivilege(ctx context.Context, env *harness.Env) {
	GinkgoHelper()
	forbidden, unused, err := env.Permissions(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(forbidden).To(BeEmpty(), "requests the API server refused the operator")
	Expect(unused).To(BeEmpty(), "permissions the chart grants the operator that it never used")
	runs := "its image under runc as uid 65532, read-only root"
	if env.Operator.Fallback != "" {
		runs = "the binary (runc: " + env.Operator.Fallback + ")"
	}
	AddReportEntry(fmt.Sprintf("identity (%s node)", env.Cluster.Node()),
		fmt.Sprintf("ServiceAccount %s/%s, %s; every permission used, none refused",
			harness.OperatorNamespace, harness.OperatorServiceAccount, runs))
}
