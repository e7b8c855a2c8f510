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

package admission

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The workload namespace, and the two ServiceAccounts in it: consumer runs the MCP servers (pods A
// and B) and is bound to mrtr-keyring-consumer alone; controller runs pod C and is bound to
// mrtr-keyring-consumer too, and also to a Role with update and patch on pods, as a real pod
// controller (or anything that manages pods) would be: that makes it no consumer.
const (
	ns             = "weather"
	consumerSA     = "consumer"
	controllerSA   = "controller"
	consumerRole   = "mrtr-keyring-consumer"
	ackKey         = "loaded.mrtr.dev/s"
	podUIDExtraKey = "authentication.kubernetes.io/pod-uid"
)

// The policy's messages, as the test expects them: each names its rule, so that a denial for
// another reason (RBAC answers 403 too) cannot pass for the policy's.

func ownAckMessage(pod string) string {
	return fmt.Sprintf("only pod %s/%s may change its own keyring acknowledgement (annotations loaded.mrtr.dev/*), "+
		"with a token bound to it", ns, pod)
}

func createMessage(namespace, pod string) string {
	return fmt.Sprintf("pod %s/%s may not be created with a keyring acknowledgement (annotations loaded.mrtr.dev/*): "+
		"only the pod itself may write it", namespace, pod)
}

func statusMessage(pod string) string {
	return fmt.Sprintf("the keyring acknowledgement (annotations loaded.mrtr.dev/*) of pod %s/%s may not change through pods/status: "+
		"only the pod itself may write it, through the pod, with a token bound to it", ns, pod)
}

func bindingMessage(namespace, pod string) string {
	return fmt.Sprintf("the Binding of pod %s/%s may not carry a keyring acknowledgement (annotations loaded.mrtr.dev/*): "+
		"only the pod itself may write it, through the pod, with a token bound to it", namespace, pod)
}

func consumerMessage(sa, detail string) string {
	return fmt.Sprintf("keyring consumer system:serviceaccount:%s:%s may change nothing but the keyring acknowledgement "+
		"(annotations loaded.mrtr.dev/*) of its own pod, with a token bound to it: %s", ns, sa, detail)
}

func notOwnPodMessage(pod string) string {
	return consumerMessage(consumerSA, fmt.Sprintf("pod %s/%s is not the pod its token is bound to", ns, pod))
}

func unchangedMessage(pod string) string {
	return consumerMessage(consumerSA, fmt.Sprintf(
		"the labels, other annotations, finalizers, ownerReferences and spec of pod %s/%s must stay unchanged", ns, pod))
}

var _ = Describe("the keyring acknowledgement policy", Ordered, func() {
	var (
		podA, podB, podC *corev1.Pod
		// asA holds a token bound to pod A; asUnbound a token of the same ServiceAccount bound to
		// nothing; asC a token bound to pod C, of the controller ServiceAccount.
		asA, asUnbound, asC client.Client
	)

	BeforeAll(func() {
		By("creating the namespace, the ServiceAccounts and their bindings")
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		createServiceAccount(ns, consumerSA, clusterRole(consumerRole))
		Expect(admin.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-controller", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"get", "update", "patch"},
			}},
		})).To(Succeed())
		createServiceAccount(ns, controllerSA, clusterRole(consumerRole),
			rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-controller"})

		// The RBAC authorizer reads bindings from informers: wait until it sees them, so that no
		// later answer is an artefact of its lag (and the policy's authorizer checks see them too).
		waitUntilAllowed(consumerSA, "", "pods", "patch")
		waitUntilAllowed(consumerSA, "mrtr.dev", "mrtrkeyrings", "acknowledge")
		waitUntilAllowed(controllerSA, "mrtr.dev", "mrtrkeyrings", "acknowledge")
		waitUntilAllowed(controllerSA, "", "pods", "update")
		Expect(allowed(controllerSA, "", "pods/status", "patch")).To(BeTrue())
		Expect(allowed(consumerSA, "", "pods", "update")).To(BeFalse(), "the consumer role must not grant update on pods")
		Expect(allowed(consumerSA, "", "pods", "get")).To(BeFalse(), "the consumer role must not grant get on pods")

		By("creating pods A and B of the consumer, and C of the controller (envtest schedules and runs nothing)")
		podA, podB, podC = newPod(ns, "a", consumerSA), newPod(ns, "b", consumerSA), newPod(ns, "c", controllerSA)
		for _, pod := range []*corev1.Pod{podA, podB, podC} {
			Expect(admin.Create(ctx, pod)).To(Succeed())
		}

		By("requesting tokens: bound to pod A, bound to nothing, bound to pod C")
		asA = clientWithToken(tokenFor(ns, consumerSA, podA))
		asUnbound = clientWithToken(tokenFor(ns, consumerSA, nil))
		asC = clientWithToken(tokenFor(ns, controllerSA, podC))

		// What the policy relies on: a bound token, and only a bound token, carries its pod's uid.
		Expect(whoAmI(asA).Extra).To(HaveKeyWithValue(podUIDExtraKey, ConsistOf(string(podA.UID))))
		Expect(whoAmI(asUnbound).Extra).NotTo(HaveKey(podUIDExtraKey))
		Expect(whoAmI(asC).Extra).To(HaveKeyWithValue(podUIDExtraKey, ConsistOf(string(podC.UID))))
	})

	AfterAll(func() {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	})

	Context("as pod A, with a token bound to it", func() {
		It("acknowledges on its own pod, and acknowledges again", func() {
			Expect(mergePatch(asA, podA, setAck("fp-1"))).To(Succeed())
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-1"))
			Expect(mergePatch(asA, podA, setAck("fp-2"))).To(Succeed())
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-2"))
		})

		It("may not acknowledge for pod B", func() {
			expectDenied(mergePatch(asA, podB, setAck("fp-2")), ownAckMessage("b"))
			Expect(get(podB).Annotations).NotTo(HaveKey(ackKey))
		})

		It("may not change anything else of pod B", func() {
			expectDenied(mergePatch(asA, podB, `{"metadata":{"labels":{"app":"stolen"}}}`), notOwnPodMessage("b"))
			Expect(get(podB).Labels).NotTo(HaveKey("app"))
		})

		It("may not change anything but the acknowledgement of its own pod", func() {
			for what, patch := range map[string]string{
				"a label":             `{"metadata":{"labels":{"app":"changed"}}}`,
				"another annotation":  `{"metadata":{"annotations":{"example.com/note":"changed"}}}`,
				"a finalizer":         `{"metadata":{"finalizers":["example.com/keep"]}}`,
				"the image":           `{"spec":{"containers":[{"name":"mcp","image":"registry.example/evil:1"}]}}`,
				"the ack and a label": `{"metadata":{"annotations":{"` + ackKey + `":"fp-9"},"labels":{"app":"changed"}}}`,
				"the activeDeadline":  `{"spec":{"activeDeadlineSeconds":5}}`,
				"an added toleration": `{"spec":{"tolerations":[{"key":"example.com/any","operator":"Exists"}]}}`,
				"the pod's ownership": `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n","uid":"u"}]}}`,
			} {
				By("changing " + what)
				expectDenied(mergePatch(asA, podA, patch), unchangedMessage("a"))
			}
			after := get(podA)
			Expect(after.Labels).To(Equal(podA.Labels))
			Expect(after.Annotations).To(Equal(map[string]string{ackKey: "fp-2"}))
			Expect(after.Finalizers).To(BeEmpty())
			Expect(after.OwnerReferences).To(BeEmpty())
			Expect(after.Spec).To(Equal(podA.Spec))
		})

		It("removes its own acknowledgement, and acknowledges again", func() {
			Expect(mergePatch(asA, podA, `{"metadata":{"annotations":{"`+ackKey+`":null}}}`)).To(Succeed())
			Expect(get(podA).Annotations).NotTo(HaveKey(ackKey))
			Expect(mergePatch(asA, podA, setAck("fp-3"))).To(Succeed())
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
		})
	})

	Context("as the same ServiceAccount, with a token bound to no pod", func() {
		It("may not acknowledge for pod A", func() {
			expectDenied(mergePatch(asUnbound, podA, setAck("fp-4")), ownAckMessage("a"))
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
		})

		It("may not change anything else of pod A", func() {
			expectDenied(mergePatch(asUnbound, podA, `{"metadata":{"labels":{"app":"changed"}}}`), notOwnPodMessage("a"))
			Expect(get(podA).Labels).NotTo(HaveKey("app"))
		})
	})

	Context("as the admin, who is no consumer", func() {
		It("may not acknowledge for pod A, nor remove its acknowledgement", func() {
			expectDenied(mergePatch(admin, podA, setAck("fp-5")), ownAckMessage("a"))
			expectDenied(mergePatch(admin, podA, `{"metadata":{"annotations":{"`+ackKey+`":null}}}`), ownAckMessage("a"))
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
		})

		It("may not create a pod that carries an acknowledgement", func() {
			pod := newPod(ns, "copied", consumerSA)
			pod.Annotations = map[string]string{"loaded.mrtr.dev/x": "fp-1"}
			expectDenied(admin.Create(ctx, pod), createMessage(ns, "copied"))
			Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))).To(BeTrue())
		})

		It("changes pod A's labels", func() {
			Expect(mergePatch(admin, podA, `{"metadata":{"labels":{"tier":"gold"}}}`)).To(Succeed())
			Expect(get(podA).Labels).To(HaveKeyWithValue("tier", "gold"))
		})
	})

	Context("through every other door to a Pod's annotations", func() {
		It("refuses an acknowledgement through pods/status, the admin's and the pod's own", func() {
			expectDenied(statusPatch(admin, podA, setAck("fp-7")), statusMessage("a"))
			expectDenied(statusPatch(admin, podA, `{"metadata":{"annotations":{"`+ackKey+`":null}}}`), statusMessage("a"))
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
			// Pod C's token is bound to it, and its ServiceAccount may patch pods/status: only the pods
			// resource itself is the door for an acknowledgement.
			expectDenied(statusPatch(asC, podC, setAck("fp-7")), statusMessage("c"))
			Expect(get(podC).Annotations).NotTo(HaveKeyWithValue(ackKey, "fp-7"))
		})

		It("still admits status writes and other annotations through pods/status", func() {
			Expect(statusPatch(admin, podA, `{"metadata":{"annotations":{"example.com/note":"status"}},"status":{"message":"ok"}}`)).To(Succeed())
			after := get(podA)
			Expect(after.Annotations).To(HaveKeyWithValue("example.com/note", "status"))
			Expect(after.Status.Message).To(Equal("ok"))
		})

		It("refuses an acknowledgement through server-side apply", func() {
			apply := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":%q,"annotations":{%q:"fp-8"}}}`, ns, ackKey)
			target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podA.Name, Namespace: ns}}
			expectDenied(admin.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, []byte(apply)),
				client.FieldOwner("forger"), client.ForceOwnership), ownAckMessage("a"))
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
		})

		It("refuses a Binding that carries an acknowledgement, through pods/binding and bindings", func() {
			pending := newPod(ns, "pending", consumerSA)
			Expect(admin.Create(ctx, pending)).To(Succeed())
			binding := func() *corev1.Binding {
				return &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pending.Name, Annotations: map[string]string{ackKey: "fp-9"}},
					Target:     corev1.ObjectReference{Kind: "Node", Name: "node-1"},
				}
			}
			expectPolicyDenied(admin.SubResource("binding").Create(ctx, pending, binding()), bindingsPolicyName, bindingMessage(ns, "pending"))
			expectPolicyDenied(admin.Create(ctx, binding()), bindingsPolicyName, bindingMessage(ns, "pending"))
			Expect(get(pending).Spec.NodeName).To(BeEmpty())

			By("a Binding without one binds the pod")
			plain := binding()
			plain.Annotations = map[string]string{"example.com/note": "bound"}
			Expect(admin.SubResource("binding").Create(ctx, pending, plain)).To(Succeed())
			after := get(pending)
			Expect(after.Spec.NodeName).To(Equal("node-1"))
			Expect(after.Annotations).To(HaveKeyWithValue("example.com/note", "bound"))
			Expect(after.Annotations).NotTo(HaveKey(ackKey))
		})

		It("keeps no annotation written through pods/ephemeralcontainers or pods/resize", func() {
			for _, sub := range []string{"ephemeralcontainers", "resize"} {
				By("patching pods/" + sub)
				target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podB.Name, Namespace: ns}}
				Expect(admin.SubResource(sub).Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(setAck("fp-10"))))).
					To(Succeed())
				Expect(get(podB).Annotations).NotTo(HaveKey(ackKey))
			}
		})
	})

	Context("as pod C of a ServiceAccount that may update pods, which is no consumer", func() {
		It("changes pod C's labels", func() {
			Expect(mergePatch(asC, podC, `{"metadata":{"labels":{"tier":"gold"}}}`)).To(Succeed())
			Expect(get(podC).Labels).To(HaveKeyWithValue("tier", "gold"))
		})

		It("changes another pod's labels", func() {
			Expect(mergePatch(asC, podA, `{"metadata":{"labels":{"tier":"silver"}}}`)).To(Succeed())
			Expect(get(podA).Labels).To(HaveKeyWithValue("tier", "silver"))
		})

		It("acknowledges on its own pod, but not for another", func() {
			Expect(mergePatch(asC, podC, setAck("fp-1"))).To(Succeed())
			Expect(get(podC).Annotations).To(HaveKeyWithValue(ackKey, "fp-1"))
			expectDenied(mergePatch(asC, podA, setAck("fp-6")), ownAckMessage("a"))
			Expect(get(podA).Annotations).To(HaveKeyWithValue(ackKey, "fp-3"))
		})
	})
})

