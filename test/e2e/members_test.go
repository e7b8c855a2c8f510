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
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	mrtrkeyring "github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// One ClusterMRTRKeyring across two clusters (docs/multi-cluster.md): the hub, on the real node,
// runs the manager and the servers of one namespace; the member west, a second local cluster on
// kwok's node with the chart installed in mode member, runs the servers of one namespace as
// processes of this machine. The hub reaches west with the Secret `kubectl mrtr member
// kubeconfig` printed; one round-robin balancer spreads MCP traffic over the pods of both, so a
// state sealed in one cluster is opened in the other.
var _ = Describe("a ClusterMRTRKeyring across a hub and a member cluster, behind one balancer", Ordered, func() {
	const (
		member   = "west"
		hubNS    = "fleet"
		memberNS = "fleet-west"
	)
	var (
		env      *harness.Env
		load     *harness.Load
		stopLoad func()
		// crossings counts the completed round trips whose state one cluster sealed and the other
		// opened, by "sealer -> opener" cluster.
		crossings map[string]uint64
		mu        sync.Mutex
	)
	ctx := context.Background()

	// clusterOf is the cluster of the replica (its pod's name): the member's pods are listed
	// through its own API server.
	memberPods := map[string]bool{}
	noteMemberPods := func() {
		GinkgoHelper()
		var pods corev1.PodList
		Expect(env.Member.Client.List(ctx, &pods, client.InNamespace(memberNS))).To(Succeed())
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pods.Items {
			memberPods[p.Name] = true
		}
	}
	clusterOf := func(replica string) string {
		if memberPods[replica] {
			return member
		}
		return harness.HubMember
	}
	startLoad := func() {
		noteMemberPods()
		mu.Lock()
		crossings = map[string]uint64{}
		mu.Unlock()
		load = &harness.Load{URL: env.MCPURL, Workers: 4, OnCompleted: func(sealedBy, openedBy string) {
			mu.Lock()
			defer mu.Unlock()
			if from, to := clusterOf(sealedBy), clusterOf(openedBy); from != to {
				crossings[from+" -> "+to]++
			}
		}}
		stopLoad = load.Start(ctx)
	}
	// endLoad stops the load and checks that nothing was rejected; with bothClusters, also that
	// states crossed from one cluster to the other.
	endLoad := func(bothClusters bool) harness.Counts {
		GinkgoHelper()
		stopLoad()
		stopLoad = nil
		c := load.Counts()
		mu.Lock()
		GinkgoWriter.Printf("round trips: %s; across clusters: %v\n", c, crossings)
		across := crossings[harness.HubMember+" -> "+member] + crossings[member+" -> "+harness.HubMember]
		mu.Unlock()
		Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		if bothClusters {
			Expect(across).To(BeNumerically(">", 0), "no state crossed from one cluster to the other")
		}
		return c
	}
	observe := func(g Gomega) harness.State {
		s, err := env.Observe(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	keyring := func(g Gomega) *mrtrv1alpha1.ClusterMRTRKeyring {
		var ck mrtrv1alpha1.ClusterMRTRKeyring
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: env.Opts.Name}, &ck)).To(Succeed())
		return &ck
	}
	// westState is status.members' entry of the member.
	westState := func(ck *mrtrv1alpha1.ClusterMRTRKeyring) *mrtrv1alpha1.MemberStatus {
		for i := range ck.Status.Members {
			if ck.Status.Members[i].Name == member {
				return &ck.Status.Members[i]
			}
		}
		return nil
	}
	rotationsDone := func(g Gomega) int64 { return observe(g).RotationsCompleted }
	// hubFingerprint is the fingerprint of the keyring in Secret ns/name on the hub (read through
	// the hub alone: Observe also reads the member).
	hubFingerprint := func(g Gomega, ns, name string) string {
		var sec corev1.Secret
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sec)).To(Succeed())
		kr, err := mrtrkeyring.Parse(sec.Data[mrtrkeyring.SecretDataKey])
		g.Expect(err).NotTo(HaveOccurred())
		return kr.Fingerprint()
	}
	leadSecret := mrtrv1alpha1.LeadSecretName("weather")
	restarts := func() (int32, map[string]types.UID) {
		GinkgoHelper()
		n, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		return n, uids
	}
	report := func(from int, n int) {
		GinkgoHelper()
		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(n))
		for i, r := range rotations {
			GinkgoWriter.Printf("rotation %d: %s (%v)\n", i+1, r, r.Duration().Round(100*time.Millisecond))
		}
	}
	// rotate requests one rotation and waits until it completed and everything settled.
	rotate := func(value string) {
		GinkgoHelper()
		done := rotationsDone(Default)
		Expect(env.RequestRotation(ctx, value)).To(Succeed())
		Eventually(rotationsDone).WithTimeout(2 * time.Minute).Should(BeNumerically("==", done+1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
	}
	specStart := time.Now()

	BeforeAll(func() {
		requireRealNode()
		start := time.Now()
		DeferCleanup(func() {
			GinkgoWriter.Printf("the two-cluster specs took %v, their set-up included\n", time.Since(start).Round(time.Second))
		})
		env = startStack(ctx, harness.Options{Node: localcluster.NodeReal, ClusterKeyring: true, Namespaces: []string{hubNS},
			Replicas: 2, Member: member, MemberNamespace: memberNS,
			// The hub notices a member's API server gone by its health check (every 5 s, 5 s
			// timeout): a TTL wait longer than that, so that it is seen down within the wait.
			TokenTTL: 10 * time.Second})
		GinkgoWriter.Printf("two clusters up in %v\n", time.Since(start).Round(time.Second))
		DeferCleanup(func() {
			if stopLoad != nil {
				stopLoad()
			}
		})
	})
	BeforeEach(func() { specStart = time.Now() })

	AfterEach(func() {
		GinkgoWriter.Printf("spec took %v\n", time.Since(specStart).Round(100*time.Millisecond))
		dumpOnFailure(env, load)
		if CurrentSpecReport().Failed() && env != nil {
			var ck mrtrv1alpha1.ClusterMRTRKeyring
			if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Opts.Name}, &ck); err == nil {
				status, _ := json.MarshalIndent(ck.Status, "", "  ")
				GinkgoWriter.Printf("==> ClusterMRTRKeyring %s: annotations %v, status <==\n%s\n", ck.Name, ck.Annotations, status)
			}
			if env.Member != nil {
				GinkgoWriter.Println(env.Member.Cluster.TailLogs(20))
			}
		}
	})

	It("keeps one keyring in both clusters, and rotates twice under live traffic across them: "+
		"nothing rejected, no restart, the member's writes confined to its selected namespace", func() {
		s := observe(Default)
		Expect(s.Copies).To(HaveLen(2))
		for where, fp := range s.Copies {
			Expect(fp).To(Equal(s.SecretFingerprint), "the copy in %s", where)
		}
		ck := keyring(Default)
		Expect(ck.Status.Namespaces.Items).To(ContainElements(
			SatisfyAll(HaveField("Cluster", harness.HubMember), HaveField("Name", hubNS)),
			SatisfyAll(HaveField("Cluster", member), HaveField("Name", memberNS))))
		Expect(westState(ck)).To(HaveField("Reachable", BeTrue()))

		before, uids := restarts()
		Expect(uids).To(HaveLen(4))
		rotationAt := len(env.Timeline.Events())
		startLoad()
		rotate("members-1")
		rotate("members-2")
		endLoad(true)
		after, uidsAfter := restarts()
		Expect(after).To(Equal(before), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced, in the hub or the member")
		report(rotationAt, 2)

		By("the member's audit log: the hub's ServiceAccount wrote Secrets in the selected namespace only, and nothing was refused")
		forbidden, writes, err := env.MemberAudit()
		Expect(err).NotTo(HaveOccurred())
		Expect(forbidden).To(BeEmpty(), "requests of the hub refused by the member's RBAC")
		Expect(writes).To(HaveLen(1), "Secret writes on the member by namespace: %v", writes)
		Expect(writes).To(HaveKey(memberNS))
		for _, w := range writes[memberNS] {
			Expect(w).To(MatchRegexp(`^(create|update) %s 20[01]$`, env.Opts.Name), "a write of the copy, answered")
		}
		GinkgoWriter.Printf("the hub's Secret writes on the member: %s\n", strings.Join(writes[memberNS], ", "))
	})

	It("holds WaitingTTL while the member's API server is down, removing no key anywhere, and completes once it is back", func() {
		rotationAt := len(env.Timeline.Events())
		startLoad()
		done := rotationsDone(Default)
		Expect(env.RequestRotation(ctx, "members-down")).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(observe(g).Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		held := observe(Default)
		hubCopy := held.Copies[hubNS]
		Expect(hubCopy).To(Equal(held.SecretFingerprint))
		// When the wait would end: once the member cannot be seen, status drops it (what its pods
		// seal meanwhile is unknown), and the wait starts again when it is back.
		ttlEnd := keyring(Default).Status.TTLWaitUntil
		Expect(ttlEnd).NotTo(BeNil())

		By("stopping the member's kube-apiserver in WaitingTTL")
		stopped := time.Now()
		Expect(env.Member.Cluster.StopAPIServer()).To(Succeed())
		GinkgoWriter.Printf("the member's API server stopped in %v\n", time.Since(stopped).Round(100*time.Millisecond))
		Eventually(func(g Gomega) {
			ck := keyring(g)
			g.Expect(westState(ck)).To(HaveField("Reachable", BeFalse()))
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		}).WithTimeout(time.Minute).Should(Succeed())
		hold := max(time.Until(ttlEnd.Time)+5*time.Second, 5*time.Second)
		GinkgoWriter.Printf("the member is unreachable; the TTL wait ends at %s: holding for %v\n",
			ttlEnd.Format(time.TimeOnly), hold.Round(100*time.Millisecond))
		Consistently(func(g Gomega) {
			s := observe(g)
			g.Expect(s.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL), "the phase holds while the member cannot be reached")
			g.Expect(s.SecretKeyIDs).To(Equal(held.SecretKeyIDs), "no key is removed from the lead Secret")
			g.Expect(s.Copies[hubNS]).To(Equal(hubCopy), "the hub's copy keeps every key")
		}).WithTimeout(hold).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("starting the member's kube-apiserver again: the rotation completes")
		Expect(env.Member.Cluster.StartAPIServer()).To(Succeed())
		Eventually(rotationsDone).WithTimeout(2 * time.Minute).Should(BeNumerically("==", done+1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		Expect(westState(keyring(Default))).To(HaveField("Reachable", BeTrue()))
		endLoad(true)
		report(rotationAt, 1)
	})

	It("reports Stalled naming the member whose credentials were revoked in mid-rotation, and completes once they are renewed", func() {
		orig := keyring(Default).Spec.RolloutDeadline
		setDeadline := func(d metav1.Duration) {
			GinkgoHelper()
			patch := fmt.Appendf(nil, `{"spec":{"rolloutDeadline":%q}}`, d.Duration.String())
			Expect(env.Client.Patch(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: env.Opts.Name}},
				client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		}
		setDeadline(metav1.Duration{Duration: 10 * time.Second}) // the least the API allows
		DeferCleanup(func() { setDeadline(orig) })

		rotationAt := len(env.Timeline.Events())
		startLoad()
		done := rotationsDone(Default)
		Expect(env.RequestRotation(ctx, "members-revoked")).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(observe(g).Phase).NotTo(Equal(mrtrv1alpha1.PhaseStable))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

		By("deleting the member's token Secret: the hub's token no longer authenticates there")
		Expect(env.RevokeMemberToken(ctx)).To(Succeed())
		var stalled *metav1.Condition
		Eventually(func(g Gomega) {
			ck := keyring(g)
			g.Expect(westState(ck)).To(HaveField("Reachable", BeFalse()))
			stalled = meta.FindStatusCondition(ck.Status.Conditions, mrtrv1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(mrtrv1alpha1.ReasonMemberUnreachable))
			g.Expect(stalled.Message).To(ContainSubstring(member + "/"))
			g.Expect(ck.Status.RotationsCompleted).To(Equal(done), "the rotation waits for the member")
		}).WithTimeout(time.Minute).Should(Succeed())
		GinkgoWriter.Printf("Stalled: %s\n", stalled.Message)
		GinkgoWriter.Printf("west: %s\n", westState(keyring(Default)).Message)

		By("renewing the token (helm upgrade of the member chart) and the hub's Secret (kubectl mrtr member kubeconfig)")
		Expect(env.RenewMemberToken(ctx)).To(Succeed())
		Eventually(rotationsDone).WithTimeout(2 * time.Minute).Should(BeNumerically("==", done+1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		ck := keyring(Default)
		Expect(westState(ck)).To(HaveField("Reachable", BeTrue()))
		Expect(meta.IsStatusConditionTrue(ck.Status.Conditions, mrtrv1alpha1.ConditionStalled)).To(BeFalse())
		endLoad(true)
		report(rotationAt, 1)
	})

	It("resumes from the lead Secret when the hub's manager is killed between the hub's copy and the member's: "+
		"the rotation completes, nothing rejected", func() {
		rotationAt := len(env.Timeline.Events())
		startLoad()
		before := observe(Default)
		done := before.RotationsCompleted

		By("freezing the member's kube-apiserver (SIGSTOP): the manager's write of the member's copy cannot complete")
		Expect(env.Member.Cluster.FreezeAPIServer()).To(Succeed())
		frozen := true
		DeferCleanup(func() {
			if frozen {
				Expect(env.Member.Cluster.ThawAPIServer()).To(Succeed())
			}
		})
		Expect(env.RequestRotation(ctx, "members-kill")).To(Succeed())
		var lead string
		Eventually(func(g Gomega) {
			lead = hubFingerprint(g, harness.OperatorNamespace, leadSecret)
			g.Expect(lead).NotTo(Equal(before.SecretFingerprint), "the lead Secret holds the rotation's first keyring")
			g.Expect(hubFingerprint(g, hubNS, env.Opts.Name)).To(Equal(lead), "the hub's copy holds it")
		}).WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(Succeed())

		By("killing the manager (SIGKILL) while its write to the member hangs, then thawing the member and starting a new manager")
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.Member.Cluster.ThawAPIServer()).To(Succeed())
		frozen = false
		Eventually(func(g Gomega) {
			s := observe(g)
			GinkgoWriter.Printf("after the kill: the member's copy holds %s (the lead Secret %s, before the rotation %s)\n",
				s.Copies[member+"/"+memberNS], lead, before.SecretFingerprint)
		}).Should(Succeed())
		Expect(env.Operator.Launch()).To(Succeed())
		Eventually(rotationsDone).WithTimeout(3 * time.Minute).Should(BeNumerically("==", done+1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		endLoad(true)
		report(rotationAt, 1)
	})

	// Last: the member leaves.
	It("warns naming a member removed from spec.members, and applies onLeave (Rekey) to its namespace, whose copy stays", func() {
		By("taking the member's servers out of the balancer first, as its cluster leaves the global load balancer")
		env.DetachMember()
		var copyBefore corev1.Secret
		Expect(env.Member.Client.Get(ctx, client.ObjectKey{Namespace: memberNS, Name: env.Opts.Name}, &copyBefore)).To(Succeed())
		held := observe(Default).SecretFingerprint
		done := rotationsDone(Default)
		startLoad()

		Eventually(func(g Gomega) { // the operator writes its status meanwhile
			ck := keyring(g)
			ck.Spec.Members = []mrtrv1alpha1.Member{{Name: harness.HubMember, Local: true}}
			ck.Spec.OnLeave = mrtrv1alpha1.OnLeaveRekey
			g.Expect(env.Client.Update(ctx, ck)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(env.Client.List(ctx, &evs)).To(Succeed())
			g.Expect(evs.Items).To(ContainElement(SatisfyAll(
				HaveField("Regarding.Kind", "ClusterMRTRKeyring"),
				HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", mrtrv1alpha1.EventMemberRemoved),
				HaveField("Note", ContainSubstring(member)))))
			ck := keyring(g)
			g.Expect(ck.Status.Namespaces.Items).To(ContainElement(SatisfyAll(HaveField("Cluster", member),
				HaveField("Name", memberNS), HaveField("State", mrtrv1alpha1.NamespaceLeft))))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("onLeave Rekey: a rotation to a fresh key, in the hub alone")
		Eventually(rotationsDone).WithTimeout(2 * time.Minute).Should(BeNumerically(">", done))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		s := observe(Default)
		Expect(s.SecretFingerprint).NotTo(Equal(held))
		left, err := mrtrkeyring.Parse(copyBefore.Data[mrtrkeyring.SecretDataKey])
		Expect(err).NotTo(HaveOccurred())
		for _, id := range left.IDs() {
			Expect(s.SecretKeyIDs).NotTo(ContainElement(id), "the hub still holds a key of the removed member's copy")
		}
		endLoad(false)

		var copyAfter corev1.Secret
		Expect(env.Member.Client.Get(ctx, client.ObjectKey{Namespace: memberNS, Name: env.Opts.Name}, &copyAfter)).To(Succeed())
		Expect(copyAfter.ResourceVersion).To(Equal(copyBefore.ResourceVersion), "the removed member's copy is left as it was")
	})
})
