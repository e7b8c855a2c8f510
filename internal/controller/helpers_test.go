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
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testworld"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Test settings: a TTL wait of tokenTTL + clockSkew + terminationGracePeriod = 1m15s of fake time,
// and an interval long enough that no test reaches it by accident. (Zero durations cannot be set
// from Go: they are omitted, and the API server fills in the default.)
const (
	testTokenTTL    = time.Minute
	testSkew        = 5 * time.Second
	testGrace       = 10 * time.Second
	testTTLWait     = testTokenTTL + testSkew + testGrace
	testInterval    = 24 * time.Hour
	testRolloutWait = 2 * time.Minute
)

// newNamespace creates a namespace of its own for one test (envtest never deletes namespaces, so
// each test gets a fresh one rather than cleaning up).
func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mkr-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// No kube-controller-manager runs in envtest: the tests play the workload controllers with
// internal/testworld, deciding when and how far a rollout gets, and the reconciler, which only
// reads a workload's status, sees what it would see in a cluster.

// newWorkload returns a minimal valid workload of kind with replicas pods (ignored for DaemonSets)
// and the given labels.
func newWorkload(kind workload.Kind, namespace, name string, replicas int32, labels map[string]string) client.Object {
	GinkgoHelper()
	obj, err := testworld.Workload{Kind: kind, Namespace: namespace, Name: name, Replicas: replicas, Labels: labels}.New()
	Expect(err).NotTo(HaveOccurred())
	return obj
}

// createWorkload creates the workload and rolls it out at once, as a healthy cluster would.
func createWorkload(kind workload.Kind, namespace, name string, replicas int32, labels map[string]string) client.Object {
	GinkgoHelper()
	obj := newWorkload(kind, namespace, name, replicas, labels)
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	rollOut(obj, testworld.Complete)
	return obj
}

// rollOutTarget completes w's rollout once w carries kr's status.targetFingerprint. The operator
// stamps a workload after the status write that enters a phase, so a rollout right after that
// write is seen could roll out the template from before the stamp, and prove nothing.
func rollOutTarget(kr *mrtrv1alpha1.MRTRKeyring, w client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		fp, _ := stampOf(g, w)
		g.Expect(fp).To(Equal(getKeyring(g, kr).Status.TargetFingerprint))
	}).Should(Succeed())
	rollOut(w, testworld.Complete)
}

// rollOut plays the workload's controller up to `updated` pods running the current template
// (testworld.Complete: all of them), everything else still on the old template but available.
func rollOut(obj client.Object, updated int32) {
	GinkgoHelper()
	Eventually(func() error { return testworld.RollOut(ctx, k8sClient, obj, updated) }).Should(Succeed())
}

// stallDeployment plays a Deployment whose new pods never become ready, past its progress deadline.
func stallDeployment(kr *mrtrv1alpha1.MRTRKeyring, d *appsv1.Deployment) {
	GinkgoHelper()
	// Only once the template carries the stamp of the keyring's current Secret: a stall written
	// before the operator's stamp would describe the template the stamp replaces, and the stamp's
	// new rollout would then be in progress, not stalled (seen under load).
	Eventually(func(g Gomega) {
		stamp, _ := stampOf(g, d)
		g.Expect(stamp).To(Equal(secretKeyring(g, kr.Namespace, kr.EffectiveSecretName()).Fingerprint()))
		g.Expect(testworld.Stall(ctx, k8sClient, d)).To(Succeed())
	}).Should(Succeed())
}

// stampOf returns the keyring fingerprint on the workload's pod template and its generation, which counts
// the writes to its spec (a second stamp of the same value would not change it; a new value does).
func stampOf(g Gomega, obj client.Object) (string, int64) {
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return workload.Fingerprint(obj), obj.GetGeneration()
}

// newKeyring returns a keyring with the test settings; edit changes its spec before it is created.
// It is in Restart delivery, whose rollouts the tests play (rollOut) (reload_test.go sets
// Reload and plays the pods), and makes its next key at rotation, the three rounds most specs walk
// (staged_test.go sets Staged, the default, and revokes keys).
func newKeyring(namespace, name string, edit func(*mrtrv1alpha1.MRTRKeyringSpec)) *mrtrv1alpha1.MRTRKeyring {
	kr := &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: mrtrv1alpha1.MRTRKeyringSpec{
			Delivery:               mrtrv1alpha1.DeliveryRestart,
			NextKey:                mrtrv1alpha1.NextKeyAtRotation,
			RotationInterval:       metav1.Duration{Duration: testInterval},
			TokenTTL:               metav1.Duration{Duration: testTokenTTL},
			ClockSkew:              metav1.Duration{Duration: testSkew},
			TerminationGracePeriod: metav1.Duration{Duration: testGrace},
			RolloutDeadline:        metav1.Duration{Duration: testRolloutWait},
		},
	}
	if edit != nil {
		edit(&kr.Spec)
	}
	return kr
}

