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
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

const (
	// MountPath is where a consumer's container mounts the keyring Secret, as the example
	// server's manifests do.
	MountPath = "/etc/mrtr"
	// VolumeName is a consumer pod's volume of the keyring Secret.
	VolumeName = "keyring"

	containerName  = "mcp"
	containerImage = "example.com/mcp:1"
)

// ConsumerPodSpec is the spec of a pod whose server reads its keyring from the Secret named
// secret, mounted as a volume (the only kind of Secret the kubelet refreshes in a running pod).
func ConsumerPodSpec(secret string) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{Name: containerName, Image: containerImage,
			VolumeMounts: []corev1.VolumeMount{{Name: VolumeName, MountPath: MountPath, ReadOnly: true}}}},
		Volumes: []corev1.Volume{{Name: VolumeName,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
	}
}

// NewPod is a consumer pod of the keyring Secret named secret, with labels, as a workload's
// controller would create it. Nothing schedules or runs it: it is an object the operator lists and
// that Acknowledge writes on.
func NewPod(namespace, name string, labels map[string]string, secret string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       ConsumerPodSpec(secret),
	}
}

// Acknowledge writes on pod that its server loaded the keyring of fingerprint fp from the Secret
// named secret, exactly as pkg/ack's Reporter does: ack.Patch, a merge patch of the Pod itself,
// under ack.FieldManager. pod is updated to the Pod as written.
func Acknowledge(ctx context.Context, c client.Writer, pod *corev1.Pod, secret, fp string) error {
	return c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, ack.Patch(secret, fp)), client.FieldOwner(ack.FieldManager))
}
