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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// On the real node (a kubelet with containerd, where this machine can run one; MRTR_NODE=real
// requires it): the example server runs as containers of its image, the kubelet mounts the keyring
// Secret and the pod's token, and the balancer reaches the pods over the pod network. The kubelet
// runs with its default syncFrequency (1m): the operator's pod annotation is what brings a new
// keyring to the pods within a second.
var _ = Describe("on a real node (kubelet, containerd)", Ordered, func() {
	var (
		env      *harness.Env
		load     *harness.Load
		stopLoad func()
	)
	ctx := context.Background()

	startLoad := func() {
		load = &harness.Load{URL: env.MCPURL, Workers: 4}
		stopLoad = load.Start(ctx)
	}
	endLoad := func() harness.Counts {
		GinkgoHelper()
		stopLoad()
		c := load.Counts()
		Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		return c
	}

	BeforeAll(func() {
		requireRealNode()
		env = startStack(ctx, harness.Options{Node: localcluster.NodeReal})
		DeferCleanup(func() {
			if stopLoad != nil {
				stopLoad()
			}
		})
	})

	AfterEach(func() { dumpOnFailure(env, load) })

	It("rotates twice in Reload delivery under live traffic: no container restarts, the same pods, nothing rejected, "+
		"each round within a few seconds of the write", func() {
		restarts, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		rotationAt := len(env.Timeline.Events())
		startLoad()
		for i := int64(1); i <= 2; i++ {
			Expect(env.RequestRotation(ctx, fmt.Sprintf("real-%d", i))).To(Succeed())
			Eventually(rotationsCompleted(env)).WithTimeout(time.Minute).Should(BeNumerically("==", i))
			Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		}
		c := endLoad()
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		Expect(c.CrossReplica).To(BeNumerically(">", 0))

		after, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(restarts), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced")
		rotations := harness.Rotations(env.Timeline.Events()[rotationAt:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(2))
		for i, r := range rotations {
			GinkgoWriter.Printf("rotation %d: %s\n", i+1, r)
			// The kubelet alone would take a minute or more per round (syncFrequency): the pod
			// annotation makes it sync at once. Generous for a loaded machine, far below a minute.
			for _, w := range r.AckWaits {
				Expect(w).To(BeNumerically("<", 20*time.Second), "an acknowledgement wait of rotation %d", i+1)
			}
		}
	})

	It("restarts a container killed with SIGKILL mid-phase; it acknowledges again and nothing is rejected", func() {
		restarts, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		var pods corev1.PodList
		Expect(env.Client.List(ctx, &pods, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		victim := pods.Items[0].Name
		startLoad()
		Expect(env.RequestRotation(ctx, "real-kill")).To(Succeed())
		Eventually(func() mrtrv1alpha1.Phase { return phase(env) }).WithTimeout(time.Minute).Should(Equal(mrtrv1alpha1.PhaseWaitingTTL))

		By("killing the server of pod " + victim + " with SIGKILL while the keyring waits out the TTL")
		pid := serverPID(victim)
		Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(time.Minute).Should(BeNumerically("==", 3))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		c := endLoad()
		GinkgoWriter.Printf("round trips with a container killed: %s\n", c)

		after, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(restarts+1), "the kubelet restarts the killed container, and only it")
		Expect(uidsAfter).To(Equal(uids), "the pod stays; only its container restarted")
	})

	It("hands over to the second of two managers when the leader is killed with SIGKILL mid-rotation: "+
		"it completes the rotation, no container restarts, the same pods, nothing rejected", func() {
		finish := func(n int64) harness.Counts {
			GinkgoHelper()
			Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", n))
			Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
			c := endLoad()
			Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
			return c
		}
		leaderFailover(ctx, env, "real-failover", startLoad, finish)
	})

	It("rotates in Restart delivery with real rollouts, and rejects nothing", func() {
		_, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.SetDelivery(ctx, mrtrv1alpha1.DeliveryRestart)).To(Succeed())
		startLoad()
		Expect(env.RequestRotation(ctx, "real-restart")).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", 5))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		c := endLoad()
		GinkgoWriter.Printf("round trips through real rollouts: %s\n", c)
		_, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		for name := range uids {
			Expect(uidsAfter).NotTo(HaveKey(name), "pod %s was not replaced by the rollouts", name)
		}
		Expect(env.SetDelivery(ctx, mrtrv1alpha1.DeliveryReload)).To(Succeed())
	})

	It("evicts, alone, the pod that mounts the keyring with subPath (which the kubelet never refreshes) once its "+
		"reloadDeadline passes, and its replacement passes the phase", func() {
		pinned := pinnedDeployment(env)
		Expect(env.Client.Create(ctx, pinned)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pinned), pinned)).To(Succeed())
			g.Expect(pinned.Status.ReadyReplicas).To(BeEquivalentTo(1))
		}).WithTimeout(time.Minute).Should(Succeed())
		patch := fmt.Appendf(nil, `{"spec":{"workloads":[{"kind":"Deployment","name":%q},{"kind":"Deployment","name":%q}]}}`,
			env.Opts.Name, pinned.Name)
		keyringObj := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: env.Opts.Namespace, Name: env.Opts.Name}}
		Expect(env.Client.Patch(ctx, keyringObj, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		pinnedPods := func(g Gomega) []corev1.Pod {
			var pods corev1.PodList
			g.Expect(env.Client.List(ctx, &pods, client.InNamespace(env.Opts.Namespace),
				client.MatchingLabels{"app.kubernetes.io/name": pinned.Name})).To(Succeed())
			return pods.Items
		}
		var stuck string
		Eventually(func(g Gomega) {
			pods := pinnedPods(g)
			g.Expect(pods).To(HaveLen(1))
			stuck = pods[0].Name
			g.Expect(phase(env)).To(Equal(mrtrv1alpha1.PhaseStable))
		}).WithTimeout(time.Minute).Should(Succeed())
		_, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())

		startLoad()
		Expect(env.RequestRotation(ctx, "real-subpath")).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", 6))
		c := endLoad()
		GinkgoWriter.Printf("round trips with the pinned pod evicted: %s\n", c)

		// Each write of the rotation pins the pinned Deployment's pod of the moment: the first
		// write's, then its replacement's at the next write. Only they are evicted, each named in a
		// Warning event (status.restartedPods is the current rotation's, empty once it is done).
		var evs eventsv1.EventList
		Expect(env.Client.List(ctx, &evs, client.InNamespace(env.Opts.Namespace))).To(Succeed())
		var missing []string
		for _, e := range evs.Items {
			if e.Reason == mrtrv1alpha1.ReasonAcknowledgementMissing {
				missing = append(missing, e.Note)
			}
		}
		Expect(missing).To(ContainElement(ContainSubstring(stuck + " did not acknowledge keyring")))
		Expect(missing).To(HaveEach(HavePrefix(pinned.Name + "-")))
		_, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		for name, uid := range uids {
			if name == stuck {
				Expect(uidsAfter).NotTo(HaveKey(name), "the pinned pod was not evicted")
				continue
			}
			Expect(uidsAfter).To(HaveKeyWithValue(name, uid), "pod %s was restarted with the pinned one", name)
		}
		Eventually(func(g Gomega) {
			pods := pinnedPods(g)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Name).NotTo(Equal(stuck))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("rotates a StatefulSet and a DaemonSet too, with real rollouts of their pods (Restart delivery)", func() {
		rotateBatch(ctx, env)
	})

	It("serves its metrics to a scraper the chart's metrics-reader role allows, and to no one else", func() {
		metricsAccess(ctx, env)
	})

	// Last: the permissions the specs above needed, every one of which the chart grants.
	It("ran, installed from its chart, as the chart's ServiceAccount: never refused, and using every permission it holds", func() {
		leastPrivilege(ctx, env)
	})
})

