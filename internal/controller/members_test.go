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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

var _ = Describe("ClusterMRTRKeyring members", func() {
	// A manager built without a member registry (the suite's operator) cannot reach member
	// clusters: a keyring that lists members must not be rotated in its own cluster behind their
	// back.
	It("leaves a keyring with spec.members alone without a member registry, saying so on Ready, and writes no Secret", func() {
		ns := newNamespace()
		label := map[string]string{"test.mrtr.dev/members": ns}
		nsObj := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: ns}, nsObj)).To(Succeed())
		nsObj.Labels = label
		Expect(k8sClient.Update(ctx, nsObj)).To(Succeed())
		ck := &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: metav1.ObjectMeta{Name: "members-" + ns},
			Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: label},
				Members: []mrtrv1alpha1.Member{{Name: "hub", Local: true}}}}
		Expect(k8sClient.Create(ctx, ck)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ck))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ck), ck)).To(Succeed())
			ready := clusterCondition(ck, mrtrv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal("MembersNotServed"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: ck.EffectiveSecretName()}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the copy: %v", err)
			err = k8sClient.Get(ctx, types.NamespacedName{Namespace: clusterResourceNamespace, Name: mrtrv1alpha1.LeadSecretName(ck.Name)}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the lead Secret: %v", err)
		}).Should(Succeed())
	})
})
