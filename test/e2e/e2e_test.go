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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// rejectedByKey sums the rejections the serving replicas counted, by the key id the rejected token
// named.
func rejectedByKey(env *harness.Env) map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range env.ReplicaKeyrings() {
		for id, n := range r.RejectedByKey {
			out[id] += n
		}
	}
	return out
}

// unknownKeyOnly asserts that every rejection each pod counted between the two scrapes is
// unknown_key, and returns their sum over the pods.
func unknownKeyOnly(what string, before, after map[string]harness.OpenCounts) uint64 {
	GinkgoHelper()
	var n uint64
	for pod, a := range after {
		d := a.Sub(before[pod])
		GinkgoWriter.Printf("%s: %s's %s: %v\n", what, pod, metrics.TokensOpenedTotal, d)
		Expect(d.Rejected()).To(Equal(d[metrics.UnknownKey]), "pod %s refused tokens for another reason than unknown_key", pod)
		n += d[metrics.UnknownKey]
	}
	return n
}

// minRoundTrips is the least number of round trips the rotations must carry for the result to mean
// something.
const minRoundTrips = 300

var _ = Describe("MRTRKeyring rotation under live MRTR traffic", Ordered, func() {
	var (
		env *harness.Env
		// load runs round trips from the first spec to the end of the rotations.
		load       *harness.Load
		stopLoad   func()
		loadStart  time.Time
		rotationAt int // index in the timeline where the rotations start
	)
	ctx := context.Background()

	startLoad := func() *harness.Load {
		l := &harness.Load{URL: env.MCPURL, Workers: 4}
		stopLoad, loadStart = l.Start(ctx), time.Now()
		return l
	}
	endLoad := func() {
		if stopLoad != nil {
			stopLoad()
			stopLoad = nil
		}
	}

	BeforeAll(func() {
		// These specs steer the emulated kubelet (a frozen Secret mount, a pod's own token): kwok's
		// node, whatever this machine can run. realnode_test.go runs on the real one.
		env = startStack(ctx, harness.Options{Node: localcluster.NodeKwok, Verbose: true})
		DeferCleanup(endLoad)
	})

	AfterEach(func() { dumpOnFailure(env, load) })

	// finishRotations waits until the keyring has completed n rotations and settled, stops the load,
	// and asserts that not one round trip was rejected or failed; it returns the counts.
	finishRotations := func(n int64) harness.Counts {
		GinkgoHelper()
		Eventually(rotationsCompleted(env)).WithTimeout(3 * time.Minute).Should(BeNumerically("==", n))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		endLoad()
		c := load.Counts()
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		return c
	}

	It("serves MRTR round trips across replicas before any rotation", func() {
		load = startLoad()
		Eventually(func(g Gomega) {
			c := load.Counts()
			g.Expect(c.Rejected).To(BeZero(), "%s", load.Errors())
			g.Expect(c.Failed).To(BeZero(), "%s", load.Errors())
			g.Expect(c.CrossReplica).To(BeNumerically(">=", 20))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("rotates twice in Reload delivery without restarting a pod or rejecting a request state, each step gated on every pod's "+
		"acknowledgement, resuming after the operator is killed mid-rotation", func() {
		rotationAt = len(env.Timeline.Events())
		before, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(before).To(HaveLen(int(env.Opts.Replicas)))

		By("requesting rotation 1 and killing the operator once its pods seal with the new key")
		Expect(env.RequestRotation(ctx, "rotation-1")).To(Succeed())
		Eventually(func() []mrtrv1alpha1.Phase { return phasesSince(env.Timeline.Events(), rotationAt) }).
			WithTimeout(2 * time.Minute).Should(ContainElement(mrtrv1alpha1.PhaseSealingWithNew))
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.Operator.Launch()).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(3 * time.Minute).Should(BeNumerically("==", 1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())

		By("requesting rotation 2")
		Expect(env.RequestRotation(ctx, "rotation-2")).To(Succeed())
		c := finishRotations(2)
		elapsed := time.Since(loadStart)

		By("checking the round trips")
		Expect(c.Completed).To(BeNumerically(">=", minRoundTrips))
		for _, r := range env.ReplicaKeyrings() {
			Expect(r.Rejected).To(BeZero(), "replica %s rejected request states", r.Replica)
		}

		By("checking that nothing restarted: the same pods, a template never stamped")
		after, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before))
		Expect(stamps(env.Timeline.Events()[rotationAt:])).To(BeEmpty())

		By("checking the phases, the Secret writes and, from the watches, every step's gate")
		events := env.Timeline.Events()
		rotations := harness.Rotations(events[rotationAt:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(2))
		staged := ""
		for i, r := range rotations {
			By(fmt.Sprintf("rotation %d: the staged key seals at once, then the old key leaves and the next is staged: two rounds", i+1))
			Expect(r.Phases).To(Equal(harness.StagedRotationPhases), "rotation %d", i+1)
			Expect(r.Secrets).To(HaveLen(2), "rotation %d: Secret writes %v", i+1, r.Secrets)
			nu, old := r.Secrets[0][0], r.Secrets[0][1]
			Expect(r.Secrets[0]).To(HaveLen(2), "rotation %d", i+1)
			Expect(r.Secrets[1]).To(HaveLen(2), "rotation %d", i+1)
			Expect(r.Secrets[1][0]).To(Equal(nu), "rotation %d", i+1)
			Expect(r.Secrets[1][1]).NotTo(BeElementOf(nu, old), "rotation %d: a fresh key is staged", i+1)
			if staged != "" {
				Expect(nu).To(Equal(staged), "rotation %d seals with the key rotation %d staged", i+1, i)
			}
			staged = r.Secrets[1][1]
			Expect(r.PodsAdded).To(BeZero(), "rotation %d", i+1)
			Expect(r.GateViolations(events)).To(BeEmpty(), "rotation %d", i+1)
			Expect(r.AckToWrite).To(HaveLen(2), "rotation %d: every step waited for acknowledgements", i+1)
		}
		Expect(env.Timeline.TTLWaitUntils()).To(HaveLen(2), "the TTL wait was restarted")
		report("Reload delivery", c, elapsed, rotations)
	})

	It("restarts only the replica whose reload is stuck, once its reload deadline passes, and rejects nothing", func() {
		load = startLoad()
		from := len(env.Timeline.Events())
		before, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		frozen := slices.Sorted(maps.Keys(before))[0]
		By("freezing the mounted Secret of " + frozen + " and requesting rotation 3")
		env.Kubelet.Freeze(frozen)
		Expect(env.RequestRotation(ctx, "rotation-3")).To(Succeed())
		c := finishRotations(3)
		after, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).NotTo(HaveKey(frozen), "the frozen replica was not restarted")
		Expect(after).To(HaveLen(len(before)))
		for name, uid := range before {
			if name != frozen {
				Expect(after).To(HaveKeyWithValue(name, uid), "a replica that acknowledged was restarted")
			}
		}
		events := env.Timeline.Events()
		rotations := harness.Rotations(events[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(1))
		Expect(rotations[0].PodsAdded).To(Equal(1), "one replacement, for the frozen replica alone")
		Expect(rotations[0].GateViolations(events)).To(BeEmpty())
		var evs eventsv1.EventList
		Expect(env.Client.List(ctx, &evs, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		Expect(evs.Items).To(ContainElement(And(
			HaveField("Reason", mrtrv1alpha1.ReasonAcknowledgementMissing),
			HaveField("Note", ContainSubstring(frozen+" did not acknowledge keyring")))))
		AddReportEntry("Reload delivery, one replica frozen", fmt.Sprintf("rotation: %s\nround trips: %s\nrestarted: %s alone",
			rotations[0], c, frozen))
	})

	It("hands over to a second manager when the leader is killed mid-rotation: "+
		"it resumes the phase, restarts nothing and rejects nothing", func() {
		leaderFailover(ctx, env, "rotation-4", func() { load = startLoad() }, finishRotations)
	})

	It("refuses an acknowledgement that one pod's token writes for another pod", func() {
		replicas := env.Kubelet.Replicas()
		Expect(len(replicas)).To(BeNumerically(">=", 2))
		slices.SortFunc(replicas, func(a, b *harness.Replica) int { return strings.Compare(a.Pod, b.Pod) })
		self, other := replicas[0], replicas[1]
		token, err := os.ReadFile(filepath.Join(self.ServiceAccountDir, "token"))
		Expect(err).NotTo(HaveOccurred())
		cfg := rest.AnonymousClientConfig(env.Cluster.RESTConfig())
		cfg.BearerToken = string(token)
		asPod, err := client.New(cfg, client.Options{Scheme: harness.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		patch := func(pod, key, value string) error {
			body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: env.Opts.Namespace, Name: pod}}
			return asPod.Patch(ctx, p, client.RawPatch(types.MergePatchType, body))
		}
		key := ack.AnnotationKey(env.Opts.Name)
		Eventually(func(g Gomega) {
			err := patch(other.Pod, key, "forged")
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("only pod %s/%s may change its own keyring acknowledgement", env.Opts.Namespace, other.Pod))
		}).Should(Succeed())
		err = patch(self.Pod, "example.com/other", "x")
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a consumer changed another annotation of its own pod: %v", err)
		var p corev1.Pod
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: env.Opts.Namespace, Name: other.Pod}, &p)).To(Succeed())
		Expect(p.Annotations[key]).NotTo(Equal("forged"))
		By("while its own acknowledgement, the one its reporter writes, is accepted")
		st, err := env.Observe(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(patch(self.Pod, key, st.SecretFingerprint)).To(Succeed())
	})

	It("revokes the primary key under live traffic: its tokens fail from then on, every other round trip completes, "+
		"and the staged key seals after one round", func() {
		st, err := env.Observe(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Keys).To(HaveLen(2))
		Expect(st.Keys[1].Role).To(Equal(mrtrv1alpha1.KeyStaged))
		revoked, staged := st.Keys[0].ID, st.Keys[1].ID
		before, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		rejectedBefore := rejectedByKey(env)
		opensBefore, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())

		load = startLoad()
		Eventually(func() uint64 { return load.Counts().Completed }).Should(BeNumerically(">=", 50))
		from := len(env.Timeline.Events())
		By("revoking the primary key " + revoked)
		Expect(env.Revoke(ctx, revoked)).To(Succeed())
		Eventually(func(g Gomega) {
			st, err := env.Observe(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(phasesSince(env.Timeline.Events(), from)).To(Equal([]mrtrv1alpha1.Phase{mrtrv1alpha1.PhaseRevoking, mrtrv1alpha1.PhaseStable}))
			g.Expect(st.Keys).To(HaveLen(2))
			g.Expect(st.Keys[0].ID).To(Equal(staged), "the staged key seals")
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		completed := load.Counts().Completed
		Eventually(func() uint64 { return load.Counts().Completed }).Should(BeNumerically(">=", completed+50),
			"round trips go on after the revocation")
		endLoad()

		By("counting the rejections: every one named the revoked key")
		c := load.Counts()
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		rejected := rejectedByKey(env)
		for id, n := range rejected {
			if id != revoked {
				Expect(n).To(Equal(rejectedBefore[id]), "tokens naming key %q were rejected", id)
			}
		}
		Expect(rejected[revoked]-rejectedBefore[revoked]).To(Equal(c.Rejected),
			"rejections the load saw but no replica counted for the revoked key")
		By("cross-checking the servers' own counters: every rejection the load saw is an unknown_key open on some pod")
		Expect(c.Rejected).To(BeNumerically(">", 0), "the revoked key's tokens must be refused for the cross-check to mean anything")
		opensAfter, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())
		var unknownKey uint64
		for pod, after := range opensAfter {
			d := after.Sub(opensBefore[pod])
			GinkgoWriter.Printf("revocation: %s's %s: %v\n", pod, metrics.TokensOpenedTotal, d)
			Expect(d.Rejected()).To(Equal(d[metrics.UnknownKey]), "pod %s refused tokens for another reason than unknown_key", pod)
			unknownKey += d[metrics.UnknownKey]
		}
		Expect(unknownKey).To(Equal(c.Rejected), "the servers' unknown_key counters and the load disagree")

		By("one round, nothing restarted, and status, condition and event say what happened")
		events := env.Timeline.Events()[from:]
		var writes [][]string
		for _, e := range events {
			if e.Kind == harness.EventSecret {
				writes = append(writes, e.KeyIDs)
			}
		}
		Expect(writes).To(HaveLen(1), "Secret writes %v", writes)
		Expect(writes[0][0]).To(Equal(staged))
		Expect(writes[0]).NotTo(ContainElement(revoked))
		after, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before))
		var k mrtrv1alpha1.MRTRKeyring
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &k)).To(Succeed())
		Expect(k.Status.RevokedKeys).To(ContainElement(HaveField("ID", revoked)))
		Expect(k.Status.Conditions).To(ContainElement(And(HaveField("Type", mrtrv1alpha1.ConditionKeyRevoked),
			HaveField("Status", metav1.ConditionTrue), HaveField("Message", ContainSubstring(revoked)))))
		var evs eventsv1.EventList
		Expect(env.Client.List(ctx, &evs, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		Expect(evs.Items).To(ContainElement(And(HaveField("Type", corev1.EventTypeWarning),
			HaveField("Reason", mrtrv1alpha1.EventKeyRevoked), HaveField("Note", ContainSubstring(revoked)))))
		AddReportEntry("revocation of the primary", fmt.Sprintf("revoked %s; %s sealed at once\nround trips: %s (every rejection named %s)",
			revoked, staged, c, revoked))
	})

	It("counts, on the servers' own /metrics, the unknown_key rejections of a stray Deployment that no keyring manages "+
		"behind the managed replicas' balancer, on both sides, and fires MRTRConsumerUnknownKeyRejections for its pods", func() {
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		st, err := env.Observe(ctx)
		Expect(err).NotTo(HaveOccurred())
		before, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		opensBefore, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())
		Expect(harness.UnknownKeyAlertFiring(opensBefore, opensBefore)).To(BeEmpty())
		load = startLoad()
		Eventually(func() uint64 { return load.Counts().Completed }).Should(BeNumerically(">=", 20))
		from := len(env.Timeline.Events())

		const strayReplicas = 2
		By(fmt.Sprintf("starting a stray Deployment of %d pods beside the managed ones, with a Secret of its own and a key no keyring holds",
			strayReplicas))
		stray, err := env.StartStray(ctx, env.Opts.Name+"-stray", strayReplicas)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stray.Remove, ctx) // a no-op once the spec removed it
		Expect(st.SecretKeyIDs).NotTo(ContainElement(stray.KeyID))
		var strayPods []string
		Eventually(func(g Gomega) {
			strayPods, err = stray.Serving(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(strayPods).To(HaveLen(strayReplicas), "the stray's pods serve behind the balancer")
		}).WithTimeout(time.Minute).Should(Succeed())
		managed := slices.Sorted(maps.Keys(before))

		By("the stray's pods count unknown_key on their own /metrics, and the alert evaluated on the scrapes fires for both")
		Eventually(func(g Gomega) {
			opens, err := env.ReplicaOpenCounts()
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range strayPods {
				g.Expect(opens).To(HaveKey(p), "pod %s does not serve /metrics", p)
				g.Expect(opens[p][metrics.UnknownKey]).To(BeNumerically(">", 0), "stray pod %s counts no unknown_key", p)
			}
			g.Expect(harness.UnknownKeyAlertFiring(opensBefore, opens)).To(ContainElements(strayPods))
			g.Expect(load.Counts().Rejected).To(BeNumerically(">", 0))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed()) // each poll scrapes every pod
		endLoad()
		c := load.Counts()
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())

		By("every rejection any pod counts is unknown_key, and the pods count at least the rejections the load saw")
		opensAfter, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())
		Expect(opensAfter).To(HaveLen(len(managed)+strayReplicas), "a pod stopped serving /metrics: %v", slices.Sorted(maps.Keys(opensAfter)))
		unknownKey := unknownKeyOnly("stray", opensBefore, opensAfter)
		// At least, not equal: an open a pod refused while endLoad cut the call is counted by the pod
		// and not by the load.
		Expect(unknownKey).To(BeNumerically(">=", c.Rejected), "the servers' unknown_key counters miss rejections the load saw")
		firing := harness.UnknownKeyAlertFiring(opensBefore, opensAfter)
		Expect(firing).To(ContainElements(strayPods), "MRTRConsumerUnknownKeyRejections does not fire for the stray's pods")
		firingManaged := slices.DeleteFunc(slices.Clone(firing), func(p string) bool { return slices.Contains(strayPods, p) })

		By("removing the stray: the keyring, which never moved, settles, and no managed pod got a new UID")
		Expect(stray.Remove(ctx)).To(Succeed())
		Eventually(func() ([]string, error) { return stray.Pods(ctx) }).WithTimeout(time.Minute).Should(BeEmpty())
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		Expect(phasesSince(env.Timeline.Events(), from)).To(BeEmpty(), "the stray moved the keyring")
		after, err := env.PodUIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before))
		AddReportEntry("a stray Deployment behind the balancer", fmt.Sprintf(
			"round trips: %s\n%d unknown_key opens counted by the pods\n"+
				"MRTRConsumerUnknownKeyRejections fires for the stray's %v and the managed %v (which opened its tokens)",
			c, unknownKey, strayPods, firingManaged))
	})

	It("rotates in Restart delivery, restarting the pods once per round, with zero rejected", func() {
		Expect(env.SetDelivery(ctx, mrtrv1alpha1.DeliveryRestart)).To(Succeed())
		Expect(env.WaitSettled(ctx, 2*time.Minute)).To(Succeed()) // the template is stamped once: a rollout
		load = startLoad()
		from := len(env.Timeline.Events())
		Expect(env.RequestRotation(ctx, "rotation-5")).To(Succeed())
		c := finishRotations(5)
		elapsed := time.Since(loadStart)
		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(1))
		r := rotations[0]
		Expect(r.Phases).To(Equal(harness.StagedRotationPhases))
		Expect(r.Stamps).To(HaveLen(2), "stamps %v", r.Stamps)
		Expect(r.PodsAdded).To(Equal(2*int(env.Opts.Replicas)), "every pod restarted once per round")
		report("Restart delivery", c, elapsed, rotations)
	})

	It("rotates a StatefulSet and a DaemonSet too, stamping their pod templates (Restart delivery)", func() {
		rotateBatch(ctx, env)
	})

	It("serves its metrics to a scraper the chart's metrics-reader role allows, and to no one else", func() {
		metricsAccess(ctx, env)
	})

	It("rejects request states when the keys are replaced in one step (control experiment)", func() {
		By("stopping the operator, so that it does not repair the Secret")
		Expect(env.Operator.Stop()).To(Succeed())
		opensBefore, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())
		Expect(harness.UnknownKeyAlertFiring(opensBefore, opensBefore)).To(BeEmpty())
		load = startLoad()
		Eventually(func() uint64 { return load.Counts().Completed }).Should(BeNumerically(">=", 20))

		By("replacing the Secret's keys with a new one, without an accept phase or a TTL wait")
		k, err := keyring.GenerateKey("control", 32)
		Expect(err).NotTo(HaveOccurred())
		r, err := keyring.New(k)
		Expect(err).NotTo(HaveOccurred())
		data, err := keyring.Marshal(r)
		Expect(err).NotTo(HaveOccurred())
		var secret corev1.Secret
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &secret)).To(Succeed())
		secret.Data = map[string][]byte{keyring.SecretDataKey: data}
		Expect(env.Client.Update(ctx, &secret)).To(Succeed())

		Eventually(func() uint64 { return load.Counts().Rejected }).WithTimeout(30*time.Second).
			Should(BeNumerically(">", 0), "the harness must see the rejections a careless rotation causes")
		endLoad()
		c := load.Counts()
		GinkgoWriter.Printf("control experiment: %s\n", c)

		By("cross-checking the servers' own counters: every rejection is an unknown_key open, and the alert fires")
		// The replicas follow a keyring no MRTRKeyring manages any more: each refuses the tokens
		// its peers sealed with the key it does not hold, and says so in its own counter.
		opensAfter, err := env.ReplicaOpenCounts()
		Expect(err).NotTo(HaveOccurred())
		unknownKey := unknownKeyOnly("control experiment", opensBefore, opensAfter)
		// At least the load's: in the one e2e run so far the pods counted 6 against the load's 5
		// (an open the load did not see out, likely cut by endLoad; not yet confirmed). The
		// revocation spec holds the two equal.
		Expect(unknownKey).To(BeNumerically(">=", c.Rejected), "the servers' unknown_key counters miss rejections the load saw")
		firing := harness.UnknownKeyAlertFiring(opensBefore, opensAfter)
		Expect(firing).NotTo(BeEmpty(), "MRTRConsumerUnknownKeyRejections would not fire")
		AddReportEntry("control experiment: the servers' unknown_key counters", fmt.Sprintf(
			"%d rejected round trips, %d unknown_key opens counted by the pods; MRTRConsumerUnknownKeyRejections fires for %v",
			c.Rejected, unknownKey, firing))
	})

	It("ran, installed from its chart, as the chart's ServiceAccount: never refused, and using every permission it holds", func() {
		leastPrivilege(ctx, env)
	})

	// Last: make undeploy removes the CRDs, and with them every keyring.
	It("installs with make deploy and removes with make undeploy (kustomize, kubectl v1.37.2), as users without Helm do", func() {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		runMake := func(target string) {
			GinkgoHelper()
			cmd := exec.Command("make", "--no-print-directory", target, "ignore-not-found=true")
			cmd.Dir, cmd.Env = root, append(os.Environ(), "KUBECONFIG="+env.Cluster.KubeconfigPath())
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "make %s:\n%s", target, out)
		}
		runMake("deploy")
		var d appsv1.Deployment
		key := client.ObjectKey{Namespace: harness.OperatorNamespace, Name: "mrtr-operator-controller-manager"}
		Expect(env.Client.Get(ctx, key, &d)).To(Succeed())
		Expect(d.Spec.Template.Spec.Containers).To(ContainElement(And(HaveField("Image", "controller:latest"),
			HaveField("Args", ContainElement("--leader-elect")))))
		Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(harness.OperatorServiceAccount))
		var vap admissionregistrationv1.ValidatingAdmissionPolicy
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "mrtr-keyring-acknowledgements"}, &vap)).To(Succeed())
		runMake("undeploy")
		Eventually(func() bool {
			var ns corev1.Namespace
			err := env.Client.Get(ctx, client.ObjectKey{Name: harness.OperatorNamespace}, &ns)
			return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil)
		}).Should(BeTrue(), "make undeploy leaves the operator's namespace")
	})
})

