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
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// A template as real servers have them: containers with images, probes, resources and plain env
// beside the Secret references, and volumes of every kind.
func fullTemplate() corev1.PodTemplateSpec {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 5}
	big := corev1.Container{Name: "sidecar", Image: "example.com/sidecar:1.2.3", Args: []string{"--verbose", "--port=9090"},
		Env:            []corev1.EnvVar{{Name: "PLAIN", Value: "x"}},
		LivenessProbe:  probe,
		ReadinessProbe: probe,
		Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		VolumeMounts:   []corev1.VolumeMount{{Name: "cm", MountPath: "/etc/cm"}},
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mcp"},
			Annotations: map[string]string{mrtrv1alpha1.FingerprintAnnotation: "0123456789abcdef", "other": "kept"}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "keyring", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "keyring", Items: []corev1.KeyToPath{{Key: "keyring.json", Path: "k"}}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "not-a-secret"}}},
				}}}},
				{Name: "only-cm", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				}}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			InitContainers: []corev1.Container{{Name: "init", Image: "example.com/init:1",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-envfrom"}}},
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}},
			Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1", LivenessProbe: probe, Env: []corev1.EnvVar{
				{Name: "MRTR_KEYRING", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "keyring.json"}}},
				{Name: "PLAIN", Value: "x"},
			}}, big},
		},
	}
}

// What the operator reads of a workload reads the same from its stripped copy, and the copy is a
// fraction of the size.
func TestStripWorkloadKeepsWhatTheOperatorReads(t *testing.T) {
	replicas := int32(3)
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "api", Generation: 4, ResourceVersion: "42", UID: "u",
		Labels: map[string]string{"app": "mcp"}, Annotations: map[string]string{mrtrv1alpha1.StampedByAnnotation: "kr"}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mcp"}}
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Paused: true,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, Template: fullTemplate()},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}},
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: sel, Template: fullTemplate(),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32(1))}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 2}},
		&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: fullTemplate(),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 4, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1}},
	} {
		out, err := StripWorkload(obj)
		if err != nil {
			t.Fatal(err)
		}
		s := out.(client.Object)
		ref, _ := RefOf(obj)
		if got, want := ReferencedSecrets(s), ReferencedSecrets(obj); !slices.Equal(got, want) || len(want) != 4 {
			t.Errorf("%s: ReferencedSecrets = %v, want %v (4 of them)", ref, got, want)
		}
		if got, want := mustRollout(t, s), mustRollout(t, obj); got != want || got.Message == "" {
			t.Errorf("%s: RolloutStatus = %+v, want %+v", ref, got, want)
		}
		got, _ := PodTemplate(s)
		want, _ := PodTemplate(obj)
		if !equality.Semantic.DeepEqual(got.ObjectMeta, want.ObjectMeta) {
			t.Errorf("%s: template metadata %+v, want %+v", ref, got.ObjectMeta, want.ObjectMeta)
		}
		if !equality.Semantic.DeepEqual(s.(metav1.ObjectMetaAccessor).GetObjectMeta(), obj.(metav1.ObjectMetaAccessor).GetObjectMeta()) {
			t.Errorf("%s: metadata changed", ref)
		}
		sa, errA := Selector(s)
		sb, errB := Selector(obj)
		if errA != nil || errB != nil || sa.String() != sb.String() {
			t.Errorf("%s: selector %v (%v), want %v (%v)", ref, sa, errA, sb, errB)
		}
		// What no read needs is gone: the sidecar (no Secret), the volumes of no Secret, the
		// ConfigMap half of the projected volume, images, probes, resources, plain env.
		var names []string
		for _, c := range slices.Concat(got.Spec.InitContainers, got.Spec.Containers) {
			names = append(names, c.Name)
			if c.Image != "" || c.LivenessProbe != nil || len(c.Env) > 1 || len(c.VolumeMounts) > 0 {
				t.Errorf("%s: container %s keeps more than its Secret references: %+v", ref, c.Name, c)
			}
		}
		if !slices.Equal(names, []string{"init", "mcp"}) {
			t.Errorf("%s: containers %v, want [init mcp]", ref, names)
		}
		names = nil
		for _, v := range got.Spec.Volumes {
			names = append(names, v.Name)
		}
		if !slices.Equal(names, []string{"keyring", "p"}) || len(got.Spec.Volumes[1].Projected.Sources) != 1 {
			t.Errorf("%s: volumes %v (%+v), want [keyring p] with p's Secret only", ref, names, got.Spec.Volumes)
		}
		before, _ := json.Marshal(obj)
		after, _ := json.Marshal(s)
		t.Logf("%s: %d bytes of JSON stripped to %d", ref, len(before), len(after))
	}
	if other, _ := StripWorkload(&corev1.ConfigMap{}); other == nil {
		t.Error("another kind was not passed through")
	}
}

func mustRollout(t *testing.T, obj client.Object) Rollout {
	t.Helper()
	r, err := RolloutStatus(obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
