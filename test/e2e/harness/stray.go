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

package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Stray is a Deployment of the example server that no keyring manages, serving behind the same
// balancer as the managed replicas: what a copy deployed by hand with a Secret of its own is
// in production. It seals with a key that no keyring holds, so every request state it seals and a
// managed replica gets back, and every one a managed replica seals and it gets back, is refused
// as unknown_key on the side that opens it.
type Stray struct {
	// Namespace is the managed replicas' namespace, where the stray runs beside them.
	Namespace string
	// Name is the stray's Deployment, its Secret, and its pods' app.kubernetes.io/name label.
	Name string
	// KeyID is the id of the stray's one key.
	KeyID string

	env *Env
}

// strayNameLabel is the label the stray's pods carry with its Name in place of the keyring's: the
// managed Deployments select theirs by it, the Service too on the real node.
const strayNameLabel = "app.kubernetes.io/name"

// StartStray creates, in the keyring's namespace, a Secret name holding a keyring of one key
// made now (its id name, which no keyring holds), and a Deployment name of replicas pods made from
// the first server's managed pod template with that Secret mounted and acknowledged in place of
// the keyring's, and app.kubernetes.io/name=name in place of the keyring's name: no keyring's
// workload selects its pods, and no keyring's Secret reaches them. Its pods serve behind the
// balancer as they become Ready (Kubelet on kwok, PodNetwork on the real node follow every pod of
// the namespace), as a pod that a Service's selector still matches would. It returns once the
// objects exist; Serving says when its pods serve. Remove deletes them.
func (e *Env) StartStray(ctx context.Context, name string, replicas int32) (*Stray, error) {
	o := e.Opts
	if name == o.Name || slices.ContainsFunc(e.workloads(), func(w mrtrv1alpha1.WorkloadReference) bool { return w.Name == name }) {
		return nil, fmt.Errorf("stray %q: the name of a managed workload", name)
	}
	key, err := keyring.GenerateKey(name, 32)
	if err != nil {
		return nil, fmt.Errorf("stray %q: %w", name, err)
	}
	r, err := keyring.New(key)
	if err != nil {
		return nil, fmt.Errorf("stray %q: %w", name, err)
	}
	data, err := keyring.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("stray %q: %w", name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name},
		Data:       map[string][]byte{keyring.SecretDataKey: data},
	}
	d := e.deploymentObjects(o.Namespace, e.Real())[0]
	labels := map[string]string{strayNameLabel: name}
	d.Name, d.Labels, d.Spec.Replicas = name, labels, &replicas
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	pod := &d.Spec.Template.Spec
	mounted := false
	for i := range pod.Volumes {
		if s := pod.Volumes[i].Secret; s != nil && s.SecretName == o.Name {
			s.SecretName, mounted = name, true
		}
	}
	if !mounted {
		return nil, fmt.Errorf("stray %q: the managed pod template mounts no Secret %s", name, o.Name)
	}
	// The server acknowledges the Secret it mounts: the stray's own, which no keyring waits for.
	for i := range pod.Containers {
		c := &pod.Containers[i]
		for j, a := range c.Args {
			if strings.HasPrefix(a, "--keyring-secret=") {
				c.Args[j] = "--keyring-secret=" + name
			}
		}
	}
	if err := e.create(ctx, secret, d); err != nil {
		return nil, fmt.Errorf("stray %q: %w", name, err)
	}
	return &Stray{Namespace: o.Namespace, Name: name, KeyID: key.ID(), env: e}, nil
}

// Pods are the names of the stray's pods in the API, terminating ones included, sorted.
func (s *Stray) Pods(ctx context.Context) ([]string, error) {
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels{strayNameLabel: s.Name}); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out, nil
}

// Serving are the stray's pods that serve behind the balancer now, sorted.
func (s *Stray) Serving(ctx context.Context) ([]string, error) {
	pods, err := s.Pods(ctx)
	if err != nil {
		return nil, err
	}
	serving := s.env.serving()
	return slices.DeleteFunc(pods, func(p string) bool { _, ok := serving[p]; return !ok }), nil
}

// Remove deletes the stray's Deployment, its pods with it (in the background, as kubectl delete
// does), then its Secret. Nothing of it missing is an error: it may be called again, as a
// cleanup after a spec that removed it already. Pods says when its pods are gone.
func (s *Stray) Remove(ctx context.Context) error {
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}},
	}
	var errs []error
	for _, obj := range objs {
		err := s.env.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stray %q: delete %T: %w", s.Name, obj, err))
		}
	}
	return errors.Join(errs...)
}