func rotationsCompleted(env *harness.Env) func() (int64, error) {
	return func() (int64, error) {
		var k mrtrv1alpha1.MRTRKeyring
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &k)
		return k.Status.RotationsCompleted, err
	}
}

func phasesSince(events []harness.Event, from int) []mrtrv1alpha1.Phase {
	var out []mrtrv1alpha1.Phase
	for _, e := range events[from:] {
		if e.Kind == harness.EventPhase {
			out = append(out, e.Phase)
		}
	}
	return out
}

func stamps(events []harness.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == harness.EventStamp && e.Fingerprint != "" {
			out = append(out, e.Fingerprint)
		}
	}
	return out
}

// report prints the numbers of the run: throughput, rotation durations against their floor, pod
// restarts, and the operator's latency from a rollout or the last acknowledgement to its next write.
func report(title string, c harness.Counts, elapsed time.Duration, rotations []harness.Rotation) {
	var lat, acks, ttl []time.Duration
	restarts := 0
	lines := []string{title,
		fmt.Sprintf("round trips: %s in %v = %.0f/s", c, elapsed.Round(time.Second), float64(c.Completed)/elapsed.Seconds())}
	for i, r := range rotations {
		lines = append(lines, fmt.Sprintf("rotation %d: %s", i+1, r))
		lat, acks, ttl = append(lat, r.RolloutToWrite...), append(acks, r.AckToWrite...), append(ttl, r.TTLToWrite...)
		restarts += r.PodsAdded
	}
	lines = append(lines, fmt.Sprintf("pod restarts during rotations: %d", restarts))
	if len(acks) > 0 {
		lines = append(lines, fmt.Sprintf("operator latency, last acknowledgement -> next write: median %v, max %v (n=%d)",
			median(acks), harness.Max(acks).Round(time.Millisecond), len(acks)))
	}
	if len(lat) > 0 {
		lines = append(lines, fmt.Sprintf("operator latency, rollout complete -> Secret write: median %v, max %v (n=%d)",
			median(lat), harness.Max(lat).Round(time.Millisecond), len(lat)))
	}
	lines = append(lines, fmt.Sprintf("operator latency, TTL wait end -> Secret write: median %v, max %v (n=%d, 1s resolution)",
		median(ttl), harness.Max(ttl).Round(time.Millisecond), len(ttl)))
	for _, l := range lines {
		GinkgoWriter.Println(l)
	}
	AddReportEntry(title, strings.Join(lines, "\n"))
}

