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

package testworld

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// TestOperatorReadsThePlayedRollouts: what the world writes for a workload's controller is what
// the operator's reading of a rollout (workload.RolloutStatus) takes for a completed, an
// unfinished and a stuck one, for every kind it plays. Were they to drift apart, the envtest
// suites would test a rollout no cluster shows.
func TestOperatorReadsThePlayedRollouts(t *testing.T) {
	for _, kind := range []workload.Kind{workload.Deployment, workload.StatefulSet, workload.DaemonSet} {
		t.Run(string(kind), func(t *testing.T) {
			obj, err := Workload{Kind: kind, Namespace: "ns", Name: "web", Replicas: 3, Secret: "payments"}.New()
			if err != nil {
				t.Fatal(err)
			}
			obj.SetGeneration(2)
			for _, c := range []struct {
				updated int32
				done    bool
			}{{Complete, true}, {0, false}, {1, false}, {Complete, true}} {
				if err := setRolledOut(obj, c.updated); err != nil {
					t.Fatal(err)
				}
				r, err := workload.RolloutStatus(obj)
				if err != nil {
					t.Fatal(err)
				}
				if r.Done != c.done || r.Stuck || r.Unobserved {
					t.Errorf("rolled out to %d pods: read as %+v, want done=%v", c.updated, r, c.done)
				}
			}
		})
	}
	t.Run("a stalled Deployment", func(t *testing.T) {
		obj, err := Workload{Kind: workload.Deployment, Namespace: "ns", Name: "web", Replicas: 2}.New()
		if err != nil {
			t.Fatal(err)
		}
		setStalled(obj.(*appsv1.Deployment), metav1.Now())
		if r, err := workload.RolloutStatus(obj); err != nil || r.Done || !r.Stuck {
			t.Errorf("read as %+v, %v; want stuck", r, err)
		}
	})
}

// TestConsumerPodsMountTheKeyring: the pods the world builds are the operator's consumers of the
// Secret (it nudges and gates only those that mount it).
func TestConsumerPodsMountTheKeyring(t *testing.T) {
	pod := NewPod("ns", "web-0", map[string]string{"app": "web"}, "payments")
	if got := workload.MountedSecrets(pod); len(got) != 1 || got[0] != "payments" {
		t.Errorf("MountedSecrets = %v, want [payments]", got)
	}
	obj, err := Workload{Kind: workload.Deployment, Namespace: "ns", Name: "web", Replicas: 1}.New()
	if err != nil {
		t.Fatal(err)
	}
	if got := workload.ReferencedSecrets(obj); len(got) != 0 {
		t.Errorf("a workload without Secret references %v", got)
	}
}
