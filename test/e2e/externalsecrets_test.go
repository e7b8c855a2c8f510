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
	"crypto/rand"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// Keys that a secret manager rotates, brought to the cluster by the real External Secrets
// Operator (built from its module, hack/build-external-secrets.sh, with its fake provider): a
// ClusterSecretStore of the fake provider plays the secret manager, and changing what it holds
// (its spec.provider.fake.data) is the manager's rotation, which ESO writes into a Secret on its
// next refresh. On the real node, under live MCP traffic:
//   - with the operator, the Secret ESO writes is the keyring's source (spec.keySource type Secret):
//     two rotations at the source, nothing rejected, no container restarted;
//   - without it, as ESO's users run today, the pods mount the Secret that ESO writes in keyring
//     format (keyring.json of the current key alone) and follow it as it changes: the same two
//     rotations, and the request states the pods reject are counted (docs/benchmarks.md).
var _ = Describe("keys from the External Secrets Operator, on a real node", Ordered, ContinueOnFailure, func() {
	const (
		store = "secret-manager" // the fake ClusterSecretStore
		// directStore is the comparison's own store, so that its rotations rotate nothing else.
		directStore = "secret-manager-direct"
		remoteKey   = "mcp/weather"    // the name the secret manager holds the key under
		source      = "weather-source" // the key source Secret ESO writes for the operator
		direct      = "direct"         // the namespace of the servers without the operator
		// ESO refreshes every second: it writes a rotation within about a second of the store's
		// change, so the time a round takes is the operator's (or the kubelet's), not ESO's.
		refresh = time.Second
	)
	var (
		env      *harness.Env
		load     *harness.Load
		stopLoad func()
		version  int
	)
	ctx := context.Background()

	// nextSecret is the secret manager's next version: 32 random bytes.
	nextSecret := func() harness.FakeSecret {
		GinkgoHelper()
		version++
		key := make([]byte, 32)
		_, err := rand.Read(key)
		Expect(err).NotTo(HaveOccurred())
		return harness.FakeSecret{Version: fmt.Sprintf("v%d", version), Key: key}
	}
	var first harness.FakeSecret

	startLoad := func(url string) {
		load = &harness.Load{URL: url, Workers: 4}
		stopLoad = load.Start(ctx)
	}
	endLoad := func() harness.Counts {
		GinkgoHelper()
		stopLoad()
		stopLoad = nil
		c := load.Counts()
		Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
		return c
	}

	BeforeAll(func() {
		requireRealNode()
		first = nextSecret()
		env = startStack(ctx, harness.Options{
			Node:            localcluster.NodeReal,
			ExternalSecrets: true,
			// The store and the source's ExternalSecret come first, and the keyring starts from the
			// key ESO wrote: the keyring Secret's first key is the secret manager's first version.
			BeforeKeyring: func(ctx context.Context, c client.Client) error {
				s, err := harness.FakeClusterSecretStore(store, remoteKey, first)
				if err != nil {
					return err
				}
				if err := c.Create(ctx, s); err != nil {
					return err
				}
				if err := c.Create(ctx, harness.SourceExternalSecret("mcp", source, store, remoteKey, source, refresh)); err != nil {
					return err
				}
				return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
					var sec corev1.Secret
					err := c.Get(ctx, client.ObjectKey{Namespace: "mcp", Name: source}, &sec)
					return err == nil && len(sec.Data[harness.SourceDataKey]) == 32, nil
				})
			},
			KeyringSpec: func(s *mrtrv1alpha1.MRTRKeyringSpec) {
				// A rotation starts when the source changes: no interval (the API refuses one).
				s.RotationInterval = metav1.Duration{}
				s.KeySource = &mrtrv1alpha1.KeySource{Type: mrtrv1alpha1.KeySourceSecret,
					Secret: &mrtrv1alpha1.SecretKeySource{Name: source, Key: harness.SourceDataKey}}
			},
		})
		DeferCleanup(func() {
			if stopLoad != nil {
				stopLoad()
			}
		})
	})

	AfterEach(func() {
		dumpOnFailure(env, load)
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Println(env.Cluster.TailLogs(40)) // external-secrets.log among them
		}
	})

	It("rotates twice when the secret manager does, under live traffic: nothing rejected, no container restarted, the same pods", func() {
		Expect(keyIDs(env)).To(Equal([]string{first.Version}), "the keyring starts from the source's version")
		restarts, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		from := len(env.Timeline.Events())
		started := time.Now()
		startLoad(env.MCPURL)
		for i := int64(1); i <= 2; i++ {
			next := nextSecret()
			By("rotating the secret manager's key to " + next.Version)
			Expect(harness.RotateFakeSecret(ctx, env.Client, store, remoteKey, next)).To(Succeed())
			Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", i))
			Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
			Expect(keyIDs(env)).To(Equal([]string{next.Version}), "the keyring after the rotation to %s", next.Version)
		}
		elapsed := time.Since(started)
		c := endLoad()
		Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
		Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
		Expect(c.CrossReplica).To(BeNumerically(">", 0))

		after, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(restarts), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced")
		rotations := harness.Rotations(env.Timeline.Events()[from:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
		Expect(rotations).To(HaveLen(2))
		report("keys from ESO (fake provider), with the operator: two rotations at the source", c, elapsed, rotations)
		AddReportEntry("ESO source, with the operator: rejected request states", fmt.Sprintf("%d of %d round trips", c.Rejected, c.Completed))
	})

	// The comparison: no keyring, the servers follow ESO's Secret directly. It asserts that the
	// measurement happened (both rotations reached every pod under traffic) and reports what was
	// rejected; it does not assert a count. How many request states fail depends on when the
	// kubelet, on its own sync period (1m), refreshes each pod's volume, which no test controls.
	It("without the operator, the pods following ESO's Secret directly: the same two rotations, the rejections counted", func() {
		// The direct namespace's ExternalSecret writes what the servers mount, the Secret named
		// as the keyring's, before they start (a pod whose Secret is missing waits in the kubelet's
		// back-off); they then serve with the current version.
		current := nextSecret()
		s, err := harness.FakeClusterSecretStore(directStore, remoteKey, current)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: direct}})).To(Succeed())
		es := harness.DirectExternalSecret(direct, env.Opts.Name, directStore, remoteKey, env.Opts.Name, refresh)
		Expect(env.Client.Create(ctx, es)).To(Succeed())
		Eventually(func(g Gomega) {
			var sec corev1.Secret
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: direct, Name: env.Opts.Name}, &sec)).To(Succeed())
			_, err := keyring.Parse(sec.Data[keyring.SecretDataKey])
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(time.Minute).Should(Succeed())
		u, err := env.DeployUnmanaged(ctx, direct)
		Expect(err).NotTo(HaveOccurred())
		servingVersion := func(v string) func(g Gomega) {
			return func(g Gomega) {
				rs := u.Keyrings()
				g.Expect(rs).To(HaveLen(int(env.Opts.TotalReplicas())))
				for _, r := range rs {
					g.Expect(r.KeyIDs).To(Equal([]string{v}), "replica %s", r.Replica)
				}
			}
		}
		Eventually(servingVersion(current.Version)).WithTimeout(2 * time.Minute).Should(Succeed())
		restarts, uids, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())

		startLoad(u.MCPURL)
		started := time.Now()
		spans := make([]time.Duration, 0, 2)
		for range 2 {
			next := nextSecret()
			By("rotating the secret manager's key to " + next.Version + "; each pod follows when its kubelet refreshes the volume")
			at := time.Now()
			Expect(harness.RotateFakeSecret(ctx, env.Client, directStore, remoteKey, next)).To(Succeed())
			// The kubelet refreshes a mounted Secret on its periodic sync of the pod: up to its
			// syncFrequency (1m) plus its cache's TTL after the write.
			Eventually(servingVersion(next.Version)).WithTimeout(4 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
			spans = append(spans, time.Since(at).Round(100*time.Millisecond))
		}
		elapsed := time.Since(started)
		c := endLoad()
		after, uidsAfter, err := env.Restarts(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(restarts), "containers restarted")
		Expect(uidsAfter).To(Equal(uids), "pods were replaced")
		rejectedByKey := map[string]uint64{}
		for _, r := range u.Keyrings() {
			for k, n := range r.RejectedByKey {
				rejectedByKey[k] += n
			}
		}
		line := fmt.Sprintf("%d of %d round trips rejected (%.1f%%), %d failed otherwise, in %v; rotation -> every pod on the new key: %v; "+
			"rejections by the key the token names: %v", c.Rejected, c.Completed, 100*float64(c.Rejected)/float64(c.Completed),
			c.Failed, elapsed.Round(time.Second), spans, rejectedByKey)
		GinkgoWriter.Println("ESO source, without the operator: " + line)
		AddReportEntry("ESO source, without the operator (pods follow ESO's Secret): rejected request states", line)
	})
})

// keyIDs are the ids of the keys in the keyring Secret.
func keyIDs(env *harness.Env) []string {
	GinkgoHelper()
	var sec corev1.Secret
	Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Opts.Namespace, Name: env.Opts.Name}, &sec)).To(Succeed())
	r, err := keyring.Parse(sec.Data[keyring.SecretDataKey])
	Expect(err).NotTo(HaveOccurred())
	return r.IDs()
}
