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
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// Argo Rollouts against the real Rollout CRD (testdata/argo-rollouts, the argo-rollouts module's
// own), with the test playing the Argo Rollouts controller's status through internal/testworld, as
// it plays the Deployment controller's. The suite's manager started before the CRD was installed, as
// on a cluster without Argo Rollouts; the first spec installs it. Ordered: the second spec needs
// the CRD the first one installs.
var _ = Describe("Argo Rollouts", Ordered, func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("goes on while the cluster does not serve Rollouts, and rotates a Rollout once the CRD is installed, without a restart", func() {
		kr := createKeyring(ns, "payments", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: mrtrv1alpha1.APIVersionArgoRollouts, Kind: mrtrv1alpha1.KindRollout, Name: "web"}}
		})
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonKindNotServed))
			g.Expect(c.Message).To(ContainSubstring("Rollout/web: the API server does not serve argoproj.io/v1alpha1 Rollout"))
		}).Should(Succeed())
		// The keyring's Secret was made all the same: the manager goes on.
		Eventually(func(g Gomega) { secretKeyring(g, ns, kr.EffectiveSecretName()) }).Should(Succeed())

		installRolloutCRD()
		ro := createRollout(ns, "web")
		Eventually(func(g Gomega) {
			fp, _ := stampOf(g, ro)
			g.Expect(fp).To(Equal(getKeyring(g, kr).Status.TargetFingerprint))
			g.Expect(fp).NotTo(BeEmpty())
		}).Should(Succeed())
		promoted(ro)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(k.Status.WorkloadsUpToDate).To(Equal(int32(1)))
		}).Should(Succeed())

		requestRotation(kr, "first")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		rollOutRollout(kr, ro)
		sealWhenReplacedPodsStopped(kr)
	})

	It("holds the phase while a canary waits at a pause step, goes on once it is promoted, and stalls on an aborted one, with the reason", func() {
		kr := createKeyring(ns, "payments", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: mrtrv1alpha1.APIVersionArgoRollouts, Kind: mrtrv1alpha1.KindRollout, Name: "web"}}
		})
		ro := createRollout(ns, "web")
		rollOutRollout(kr, ro)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.WorkloadsUpToDate).To(Equal(int32(1)), "%+v", st.Workloads)
		}).Should(Succeed())

		requestRotation(kr, "canary")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		stamped(kr, ro)
		pausedAtStep(ro)
		reconcileNow(kr)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
			g.Expect(k.Status.Workloads).To(HaveLen(1))
			g.Expect(k.Status.Workloads[0].Message).To(ContainSubstring("waiting for promotion (kubectl argo rollouts promote web)"))
			g.Expect(k.Status.Workloads[0].UpToDate).To(BeFalse())
		}).Should(Succeed())
		// The pause holds the phase however long it lasts: only a rollout deadline reports it.
		advance(kr, testRolloutWait/2)
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))

		promoted(ro)
		sealWhenReplacedPodsStopped(kr)

		stamped(kr, ro)
		aborted(ro)
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonWorkloadDegraded))
			g.Expect(c.Message).To(ContainSubstring("Rollout/web: Degraded: RolloutAborted: Rollout aborted update to revision 3"))
		}).Should(Succeed())
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseSealingWithNew))

		// Retried and promoted: the rotation goes on.
		promoted(ro)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseWaitingTTL))
		}).Should(Succeed())
	})

	It("in Reload delivery gates a Rollout's pods by their acknowledgements, and restarts nothing", func() {
		if behind := time.Since(fakeClock.Now()); behind > 0 { // as the Reload specs do
			fakeClock.Step((behind + time.Second).Truncate(time.Second))
		}
		ro := createRollout(ns, "web")
		promoted(ro)
		pods := []*corev1.Pod{createPod(ns, "web-1", map[string]string{"app": "web"}), createPod(ns, "web-2", map[string]string{"app": "web"})}
		kr := createKeyring(ns, "payments", reloading(func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.Workloads = []mrtrv1alpha1.WorkloadReference{{APIVersion: mrtrv1alpha1.APIVersionArgoRollouts, Kind: mrtrv1alpha1.KindRollout, Name: "web"}}
		}))
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		acknowledgeAll(kr, pods...)
		var before map[string]types.UID
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.PodCount).To(BeEquivalentTo(2))
			g.Expect(st.PodsAcknowledged).To(BeEquivalentTo(2))
			before = podUIDs(g, ns)
		}).Should(Succeed())

		requestRotation(kr, "reload")
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		var accepting string
		Eventually(func(g Gomega) { accepting = secretKeyring(g, ns, "payments").Fingerprint() }).Should(Succeed())
		acknowledge(pods[0], "payments", accepting)
		Eventually(func(g Gomega) {
			w := getKeyring(g, kr).Status.Workloads[0]
			g.Expect(w.PodsAcknowledged).To(BeEquivalentTo(1))
			g.Expect(w.Laggards).To(Equal([]string{"web-2"}))
		}).Should(Succeed())
		reconcileNow(kr)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseAccepting))
		acknowledge(pods[1], "payments", accepting)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)

		Expect(podUIDs(Default, ns)).To(Equal(before))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), ro)).To(Succeed())
		Expect(workload.Fingerprint(ro)).To(BeEmpty(), "Reload delivery stamps nothing")
	})
})

