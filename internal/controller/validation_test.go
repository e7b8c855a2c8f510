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
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// The API server itself refuses invalid keyrings (OpenAPI schema and CEL rules in the CRD), with a
// message that names the field and the rule.
var _ = Describe("MRTRKeyring validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	d := func(s string) metav1.Duration {
		v, err := time.ParseDuration(s)
		Expect(err).NotTo(HaveOccurred())
		return metav1.Duration{Duration: v}
	}

	DescribeTable("refuses an invalid spec on create",
		func(edit func(*mrtrv1alpha1.MRTRKeyringSpec), msgs ...string) {
			expectInvalid(k8sClient.Create(ctx, newKeyring(ns, "bad", edit)), msgs...)
		},
		Entry("a tokenTTL over 15m", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.TokenTTL = d("16m") },
			"spec.tokenTTL", "at most 15m"),
		Entry("a negative tokenTTL", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.TokenTTL = d("-1m") },
			"spec.tokenTTL", "more than 0s"),
		Entry("an interval that cannot fit one rotation's TTL wait", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.TokenTTL, s.ClockSkew, s.TerminationGracePeriod = d("10m"), d("9m"), d("1m"), d("30s")
		}, "spec.rotationInterval", "tokenTTL + clockSkew + terminationGracePeriod"),
		Entry("an interval under a minute", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.TokenTTL, s.TerminationGracePeriod = d("30s"), d("1s"), d("0s")
		}, "spec.rotationInterval must be at least 1m"),
		Entry("a clock skew over 5m", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.ClockSkew = d("6m") },
			"spec.clockSkew"),
		Entry("an unknown workload kind", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: "CronJob", Name: "x"}}
		}, "spec.workloads[0].kind", `Unsupported value: "CronJob"`),
		Entry("a workload named twice", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: "Deployment", Name: "x"}, {Kind: "Deployment", Name: "x"}}
		}, "spec.workloads[1]", "Duplicate value"),
		Entry("keys shorter than 32 bytes", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.KeyBytes = 16 },
			"spec.keyBytes", "greater than or equal to 32"),
		Entry("keys longer than 64 bytes", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.KeyBytes = 65 },
			"spec.keyBytes", "less than or equal to 64"),
		Entry("a secretName that is not a DNS name", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.SecretName = "Not_A_Name" },
			"spec.secretName"),
		Entry("a rollout deadline under 10s", func(s *mrtrv1alpha1.MRTRKeyringSpec) { s.RolloutDeadline = d("1s") },
			"spec.rolloutDeadline must be at least 10s"),
		Entry("a Rollout named in apps/v1", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindRollout, Name: "web"}}
		}, "spec.workloads[0].apiVersion", "apiVersion must be the kind's"),
		Entry("a Deployment named in argoproj.io/v1alpha1", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: mrtrv1alpha1.APIVersionArgoRollouts, Kind: mrtrv1alpha1.KindDeployment, Name: "web"}}
		}, "spec.workloads[0].apiVersion", "apiVersion must be the kind's"),
		Entry("an apiVersion of no workload kind", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: "batch/v1", Kind: mrtrv1alpha1.KindDeployment, Name: "web"}}
		}, "spec.workloads[0].apiVersion", `Unsupported value: "batch/v1"`),
		Entry("a rotation window whose schedule is not 5-field cron", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * *", Duration: d("1h")}, {Schedule: "@daily", Duration: d("1h")}}
		}, "spec.rotationWindows[1].schedule", "must be a 5-field cron schedule"),
		Entry("a rotation window at minute 61", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "61 2 * * *", Duration: d("1h")}}
		}, "spec.rotationWindows[0].schedule", "must be a 5-field cron schedule"),
		Entry("a rotation window with six fields", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 0 2 * * *", Duration: d("1h")}}
		}, "spec.rotationWindows[0].schedule", "must be a 5-field cron schedule"),
		Entry("a rotation window shorter than a minute", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * *", Duration: d("30s")}}
		}, "spec.rotationWindows[0].duration", "must be at least 1m"),
		Entry("a rotation window in a zone that is not an IANA name", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * *", Duration: d("1h"), TimeZone: "Berlin time"}}
		}, "spec.rotationWindows[0].timeZone", "IANA time zone"),
		Entry("a rotationInterval with a secret source", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.KeySource = secretSource("src")
		}, "spec.rotationInterval", "does not apply with spec.keySource.type Secret"),
		Entry("nextKey Staged with a secret source", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource, s.NextKey = metav1.Duration{}, secretSource("src"), mrtrv1alpha1.NextKeyStaged
		}, "spec.nextKey", "does not apply with spec.keySource.type Secret"),
		Entry("rotation windows with a secret source", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource = metav1.Duration{}, secretSource("src")
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * *", Duration: d("1h")}}
		}, "spec.rotationWindows", "does not apply with spec.keySource.type Secret"),
		Entry("a secret source without its Secret", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource = metav1.Duration{}, &mrtrv1alpha1.KeySource{Type: mrtrv1alpha1.KeySourceSecret}
		}, "spec.keySource.secret", "required when spec.keySource.type is Secret"),
		Entry("a source Secret with a generated source", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.KeySource = &mrtrv1alpha1.KeySource{Type: mrtrv1alpha1.KeySourceGenerated, Secret: &mrtrv1alpha1.SecretKeySource{Name: "src"}}
		}, "spec.keySource.secret", "forbidden otherwise"),
		Entry("a source data key that is no data key", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource = metav1.Duration{}, secretSource("src")
			s.KeySource.Secret.Key = "a/b"
		}, "spec.keySource.secret.key"),
	)

	It("accepts a secret source without rotationInterval, and defaults its data key to key", func() {
		kr := newKeyring(ns, "sourced", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource = metav1.Duration{}, secretSource("src")
		})
		Expect(k8sClient.Create(ctx, kr)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, kr))).To(Succeed()) })
		Expect(kr.Spec.KeySource.Secret.Key).To(Equal("key"))
	})

	It("refuses a source that is the keyring Secret itself", func() {
		expectInvalid(k8sClient.Create(ctx, newKeyring(ns, "self", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.RotationInterval, s.KeySource = metav1.Duration{}, secretSource("self")
		})), "spec.keySource.secret.name", "must not be the keyring Secret")
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "self-" + ns},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{NamespaceSelector: &metav1.LabelSelector{}}}
		ck.Spec.KeySource = secretSource(mrtrv1alpha1.LeadSecretName(ck.Name))
		expectInvalid(k8sClient.Create(ctx, ck), "spec.keySource.secret.name", "lead Secret")
	})

	It("refuses rotationInterval with a secret source on a ClusterMRTRKeyring too", func() {
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "sourced-" + ns},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{NamespaceSelector: &metav1.LabelSelector{}}}
		ck.Spec.RotationInterval, ck.Spec.KeySource = d("24h"), secretSource("src")
		expectInvalid(k8sClient.Create(ctx, ck), "spec.rotationInterval", "does not apply with spec.keySource.type Secret")
	})

	It("refuses a member with both or neither of kubeconfigSecret and local, two local members, or a name that is no DNS label", func() {
		withMembers := func(ms ...mrtrv1alpha1.Member) *mrtrv1alpha1.ClusterMRTRKeyring {
			return &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "members-" + ns},
				Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{NamespaceSelector: &metav1.LabelSelector{}, Members: ms}}
		}
		expectInvalid(k8sClient.Create(ctx, withMembers(mrtrv1alpha1.Member{Name: "west", KubeconfigSecret: "west-kubeconfig", Local: true})),
			"spec.members[0]", "exactly one of kubeconfigSecret and local")
		expectInvalid(k8sClient.Create(ctx, withMembers(mrtrv1alpha1.Member{Name: "west"})),
			"spec.members[0]", "exactly one of kubeconfigSecret and local")
		expectInvalid(k8sClient.Create(ctx, withMembers(mrtrv1alpha1.Member{Name: "hub", Local: true}, mrtrv1alpha1.Member{Name: "here", Local: true})),
			"spec.members", "at most one member is local")
		expectInvalid(k8sClient.Create(ctx, withMembers(mrtrv1alpha1.Member{Name: "West_1", KubeconfigSecret: "w"})), "spec.members[0].name")
		// The same list with one local member and one by kubeconfig is valid (a dry run: no
		// controller acts on it).
		Expect(k8sClient.Create(ctx, withMembers(mrtrv1alpha1.Member{Name: "hub", Local: true},
			mrtrv1alpha1.Member{Name: "west", KubeconfigSecret: "west-kubeconfig"}), client.DryRunAll)).To(Succeed())
	})

	It("refuses a changed secretName, including setting one where the name was the default", func() {
		kr := newKeyring(ns, "fixed", nil)
		Expect(k8sClient.Create(ctx, kr)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, kr))).To(Succeed()) })

		// Retried on a conflict: the operator's first status write may land between the create and
		// the update, and the API server checks the resourceVersion before the rule.
		var err error
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
			kr.Spec.SecretName = "other"
			err = k8sClient.Update(ctx, kr)
			g.Expect(apierrors.IsConflict(err)).To(BeFalse())
		}).Should(Succeed())
		expectInvalid(err, "spec.secretName is immutable")

		// The same name, spelled out, is allowed. (Retried: the operator writes status meanwhile.)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
			kr.Spec.SecretName = "fixed"
			g.Expect(k8sClient.Update(ctx, kr)).To(Succeed())
		}).Should(Succeed())
	})

	It("fills in the documented defaults", func() {
		kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"}}
		Expect(k8sClient.Create(ctx, kr)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, kr))).To(Succeed()) })
		// rotationInterval and nextKey have no CRD default, so that a secret source can refuse them
		// when set: the operator applies theirs (rotation.SettingsFrom).
		Expect(kr.Spec.RotationInterval.Duration).To(BeZero())
		Expect(rotation.SettingsFrom(kr.Spec).RotationInterval).To(Equal(720 * time.Hour))
		Expect(rotation.SettingsFrom(kr.Spec).NextKey).To(Equal(mrtrv1alpha1.NextKeyStaged))
		Expect(kr.Spec.TokenTTL.Duration).To(Equal(5 * time.Minute))
		Expect(kr.Spec.ClockSkew.Duration).To(Equal(30 * time.Second))
		Expect(kr.Spec.KeyBytes).To(Equal(int32(32)))
	})

	It("defaults a workload's apiVersion to apps/v1, so that a reference written without one keeps its meaning", func() {
		kr := &mrtrv1alpha1.MRTRKeyring{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy"},
			Spec: mrtrv1alpha1.MRTRKeyringSpec{Workloads: []mrtrv1alpha1.WorkloadReference{{Kind: mrtrv1alpha1.KindDeployment, Name: "web"}}}}
		Expect(k8sClient.Create(ctx, kr)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, kr))).To(Succeed()) })
		Expect(kr.Spec.Workloads[0].APIVersion).To(Equal(mrtrv1alpha1.APIVersionApps))
	})
})

