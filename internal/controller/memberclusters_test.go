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
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/members"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// link is a TCP proxy in front of a member's API server, through which the hub reaches it: cut
// closes the listener and every connection (an API server stopped, or a network cut, as the hub
// sees it), mend listens again on the same address (nothing when it listens).
type link struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newLink(target string) *link {
	GinkgoHelper()
	l := &link{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	l.mend()
	DeferCleanup(l.cut)
	return l
}

func (l *link) mend() {
	GinkgoHelper()
	l.mu.Lock()
	up := l.ln != nil
	l.mu.Unlock()
	if up {
		return
	}
	ln, err := net.Listen("tcp", l.addr)
	Expect(err).NotTo(HaveOccurred())
	l.mu.Lock()
	l.ln, l.addr = ln, ln.Addr().String()
	l.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.serve(c)
		}
	}()
}

func (l *link) serve(c net.Conn) {
	up, err := net.Dial("tcp", l.target)
	if err != nil {
		GinkgoWriter.Printf("link to %s: %v\n", l.target, err)
		_ = c.Close()
		return
	}
	l.mu.Lock()
	l.conns[c], l.conns[up] = true, true
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	_ = c.Close()
	_ = up.Close()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
}

// memberKubeconfig is a kubeconfig that reaches cfg's API server at server, with cfg's
// credentials and the CA ca, all inline.
func memberKubeconfig(cfg *rest.Config, server string, ca []byte) []byte {
	GinkgoHelper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["m"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["m"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	kc.CurrentContext = "m"
	b, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// putKubeconfig creates the member kubeconfig Secret name in the operator's namespace.
func putKubeconfig(name string, kubeconfig []byte) {
	GinkgoHelper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterResourceNamespace, Name: name},
		Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfig}}
	Expect(k8sClient.Create(ctx, s)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, s))).To(Succeed()) })
}

// createMemberKeyring creates a Reload-delivery ClusterMRTRKeyring of the Secret payments over
// the namespaces labelled fleet=name of the members given.
func createMemberKeyring(name string, ms ...mrtrv1alpha1.Member) {
	GinkgoHelper()
	spec := newKeyring("", name, reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = "payments" })).Spec
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec, Members: ms,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}}},
	}
	Expect(k8sClient.Create(ctx, ck)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ck))).To(Succeed()) })
}

// keyringIn reads the copy payments (createMemberKeyring's) in namespace through c (remembering
// its keys, as secretKeyring does).
func keyringIn(g Gomega, c client.Client, namespace string) *keyring.Keyring {
	var s corev1.Secret
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "payments"}, &s)).To(Succeed())
	kr, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	g.Expect(err).NotTo(HaveOccurred())
	rememberKeys(s.Data[keyring.SecretDataKey])
	return kr
}

// placed is a tenant in the cluster of c.
type placedTenant struct {
	c client.Client
	*tenant
}

// acknowledgeEverywhere makes every pod of every tenant acknowledge the keyring its copy holds,
// once every copy holds the lead Secret's.
func acknowledgeEverywhere(name string, ts ...placedTenant) string {
	GinkgoHelper()
	var fp string
	Eventually(func(g Gomega) {
		fp = leadKeyring(g, name).Fingerprint()
		for _, t := range ts {
			g.Expect(keyringIn(g, t.c, t.ns).Fingerprint()).To(Equal(fp), "the copy in %s", t.ns)
		}
	}).Should(Succeed())
	for _, t := range ts {
		for _, p := range t.pods {
			Expect(testworld.Acknowledge(ctx, t.c, p, "payments", fp)).To(Succeed())
		}
	}
	return fp
}

// copiesIn lists the Secrets labelled as copies of the cluster keyring name in c's cluster.
func copiesIn(c client.Client, name string) []string {
	GinkgoHelper()
	var list corev1.SecretList
	Expect(c.List(ctx, &list, client.MatchingLabels{mrtrv1alpha1.ClusterKeyringLabel: name})).To(Succeed())
	out := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}

