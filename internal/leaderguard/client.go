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

package leaderguard

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Holder says until when this replica holds the lease, or why it does not (*Lease is one).
type Holder interface {
	HeldUntil() (time.Time, error)
}

// Client is a client.Client whose every mutating request (create, update, patch, delete, of objects
// and their subresources: status, eviction) is sent only while the replica holds the lease, with a
// deadline at the lease's end: a request that waits past it (a paused process, a slow rate limiter)
// is abandoned rather than sent late. Reads pass through. What a request already sent cannot be
// taken back; the resourceVersion preconditions of the writes themselves are what refuse those.
type Client struct {
	client.Client
	lease Holder
}

// NewClient guards c's writes with lease.
func NewClient(c client.Client, lease Holder) *Client { return &Client{Client: c, lease: lease} }

// guard returns ctx bounded by the lease's end, or an error naming the refused request.
func guard(ctx context.Context, lease Holder, verb string, obj client.Object) (context.Context, context.CancelFunc, error) {
	until, err := lease.HeldUntil()
	if err != nil {
		return nil, nil, fmt.Errorf("not sending %s of %T %s/%s: %w", verb, obj, obj.GetNamespace(), obj.GetName(), err)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	ctx, cancel, err := guard(ctx, c.lease, "a create", obj)
	if err != nil {
		return err
	}
	defer cancel()
	return c.Client.Create(ctx, obj, opts...)
}

func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	ctx, cancel, err := guard(ctx, c.lease, "an update", obj)
	if err != nil {
		return err
	}
	defer cancel()
	return c.Client.Update(ctx, obj, opts...)
}

func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	ctx, cancel, err := guard(ctx, c.lease, "a patch", obj)
	if err != nil {
		return err
	}
	defer cancel()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *Client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	until, err := c.lease.HeldUntil()
	if err != nil {
		return fmt.Errorf("not sending an apply: %w", err)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	ctx, cancel, err := guard(ctx, c.lease, "a delete", obj)
	if err != nil {
		return err
	}
	defer cancel()
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *Client) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	ctx, cancel, err := guard(ctx, c.lease, "a delete of every", obj)
	if err != nil {
		return err
	}
	defer cancel()
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

// Status guards the writes of the status subresource.
func (c *Client) Status() client.SubResourceWriter {
	return &subResourceWriter{SubResourceWriter: c.Client.Status(), lease: c.lease, name: "status"}
}

// SubResource guards the writes of subresource name (eviction is a create of pods/eviction).
func (c *Client) SubResource(name string) client.SubResourceClient {
	inner := c.Client.SubResource(name)
	return &subResourceClient{SubResourceReader: inner, subResourceWriter: subResourceWriter{SubResourceWriter: inner, lease: c.lease, name: name}}
}

type subResourceWriter struct {
	client.SubResourceWriter
	lease Holder
	name  string
}

func (w *subResourceWriter) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	ctx, cancel, err := guard(ctx, w.lease, "a create of "+w.name, obj)
	if err != nil {
		return err
	}
	defer cancel()
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w *subResourceWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	ctx, cancel, err := guard(ctx, w.lease, "an update of "+w.name, obj)
	if err != nil {
		return err
	}
	defer cancel()
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *subResourceWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	ctx, cancel, err := guard(ctx, w.lease, "a patch of "+w.name, obj)
	if err != nil {
		return err
	}
	defer cancel()
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *subResourceWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	until, err := w.lease.HeldUntil()
	if err != nil {
		return fmt.Errorf("not sending an apply of %s: %w", w.name, err)
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}

type subResourceClient struct {
	client.SubResourceReader
	subResourceWriter
}
