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
	"crypto/rand"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// TestPlayerKeepsUp: on a real API server, the Player rolls out each new template of a workload
// and has every consumer pod, the ones there before the keyring and the ones started after it,
// acknowledge each keyring its Secret holds, written as pkg/ack writes it, so that the operator's
// reading of who wrote an acknowledgement names the reporter.
func TestPlayerKeepsUp(t *testing.T) {
	env := testsuite.ForTest(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := env.Client
	ca, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu                      sync.Mutex
		rolledOut, acknowledged []string
	)
	record := func(to *[]string) func(types.NamespacedName, string, time.Time) {
		return func(_ types.NamespacedName, fp string, _ time.Time) { mu.Lock(); *to = append(*to, fp); mu.Unlock() }
	}
	p := &Player{Client: c, Cache: ca, Acknowledge: true, OnRolledOut: record(&rolledOut), OnAcknowledged: record(&acknowledged)}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	const ns = "default"
	d, err := Workload{Kind: workload.Deployment, Namespace: ns, Name: "web", Replicas: 2, Secret: "payments"}.New()
	must(t, err)
	must(t, c.Create(ctx, d))
	before := NewPod(ns, "web-0", map[string]string{"app": "web"}, "payments")
	must(t, c.Create(ctx, before))
	rolled := func(fp string) {
		t.Helper()
		eventually(t, "the rollout of "+fp, func() bool {
			must(t, c.Get(ctx, client.ObjectKeyFromObject(d), d))
			r, err := workload.RolloutStatus(d)
			must(t, err)
			return r.Done && workload.Fingerprint(d) == fp
		})
	}
	rolled("")

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"}, Type: keyring.SecretType,
		Data: map[string][]byte{keyring.SecretDataKey: keyringJSON(t, "k1")}}
	must(t, c.Create(ctx, secret))
	fp1 := fingerprintOf(t, secret)
	acknowledgedBy := func(pod *corev1.Pod, fp string) {
		t.Helper()
		eventually(t, pod.Name+" acknowledging "+fp, func() bool {
			must(t, c.Get(ctx, client.ObjectKeyFromObject(pod), pod))
			key := ack.AnnotationKey("payments")
			w, ok := workload.AcknowledgementWriter(pod, key)
			return pod.Annotations[key] == fp && ok && w.Manager == ack.FieldManager && w.Subresource == ""
		})
	}
	acknowledgedBy(before, fp1)
	after := NewPod(ns, "web-1", map[string]string{"app": "web"}, "payments")
	must(t, c.Create(ctx, after))
	acknowledgedBy(after, fp1)

	secret.Data[keyring.SecretDataKey] = keyringJSON(t, "k2")
	must(t, c.Update(ctx, secret))
	fp2 := fingerprintOf(t, secret)
	acknowledgedBy(before, fp2)
	acknowledgedBy(after, fp2)

	// A new template, as the operator's stamp makes one.
	must(t, c.Get(ctx, client.ObjectKeyFromObject(d), d))
	d.(*appsv1.Deployment).Spec.Template.Annotations = map[string]string{mrtrv1alpha1.FingerprintAnnotation: fp2}
	must(t, c.Update(ctx, d))
	rolled(fp2)

	// The Player calls its hooks after its writes land, so the test sees a write a moment before
	// the hook that reports it: wait for the hooks, rather than read them once.
	endsWith := func(seen *[]string, fp string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(*seen) > 0 && (*seen)[len(*seen)-1] == fp
		}
	}
	eventually(t, "OnRolledOut reporting "+fp2, endsWith(&rolledOut, fp2))
	eventually(t, "OnAcknowledged reporting "+fp2, endsWith(&acknowledged, fp2))
}

func keyringJSON(t *testing.T, id string) []byte {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	kr, err := keyring.New(keyring.NewKey(id, b))
	must(t, err)
	data, err := keyring.Marshal(kr)
	must(t, err)
	return data
}

func fingerprintOf(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	kr, err := keyring.Parse(s.Data[keyring.SecretDataKey])
	must(t, err)
	return kr.Fingerprint()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), testenv.PollingInterval, testenv.Timeout, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