// median keeps report's lines short.
func median(ds []time.Duration) time.Duration { return harness.Median(ds).Round(time.Millisecond) }

// dumpOnFailure prints, after a failed spec, what says why: the operator's logs, the namespace's
// events, the timeline, the load's errors and the cluster's logs.
func dumpOnFailure(env *harness.Env, load *harness.Load) {
	if !CurrentSpecReport().Failed() || env == nil {
		return
	}
	for _, p := range env.Operator.LogPaths() {
		GinkgoWriter.Printf("==> %s <==\n%s\n", p, tail(p, 80))
	}
	var events corev1.EventList
	if err := env.Client.List(context.Background(), &events, client.InNamespace(env.Opts.Namespace)); err == nil {
		GinkgoWriter.Println("==> events <==")
		for _, e := range events.Items {
			GinkgoWriter.Printf("%s %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.Type,
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	GinkgoWriter.Println("==> timeline <==")
	for _, e := range env.Timeline.Events() {
		GinkgoWriter.Printf("%s %s\n", e.At.Format("15:04:05.000"), e)
	}
	if load != nil {
		GinkgoWriter.Printf("==> load: %s <==\n%s\n", load.Counts(), strings.Join(load.Errors(), "\n"))
	}
	GinkgoWriter.Println(env.Cluster.TailLogs(20))
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
