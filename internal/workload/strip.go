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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StripWorkload is a cache transform for Deployments, StatefulSets and DaemonSets: it keeps what
// the operator reads of them and drops the rest, so that the memory of watching every workload of
// the cluster follows their number, not their size (a pod template with its containers, probes and
// resources is most of a workload, and the cache held each one whole). It keeps the metadata as
// the cache gives it, the status, the fields a rollout's progress is judged by (replicas, selector,
// strategy, paused), and of the pod template its labels and annotations (the stamps) and the
// Secret references ReferencedSecrets reads (secret volumes, projected Secrets, Secret env vars):
// the containers and volumes that reference no Secret are dropped, and of the rest only those
// references are kept.
//
// The operator never writes a workload from the cache: its stamp is a merge patch of annotations
// (Stamp), so what is stripped here can never be written back.
func StripWorkload(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	a, err := adapterFor(o)
	if err != nil {
		return obj, nil //nolint:nilerr // not a workload: the transform leaves it as it is
	}
	return a.strip(o), nil
}

// stripTemplate keeps a pod template's labels, annotations and Secret references.
func stripTemplate(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}}
	for _, v := range t.Spec.Volumes {
		switch {
		case v.Secret != nil:
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: v.Secret.SecretName}}})
		case v.Projected != nil:
			var sources []corev1.VolumeProjection
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
						LocalObjectReference: src.Secret.LocalObjectReference}})
				}
			}
			if len(sources) > 0 {
				out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name,
					VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
			}
		}
	}
	out.Spec.InitContainers = stripContainers(t.Spec.InitContainers)
	out.Spec.Containers = stripContainers(t.Spec.Containers)
	return out
}

// stripContainers keeps, of the containers that reference a Secret in their environment, their
// names and those references.
func stripContainers(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		kept := corev1.Container{Name: c.Name}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				kept.Env = append(kept.Env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: e.ValueFrom.SecretKeyRef.LocalObjectReference}}})
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				kept.EnvFrom = append(kept.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: e.SecretRef.LocalObjectReference}})
			}
		}
		if len(kept.Env) > 0 || len(kept.EnvFrom) > 0 {
			out = append(out, kept)
		}
	}
	return out
}
