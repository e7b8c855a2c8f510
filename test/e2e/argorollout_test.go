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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
)

// The example server as an Argo Rollout, on a cluster that runs the real Argo Rollouts controller
// (built from its module, hack/build-argo-rollouts.sh): a canary of setWeight 50 and an indefinite
// pause, so that every rollout of a Restart rotation stops half way until the spec promotes it, as
// `kubectl argo rollouts promote` would. The node is whatever this machine runs.
var _ = Describe("an Argo Rollout, rolled out by the Argo Rollouts controller", Ordered, func() {
	var (
		env      *harness.Env
		load     *harness.Load
		stopLoad func()
	)
	ctx := context.Background()

	startLoad := func() time.Time {
		load = &harness.Load{URL: env.MCPURL, Workers: 4}
		stopLoad = load.Start(ctx)
		return time.Now()
	}
	// endLoad stops the load and checks that it rejected no request state. Round trips that
	// failed otherwise are counted apart: on the real node a pod that a rollout scales down can
	// drop a request in flight through the balancer (502), as the Deployment's rollouts can
	// (realnode_test.go); that is no rejection of a token, and where no pod goes, none fails.
	endLoad := func() harness.Counts {
		GinkgoHelper()
		stopLoad()
		stopLoad = nil
		c := load.Counts()
		Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		return c
	}
	keyring := func(g Gomega) *mrtrv1alpha1.MRTRKeyring {
		var k mrtrv1alpha1.MRTRKeyring
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &k)).To(Succeed())
		return &k
	}
	// promoted holds the pod template hash (status.currentPodHash) of every rollout promoted: one
	// entry per rollout that waited at its pause step, however many patches it took.
	promoted := map[string]bool{}
	// promoteWhenWaiting promotes the Rollout once it waits at its pause step and the keyring says
	// that it waits for that promotion, in its phase: a rotation that went on past a paused
	// canary, or never said why it stopped, never gets its promotion and times out.
	promoteWhenWaiting := func(g Gomega) {
		ro, err := harness.GetRollout(ctx, env.Client, env.Opts.Namespace, env.Opts.Name)
		g.Expect(err).NotTo(HaveOccurred())
		if !harness.RolloutPaused(ro) {
			return
		}
		k := keyring(g)
		g.Expect(k.Status.Workloads).To(HaveLen(1))
		if !strings.Contains(k.Status.Workloads[0].Message, "waiting for promotion") {
			return
		}
		GinkgoWriter.Printf("promoting the paused canary; the keyring in %s says: %s\n", k.Status.Phase, k.Status.Workloads[0].Message)
		g.Expect(harness.PromoteRollout(ctx, env.Client, env.Opts.Namespace, env.Opts.Name)).To(Succeed())
		hash, _, _ := unstructured.NestedString(ro.Object, "status", "currentPodHash")
		promoted[hash] = true
	}

	BeforeAll(func() {
		env = startStack(ctx, harness.Options{ArgoRollout: true})
		DeferCleanup(func() {
			if stopLoad != nil {
				stopLoad()
			}
		})
	})

	AfterEach(func() { dumpOnFailure(env, load) })

	It("rotates in Reload delivery with the Rollout's pods gated like any other: no restart, the same pods, nothing rejected", func() {
		restarts, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		from := len(env.Timeline.Events())
		started := startLoad()
		Expect(env.RequestRotation(ctx, "argo-reload")).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", 1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		elapsed := time.Since(started)
		c := endLoad()
		Expect(c.Failed).To(BeZero(), "failed round trips, with no pod going: %s", load.Errors())
		Expect(c.CrossReplica).To(BeNumerically(">", 0))

		after, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(restarts), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced")
		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(1))
		Expect(rotations[0].Stamps).To(BeEmpty(), "the Rollout's template was stamped in Reload delivery")
		Expect(rotations[0].AckWaits).NotTo(BeEmpty(), "no step waited for the pods' acknowledgements")
		report("Argo Rollout, Reload delivery", c, elapsed, rotations)
	})

	It("rotates in Restart delivery, every canary rollout held at its pause step until it is promoted, and rejects nothing", func() {
		_, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		started := startLoad()
		// Restart delivery stamps the template with the keyring it holds: a first rollout, which
		// pauses like every other.
		Expect(env.SetDelivery(ctx, mrtrv1alpha1.DeliveryRestart)).To(Succeed())
		settled := func(g Gomega) {
			promoteWhenWaiting(g)
			s, err := env.Observe(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Settled(env.Opts.TotalReplicas(), mrtrv1alpha1.DeliveryRestart)).To(BeTrue(), "%+v", s)
		}
		Eventually(settled).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(promoted).To(HaveLen(1), "the switch to Restart delivery rolls out once")

		from := len(env.Timeline.Events())
		Expect(env.RequestRotation(ctx, "argo-restart")).To(Succeed())
		Eventually(func(g Gomega) {
			settled(g)
			g.Expect(keyring(g).Status.RotationsCompleted).To(BeEquivalentTo(2))
		}).WithTimeout(5 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		elapsed := time.Since(started)
		c := endLoad()

		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(1))
		r := rotations[0]
		Expect(r.Stamps).NotTo(BeEmpty())
		Expect(r.Rollouts).To(HaveLen(len(r.Stamps)), "every stamp of the rotation rolled out: stamps %v", r.Stamps)
		Expect(promoted).To(HaveLen(1+len(r.Stamps)), "each rollout of the rotation waited for its promotion")
		_, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		for name := range uids {
			Expect(uidsAfter).NotTo(HaveKey(name), "pod %s was not replaced by the rollouts", name)
		}
		report(fmt.Sprintf("Argo Rollout, Restart delivery (%d rollouts promoted)", len(promoted)), c, elapsed, rotations)
	})

	// Last: the permissions on Rollouts that the chart grants were all needed. (This keyring
	// targets no apps/v1 workload, so their patch permission goes unused here: the other suites
	// check those.)
	It("ran as the chart's ServiceAccount: refused nothing, and used every permission on Rollouts it holds", func() {
		forbidden, unused, err := env.Permissions(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(forbidden).To(BeEmpty(), "requests the API server refused the operator")
		for _, p := range unused {
			Expect(p.Resource).NotTo(HavePrefix(harness.RolloutGVK.Group+"/"),
				"a permission on Rollouts the operator never used: %s (unused: %v)", p, unused)
		}
	})
})
