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
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// newRevokeCommand revokes keys the way the API defines it: the mrtr.dev/revoke annotation, a
// comma-separated list of requests, each a key id, or "*" and a note for every key. Each request is
// handled once. The command appends its requests to those the annotation holds, on the condition
// that nobody changed the keyring since it was read, so that it never drops an earlier request the
// operator has not handled yet (one written while the operator is away, say).
func newRevokeCommand(e *env) *cobra.Command {
	var all bool
	cmd := e.actionCommand(action{
		use:   "revoke NAME (KEYID... | --all)",
		short: "Revoke keys at once, without waiting out the token lifetime (annotation " + mrtrv1alpha1.RevokeAnnotation + ")",
		long: "revoke appends to the " + mrtrv1alpha1.RevokeAnnotation + " annotation of the MRTRKeyring, keeping the requests\n" +
			"it holds (an update conditional on the keyring as read, so none is lost). The operator removes the\n" +
			"keys from the Secret at once, in any phase: tokens sealed with them fail from then on. A revoked\n" +
			"primary is replaced in the same write by the staged key. --all revokes every key (the whole\n" +
			"Secret leaked): fresh keys are written and every token in flight fails.",
		example: "  kubectl mrtr revoke payments k20261201-120000 -n mcp\n  kubectl mrtr revoke payments --all -n mcp",
		args: func(_ *cobra.Command, ids []string) error {
			switch {
			case all && len(ids) > 0:
				return fmt.Errorf("give key ids or --all, not both")
			case !all && len(ids) == 0:
				return fmt.Errorf("name the keys to revoke (kubectl mrtr status NAME lists them), or --all")
			}
			for _, id := range ids {
				if err := keyring.ValidateID(id); err != nil {
					return fmt.Errorf("key id %q: %w", id, err)
				}
			}
			return nil
		},
		patchFrom: func(kr *mrtrv1alpha1.MRTRKeyring, ids []string, now time.Time) (map[string]any, error) {
			if all {
				// A request of its own, so that a later leak is a new request, handled again.
				ids = []string{mrtrv1alpha1.RevokeAll + now.UTC().Format(time.RFC3339Nano)}
			}
			return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				mrtrv1alpha1.RevokeAnnotation: appendRequests(kr.Annotations[mrtrv1alpha1.RevokeAnnotation], ids),
			}}}, nil
		},
		report: reportRevoke,
	})
	cmd.Flags().BoolVar(&all, "all", false, "revoke every key of the keyring (every token in flight fails)")
	return cmd
}

func reportRevoke(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring, ids []string) {
	value := kr.Annotations[mrtrv1alpha1.RevokeAnnotation]
	if len(ids) == 0 {
		w.printf(0, "Requested the revocation of every key of MRTRKeyring %s/%s (%s=%s).\n",
			kr.Namespace, kr.Name, mrtrv1alpha1.RevokeAnnotation, value)
		w.printf(0, "The operator writes fresh keys on its next pass: every token in flight fails.\n")
	} else {
		w.printf(0, "Requested the revocation of key(s) %s of MRTRKeyring %s/%s (%s=%s).\n",
			strings.Join(ids, ", "), kr.Namespace, kr.Name, mrtrv1alpha1.RevokeAnnotation, value)
		w.printf(0, "The operator removes them on its next pass, in any phase: tokens sealed with them fail from then on.\n")
	}
	if handledBefore(kr, ids) {
		w.printf(0, "These requests were handled before: nothing more is revoked (name other keys, or --all).\n")
	}
	followHint(w, kr)
}

// appendRequests is the revoke annotation's value with ids appended, those it holds already kept
// once.
func appendRequests(value string, ids []string) string {
	var items []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" && !slices.Contains(items, item) {
			items = append(items, item)
		}
	}
	for _, id := range ids {
		if !slices.Contains(items, id) {
			items = append(items, id)
		}
	}
	return strings.Join(items, ",")
}

// handledBefore reports whether the operator has handled a request for each of ids already.
func handledBefore(kr *mrtrv1alpha1.MRTRKeyring, ids []string) bool {
	handled := strings.Split(kr.Status.LastHandledRevokeRequest, ",")
	return len(ids) > 0 && !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(handled, id) })
}
