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

package workload

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

func deployment(gen int64, replicas *int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: replicas},
		Status:     st,
	}
}

func statefulSet(gen int64, replicas int32, partition *int32, st appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: gen},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type: appsv1.RollingUpdateStatefulSetStrategyType,
		}},
		Status: st,
	}
	if partition != nil {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}
	}
	return s
}

func daemonSet(st appsv1.DaemonSetStatus) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Generation: 5},
		Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
			Type: appsv1.RollingUpdateDaemonSetStrategyType,
		}},
		Status: st,
	}
}

func TestRolloutStatus(t *testing.T) {
	progressing := func(reason string) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: reason, Message: `ReplicaSet "web-1" has timed out progressing.`}}
	}
	tests := map[string]struct {
		obj     client.Object
		want    Rollout
		message string // a substring of want.Message
	}{
		"deployment whose new generation the controller has not seen yet": {
			obj: deployment(3, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}),
			want:    Rollout{Ready: 3, Desired: 3, Unobserved: true},
			message: "observe generation 3",
		},
		"deployment with some replicas not updated": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3}),
			want:    Rollout{Ready: 1, Desired: 3},
			message: "1 of 3 replicas updated",
		},
		"deployment with old replicas pending termination": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}),
			want:    Rollout{Ready: 3, Desired: 3},
			message: "1 old replicas pending termination",
		},
		"deployment with updated replicas not yet available": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}),
			want:    Rollout{Ready: 2, Desired: 3},
			message: "2 of 3 updated replicas available",
		},
		"deployment whose replaced pods are still terminating": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, TerminatingReplicas: new(int32(1))}),
			want:    Rollout{Ready: 3, Desired: 3},
			message: "1 replaced pods still terminating",
		},
		"deployment past its progress deadline is stuck, not done": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3, Conditions: progressing("ProgressDeadlineExceeded")}),
			want:    Rollout{Stuck: true, Ready: 1, Desired: 3},
			message: `Deployment/web: exceeded its progress deadline: ReplicaSet "web-1" has timed out`,
		},
		"deployment progressing normally is not stuck": {
			obj: deployment(2, new(int32(3)), appsv1.DeploymentStatus{ObservedGeneration: 2,
				Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, Conditions: progressing("NewReplicaSetAvailable")}),
			want:    Rollout{Done: true, Ready: 3, Desired: 3},
			message: "rolled out",
		},
		"paused deployment says so while not done": {
			obj: func() client.Object {
				d := deployment(2, new(int32(2)), appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, AvailableReplicas: 2})
				d.Spec.Paused = true
				return d
			}(),
			want:    Rollout{Ready: 0, Desired: 2},
			message: "(the deployment is paused)",
		},
		"deployment without spec.replicas wants one": {
			obj: deployment(1, nil, appsv1.DeploymentStatus{ObservedGeneration: 1,
				Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}),
			want:    Rollout{Done: true, Ready: 1, Desired: 1},
			message: "Deployment/web: rolled out, 1 of 1",
		},
		"deployment scaled to zero is done once nothing runs": {
			obj:     deployment(4, new(int32(0)), appsv1.DeploymentStatus{ObservedGeneration: 4}),
			want:    Rollout{Done: true, Ready: 0, Desired: 0},
			message: "rolled out",
		},

		"statefulset never observed": {
			obj:     statefulSet(1, 2, nil, appsv1.StatefulSetStatus{}),
			want:    Rollout{Desired: 2, Unobserved: true},
			message: "observe generation 1",
		},
		"statefulset halfway through a rolling update": {
			obj: statefulSet(2, 3, nil, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 1, AvailableReplicas: 3, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			want:    Rollout{Ready: 1, Desired: 3},
			message: "1 of 3 pods updated",
		},
		"statefulset held back by a partition is not done (kubectl would say complete)": {
			obj: statefulSet(2, 3, new(int32(2)), appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			want:    Rollout{Ready: 1, Desired: 3},
			message: "partition 2 holds back",
		},
		"statefulset with OnDelete says pods must be deleted": {
			obj: func() client.Object {
				s := statefulSet(2, 2, nil, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2,
					AvailableReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-2"})
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
				return s
			}(),
			want:    Rollout{Desired: 2},
			message: "OnDelete",
		},
		"statefulset with all pods updated but one unavailable": {
			obj: statefulSet(2, 3, nil, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 3, AvailableReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			want:    Rollout{Ready: 2, Desired: 3},
			message: "2 of 3 pods available",
		},
		"statefulset whose counts are complete but revision not yet current": {
			obj: statefulSet(2, 3, nil, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 3, AvailableReplicas: 3, CurrentRevision: "db-1", UpdateRevision: "db-2"}),
			want:    Rollout{Ready: 3, Desired: 3},
			message: "revision db-2 to become current",
		},
		"statefulset scaling down still has old pods": {
			obj: statefulSet(2, 2, nil, appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 2, AvailableReplicas: 3, CurrentRevision: "db-2", UpdateRevision: "db-2"}),
			want:    Rollout{Ready: 2, Desired: 2},
			message: "1 old pods pending termination",
		},
		"statefulset rolled out": {
			obj: statefulSet(2, 3, new(int32(0)), appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3,
				UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentRevision: "db-2", UpdateRevision: "db-2"}),
			want:    Rollout{Done: true, Ready: 3, Desired: 3},
			message: "StatefulSet/db: rolled out, 3 of 3",
		},

		"daemonset whose new generation is not observed": {
			obj: daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 4, DesiredNumberScheduled: 2,
				UpdatedNumberScheduled: 2, NumberAvailable: 2}),
			want:    Rollout{Ready: 2, Desired: 2, Unobserved: true},
			message: "observe generation 5",
		},
		"daemonset with nodes not updated": {
			obj: daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: 4,
				UpdatedNumberScheduled: 1, NumberAvailable: 4}),
			want:    Rollout{Ready: 1, Desired: 4},
			message: "1 of 4 pods updated",
		},
		"daemonset with OnDelete says pods must be deleted": {
			obj: func() client.Object {
				d := daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: 4, NumberAvailable: 4})
				d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
				return d
			}(),
			want:    Rollout{Desired: 4},
			message: "OnDelete",
		},
		"daemonset with updated pods not yet available": {
			obj: daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: 4,
				UpdatedNumberScheduled: 4, NumberAvailable: 3}),
			want:    Rollout{Ready: 3, Desired: 4},
			message: "3 of 4 pods available",
		},
		"daemonset with a misscheduled pod": {
			obj: daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: 4,
				UpdatedNumberScheduled: 4, NumberAvailable: 4, NumberMisscheduled: 1}),
			want:    Rollout{Ready: 4, Desired: 4},
			message: "1 pods running on nodes that should not",
		},
		"daemonset rolled out": {
			obj: daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: 4,
				CurrentNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 4, NumberReady: 4}),
			want:    Rollout{Done: true, Ready: 4, Desired: 4},
			message: "DaemonSet/agent: rolled out, 4 of 4",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := RolloutStatus(tc.obj)
			if err != nil {
				t.Fatalf("RolloutStatus: %v", err)
			}
			// The cache holds workloads stripped; they must judge the same.
			stripped, _ := StripWorkload(tc.obj)
			if fromCache, err := RolloutStatus(stripped.(client.Object)); err != nil || fromCache != got {
				t.Errorf("stripped for the cache: RolloutStatus = %+v, %v; want %+v", fromCache, err, got)
			}
			if !strings.Contains(got.Message, tc.message) {
				t.Errorf("message %q does not contain %q", got.Message, tc.message)
			}
			got.Message = ""
			got.MaxUnavailable = 0 // TestRolloutStatusResolvesMaxUnavailable
			if got != tc.want {
				t.Errorf("RolloutStatus = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRolloutStatusRejectsOtherKinds(t *testing.T) {
	_, err := RolloutStatus(&appsv1.ReplicaSet{})
	if err == nil || !strings.Contains(err.Error(), "*v1.ReplicaSet is not a supported workload") {
		t.Fatalf("err = %v, want one naming the unsupported type", err)
	}
}

func TestFingerprint(t *testing.T) {
	d := deployment(1, nil, appsv1.DeploymentStatus{})
	if got := Fingerprint(d); got != "" {
		t.Errorf("Fingerprint of an unstamped template = %q, want empty", got)
	}
	d.Spec.Template.Annotations = map[string]string{mrtrv1alpha1.FingerprintAnnotation: "0123456789abcdef", "other": "x"}
	if got := Fingerprint(d); got != "0123456789abcdef" {
		t.Errorf("Fingerprint = %q, want the annotation's value", got)
	}
	// The workload's own annotations are not the template's.
	s := statefulSet(1, 1, nil, appsv1.StatefulSetStatus{})
	s.Annotations = map[string]string{mrtrv1alpha1.FingerprintAnnotation: "fedcba9876543210"}
	if got := Fingerprint(s); got != "" {
		t.Errorf("Fingerprint read the object's annotations: %q", got)
	}
	if got := Fingerprint(&corev1.Pod{}); got != "" {
		t.Errorf("Fingerprint of a Pod = %q, want empty", got)
	}
}

func TestRefCompareOrdersKindsThenNames(t *testing.T) {
	ordered := []Ref{{Deployment, "a"}, {Deployment, "b"}, {StatefulSet, "a"}, {DaemonSet, "0"}}
	for i := range ordered {
		for j := range ordered {
			got := ordered[i].Compare(ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

// A Deployment whose strategy stops every pod before it starts new ones makes each restart an
// outage, which the rotation must say; a rolling update, or no replicas, does not.
func TestRolloutStatusNamesOutageStrategies(t *testing.T) {
	three, zero := int32(3), int32(0)
	done := appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ReadyReplicas: 3}
	for name, tc := range map[string]struct {
		strategy appsv1.DeploymentStrategyType
		replicas *int32
		outage   bool
	}{
		"Recreate":              {appsv1.RecreateDeploymentStrategyType, &three, true},
		"RollingUpdate":         {appsv1.RollingUpdateDeploymentStrategyType, &three, false},
		"Recreate, scaled to 0": {appsv1.RecreateDeploymentStrategyType, &zero, false},
	} {
		d := deployment(1, tc.replicas, done)
		d.Spec.Strategy.Type = tc.strategy
		r, err := RolloutStatus(d)
		if err != nil {
			t.Fatal(err)
		}
		if (r.Outage != "") != tc.outage {
			t.Errorf("%s: Outage %q, want an outage: %v", name, r.Outage, tc.outage)
		}
	}
}

func TestRolloutStatusResolvesMaxUnavailable(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	withDeployment := func(replicas int32, strategy appsv1.DeploymentStrategy) client.Object {
		d := deployment(1, &replicas, appsv1.DeploymentStatus{ObservedGeneration: 1})
		d.Spec.Strategy = strategy
		return d
	}
	rolling := func(v *intstr.IntOrString) appsv1.DeploymentStrategy {
		return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: v}}
	}
	sts := func(replicas int32, v *intstr.IntOrString) client.Object {
		s := statefulSet(1, replicas, nil, appsv1.StatefulSetStatus{ObservedGeneration: 1})
		if v != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: v}
		}
		return s
	}
	ds := func(desired int32, v *intstr.IntOrString) client.Object {
		d := daemonSet(appsv1.DaemonSetStatus{ObservedGeneration: 5, DesiredNumberScheduled: desired})
		if v != nil {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: v}
		}
		return d
	}
	for name, tc := range map[string]struct {
		obj  client.Object
		want int32
	}{
		"a Deployment's default, 25% rounded down": {withDeployment(8, appsv1.DeploymentStrategy{}), 2},
		"25% of 3 is none: the Deployment surges":  {withDeployment(3, rolling(nil)), 0},
		"a Deployment's number":                    {withDeployment(4, rolling(num(3))), 3},
		"a Deployment's percentage":                {withDeployment(10, rolling(pct("50%"))), 5},
		"Recreate: every pod":                      {withDeployment(4, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}), 4},
		"a StatefulSet's default, one":             {sts(5, nil), 1},
		"a StatefulSet's percentage, rounded up":   {sts(5, pct("30%")), 2},
		"a DaemonSet's default, one":               {ds(6, nil), 1},
		"a DaemonSet's percentage, rounded up":     {ds(6, pct("10%")), 1},
		"a number above the pods is every pod":     {ds(2, num(5)), 2},
	} {
		r, err := RolloutStatus(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		if r.MaxUnavailable != tc.want {
			t.Errorf("%s: maxUnavailable %d, want %d", name, r.MaxUnavailable, tc.want)
		}
	}
}