// sealWhenReplacedPodsStopped waits until Accepting saw the rollout complete, then lets
// terminationGracePeriod pass (the replaced pods stop), after which the new key seals.
func sealWhenReplacedPodsStopped(kr *mrtrv1alpha1.MRTRKeyring) {
	GinkgoHelper()
	Eventually(func(g Gomega) { g.Expect(getKeyring(g, kr).Status.RolledOutAt).NotTo(BeNil()) }).Should(Succeed())
	advance(kr, testGrace)
	eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
}

// installRolloutCRD installs the Rollout CRD of testdata (argo-rollouts v1.8.3) and waits until the
// API server serves it.
func installRolloutCRD() {
	GinkgoHelper()
	installRolloutCRDIn(cfg, k8sClient.RESTMapper())
}

// installRolloutCRDIn installs the Rollout CRD in the API server of config, and waits until
// mapper maps its kind.
func installRolloutCRDIn(config *rest.Config, mapper meta.RESTMapper) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join("testdata", "argo-rollouts", "rollout-crd.yaml"))
	Expect(err).NotTo(HaveOccurred())
	s := runtime.NewScheme()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	_, _, err = serializer.NewCodecFactory(s).UniversalDeserializer().Decode(raw, nil, crd)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(config, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Create(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		established := false
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		g.Expect(established).To(BeTrue())
		_, err := mapper.RESTMapping(workload.ArgoRolloutGroupVersion.WithKind("Rollout").GroupKind(), "v1alpha1")
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
}

// createRollout creates a canary Rollout of two replicas with one pause step, whose pods mount
// the Secret payments, as its manifests would.
func createRollout(namespace, name string) *workload.ArgoRollout {
	GinkgoHelper()
	two := int32(2)
	sel := map[string]string{"app": name}
	ro := &workload.ArgoRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: mrtrv1alpha1.APIVersionArgoRollouts, Kind: "Rollout"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: workload.ArgoRolloutSpec{
			Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1"}},
				Volumes:    []corev1.Volume{{Name: "keyring", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "payments"}}}},
			}},
			Strategy: workload.ArgoRolloutStrategy{Canary: &workload.ArgoCanaryStrategy{Steps: []runtime.RawExtension{
				{Raw: []byte(`{"setWeight":50}`)}, {Raw: []byte(`{"pause":{}}`)}}}},
		},
	}
	Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	return ro
}

// stamped waits until the Rollout carries kr's target fingerprint.
func stamped(kr *mrtrv1alpha1.MRTRKeyring, ro *workload.ArgoRollout) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		fp, _ := stampOf(g, ro)
		g.Expect(fp).NotTo(BeEmpty())
		g.Expect(fp).To(Equal(getKeyring(g, kr).Status.TargetFingerprint))
	}).Should(Succeed())
}

// rollOutRollout promotes the Rollout once it carries kr's target fingerprint.
func rollOutRollout(kr *mrtrv1alpha1.MRTRKeyring, ro *workload.ArgoRollout) {
	GinkgoHelper()
	stamped(kr, ro)
	promoted(ro)
}

// promoted, pausedAtStep and aborted play the Argo Rollouts controller in those states.
func promoted(ro *workload.ArgoRollout) {
	GinkgoHelper()
	Eventually(func() error { return testworld.Promote(ctx, k8sClient, ro) }).Should(Succeed())
}

func pausedAtStep(ro *workload.ArgoRollout) {
	GinkgoHelper()
	Eventually(func() error { return testworld.PauseAtStep(ctx, k8sClient, ro) }).Should(Succeed())
}

func aborted(ro *workload.ArgoRollout) {
	GinkgoHelper()
	Eventually(func() error { return testworld.Abort(ctx, k8sClient, ro) }).Should(Succeed())
}
