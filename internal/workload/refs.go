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
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretRefIndex is the field index of workloads by the Secrets their pod template references
// (ReferencedSecrets): how the consumers of a keyring Secret are found without listing every
// workload of the namespace.
const SecretRefIndex = "mrtr.dev/referenced-secrets"

// ReferencedSecrets returns the names of the Secrets the pod template of obj references, each once,
// sorted: a secret volume, a secret source of a projected volume, and in any container or init
// container an env valueFrom.secretKeyRef or an envFrom.secretRef. These are the ways a pod reads a
// Secret, so a workload that references the keyring Secret is one of its consumers, whether or not
// a keyring names it (Reloader's auto mode finds references the same way).
// A Pod's own spec is read the same way.
func ReferencedSecrets(obj client.Object) []string {
	var spec *corev1.PodSpec
	if pod, ok := obj.(*corev1.Pod); ok {
		spec = &pod.Spec
	} else if t, err := PodTemplate(obj); err == nil {
		spec = &t.Spec
	} else {
		return nil
	}
	var names []string
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			names = append(names, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					names = append(names, src.Secret.Name)
				}
			}
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		names = append(names, containerSecrets(c)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func containerSecrets(c corev1.Container) []string {
	var names []string
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			names = append(names, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil {
			names = append(names, e.SecretRef.Name)
		}
	}
	return names
}
