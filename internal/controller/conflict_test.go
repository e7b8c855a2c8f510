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
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

var _ = Describe("MRTRKeyring controller under write conflicts", func() {
	It("requeues a pass whose status write conflicts, quietly, with no error", func() {
		ns := newNamespace()
		kr := createKeyring(ns, "conflicted", nil)
		settle(kr, nil)

		// Between this pass's read and its status write, the keyring changes on the API server: the
		// write meets a real 409 Conflict, as when another writer or a stale cache got there first.
		conflicts := 0
		direct, err := client.NewWithWatch(cfg, client.Options{Scheme: k8sClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		c := interceptor.NewClient(direct, interceptor.Funcs{
			Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := cl.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				if k, ok := obj.(*mrtrv1alpha1.MRTRKeyring); ok {
					k.Status = mrtrv1alpha1.MRTRKeyringStatus{} // so that the pass has a status to write
					poke(kr)
				}
				return nil
			},
			// Lists use the field indexes of the manager's cache, which a direct client lacks.
			List: func(ctx context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				return managerClient.List(ctx, list, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				err := cl.SubResource(sub).Update(ctx, obj, opts...)
				if err != nil {
					conflicts++
				}
				return err
			},
		})
		r := &MRTRKeyringReconciler{Shared: &Shared{Client: c, APIReader: k8sClient, Recorder: clientevents.NewFakeRecorder(100), Clock: fakeClock, Metrics: testMetrics}}
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kr)})
		Expect(conflicts).To(Equal(1), "the status write must have met a conflict (reconcile error: %v)", err)
		Expect(err).NotTo(HaveOccurred(), "a conflict is routine, not a reconcile error")
		Expect(res.RequeueAfter).To(Equal(conflictRetry))
	})
})
