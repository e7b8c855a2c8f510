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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
)

// The scenarios of issue 26 ("Attacks and faults") that this suite can play: a forged
// acknowledgement through pods/status, a leader paused past its lease, and a GitOps tool that puts
// the stamp back. Each runs on a stack of its own, against the chart-installed operator.
var _ = Describe("Attacks and faults", Ordered, func() {
	var env *harness.Env
	ctx := context.Background()

	BeforeAll(func() {
		env = startStack(ctx, harness.Options{})
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
	})

	AfterEach(func() {
		if !CurrentSpecReport().Failed() || env == nil {
			return
		}
		GinkgoWriter.Println(env.Cluster.TailLogs(40))
	})

	It("refuses an acknowledgement forged through pods/status, even an administrator's", func() {
		var pods corev1.PodList
		Expect(env.Client.List(ctx, &pods, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		Expect(pods.Items).NotTo(BeEmpty())
		pod := &pods.Items[0]
		st, err := env.Observe(ctx)
		Expect(err).NotTo(HaveOccurred())
		key := ack.AnnotationKey(env.Opts.Name)
		forged := ack.Patch(env.Opts.Name, "0123456789abcdef")
		err = env.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, forged), client.FieldOwner(ack.FieldManager))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("may not change through pods/status"))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Annotations[key]).To(Equal(st.SecretFingerprint))
	})

	It("lets a leader paused past its lease (SIGSTOP, then SIGCONT) write nothing once it resumes, "+
		"by the API server's audit log, and compete again without exiting", func() {
		By("running two managers with leader election, the first one leading")
		Expect(env.Operator.Stop()).To(Succeed())
		first, second := env.Operator.Replica("paused-a"), env.Operator.Replica("paused-b")
		DeferCleanup(func() {
			_ = first.Signal(syscall.SIGCONT)
			Expect(first.Stop()).To(Succeed())
			Expect(second.Stop()).To(Succeed())
			Expect(env.Operator.Launch()).To(Succeed())
		})
		Expect(first.Launch()).To(Succeed())
		Eventually(first.Leads).WithTimeout(time.Minute).Should(BeTrue())
		deposed := leaseHolder(ctx, env)
		Expect(second.Launch()).To(Succeed())

		By("pausing the leader in the middle of a rotation")
		Expect(env.RequestRotation(ctx, "paused-1")).To(Succeed())
		Eventually(func() (mrtrv1alpha1.Phase, error) { st, err := env.Observe(ctx); return st.Phase, err }).
			WithTimeout(time.Minute).ShouldNot(Equal(mrtrv1alpha1.PhaseStable))
		Expect(first.Signal(syscall.SIGSTOP)).To(Succeed())
		paused := time.Now()

		By("the second manager takes over and finishes the rotation")
		Eventually(func() string { return leaseHolder(ctx, env) }).WithTimeout(time.Minute).ShouldNot(Equal(deposed))
		takeover := time.Now()
		Eventually(rotationsCompleted(env)).WithTimeout(3 * time.Minute).Should(BeNumerically(">=", 1))

		By("resuming the first: it must notice before it writes, and compete again in its process")
		Expect(first.Signal(syscall.SIGCONT)).To(Succeed())
		resumed := time.Now()
		Eventually(func() string { return tail(first.LogPaths()[len(first.LogPaths())-1], 400) }).
			WithTimeout(time.Minute).Should(ContainSubstring("competing for the lease again"))
		// What a deposed leader got wrong showed within 10 s of resuming: give it 15.
		time.Sleep(15 * time.Second) //nolint:forbidigo // a span to count writes in, not a condition to await
		Expect(first.Err()).NotTo(HaveOccurred(), "the resumed manager exited")

		led := writesBy(env, deposed, time.Time{})
		Expect(led).NotTo(BeEmpty(), "no write of the first leader in the audit log at all: its User-Agent does not name it")
		writes := writesBy(env, deposed, takeover)
		Expect(writes).To(BeEmpty(), "the deposed leader wrote after its successor took over")
		refused := strings.Count(tail(first.LogPaths()[len(first.LogPaths())-1], 100000), "does not hold the leader lease")
		AddReportEntry("leader paused past its lease", fmt.Sprintf("paused %v, successor leading after %v; "+
			"writes of the first leader while it led: %d; after the takeover, by the audit log: %d; "+
			"log lines of writes its lease guard refused: %d",
			resumed.Sub(paused).Round(100*time.Millisecond), takeover.Sub(paused).Round(100*time.Millisecond),
			len(led), len(writes), refused))
	})

	It("costs at most 2 extra rollouts when a GitOps loop puts the stamp back every 3 s, then reports it", func() {
		By("switching to Restart delivery and rotating")
		Expect(env.SetDelivery(ctx, mrtrv1alpha1.DeliveryRestart)).To(Succeed())
		Expect(env.WaitSettled(ctx, 2*time.Minute)).To(Succeed())
		d := &appsv1.Deployment{}
		key := client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}
		Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		inGit := d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation]
		Expect(inGit).NotTo(BeEmpty())
		Expect(env.RequestRotation(ctx, "gitops-1")).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
			g.Expect(d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation]).NotTo(Equal(inGit))
		}).WithTimeout(time.Minute).Should(Succeed())
		stamped := d.Generation

		By("putting the stamp of the source back every 3 s for 45 s, as a self-healing GitOps tool would")
		revert := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, mrtrv1alpha1.FingerprintAnnotation, inGit)
		for end := time.Now().Add(45 * time.Second); time.Now().Before(end); {
			target := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			Expect(env.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, revert),
				client.FieldOwner("argocd-controller"))).To(Succeed())
			time.Sleep(3 * time.Second) //nolint:forbidigo // the loop's period is the scenario
		}
		Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		extra := d.Generation - stamped
		Expect(extra).To(BeNumerically("<=", 2), "pod template changes after the operator's stamp")

		By("the operator reports the fight, naming the workload and the field manager")
		var kr mrtrv1alpha1.MRTRKeyring
		Expect(env.Client.Get(ctx, key, &kr)).To(Succeed())
		c := meta.FindStatusCondition(kr.Status.Conditions, mrtrv1alpha1.ConditionStampReverted)
		Expect(c).NotTo(BeNil())
		Expect(c.Message).To(And(ContainSubstring("Deployment/"+env.Opts.Name), ContainSubstring(`"argocd-controller"`)))
		var events eventsv1.EventList
		Expect(env.Client.List(ctx, &events, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		var reported []string
		for _, e := range events.Items {
			if e.Reason == mrtrv1alpha1.EventStampReverted && e.Type == corev1.EventTypeWarning {
				reported = append(reported, e.Note)
			}
		}
		Expect(reported).NotTo(BeEmpty())
		AddReportEntry("GitOps loop putting the stamp back every 3 s for 45 s",
			fmt.Sprintf("extra rollouts: %d; reported: %s", extra, strings.Join(reported, " | ")))
	})
})

