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

package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// action is a command that changes one keyring (an MRTRKeyring or a ClusterMRTRKeyring) declaratively, with one JSON merge patch, as the API
// defines: rotate, suspend, resume. The operator does the rest; the command says what it asked for
// and how to follow it. A command with arguments after NAME (revoke NAME KEYID) sets args.
type action struct {
	use, short, long, example string
	// args checks the arguments after NAME; none when nil.
	args cobra.PositionalArgs
	// patch is the merge patch for the keyring, given the arguments after NAME and the time now.
	patch func(args []string, now time.Time) (map[string]any, error)
	// patchFrom, instead of patch, makes the merge patch from the keyring as read: the patch is
	// then conditional on the resourceVersion read, and made again from a fresh read when another
	// write came in between (a change that must not lose one made concurrently).
	patchFrom func(kr *mrtrv1alpha1.MRTRKeyring, args []string, now time.Time) (map[string]any, error)
	// report writes what was done to the patched keyring, as the API server returned it (a
	// ClusterMRTRKeyring as keyringOf reads it: refOf names it).
	report func(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring, args []string)
}

// actionCommand builds the cobra command of a: NAME (or TYPE/NAME, see keyringRef), then a's own
// arguments. It patches an MRTRKeyring and a ClusterMRTRKeyring alike: the annotations and the
// spec fields it writes are the same on both.
func (e *env) actionCommand(a action) *cobra.Command {
	return &cobra.Command{
		Use:     a.use,
		Short:   a.short,
		Long:    a.long,
		Example: a.example,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("name the MRTRKeyring (NAME) or the ClusterMRTRKeyring (cmkr/NAME): %s", cmd.UseLine())
			}
			if listsClusterKeyrings(args[0]) {
				return fmt.Errorf("name the ClusterMRTRKeyring: %s/NAME", args[0])
			}
			if a.args == nil {
				return cobra.ExactArgs(1)(cmd, args)
			}
			return a.args(cmd, args[1:])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := e.namespace()
			if err != nil {
				return err
			}
			ref, err := parseRef(args[0], ns)
			if err != nil {
				return err
			}
			now := e.now()
			var kr *mrtrv1alpha1.MRTRKeyring
			if a.patchFrom != nil {
				kr, err = e.patchKeyringFrom(cmd, ref, func(kr *mrtrv1alpha1.MRTRKeyring) (map[string]any, error) {
					return a.patchFrom(kr, args[1:], now)
				})
			} else {
				var patch map[string]any
				if patch, err = a.patch(args[1:], now); err == nil {
					kr, err = e.patchKeyring(cmd, ref, patch)
				}
			}
			if err != nil {
				return err
			}
			w := &textWriter{out: e.streams.Out, now: now}
			a.report(w, kr, args[1:])
			return w.err
		},
	}
}

// patchKeyring applies a JSON merge patch to the keyring of ref and returns it as the API server
// stored it (keyringOf).
func (e *env) patchKeyring(cmd *cobra.Command, ref keyringRef, patch map[string]any) (*mrtrv1alpha1.MRTRKeyring, error) {
	c, err := e.kube()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode the patch: %w", err)
	}
	obj := ref.object()
	if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ref.notFound()
		}
		return nil, fmt.Errorf("patch %s: %w", ref, err)
	}
	kr, _ := keyringOf(obj)
	return kr, nil
}

// patchKeyringFrom reads the keyring of ref, makes a merge patch from it and applies it on the
// condition that the keyring is still as read (its resourceVersion); on a conflict it reads again
// and makes the patch anew.
func (e *env) patchKeyringFrom(cmd *cobra.Command, ref keyringRef, from func(*mrtrv1alpha1.MRTRKeyring) (map[string]any, error)) (*mrtrv1alpha1.MRTRKeyring, error) {
	c, err := e.kube()
	if err != nil {
		return nil, err
	}
	var patched *mrtrv1alpha1.MRTRKeyring
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := ref.object()
		if err := c.Get(cmd.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		kr, _ := keyringOf(obj)
		patch, err := from(kr)
		if err != nil {
			return err
		}
		meta, _ := patch["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			patch["metadata"] = meta
		}
		meta["resourceVersion"] = obj.GetResourceVersion() // the precondition: a merge patch that names it fails on a newer object
		data, err := json.Marshal(patch)
		if err != nil {
			return fmt.Errorf("encode the patch: %w", err)
		}
		if err := c.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
			return err
		}
		patched, _ = keyringOf(obj)
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, ref.notFound()
	case err != nil:
		return nil, fmt.Errorf("patch %s: %w", ref, err)
	}
	return patched, nil
}

// followHint tells how to watch the operator act on kr.
func followHint(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring) {
	w.printf(0, "Follow it with: kubectl mrtr status %s\n", refOf(kr).args())
}
