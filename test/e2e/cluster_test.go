//go:build e2e && linux

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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// One ClusterMRTRKeyring over the example server deployed in three tenant namespaces, behind one
// round-robin balancer over all their pods: a request state sealed in one namespace is opened in
// another, so a single namespace whose copy of the keyring lags rejects tokens.
var _ = Describe("a ClusterMRTRKeyring on a real node, over namespaces behind one balancer", Ordered, func() {
	const (
		joining   = "tenant-d" // deployed unselected, labelled in mid-rotation
		bystander = "tenant-x" // deployed, never selected
	)
	tenants := []string{"tenant-a", "tenant-b", "tenant-c"}
	leaving := tenants[2] // unlabelled mid-rotation
	var (
		env      *harness.Env
		load     *harness.Load
		stopLoad func()
		// crossings counts the completed round trips whose state one namespace sealed and another
		// opened, by "sealer -> opener" namespaces.
		crossings map[string]uint64
		podNS     map[string]string // pod name: namespace, for the crossings
		mu        sync.Mutex
	)
	ctx := context.Background()

	// notePods records the namespace of every pod of namespaces.
	notePods := func(namespaces ...string) {
		GinkgoHelper()
		mu.Lock()
		defer mu.Unlock()
		for _, ns := range namespaces {
			var pods corev1.PodList
			Expect(env.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				podNS[p.Name] = ns
			}
		}
	}
	startLoad := func() {
		mu.Lock()
		crossings = map[string]uint64{}
		mu.Unlock()
		load = &harness.Load{URL: env.MCPURL, Workers: 4, OnCompleted: func(sealedBy, openedBy string) {
			mu.Lock()
			defer mu.Unlock()
			if from, to := podNS[sealedBy], podNS[openedBy]; from != to {
				crossings[from+" -> "+to]++
			}
		}}
		stopLoad = load.Start(ctx)
	}
	endLoad := func() harness.Counts {
		GinkgoHelper()
		stopLoad()
		c := load.Counts()
		Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("round trips: %s; across namespaces: %v\n", c, crossings)
		return c
	}
	// restarts counts the container restarts of namespaces' pods, and their UIDs by name.
	restarts := func(namespaces ...string) (int32, map[string]types.UID) {
		GinkgoHelper()
		var n int32
		uids := map[string]types.UID{}
		for _, ns := range namespaces {
			var pods corev1.PodList
			Expect(env.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				uids[p.Name] = p.UID
				for _, c := range p.Status.ContainerStatuses {
					n += c.RestartCount
				}
			}
		}
		return n, uids
	}
	observe := func(g Gomega) harness.State {
		s, err := env.Observe(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	rotationsDone := func(g Gomega) int64 { return observe(g).RotationsCompleted }
	report := func(from int, n int) []harness.Rotation {
		GinkgoHelper()
		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(n))
		for i, r := range rotations {
			GinkgoWriter.Printf("rotation %d: %s (%v)\n", i+1, r, r.Duration().Round(100*time.Millisecond))
		}
		return rotations
	}

	BeforeAll(func() {
		requireRealNode()
		env = startStack(ctx, harness.Options{Node: localcluster.NodeReal, ClusterKeyring: true, Namespaces: tenants, Replicas: 2})
		podNS = map[string]string{}
		notePods(tenants...)
		DeferCleanup(func() {
			if stopLoad != nil {
				stopLoad()
			}
		})
	})

	AfterEach(func() {
		dumpOnFailure(env, load)
		if CurrentSpecReport().Failed() && env != nil {
			var ck mrtrv1alpha1.ClusterMRTRKeyring
			if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Opts.Name}, &ck); err == nil {
				status, _ := json.MarshalIndent(ck.Status, "", "  ")
				GinkgoWriter.Printf("==> ClusterMRTRKeyring %s: annotations %v, status <==\n%s\n", ck.Name, ck.Annotations, status)
			}
			for _, ns := range env.Selected() {
				var pods corev1.PodList
				if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err == nil {
					for _, p := range pods.Items {
						GinkgoWriter.Printf("pod %s/%s %s: annotations %v\n", ns, p.Name, p.Status.Phase, p.Annotations)
					}
				}
			}
		}
	})

	It("keeps one keyring in every namespace: each holds the lead Secret's keyring and the status counts them", func() {
		s := observe(Default)
		Expect(s.Namespaces.Selected).To(BeEquivalentTo(3))
		Expect(s.Namespaces.UpToDate).To(BeEquivalentTo(3))
		Expect(s.Copies).To(HaveLen(3))
		for ns, fp := range s.Copies {
			Expect(fp).To(Equal(s.SecretFingerprint), "the copy in %s", ns)
		}
		Expect(s.Serving).To(HaveLen(6))
	})

	It("rotates twice under live traffic across three namespaces: no container restarts, the same pods, nothing rejected", func() {
		before, uids := restarts(tenants...)
		rotationAt := len(env.Timeline.Events())
		startLoad()
		for i := int64(1); i <= 2; i++ {
			Expect(env.RequestRotation(ctx, fmt.Sprintf("cluster-%d", i))).To(Succeed())
			Eventually(rotationsDone).WithTimeout(2 * time.Minute).Should(BeNumerically("==", i))
			Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		}
		c := endLoad()
		Expect(c.CrossReplica).To(BeNumerically(">", 0))
		mu.Lock()
		for _, ns := range tenants {
			Expect(slices.ContainsFunc(slices.Collect(maps.Keys(crossings)), func(k string) bool {
				return strings.HasSuffix(k, " -> "+ns)
			})).To(BeTrue(), "%s opened no state sealed in another namespace: %v", ns, crossings)
		}
		mu.Unlock()

		after, uidsAfter := restarts(tenants...)
		Expect(after).To(Equal(before), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced")
		report(rotationAt, 2)
	})

	It("during a third rotation, gives a namespace labelled in the phase's keyring and waits for its pods, "+
		"and stops rotating one unlabelled, whose Secret stays: nothing rejected in the namespaces still selected", func() {
		staying := tenants[:2]
		before, uids := restarts(staying...)
		// The servers of the joining namespace exist before it is selected: their pods wait for the
		// Secret they mount, and count only once they run the keyring its copy brings. (Deployed
		// just before the rotation: the kubelet backs off its retries of the missing volume.)
		Expect(env.AddNamespace(ctx, joining)).To(Succeed())
		Expect(env.AddNamespace(ctx, bystander)).To(Succeed())
		rotationAt := len(env.Timeline.Events())
		startLoad()
		Expect(env.RequestRotation(ctx, "cluster-3")).To(Succeed())
		Eventually(func(g Gomega) {
			s := observe(g)
			g.Expect(s.RotationsCompleted).To(BeEquivalentTo(2))
			g.Expect(s.Phase).NotTo(Equal(mrtrv1alpha1.PhaseStable))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("labelling " + joining + " in mid-rotation")
		Expect(env.Select(ctx, joining)).To(Succeed())
		Eventually(func(g Gomega) {
			s := observe(g)
			g.Expect(s.Copies[joining]).NotTo(BeEmpty())
			g.Expect(s.Copies[joining]).To(Equal(s.SecretFingerprint), "the copy holds the phase's keyring")
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		s := observe(Default)
		GinkgoWriter.Printf("%s got its copy in phase %s\n", joining, s.Phase)

		By("unlabelling " + leaving + " in mid-rotation (its pods leave the balancer first)")
		Expect(env.Deselect(ctx, leaving)).To(Succeed())
		s = observe(Default)
		GinkgoWriter.Printf("%s unlabelled in phase %s (rotations completed: %d)\n", leaving, s.Phase, s.RotationsCompleted)

		Eventually(rotationsDone).WithTimeout(4 * time.Minute).Should(BeNumerically("==", 3))
		Expect(env.WaitSettled(ctx, 2*time.Minute)).To(Succeed())
		notePods(joining)
		endLoad()

		s = observe(Default)
		Expect(s.Namespaces.Selected).To(BeEquivalentTo(3))
		Expect(s.Namespaces.UpToDate).To(BeEquivalentTo(3))
		Expect(s.Namespaces.Left).To(BeEquivalentTo(1))
		Expect(s.Namespaces.Items).To(ContainElement(SatisfyAll(
			HaveField("Name", leaving), HaveField("State", mrtrv1alpha1.NamespaceLeft))))
		Expect(slices.Sorted(maps.Keys(s.Copies))).To(Equal([]string{"tenant-a", "tenant-b", joining}))

		By("the pods of " + joining + " acknowledged the keyring of the rotation's end")
		var pods corev1.PodList
		Expect(env.Client.List(ctx, &pods, client.InNamespace(joining))).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			Expect(p.Annotations).To(HaveKeyWithValue(ack.AnnotationKey(env.Opts.Name), s.SecretFingerprint), "pod %s", p.Name)
		}

		By("the Secret of " + leaving + " stays, and an event says it left")
		var left corev1.Secret
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: leaving, Name: env.Opts.Name}, &left)).To(Succeed())
		var evs eventsv1.EventList
		Expect(env.Client.List(ctx, &evs)).To(Succeed())
		Expect(evs.Items).To(ContainElement(SatisfyAll(
			HaveField("Regarding.Kind", "ClusterMRTRKeyring"),
			HaveField("Reason", mrtrv1alpha1.EventNamespaceLeft),
			HaveField("Note", ContainSubstring(leaving)))))

		By("no Secret in " + bystander + ", which was never selected")
		var none corev1.SecretList
		Expect(env.Client.List(ctx, &none, client.InNamespace(bystander))).To(Succeed())
		Expect(none.Items).To(BeEmpty())

		after, uidsAfter := restarts(staying...)
		Expect(after).To(Equal(before), "containers restarted in the namespaces that stayed")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced in the namespaces that stayed")
		report(rotationAt, 1)
	})

	// Last: every Secret write the specs above caused.
	It("wrote Secrets, by the audit log, only in the namespaces it selected and in its own", func() {
		writes, err := env.SecretWrites()
		Expect(err).NotTo(HaveOccurred())
		allowed := append([]string{harness.OperatorNamespace, joining}, tenants...)
		summary := make([]string, 0, len(writes))
		for ns, w := range writes {
			summary = append(summary, fmt.Sprintf("%s: %d", ns, len(w)))
			Expect(allowed).To(ContainElement(ns), "Secret writes in %s: %s", ns, strings.Join(w, ", "))
		}
		slices.Sort(summary)
		GinkgoWriter.Printf("the operator's Secret writes by namespace: %s\n", strings.Join(summary, ", "))
		Expect(writes).NotTo(HaveKey(bystander))
		for _, ns := range append([]string{joining}, tenants...) {
			Expect(writes).To(HaveKey(ns), "the audit log records no write of the copy in %s", ns)
		}
	})
})