// leaseHolder is the holder of the manager's leader election Lease.
func leaseHolder(ctx context.Context, env *harness.Env) string {
	GinkgoHelper()
	var l coordinationv1.Lease
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: harness.OperatorNamespace, Name: "4710c0f2.dev"}, &l)).To(Succeed())
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// writesBy returns, from the API server's audit log, the writes (create, update, patch, delete) of
// the replica whose lease identity is identity (the manager puts it in its User-Agent) received
// since since, but for those of its Lease and its events: one line each.
func writesBy(env *harness.Env, identity string, since time.Time) []string {
	GinkgoHelper()
	f, err := os.Open(env.Cluster.AuditLogPath())
	Expect(err).NotTo(HaveOccurred())
	defer f.Close() //nolint:errcheck // read only
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Stage     string      `json:"stage"`
			Verb      string      `json:"verb"`
			URI       string      `json:"requestURI"`
			UserAgent string      `json:"userAgent"`
			Received  metav1.Time `json:"requestReceivedTimestamp"`
			ObjectRef *struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
		}
		Expect(json.Unmarshal(sc.Bytes(), &ev)).To(Succeed())
		if ev.Stage != "ResponseComplete" || !strings.Contains(ev.UserAgent, "replica/"+identity) || ev.Received.Time.Before(since) ||
			ev.ObjectRef == nil || ev.ObjectRef.Resource == "leases" || ev.ObjectRef.Resource == "events" {
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete":
			out = append(out, ev.Verb+" "+ev.URI)
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return out
}
