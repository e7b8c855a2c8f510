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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
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
	)

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
		Expect(kr.Spec.RotationInterval.Duration).To(Equal(720 * time.Hour))
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