// secretSource is a keySource of type Secret naming the Secret name.
func secretSource(name string) *mrtrv1alpha1.KeySource {
	return &mrtrv1alpha1.KeySource{Type: mrtrv1alpha1.KeySourceSecret, Secret: &mrtrv1alpha1.SecretKeySource{Name: name}}
}

// Every sample that config/samples/kustomization.yaml lists is a valid keyring: the API server
// (schema and CEL rules) takes it, in a dry run, as users apply it. A sample that drifts from the
// API fails here instead of in a user's first kubectl apply.
var _ = Describe("config/samples", func() {
	It("holds only keyrings the API server takes", func() {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		// Cluster keyrings are cluster-scoped: the namespaced client sets the namespace only on the
		// namespaced MRTRKeyrings.
		c := client.NewNamespacedClient(k8sClient, newNamespace())
		objs, err := testenv.ApplyKustomization(ctx, c, filepath.Join(root, "config", "samples"), client.DryRunAll)
		Expect(err).NotTo(HaveOccurred())
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.GetKind()]++
		}
		// The kustomization lists a generated-key keyring, a key-source keyring and a cluster keyring.
		Expect(kinds).To(Equal(map[string]int{"MRTRKeyring": 2, "ClusterMRTRKeyring": 1}))
	})
})