func newPod(namespace, name, serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			Containers:         []corev1.Container{{Name: "mcp", Image: "registry.example/mcp:1"}},
		},
	}
}

// setAck is the merge patch of ackKey to fingerprint.
func setAck(fingerprint string) string {
	return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ackKey, fingerprint)
}

// mergePatch sends a JSON merge patch of pod as c, as pkg/ack's Reporter does.
func mergePatch(c client.Client, pod *corev1.Pod, patch string) error {
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	return c.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// statusPatch sends a JSON merge patch of pod's status subresource as c.
func statusPatch(c client.Client, pod *corev1.Pod, patch string) error {
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	return c.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// get reads pod as the admin, to see what a request really changed.
func get(pod *corev1.Pod) *corev1.Pod {
	GinkgoHelper()
	got := &corev1.Pod{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
	return got
}

func expectDenied(err error, message string) {
	GinkgoHelper()
	GinkgoWriter.Printf("denied as expected: %v\n", err)
	expectDeniedIn(Default, err, message)
}

func expectPolicyDenied(err error, policy, message string) {
	GinkgoHelper()
	GinkgoWriter.Printf("denied as expected: %v\n", err)
	expectPolicyDeniedIn(Default, err, policy, message)
}

// expectDeniedIn asserts that err is the pods policy's denial with message.
func expectDeniedIn(g Gomega, err error, message string) {
	expectPolicyDeniedIn(g, err, policyName, message)
}

// expectPolicyDeniedIn asserts that err is policy's denial with message: 403 Forbidden (the
// policy's reason), from the policy, naming the rule.
func expectPolicyDeniedIn(g Gomega, err error, policy, message string) {
	g.Expect(err).To(HaveOccurred(), "the request was admitted; expected: %s", message)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "not a 403 Forbidden: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(
		fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", policy, policy)))
	g.Expect(err.Error()).To(ContainSubstring(message))
}

// tokenFor returns a token of the ServiceAccount namespace/sa, bound to pod (as the kubelet mounts
// it) or to nothing (as a legacy or hand-made token would be).
func tokenFor(namespace, sa string, pod *corev1.Pod) string {
	GinkgoHelper()
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		request.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		}
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}
	Expect(admin.SubResource("token").Create(ctx, account, request)).To(Succeed())
	Expect(request.Status.Token).NotTo(BeEmpty())
	return request.Status.Token
}

// createServiceAccount creates the ServiceAccount namespace/name and binds it, in its namespace, to
// each role, as a consumer's manifests do.
func createServiceAccount(namespace, name string, roles ...rbacv1.RoleRef) {
	GinkgoHelper()
	Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}})).To(Succeed())
	for _, role := range roles {
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role.Name, Namespace: namespace},
			RoleRef:    role,
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		})).To(Succeed())
	}
}

func clusterRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

// clientWithToken is a client that authenticates with token alone: envtest's CA, no client
// certificate.
func clientWithToken(token string) client.Client {
	GinkgoHelper()
	config := &rest.Config{
		Host:            cfg.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
	}
	c, err := client.New(config, client.Options{Scheme: admin.Scheme(), Mapper: admin.RESTMapper()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// whoAmI is what the API server authenticates c as.
func whoAmI(c client.Client) authenticationv1.UserInfo {
	GinkgoHelper()
	review := &authenticationv1.SelfSubjectReview{}
	Expect(c.Create(ctx, review)).To(Succeed())
	return review.Status.UserInfo
}

func allowed(sa, group, resource, verb string) bool {
	GinkgoHelper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Group: group, Resource: resource, Verb: verb,
		},
	}}
	Expect(admin.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}

func waitUntilAllowed(sa, group, resource, verb string) {
	GinkgoHelper()
	Eventually(func() bool { return allowed(sa, group, resource, verb) }).
		Should(BeTrue(), "RBAC never allowed %s to %s %s.%s", sa, verb, resource, group)
}