// createKeyring creates the keyring and deletes it when the test ends, so that later advances of
// the shared fake clock cannot wake it.
func createKeyring(namespace, name string, edit func(*mrtrv1alpha1.MRTRKeyringSpec)) *mrtrv1alpha1.MRTRKeyring {
	GinkgoHelper()
	kr := newKeyring(namespace, name, edit)
	Expect(k8sClient.Create(ctx, kr)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, kr))).To(Succeed())
	})
	return kr
}

func targets(objs ...client.Object) []mrtrv1alpha1.WorkloadReference {
	refs := make([]mrtrv1alpha1.WorkloadReference, 0, len(objs))
	for _, o := range objs {
		ref, err := workload.RefOf(o)
		Expect(err).NotTo(HaveOccurred())
		refs = append(refs, mrtrv1alpha1.WorkloadReference{Kind: ref.Kind, Name: ref.Name})
	}
	return refs
}

// getKeyring re-reads kr.
func getKeyring(g Gomega, kr *mrtrv1alpha1.MRTRKeyring) *mrtrv1alpha1.MRTRKeyring {
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(kr), kr)).To(Succeed())
	return kr
}

// pokes makes every poke a new annotation value.
var pokes atomic.Int64

// eventuallyInPhase waits until the keyring's status reaches phase.
func eventuallyInPhase(kr *mrtrv1alpha1.MRTRKeyring, phase mrtrv1alpha1.Phase) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(getKeyring(g, kr).Status.Phase).To(Equal(phase))
	}).Should(Succeed())
}

// poke wakes the reconciler for kr, as the passing of time would in a real cluster: the reconciler
// requeues for the real clock, but reads the fake one, so after advance the test wakes it itself.
func poke(kr *mrtrv1alpha1.MRTRKeyring) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.mrtr.dev/poke":"%d"}}}`, pokes.Add(1))
	Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// reconcileNow wakes kr and waits until the operator logged a pass in its namespace: for tests that
// then assert that nothing changed.
func reconcileNow(kr *mrtrv1alpha1.MRTRKeyring) {
	GinkgoHelper()
	offset := len(logs.String())
	poke(kr)
	reconciledSince(offset, kr.Namespace)
}

// eventuallyInConflict waits until kr is Stalled on a Conflict whose message contains msg.
func eventuallyInConflict(kr *mrtrv1alpha1.MRTRKeyring, msg string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled)
		g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonConflict))
		g.Expect(c.Message).To(ContainSubstring(msg))
	}).Should(Succeed())
}

// advance moves the reconciler's clock and wakes kr.
func advance(kr *mrtrv1alpha1.MRTRKeyring, d time.Duration) {
	GinkgoHelper()
	fakeClock.Step(d)
	poke(kr)
}

// requestRotation sets the manual rotation annotation to value.
func requestRotation(kr *mrtrv1alpha1.MRTRKeyring, value string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RotateAnnotation, value)
	Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// requestRevocation sets the revocation annotation to value (key ids, or "*").
func requestRevocation(kr *mrtrv1alpha1.MRTRKeyring, value string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, mrtrv1alpha1.RevokeAnnotation, value)
	Expect(k8sClient.Patch(ctx, kr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(patch)))).To(Succeed())
}

// leaks remembers every key the tests saw in a Secret, for expectNoKeyBytes.
var leaks = map[string][]byte{}

// secretKeyring reads the keyring Secret and parses it; it also remembers its keys as secrets
// that must never show up anywhere else.
func secretKeyring(g Gomega, namespace, name string) *keyring.Keyring {
	var s corev1.Secret
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)).To(Succeed())
	g.Expect(string(s.Type)).To(Equal(keyring.SecretType))
	kr, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	g.Expect(err).NotTo(HaveOccurred())
	rememberKeys(s.Data[keyring.SecretDataKey])
	return kr
}

