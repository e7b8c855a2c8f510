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
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// newStatusCommand shows the keyrings of a namespace, or the cluster keyrings, as a table, or one
// keyring in words.
func newStatusCommand(e *env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "status [NAME | cmkr/NAME | cmkr]",
		Short: "Show the keyrings of a namespace, or where one keyring's rotation is and what it waits for",
		Long: "Without NAME, status lists the MRTRKeyrings of the namespace (of every namespace with -A): phase,\n" +
			"primary key and its age, pods acknowledged, next rotation and the Ready condition's message.\n" +
			"status cmkr (or clustermrtrkeyrings) lists the ClusterMRTRKeyrings, with their namespaces up to date.\n\n" +
			"With NAME, it describes one keyring: its phase and since when, its keys and their roles (never\n" +
			"their bytes), the TTL wait, each target workload's rollout and, in Reload delivery, each pod and\n" +
			"the keyring it acknowledged, the conditions, and in one sentence what the rotation waits for.\n" +
			"A ClusterMRTRKeyring is named clustermrtrkeyring/NAME or cmkr/NAME (kubectl's names of the kind): it\n" +
			"is described the same way, with its namespaces: how many are selected, up to date, in conflict\n" +
			"and left, and the first of those its status lists, those behind first. With spec.members, each member too:\n" +
			"the kubeconfig Secret that reaches it, reachable or not since when and why, and its namespaces up to date\n" +
			"of those selected; each namespace is shown with its member.",
		Example: "  kubectl mrtr status -n mcp\n  kubectl mrtr status -A\n  kubectl mrtr status payments -n mcp\n" +
			"  kubectl mrtr status cmkr\n  kubectl mrtr status cmkr/tenants",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.kube()
			if err != nil {
				return err
			}
			if len(args) == 1 && listsClusterKeyrings(args[0]) {
				var list mrtrv1alpha1.ClusterMRTRKeyringList
				if err := c.List(cmd.Context(), &list); err != nil {
					return fmt.Errorf("list ClusterMRTRKeyrings: %w", err)
				}
				if len(list.Items) == 0 {
					_, err := fmt.Fprintln(e.streams.ErrOut, "No ClusterMRTRKeyrings found.")
					return err
				}
				slices.SortFunc(list.Items, func(a, b mrtrv1alpha1.ClusterMRTRKeyring) int { return strings.Compare(a.Name, b.Name) })
				return writeClusterTable(e.streams.Out, list.Items, e.now())
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
			ref, err := parseRef(args[0], ns)
			if err != nil {
				return err
			}
			if all && !ref.cluster {
				return errors.New("a keyring NAME cannot be combined with --all-namespaces: give its namespace with -n")
			}
			obj := ref.object()
			if err := c.Get(cmd.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
				if apierrors.IsNotFound(err) {
					return ref.notFound()
				}
				return fmt.Errorf("get %s: %w", ref, err)
			}
			kr, namespaces := keyringOf(obj)
			v := gather(cmd.Context(), c, kr, namespaces)
			if ck, ok := obj.(*mrtrv1alpha1.ClusterMRTRKeyring); ok {
				v.members = membersOf(ck)
			}
			return describe(e.streams.Out, v, e.now())
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