var _ = Describe("ClusterMRTRKeyring across member clusters", Ordered, func() {
	var (
		west     *testenv.Env
		westLink *link
		registry *members.Registry
	)
	hub := mrtrv1alpha1.Member{Name: "hub", Local: true}
	westMember := mrtrv1alpha1.Member{Name: "west", KubeconfigSecret: "west-kubeconfig"}

	BeforeAll(func() {
		By("starting the member west: an API server of its own, behind a link the test can cut")
		var err error
		west, err = testenv.Start(ctx, testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(west.Stop()).To(Succeed()) })
		u, err := url.Parse(west.Config.Host)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("west's API server: %s\n", u.Host)
		westLink = newLink(u.Host)
		putKubeconfig("west-kubeconfig", memberKubeconfig(west.Config, "https://"+westLink.addr, west.Config.CAData))

		stopOperator()
		registry = &members.Registry{SyncTimeout: 5 * time.Second, HealthEvery: 200 * time.Millisecond, HealthTimeout: time.Second}
		startOperatorWith(registry)
		DeferCleanup(func() {
			stopOperator()
			startOperator()
		})
	})
	BeforeEach(func() {
		if behind := time.Since(fakeClock.Now()); behind > 0 {
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
	})

	It("rotates across the hub and a member: each copy written through its own cluster, each phase waiting for the pods of both", func() {
		name := "members-walk"
		ts := []placedTenant{{k8sClient, newTenant(name, 1)}, {west.Client, newTenantIn(west.Client, name, 2)}}
		createMemberKeyring(name, hub, westMember)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			w := memberStatus(ck, "west")
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Reachable).To(BeTrue(), "west: %+v", w)
			g.Expect(memberStatus(ck, "hub")).To(HaveField("Reachable", BeTrue()))
		}).Should(Succeed())
		acknowledgeEverywhere(name, ts...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Namespaces.Selected).To(BeEquivalentTo(2))
			g.Expect(ck.Status.Namespaces.UpToDate).To(BeEquivalentTo(2))
			g.Expect(ck.Status.PodsAcknowledged).To(BeEquivalentTo(3))
			g.Expect(ck.Status.Namespaces.Items).To(ContainElements(
				HaveField("Cluster", "hub"), HaveField("Cluster", "west")))
			for _, it := range ck.Status.Namespaces.Items {
				g.Expect(it.Name).NotTo(ContainSubstring("/"), "items name the namespace, their cluster the member")
			}
		}).Should(Succeed())

		requestClusterRotation(name, "members-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		// The hub's pods acknowledge, west's not yet: the phase holds for west.
		fp := acknowledgeEverywhere(name, ts[0])
		Eventually(func(g Gomega) {
			g.Expect(keyringIn(g, west.Client, ts[1].ns).Fingerprint()).To(Equal(fp))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getClusterKeyring(g, name).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		}, "2s").Should(Succeed())
		acknowledgeEverywhere(name, ts[1])
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeEverywhere(name, ts...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseWaitingTTL)
		fakeClock.Step(testTTLWait + time.Second)
		pokeCluster(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseRemoving)
		acknowledgeEverywhere(name, ts...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(ck.Status.RotationsCompleted).To(BeEquivalentTo(1))
		}).Should(Succeed())
		Expect(copiesIn(west.Client, name)).To(ConsistOf(ts[1].ns+"/payments"), "west holds its selected namespace's copy, and no lead Secret")
		expectNoKeyBytes(metav1.NamespaceDefault)
	})

	It("caches of a member's Secrets only the keyrings' copies", func() {
		name := "members-cache"
		t := newTenantIn(west.Client, name, 1)
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.ns, Name: "someone-elses"},
			Type: keyring.SecretType, Data: map[string][]byte{keyring.SecretDataKey: []byte("{}")}}
		Expect(west.Client.Create(ctx, other)).To(Succeed())
		createMemberKeyring(name, westMember)
		// The member runs once a keyring names it (it stops when none does).
		var cl cluster.Cluster
		Eventually(func() cluster.Cluster { cl = registry.Cluster(westMember.KubeconfigSecret); return cl }).ShouldNot(BeNil())
		Eventually(func(g Gomega) {
			var cached corev1.SecretList
			g.Expect(cl.GetCache().List(ctx, &cached, client.InNamespace(t.ns))).To(Succeed())
			names := make([]string, 0, len(cached.Items))
			for _, s := range cached.Items {
				names = append(names, s.Name)
			}
			g.Expect(names).To(ConsistOf("payments"), "the copy, and not the other keyring Secret")
		}).Should(Succeed())
	})

	It("caches of a member's pods and workloads only those of the namespaces its keyrings select, following the selection", func() {
		name := "members-scope"
		in := newTenantIn(west.Client, name, 1)
		out := newTenantIn(west.Client, name+"-not", 1)
		stray := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: out.ns, Name: "payments"},
			Type: keyring.SecretType, Data: map[string][]byte{keyring.SecretDataKey: []byte("{}")}}
		Expect(west.Client.Create(ctx, stray)).To(Succeed())
		createMemberKeyring(name, westMember)
		// The member runs once a keyring names it (it stops when none does).
		var cl cluster.Cluster
		Eventually(func() cluster.Cluster { cl = registry.Cluster(westMember.KubeconfigSecret); return cl }).ShouldNot(BeNil())
		c := cl.GetCache()
		cachedPods := func(ns string) ([]string, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			names := make([]string, 0, len(pods.Items))
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			return names, nil
		}
		cachedSecrets := func(ns string) []string {
			var secrets corev1.SecretList
			Expect(c.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
			names := make([]string, 0, len(secrets.Items))
			for _, s := range secrets.Items {
				names = append(names, s.Name)
			}
			return names
		}
		Eventually(func(g Gomega) {
			g.Expect(cachedPods(in.ns)).To(ConsistOf(in.pods[0].Name))
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: in.ns, Name: "api"}, &appsv1.Deployment{})).To(Succeed())
			g.Expect(cachedSecrets(in.ns)).To(ConsistOf("payments"))
		}).Should(Succeed())
		_, err := cachedPods(out.ns)
		Expect(err).To(MatchError(members.ErrNotSelected), "the pods of a namespace no keyring selects")
		Expect(c.Get(ctx, types.NamespacedName{Namespace: out.ns, Name: "api"}, &appsv1.Deployment{})).To(MatchError(members.ErrNotSelected))
		Expect(cachedSecrets(out.ns)).To(BeEmpty(), "a Secret that is no copy")
		Expect(c.List(ctx, &corev1.PodList{})).To(MatchError(members.ErrNotSelected), "the pods of every namespace")

		By("moving the selection from one namespace to the other")
		relabel := func(ns, fleet string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				var o corev1.Namespace
				g.Expect(west.Client.Get(ctx, types.NamespacedName{Name: ns}, &o)).To(Succeed())
				o.Labels["fleet"] = fleet
				g.Expect(west.Client.Update(ctx, &o)).To(Succeed())
			}).Should(Succeed())
		}
		Expect(west.Client.Delete(ctx, stray)).To(Succeed())
		relabel(out.ns, name)
		relabel(in.ns, name+"-gone")
		Eventually(func(g Gomega) {
			g.Expect(cachedPods(out.ns)).To(ConsistOf(out.pods[0].Name))
			g.Expect(keyringIn(g, west.Client, out.ns)).NotTo(BeNil())
			_, err := cachedPods(in.ns)
			g.Expect(err).To(MatchError(members.ErrNotSelected))
			ck := getClusterKeyring(g, name)
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(in.ns, mrtrv1alpha1.NamespaceLeft))
			g.Expect(namespaceStates(ck)).To(HaveKey(out.ns))
			g.Expect(namespaceStates(ck)[out.ns]).NotTo(Equal(mrtrv1alpha1.NamespaceUnreachable))
		}).Should(Succeed())
		Expect(cachedSecrets(in.ns)).To(ConsistOf("payments"), "the copy left behind stays in view: onLeave reads it")

		By("deleting the keyring: the namespace only it selected leaves the member's cache")
		Expect(k8sClient.Delete(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := cachedPods(out.ns)
			g.Expect(err).To(MatchError(members.ErrNotSelected))
		}).Should(Succeed())
	})

	It("does not report a member unreachable while it connects after the manager restarts", func() {
		name := "members-restart"
		ts := []placedTenant{{k8sClient, newTenant(name, 1)}, {west.Client, newTenantIn(west.Client, name, 1)}}
		createMemberKeyring(name, hub, westMember)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeEverywhere(name, ts...)
		Eventually(func(g Gomega) {
			g.Expect(namespaceStates(getClusterKeyring(g, name))).To(HaveKeyWithValue(ts[1].ns, mrtrv1alpha1.NamespaceUpToDate))
		}).Should(Succeed())

		By("restarting the manager: west connects again")
		stopOperator()
		registry = &members.Registry{SyncTimeout: 5 * time.Second, HealthEvery: 200 * time.Millisecond, HealthTimeout: time.Second}
		startOperatorWith(registry)
		requestClusterRotation(name, "restart-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		Consistently(func(g Gomega) {
			g.Expect(clusterEvents(g, name)).NotTo(ContainElement(HavePrefix(mrtrv1alpha1.ReasonMemberUnreachable)))
			ck := getClusterKeyring(g, name)
			g.Expect(memberStatus(ck, "west")).To(HaveField("Reachable", BeTrue()))
			g.Expect(namespaceStates(ck)).NotTo(HaveKeyWithValue(ts[1].ns, mrtrv1alpha1.NamespaceUnreachable))
		}, "1s").Should(Succeed())
	})

	It("holds the phase while a member cannot be reached, stalls naming it, and catches it up once it is back", func() {
		name := "members-cut"
		ts := []placedTenant{{k8sClient, newTenant(name, 1)}, {west.Client, newTenantIn(west.Client, name, 1)}}
		createMemberKeyring(name, hub, westMember)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeEverywhere(name, ts...)
		requestClusterRotation(name, "cut-1")
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseAccepting)
		acknowledgeEverywhere(name, ts...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseSealingWithNew)
		acknowledgeEverywhere(name, ts...)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseWaitingTTL)
		held := getClusterKeyring(Default, name).Status.SecretFingerprint

		By("cutting west off in WaitingTTL")
		westLink.cut()
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(memberStatus(ck, "west")).To(HaveField("Reachable", BeFalse()))
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(ts[1].ns, mrtrv1alpha1.NamespaceUnreachable))
		}).Should(Succeed())
		fakeClock.Step(testTTLWait + time.Second)
		pokeCluster(name)
		Consistently(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL), "no key is removed while west cannot be reached")
			g.Expect(ck.Status.SecretFingerprint).To(Equal(held))
		}, "2s").Should(Succeed())

		fakeClock.Step(testRolloutWait + time.Second)
		pokeCluster(name)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			stalled := meta.FindStatusCondition(ck.Status.Conditions, mrtrv1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(mrtrv1alpha1.ReasonMemberUnreachable))
			g.Expect(stalled.Message).To(ContainSubstring("west/" + ts[1].ns))
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		}).Should(Succeed())

		By("mending the link: west is caught up from the lead Secret, and the rotation completes")
		westLink.mend()
		// What west's pods sealed with while it could not be seen is unknown: the TTL wait starts
		// again once west is seen to run the phase's keyring.
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(memberStatus(ck, "west")).To(HaveField("Reachable", BeTrue()))
			g.Expect(ck.Status.TTLWaitUntil).NotTo(BeNil())
		}).Should(Succeed())
		fakeClock.Step(testTTLWait + time.Second)
		pokeCluster(name)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseRemoving)
		acknowledgeEverywhere(name, ts...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(memberStatus(ck, "west")).To(HaveField("Reachable", BeTrue()))
		}).Should(Succeed())
	})

	It("revokes at once in every member it reaches, names the one it cannot in status until its copy is written, then writes it", func() {
		name := "members-revoke"
		ts := []placedTenant{{k8sClient, newTenant(name, 1)}, {west.Client, newTenantIn(west.Client, name, 1)}}
		createMemberKeyring(name, hub, westMember)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeEverywhere(name, ts...)
		revoked := leadKeyring(Default, name).Primary().ID()

		By("cutting west off, then revoking the primary key")
		westLink.cut()
		DeferCleanup(westLink.mend) // the next specs reach west again, also if this one fails
		Eventually(func(g Gomega) {
			g.Expect(memberStatus(getClusterKeyring(g, name), "west")).To(HaveField("Reachable", BeFalse()))
		}).Should(Succeed())
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RevokeAnnotation, revoked)
		Expect(k8sClient.Patch(ctx, &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(leadKeyring(g, name).IDs()).NotTo(ContainElement(revoked), "the lead Secret")
			g.Expect(keyringIn(g, k8sClient, ts[0].ns).IDs()).NotTo(ContainElement(revoked), "the hub's copy, written at once")
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseRevoking))
			g.Expect(ck.Status.Namespaces.Items).To(ContainElement(And(HaveField("Cluster", "west"), HaveField("Name", ts[1].ns),
				HaveField("State", mrtrv1alpha1.NamespaceUnreachable))), "west is named until its copy is written")
		}).Should(Succeed())
		Expect(keyringIn(Default, west.Client, ts[1].ns).IDs()).To(ContainElement(revoked), "west's copy cannot be written while it is cut off")

		By("mending the link: west's copy is written, and the revocation completes once its pods run it")
		westLink.mend()
		Eventually(func(g Gomega) {
			g.Expect(keyringIn(g, west.Client, ts[1].ns).IDs()).NotTo(ContainElement(revoked))
		}).Should(Succeed())
		acknowledgeEverywhere(name, ts...)
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(namespaceStates(ck)).To(HaveKeyWithValue(ts[1].ns, mrtrv1alpha1.NamespaceUpToDate))
		}).Should(Succeed())
	})

	It("reports a member removed from spec.members with MemberRemoved, applies onLeave, and leaves its copies", func() {
		name := "members-leave"
		ts := []placedTenant{{k8sClient, newTenant(name, 1)}, {west.Client, newTenantIn(west.Client, name, 1)}}
		createMemberKeyring(name, hub, westMember)
		eventuallyClusterPhase(name, mrtrv1alpha1.PhaseStable)
		acknowledgeEverywhere(name, ts...)
		var before corev1.Secret
		Expect(west.Client.Get(ctx, types.NamespacedName{Namespace: ts[1].ns, Name: "payments"}, &before)).To(Succeed())
		held := getClusterKeyring(Default, name).Status.SecretFingerprint

		Eventually(func(g Gomega) { // the operator writes its status meanwhile
			ck := getClusterKeyring(g, name)
			ck.Spec.Members = []mrtrv1alpha1.Member{hub}
			ck.Spec.OnLeave = mrtrv1alpha1.OnLeaveRekey
			g.Expect(k8sClient.Update(ctx, ck)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(clusterEvents(g, name)).To(ContainElement(HavePrefix(mrtrv1alpha1.EventMemberRemoved + ": member west")))
			ck := getClusterKeyring(g, name)
			g.Expect(ck.Status.Members).To(HaveLen(1))
			g.Expect(ck.Status.Namespaces.Items).To(ContainElement(And(HaveField("Cluster", "west"), HaveField("Name", ts[1].ns),
				HaveField("State", mrtrv1alpha1.NamespaceLeft))))
			g.Expect(ck.Status.TargetFingerprint).NotTo(Equal(held), "onLeave Rekey: a rotation to a fresh key starts")
		}).Should(Succeed())
		var after corev1.Secret
		Expect(west.Client.Get(ctx, types.NamespacedName{Namespace: ts[1].ns, Name: "payments"}, &after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the removed member's copy is left as it was")
	})

	neverReached := func(secret string, kubeconfig []byte, why string) {
		GinkgoHelper()
		name := "members-" + secret
		putKubeconfig(secret, kubeconfig)
		newTenant(name, 1)
		newTenantIn(west.Client, name, 1)
		createMemberKeyring(name, hub, mrtrv1alpha1.Member{Name: "far", KubeconfigSecret: secret})
		Eventually(func(g Gomega) {
			ck := getClusterKeyring(g, name)
			far := memberStatus(ck, "far")
			g.Expect(far).NotTo(BeNil())
			g.Expect(far.Reachable).To(BeFalse())
			g.Expect(far.Message).To(ContainSubstring(why))
			partial := meta.FindStatusCondition(ck.Status.Conditions, mrtrv1alpha1.ConditionPartiallyReady)
			g.Expect(partial).NotTo(BeNil())
			g.Expect(partial.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(partial.Reason).To(Equal(mrtrv1alpha1.ReasonMemberUnreachable))
			g.Expect(partial.Message).To(ContainSubstring("far/"))
			g.Expect(partial.Message).To(ContainSubstring(why))
		}).Should(Succeed())
		Consistently(func() []string { return copiesIn(west.Client, name) }, "1s").Should(BeEmpty(), "nothing is written in the member")
		for _, e := range clusterEvents(Default, name) {
			Expect(e).NotTo(ContainSubstring(string(west.Config.KeyData)))
		}
	}

	It("reports a member whose kubeconfig's CA does not sign its server's certificate, and writes nothing there", func() {
		// The hub's CA signed the hub's certificate, not west's.
		neverReached("untrusted-kubeconfig", memberKubeconfig(west.Config, "https://"+westLink.addr, cfg.CAData), "x509")
	})

	It("reports a member whose kubeconfig Secret holds no valid kubeconfig, and writes nothing there", func() {
		neverReached("invalid-kubeconfig", []byte("not: [a kubeconfig"), "invalid-kubeconfig")
	})

	It("asks a member again, while it runs, about a workload kind it did not serve, and forgets the member once it stops", func() {
		cl, err := cluster.New(west.Config, func(o *cluster.Options) { o.Scheme = k8sClient.Scheme(); o.Cache = MemberCacheOptions() })
		Expect(err).NotTo(HaveOccurred())
		kinds := &memberKinds{recheck: 100 * time.Millisecond}
		runCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		Expect(kinds.index(runCtx, cl)).To(Succeed())
		served := kinds.served(cl)
		Expect(served(mrtrv1alpha1.KindDeployment)).To(BeTrue())
		Expect(served(workload.ArgoRolloutKind)).To(BeFalse(), "west does not serve Rollouts yet")

		By("installing the Rollout CRD in west: the recheck finds it, without a new cluster")
		installRolloutCRDIn(west.Config, cl.GetRESTMapper())
		Eventually(func() bool { return kinds.served(cl)(workload.ArgoRolloutKind) }).Should(BeTrue())

		By("stopping the member: nothing of it is kept")
		stop()
		Eventually(func() bool { _, ok := kinds.m.Load(cl); return ok }).Should(BeFalse())
		Expect(kinds.served(cl)(mrtrv1alpha1.KindDeployment)).To(BeFalse())
	})
})
