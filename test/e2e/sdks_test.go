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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// Servers on the other SDKs, on the real node: a Python Deployment (the official Python SDK with
// clients/python), a TypeScript one (the official TypeScript SDK with clients/typescript) and a
// Rust one (rmcp with clients/rust), each with its own MRTRKeyring in Reload delivery, and a Go
// and a TypeScript, and a Go and a Rust, Deployment that share one keyring and one Service, each
// replica opening the other SDK's request state (Snodo's mrtr2, rmcp's rs2). Every one rotates
// twice under live MRTR traffic, from the Go SDK's client and from each other SDK's own: nothing
// rejected, no container restarts, no pod replaced (so none evicted), and every pod acknowledges
// every keyring.
var _ = Describe("servers on the Python, TypeScript and Rust SDKs, on a real node", func() {
	ctx := context.Background()
	BeforeEach(requireRealNode)

	for _, tc := range []struct {
		name    string
		servers []harness.ServerKind
	}{
		{"a Python Deployment with its own keyring", []harness.ServerKind{harness.ServerPython}},
		{"a TypeScript Deployment with its own keyring", []harness.ServerKind{harness.ServerTypeScript}},
		{"a Go and a TypeScript Deployment sharing one keyring and one Service",
			[]harness.ServerKind{harness.ServerGo, harness.ServerTypeScript}},
		{"a Rust Deployment with its own keyring", []harness.ServerKind{harness.ServerRust}},
		{"a Go and a Rust Deployment sharing one keyring and one Service",
			[]harness.ServerKind{harness.ServerGo, harness.ServerRust}},
	} {
		It("rotates "+tc.name+" twice in Reload delivery under live traffic: nothing rejected, no restart, no eviction", func() {
			var load *harness.Load
			env := startStack(ctx, harness.Options{Node: localcluster.NodeReal, Servers: tc.servers, Replicas: 2})
			DeferCleanup(func() { dumpOnFailure(env, load) })

			restarts, uids, err := env.Restarts(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(uids).To(HaveLen(int(env.Opts.TotalReplicas())))
			rotationAt := len(env.Timeline.Events())
			opensBefore, err := env.ReplicaOpenCounts()
			Expect(err).NotTo(HaveOccurred())
			Expect(opensBefore).To(HaveLen(int(env.Opts.TotalReplicas())))
			// Traffic from the Go SDK's client, and from each other SDK's own client.
			load = &harness.Load{URL: env.MCPURL, Workers: 3}
			stopLoad := load.Start(ctx)
			DeferCleanup(stopLoad)
			var clients []*harness.ClientLoad
			for _, kind := range tc.servers {
				if kind != harness.ServerGo {
					cl, err := env.StartClientLoad(ctx, kind, env.MCPURL, 2)
					Expect(err).NotTo(HaveOccurred())
					clients = append(clients, cl)
				}
			}
			for i := int64(1); i <= 2; i++ {
				Expect(env.RequestRotation(ctx, fmt.Sprintf("sdk-%d", i))).To(Succeed())
				Eventually(rotationsCompleted(env)).WithTimeout(2 * time.Minute).Should(BeNumerically("==", i))
				// Settled: every replica serves the keyring and its pod acknowledged it.
				Expect(env.WaitSettled(ctx, time.Minute)).To(Succeed())
			}
			stopLoad()
			var clientRejected uint64
			for _, cl := range clients {
				c, errs, err := cl.Stop()
				Expect(err).NotTo(HaveOccurred())
				GinkgoWriter.Printf("%v, the %s SDK's client: %s\n", tc.servers, cl.Kind, c)
				Expect(c.Completed).To(BeNumerically(">=", 20), "too few round trips from the %s client to mean anything", cl.Kind)
				clientRejected += c.Rejected
				Expect(c.Rejected).To(BeZero(), "rejected request states (the %s client): %v", cl.Kind, errs)
				Expect(c.Failed).To(BeZero(), "failed round trips (the %s client): %v", cl.Kind, errs)
			}
			c := load.Counts()
			GinkgoWriter.Printf("%v: %s\n", tc.servers, c)
			Expect(c.Completed).To(BeNumerically(">=", 100), "too few round trips to mean anything")
			Expect(c.Rejected).To(BeZero(), "rejected request states: %s", load.Errors())
			Expect(c.Failed).To(BeZero(), "failed round trips: %s", load.Errors())
			Expect(c.CrossReplica).To(BeNumerically(">", 0))
			for _, r := range env.ReplicaKeyrings() {
				Expect(r.Rejected).To(BeZero(), "replica %s rejected request states", r.Replica)
			}
			// The servers' own counters, scraped from each pod's GET /metrics: what every
			// consumer says it refused is what the clients saw refused (none), pod by pod.
			opensAfter, err := env.ReplicaOpenCounts()
			Expect(err).NotTo(HaveOccurred())
			Expect(opensAfter).To(HaveLen(len(opensBefore)))
			var serverRejected, serverOK uint64
			for pod, after := range opensAfter {
				Expect(opensBefore).To(HaveKey(pod))
				d := after.Sub(opensBefore[pod])
				GinkgoWriter.Printf("%v: %s's %s: %v\n", tc.servers, pod, metrics.TokensOpenedTotal, d)
				Expect(d.Rejected()).To(BeZero(), "pod %s counted rejections: %v", pod, d)
				serverRejected += d.Rejected()
				serverOK += d[metrics.OK]
			}
			Expect(serverRejected).To(Equal(c.Rejected+clientRejected), "the servers' counters and the clients disagree")
			Expect(serverOK).To(BeNumerically(">=", c.Completed), "the servers counted fewer opens than the round trips that opened a token")

			after, uidsAfter, err := env.Restarts(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(after).To(Equal(restarts), "containers restarted")
			Expect(uidsAfter).To(Equal(uids), "pods were replaced (evicted)")
			rotations := harness.Rotations(env.Timeline.Events()[rotationAt:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
			Expect(rotations).To(HaveLen(2))
			for i, r := range rotations {
				GinkgoWriter.Printf("%v rotation %d: %s\n", tc.servers, i+1, r)
				// Each Secret write of a phase waited for every pod's acknowledgement (Reload).
				Expect(r.AckWaits).NotTo(BeEmpty(), "rotation %d waited for no acknowledgement", i+1)
				Expect(r.PodsAdded).To(BeZero())
			}
		})
	}
})
