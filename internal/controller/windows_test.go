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
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// Rotation windows against the real API server and the reconciler on the fake clock: a rotation
// that falls due outside the window waits for its opening, starts there, and finishes after the
// window closed; and what the API's checks let through but the parser refuses stalls, naming the
// field.
var _ = Describe("Rotation windows", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("starts a rotation due outside every window at the next opening, and finishes it after the window closes", func() {
		const propagation = 30 * time.Second
		// A daily window an hour, in time of day, after the keyring is made: the rotation falls
		// due one testInterval (24h) after its key was made, an hour before the window opens.
		opening := fakeClock.Now().Add(testInterval + time.Hour).Truncate(time.Minute)
		if opening.Before(fakeClock.Now().Add(testInterval)) {
			opening = opening.Add(time.Minute)
		}
		schedule := fmt.Sprintf("%d %d * * *", opening.Minute(), opening.Hour())
		kr := createKeyring(ns, "windowed", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.PropagationDelay = metav1.Duration{Duration: propagation}
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: 30 * time.Minute}}}
		})
		settle(kr, nil)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.NextRotationTime).NotTo(BeNil())
			g.Expect(st.NextRotationTime.Time).To(BeTemporally("==", opening))
			g.Expect(st.NextWindow).NotTo(BeNil())
			g.Expect(st.NextWindow.OpensAt.Time).To(BeTemporally("==", opening))
			g.Expect(st.NextWindow.ClosesAt.Time).To(BeTemporally("==", opening.Add(30*time.Minute)))
			c := condition(kr, mrtrv1alpha1.ConditionRotationWindows)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
			g.Expect(kr.Spec.RotationWindows[0].TimeZone).To(Equal("UTC"), "the API defaults the zone")
		}).Should(Succeed())

		// Due, outside the window: nothing starts.
		offset := len(logs.String())
		advance(kr, opening.Sub(fakeClock.Now())-time.Minute)
		reconciledSince(offset, ns)
		Expect(getKeyring(Default, kr).Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))

		// The window opens: the rotation starts, and goes on once the window has closed.
		advance(kr, time.Minute)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseAccepting)
		advance(kr, propagation)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseSealingWithNew)
		advance(kr, 31*time.Minute)
		Expect(fakeClock.Now().After(opening.Add(30 * time.Minute))).To(BeTrue())
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseWaitingTTL)
		advance(kr, testTTLWait)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseRemoving)
		advance(kr, propagation)
		eventuallyInPhase(kr, mrtrv1alpha1.PhaseStable)
		Eventually(func(g Gomega) {
			st := getKeyring(g, kr).Status
			g.Expect(st.RotationsCompleted).To(Equal(int64(1)))
			// The next one falls due a day after this one completed: 33m after the next day's
			// opening, once that window has closed, so it starts when the one after opens.
			due := st.LastRotationTime.Add(testInterval)
			g.Expect(due.After(opening.Add(testInterval + 30*time.Minute))).To(BeTrue())
			g.Expect(st.NextRotationTime.Time).To(BeTemporally("==", opening.Add(2*testInterval)))
			g.Expect(st.NextWindow.OpensAt.Time).To(BeTemporally("==", opening.Add(2*testInterval)))
		}).Should(Succeed())
	})

	It("stalls a due rotation that a staged key holds back from the time it first fell due, between short windows too, and says it missed its window", func() {
		web := createWorkload(workload.Deployment, ns, "web", 2, nil)
		// A daily window of 5 minutes, an hour (in time of day) after the keyring is made: the
		// rotation falls due a day later, and first in a window at that opening.
		opening := fakeClock.Now().Add(testInterval + time.Hour).Truncate(time.Minute)
		if opening.Before(fakeClock.Now().Add(testInterval)) {
			opening = opening.Add(time.Minute)
		}
		kr := createKeyring(ns, "short-window", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			staged(web)(s)
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: fmt.Sprintf("%d %d * * *", opening.Minute(), opening.Hour()),
				Duration: metav1.Duration{Duration: 5 * time.Minute}}}
		})
		settle(kr, []client.Object{web})
		// The target stops rolling out: the staged key may not seal, so the rotation cannot start.
		stallDeployment(kr, web.(*appsv1.Deployment))
		firstDue := opening.UTC().Format(time.RFC3339)

		By("inside the window it fell due in, within rolloutDeadline: held back, not stalled")
		advance(kr, opening.Add(time.Minute).Sub(fakeClock.Now()))
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(k.Status.WaitingFor).NotTo(BeNil())
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(condition(k, mrtrv1alpha1.ConditionRotationWindows).Reason).To(Equal(mrtrv1alpha1.ReasonWindowsOpen))
		}).Should(Succeed())

		By("the window closed: it missed it, and is Stalled from rolloutDeadline after its first due time")
		advance(kr, opening.Add(6*time.Minute).Sub(fakeClock.Now()))
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(k.Status.NextRotationTime.Time).To(BeTemporally("==", opening.Add(testInterval)))
			w := condition(k, mrtrv1alpha1.ConditionRotationWindows)
			g.Expect(w.Status).To(Equal(metav1.ConditionTrue), w.Message)
			g.Expect(w.Reason).To(Equal(mrtrv1alpha1.ReasonRotationWindowMissed))
			g.Expect(w.Message).To(ContainSubstring("from %s to %s", firstDue, opening.Add(5*time.Minute).UTC().Format(time.RFC3339)))
			g.Expect(w.Message).To(ContainSubstring("from %s to", opening.Add(testInterval).UTC().Format(time.RFC3339)))
			st := condition(k, mrtrv1alpha1.ConditionStalled)
			g.Expect(st.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(st.Reason).To(Equal(mrtrv1alpha1.ReasonRolloutDeadlineExceeded))
			g.Expect(st.Message).To(ContainSubstring("the rotation due at " + firstDue))
		}).Should(Succeed())

		By("half a day later, between windows, it is still Stalled and not Ready")
		advance(kr, 12*time.Hour)
		Eventually(func(g Gomega) {
			k := getKeyring(g, kr)
			g.Expect(k.Status.Phase).To(Equal(mrtrv1alpha1.PhaseStable))
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(k, mrtrv1alpha1.ConditionStalled).Message).To(ContainSubstring("the rotation due at " + firstDue))
			g.Expect(condition(k, mrtrv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			stalled, _ := metricValue(g, "mrtr_keyring_stalled", kr, nil)
			g.Expect(stalled).To(Equal(1.0))
		}).Should(Succeed())
	})

	It("stalls scheduled rotations on a schedule the API lets through but the parser refuses, naming the field, and a request still rotates", func() {
		kr := createKeyring(ns, "backwards", func(s *mrtrv1alpha1.MRTRKeyringSpec) {
			s.PropagationDelay = metav1.Duration{Duration: 0}
			s.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: time.Hour}},
				{Schedule: "30 5-1 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
		})
		Eventually(func(g Gomega) {
			c := condition(getKeyring(g, kr), mrtrv1alpha1.ConditionStalled)
			g.Expect(c.Reason).To(Equal(mrtrv1alpha1.ReasonRotationWindowInvalid))
			g.Expect(c.Message).To(HavePrefix(`spec.rotationWindows[1].schedule: "30 5-1 * * *" does not parse`))
		}).Should(Succeed())
		requestRotation(kr, "now")
		Eventually(func(g Gomega) {
			g.Expect(getKeyring(g, kr).Status.LastHandledRotateRequest).To(Equal("now"))
		}).Should(Succeed())
	})
})
