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
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// newStatusCommand shows the keyrings of a namespace as a table, or one keyring in words.
func newStatusCommand(e *env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the keyrings of a namespace, or where one keyring's rotation is and what it waits for",
		Long: "Without NAME, status lists the MRTRKeyrings of the namespace (of every namespace with -A): phase,\n" +
			"primary key and its age, pods acknowledged, next rotation and the Ready condition's message.\n\n" +
			"With NAME, it describes one keyring: its phase and since when, its keys and their roles (never\n" +
			"their bytes), the TTL wait, each target workload's rollout and, in Reload delivery, each pod and\n" +
			"the keyring it acknowledged, the conditions, and in one sentence what the rotation waits for.",
		Example: "  kubectl mrtr status -n mcp\n  kubectl mrtr status -A\n  kubectl mrtr status payments -n mcp",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && len(args) > 0 {
				return errors.New("a keyring NAME cannot be combined with --all-namespaces: give its namespace with -n")
			}
			c, err := e.kube()
			if err != nil {
				return err
			}
			ns := ""
			if !all {
				if ns, err = e.namespace(); err != nil {
					return err
				}
			}
			if len(args) == 0 {
				var list mrtrv1alpha1.MRTRKeyringList
				if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
					return fmt.Errorf("list MRTRKeyrings: %w", err)
				}
				if len(list.Items) == 0 {
					_, err := fmt.Fprintln(e.streams.ErrOut, noKeyrings(ns))
					return err
				}
				slices.SortFunc(list.Items, func(a, b mrtrv1alpha1.MRTRKeyring) int {
					return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
				})
				return writeTable(e.streams.Out, list.Items, all, e.now())
			}
			kr := &mrtrv1alpha1.MRTRKeyring{}
			if err := c.Get(cmd.Context(), types.NamespacedName{Namespace: ns, Name: args[0]}, kr); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("MRTRKeyring %s not found in namespace %s", args[0], ns)
				}
				return fmt.Errorf("get MRTRKeyring %s/%s: %w", ns, args[0], err)
			}
			return describe(e.streams.Out, gather(cmd.Context(), c, kr), e.now())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the keyrings of every namespace")
	return cmd
}

func noKeyrings(ns string) string {
	if ns == "" {
		return "No MRTRKeyrings found."
	}
	return "No MRTRKeyrings found in namespace " + ns + "."
}
