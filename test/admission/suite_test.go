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

// Package admission proves config/consumer (the ClusterRole mrtr-keyring-consumer and the
// ValidatingAdmissionPolicy mrtr-keyring-acknowledgements) against a real kube-apiserver and etcd
// (envtest): the manifests are read from the repository as they ship, and every request is made
// with a real credential (envtest's admin, or service account tokens from TokenRequests), so RBAC,
// token binding and the policy's CEL are the API server's own.
package admission

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
)

// policyName names both the ValidatingAdmissionPolicy of pods and its binding, bindingsPolicyName
// both the policy of Bindings and its binding.
const (
	policyName         = "mrtr-keyring-acknowledgements"
	bindingsPolicyName = "mrtr-keyring-acknowledgement-bindings"
)

var (
	ctx context.Context
	cfg *rest.Config
	// admin is envtest's own identity (a client certificate in system:masters).
	admin client.Client
)

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission Suite")
}

var _ = BeforeSuite(func() {
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	// No CRDs: the policy's authorizer check names mrtrkeyrings.mrtr.dev, but RBAC matches names,
	// whether or not the resource is served. The ValidatingAdmissionPolicy admission plugin is on by
	// default in kube-apiserver (GA since 1.30), and envtest only disables the ServiceAccount plugin,
	// so the API server needs no extra flags. config/consumer is applied as kustomize would.
	env := testsuite.Start(ctx, testenv.Options{AdmissionPolicies: true})
	cfg, admin = env.Config, env.Client
	kinds := make([]string, len(env.Applied))
	for i, o := range env.Applied {
		kinds[i] = o.GetKind()
	}
	Expect(kinds).To(ConsistOf("ClusterRole", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))

	By("waiting for the policy to be type-checked and enforced")
	waitForPolicy()
})

// waitForPolicy type-checks the policy against the Pod schema the API server serves and waits until
// the binding is enforced.
//
// In a cluster, status.typeChecking is written by kube-controller-manager (its
// validatingadmissionpolicy-status controller), not by the API server, and envtest runs no
// controller-manager: the status stays empty. So the test runs that controller's TypeChecker itself,
// with the schemas from the API server's OpenAPI v3 discovery, and asserts that it finds nothing
// (a warning means an expression that does not fit the Pod schema, such as a misspelt field); and
// checks the checker on a deliberately misspelt copy, so that an empty result means something.
//
// The binding takes effect asynchronously, once the API server's policy informers have caught up:
// the test polls a request that the policy must deny. It is a dry run, so that it leaves nothing
// behind if it is admitted before that.
func waitForPolicy() {
	GinkgoHelper()
	policy, checker := expectTypeChecks(policyName)
	expectTypeChecks(bindingsPolicyName)

	misspelt := policy.DeepCopy()
	misspelt.Spec.Validations[0].Expression = "has(object.metadata.anotations)"
	Expect(checker.Check(misspelt)).To(ContainElement(HaveField("Warning", ContainSubstring("anotations"))),
		"the type checker does not check field names against the Pod schema")

	Eventually(func(g Gomega) {
		probe := newPod("default", "probe", "default")
		probe.Annotations = map[string]string{"loaded.mrtr.dev/probe": "fingerprint"}
		err := admin.Create(ctx, probe, client.DryRunAll)
		expectDeniedIn(g, err, createMessage("default", "probe"))
	}).Should(Succeed(), "the policy binding never took effect")
	Eventually(func(g Gomega) {
		probe := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe",
				Annotations: map[string]string{"loaded.mrtr.dev/probe": "fingerprint"}},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}
		err := admin.Create(ctx, probe, client.DryRunAll)
		expectPolicyDeniedIn(g, err, bindingsPolicyName, bindingMessage("default", "probe"))
	}).Should(Succeed(), "the Bindings policy binding never took effect")
}

// expectTypeChecks type-checks the policy named name against the schemas the API server serves
// (see waitForPolicy) and returns it with the checker.
func expectTypeChecks(name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *validating.TypeChecker) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	Expect(admin.Get(ctx, client.ObjectKey{Name: name}, policy)).To(Succeed())
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	checker := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: discoveryClient},
		RestMapper:     admin.RESTMapper(),
	}
	Expect(checker.Check(policy)).To(BeEmpty(), "the expressions of policy %s do not type-check against the schemas it matches", name)
	return policy, checker
}
