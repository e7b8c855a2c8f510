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
	"strings"
	"time"

	"github.com/spf13/cobra"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// newRevokeCommand revokes keys the way the API defines it: the mrtr.dev/revoke annotation, a
// comma-separated list of key ids, or "*" and a note for every key. Each value is handled once.
func newRevokeCommand(e *env) *cobra.Command {
	var all bool
	cmd := e.actionCommand(action{
		use:   "revoke NAME (KEYID... | --all)",
		short: "Revoke keys at once, without waiting out the token lifetime (annotation " + mrtrv1alpha1.RevokeAnnotation + ")",
		long: "revoke sets the " + mrtrv1alpha1.RevokeAnnotation + " annotation of the MRTRKeyring. The operator removes the\n" +
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
		patch: func(ids []string, now time.Time) (map[string]any, error) {
			value := strings.Join(ids, ",")
			if all {
				// A note of its own, so that a later leak is a new value, handled again.
				value = mrtrv1alpha1.RevokeAll + now.UTC().Format(time.RFC3339Nano)
			}
			return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				mrtrv1alpha1.RevokeAnnotation: value,
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
	if value == kr.Status.LastHandledRevokeRequest {
		w.printf(0, "This value was handled before: nothing more is revoked (give another list, or --all).\n")
	}
	followHint(w, kr)
}
