//go:build e2e

/*
Copyright 2026.

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
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
)

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
		var err error
		env, err = harness.Start(ctx, harness.Options{
			LogDir:  os.Getenv("E2E_LOG_DIR"),
			Logf:    func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
			Verbose: true,
		})
		DeferCleanup(func() {
			endLoad()
			Expect(env.Stop()).To(Succeed())
		})
		Expect(err).NotTo(HaveOccurred())
	})

	AfterEach(func() {
		if !CurrentSpecReport().Failed() || env == nil {
			return
		}
		for _, p := range env.Operator.LogPaths() {
			GinkgoWriter.Printf("==> %s <==\n%s\n", p, tail(p, 80))
		}
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(env.Opts.Namespace)); err == nil {
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
	})

	It("serves MRTR round trips across replicas before any rotation", func() {
		load = startLoad()
		Eventually(func(g Gomega) {
			c := load.Counts()
			g.Expect(c.Rejected).To(BeZero(), "%s", load.Errors())
			g.Expect(c.Failed).To(BeZero(), "%s", load.Errors())
			g.Expect(c.CrossReplica).To(BeNumerically(">=", 20))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("rotates twice with zero rejected request states, resuming after the operator is killed mid-rotation", func() {
		rotationAt = len(env.Timeline.Events())
		stampsBefore := stamps(env.Timeline.Events())

		By("requesting rotation 1 and killing the operator while its pods roll to the new primary")
		Expect(env.RequestRotation(ctx, "rotation-1")).To(Succeed())
		Eventually(func() []mrtrv1alpha1.Phase { return phasesSince(env.Timeline.Events(), rotationAt) }).
			WithTimeout(2 * time.Minute).Should(ContainElement(mrtrv1alpha1.PhaseSealingWithNew))
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.Operator.Launch()).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(3 * time.Minute).Should(BeNumerically("==", 1))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())

		By("requesting rotation 2")
		Expect(env.RequestRotation(ctx, "rotation-2")).To(Succeed())
		Eventually(rotationsCompleted(env)).WithTimeout(3 * time.Minute).Should(BeNumerically("==", 2))
		Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
		endLoad()
		elapsed := time.Since(loadStart)

		By("checking the round trips")
		c := load.Counts()
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		Expect(c.Completed).To(BeNumerically(">=", minRoundTrips))
		for _, r := range env.ReplicaKeyrings() {
			Expect(r.Rejected).To(BeZero(), "replica %s rejected request states", r.Replica)
		}

		By("checking the phases, the Secret writes and the template stamps")
		events := env.Timeline.Events()
		rotations := harness.Rotations(events[rotationAt:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(2))
		for i, r := range rotations {
			Expect(r.Phases).To(Equal(harness.RotationPhases), "rotation %d", i+1)
			Expect(r.Secrets).To(HaveLen(3), "rotation %d: Secret writes %v", i+1, r.Secrets)
			old, nu := r.Secrets[0][0], r.Secrets[0][1]
			Expect(r.Secrets).To(Equal([][]string{{old, nu}, {nu, old}, {nu}}), "rotation %d", i+1)
			// One stamp per phase: the restarted operator did not restart the pods a second time.
			Expect(r.Stamps).To(HaveLen(3), "rotation %d: stamps %v", i+1, r.Stamps)
		}
		all := stamps(events)
		Expect(all[len(stampsBefore):]).To(HaveLen(6))
		Expect(slices.Compact(slices.Sorted(slices.Values(all)))).To(HaveLen(len(all)), "a fingerprint was stamped twice: %v", all)
		Expect(env.Timeline.TTLWaitUntils()).To(HaveLen(2), "the TTL wait was restarted")

		By("checking the end state")
		s, err := env.Observe(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.SecretKeyIDs).To(HaveLen(1))
		Expect(s.TemplateHash).To(Equal(s.SecretFingerprint))
		Expect(s.Serving).To(HaveLen(int(env.Opts.Replicas)))
		for _, r := range s.Serving {
			Expect(r.Fingerprint).To(Equal(s.SecretFingerprint), "replica %s", r.Replica)
		}

		report(c, elapsed, rotations)
	})

	It("rejects request states when the keys are replaced in one step (control experiment)", func() {
		By("stopping the operator, so that it does not repair the Secret")
		Expect(env.Operator.Stop()).To(Succeed())
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
		secret.Data = map[string][]byte{harness.SecretKey: data}
		Expect(env.Client.Update(ctx, &secret)).To(Succeed())

		Eventually(func() uint64 { return load.Counts().Rejected }).WithTimeout(30*time.Second).
			Should(BeNumerically(">", 0), "the harness must see the rejections a careless rotation causes")
		endLoad()
		GinkgoWriter.Printf("control experiment: %s\n", load.Counts())
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

// report prints the numbers of the run: throughput, rotation durations against their floor, and the
// operator's latency between a rollout completing and its next Secret write.
func report(c harness.Counts, elapsed time.Duration, rotations []harness.Rotation) {
	var lat, ttl []time.Duration
	lines := make([]string, 0, 1+len(rotations)+2)
	lines = append(lines,
		fmt.Sprintf("round trips: %s in %v = %.0f/s", c, elapsed.Round(time.Second), float64(c.Completed)/elapsed.Seconds()))
	for i, r := range rotations {
		lines = append(lines, fmt.Sprintf("rotation %d: %s", i+1, r))
		lat, ttl = append(lat, r.RolloutToWrite...), append(ttl, r.TTLToWrite...)
	}
	lines = append(lines,
		fmt.Sprintf("operator latency, rollout complete -> Secret write: median %v, max %v (n=%d)",
			median(lat), harness.Max(lat).Round(time.Millisecond), len(lat)),
		fmt.Sprintf("operator latency, TTL wait end -> Secret write: median %v, max %v (n=%d, 1s resolution)",
			median(ttl), harness.Max(ttl).Round(time.Millisecond), len(ttl)))
	for _, l := range lines {
		GinkgoWriter.Println(l)
	}
	AddReportEntry("numbers", strings.Join(lines, "\n"))
}

// median keeps report's lines short.
func median(ds []time.Duration) time.Duration { return harness.Median(ds).Round(time.Millisecond) }

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