func phase(env *harness.Env) mrtrv1alpha1.Phase {
	var k mrtrv1alpha1.MRTRKeyring
	_ = env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &k)
	return k.Status.Phase
}

// serverPID finds, on this machine, the example server of pod: the container's process whose
// environment names it (POD_NAME, from the downward API).
func serverPID(pod string) int {
	GinkgoHelper()
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if strings.TrimSpace(string(comm)) != "mcp-server" {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if slices.Contains(strings.Split(string(environ), "\x00"), "POD_NAME="+pod) {
			return pid
		}
	}
	Fail("no mcp-server process of pod " + pod)
	return 0
}

// pinnedDeployment is one more replica of the example server that mounts only keyring.json of the
// Secret, with subPath: the kubelet copies it once, at the container's start, and never refreshes it.
func pinnedDeployment(env *harness.Env) *appsv1.Deployment {
	var d appsv1.Deployment
	Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &d)).To(Succeed())
	name := env.Opts.Name + "-pinned"
	labels := map[string]string{"app.kubernetes.io/name": name}
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = labels
	tmpl.Annotations = nil
	c := &tmpl.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "keyring", MountPath: "/etc/mrtr/" + keyring.SecretDataKey,
		SubPath: keyring.SecretDataKey, ReadOnly: true}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Opts.Namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: *tmpl,
		},
	}
}