// rememberKeys decodes keyring.json by hand (not through pkg/keyring, the code under test) and
// records each key's bytes.
func rememberKeys(data []byte) {
	var doc struct {
		Keys []struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		} `json:"keys"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return
	}
	for _, k := range doc.Keys {
		if b, err := base64.StdEncoding.DecodeString(k.Secret); err == nil {
			leaks[k.ID+"/"+k.Secret] = b
		}
	}
}

// expectNoKeyBytes checks that no key the tests have seen appears, in any common encoding, in the
// status of the keyrings, the events of the namespace, or anything the manager logged.
func expectNoKeyBytes(namespace string) {
	GinkgoHelper()
	Expect(leaks).NotTo(BeEmpty(), "no keys were recorded: the check would prove nothing")
	where := make([]string, 0, 16)
	var krs mrtrv1alpha1.MRTRKeyringList
	Expect(k8sClient.List(ctx, &krs, client.InNamespace(namespace))).To(Succeed())
	for _, kr := range krs.Items {
		st, err := json.Marshal(kr.Status)
		Expect(err).NotTo(HaveOccurred())
		where = append(where, "status of "+kr.Name+": "+string(st))
	}
	var evs eventsv1.EventList
	Expect(k8sClient.List(ctx, &evs, client.InNamespace(namespace))).To(Succeed())
	for _, e := range evs.Items {
		where = append(where, "event "+e.Reason+": "+e.Note)
	}
	var cevs corev1.EventList
	Expect(k8sClient.List(ctx, &cevs, client.InNamespace(namespace))).To(Succeed())
	for _, e := range cevs.Items {
		where = append(where, "event "+e.Reason+": "+e.Message)
	}
	where = append(where, "manager log: "+logs.String())
	Expect(findLeaks(leaks, where)).To(BeEmpty())
}

// findLeaks returns, for each key found in one of texts in a common encoding, where and how.
func findLeaks(keys map[string][]byte, texts []string) []string {
	var found []string
	for id, b := range keys {
		forms := map[string]string{
			"base64":     base64.StdEncoding.EncodeToString(b),
			"base64 raw": base64.RawStdEncoding.EncodeToString(b),
			"base64url":  base64.RawURLEncoding.EncodeToString(b),
			"hex":        hex.EncodeToString(b),
			"HEX":        strings.ToUpper(hex.EncodeToString(b)),
			"go bytes":   strings.Trim(fmt.Sprintf("%d", b), "[]"),
		}
		for form, s := range forms {
			for _, t := range texts {
				if strings.Contains(t, s) {
					found = append(found, fmt.Sprintf("key %s (%s) in %.60s…", strings.SplitN(id, "/", 2)[0], form, t))
				}
			}
		}
	}
	return found
}

var _ = Describe("the key-leak check", func() {
	It("finds a key in any of the encodings it looks for, and nothing in clean text", func() {
		b := []byte("0123456789abcdef0123456789ABCDEF")
		keys := map[string][]byte{"k1/x": b}
		Expect(findLeaks(keys, []string{`status: {"keys":[{"id":"k1"}]}`, "note: created key k1"})).To(BeEmpty())
		for _, leak := range []string{
			"secret=" + base64.StdEncoding.EncodeToString(b),
			"secret=" + base64.RawURLEncoding.EncodeToString(b),
			"secret=" + hex.EncodeToString(b),
			fmt.Sprintf("secret=%v", b),
		} {
			Expect(findLeaks(keys, []string{leak})).NotTo(BeEmpty(), leak)
		}
	})
})

// metricValue returns the value of the series of metric for keyring kr (nil: a metric over all
// keyrings) whose other labels equal extra (a gauge's or counter's value, a histogram's sample
// count), and whether there is one.
func metricValue(g Gomega, metric string, kr *mrtrv1alpha1.MRTRKeyring, extra map[string]string) (float64, bool) {
	mfs, err := metricsRegistry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	want := map[string]string{}
	if kr != nil {
		want = map[string]string{"namespace": kr.Namespace, "name": kr.Name}
	}
	maps.Copy(want, extra)
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// condition returns the keyring's condition of type typ ("" fields if absent).
func condition(kr *mrtrv1alpha1.MRTRKeyring, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(kr.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// keyringEvents returns "Reason: note" of the namespace's events about kr, oldest first.
func keyringEvents(g Gomega, kr *mrtrv1alpha1.MRTRKeyring) []string {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(kr.Namespace))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == kr.Name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// expectInvalid asserts that creating (or updating) obj is refused by the API server, with a
// message containing each of msgs.
func expectInvalid(err error, msgs ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	for _, m := range msgs {
		Expect(err.Error()).To(ContainSubstring(m))
	}
}
