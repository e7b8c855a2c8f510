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
// comma-separated list of requests, each a key id, or "*" and a note for every key, numbered so
// that each is handled once (mrtrv1alpha1.RevokeRequest). The command appends its requests,
// numbered on from the highest sequence the keyring knows, and prunes those the operator has
// handled, on the condition that nobody changed the keyring since it was read: so it never drops an
// earlier request the operator has not handled yet (one written while the operator is away, say),
// never gives a sequence twice, and the annotation stays short however many requests come.
func newRevokeCommand(e *env) *cobra.Command {
	var all bool
	cmd := e.actionCommand(action{
		use:   "revoke (NAME | cmkr/NAME) (KEYID... | --all)",
		short: "Revoke keys at once, without waiting out the token lifetime (annotation " + mrtrv1alpha1.RevokeAnnotation + ")",
		long: "revoke appends numbered requests to the " + mrtrv1alpha1.RevokeAnnotation + " annotation of the MRTRKeyring, keeping\n" +
			"the requests not handled yet and dropping the handled ones (an update conditional on the keyring as\n" +
			"read, so none is lost). The operator removes the keys from the Secret at once, in any phase: tokens\n" +
			"sealed with them fail from then on. A revoked primary is replaced in the same write by the staged\n" +
			"key. --all revokes every key (the whole Secret leaked): fresh keys are written and every token in\n" +
			"flight fails. Each request is handled once: status.lastHandledRevokeSequence reaches its number.",
		example: "  kubectl mrtr revoke payments k20261201-120000 -n mcp\n  kubectl mrtr revoke payments --all -n mcp\n  kubectl mrtr revoke cmkr/tenants --all",
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
			if kr.Status.ObservedGeneration == 0 {
				// Its sequence must follow the one the keyring's Secret records (a keyring deleted
				// and re-created for it), which only the operator reads: a number at or below it
				// would be taken as handled.
				return nil, fmt.Errorf("%s has no status yet: the operator has not taken it in, and a request must be numbered after those its Secret records; run this again once kubectl mrtr status %s shows it",
					refOf(kr), refOf(kr).args())
			}
			if all {
				// The time is a note for people: the sequence makes the request one of its own.
				ids = []string{mrtrv1alpha1.RevokeAll + now.UTC().Format(time.RFC3339)}
			}
			value, _ := mrtrv1alpha1.AppendRevokeRequests(kr.Annotations[mrtrv1alpha1.RevokeAnnotation], kr.Status.LastHandledRevokeSequence, ids...)
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
	// The requests this command appended are the last ones of the value it wrote.
	last := mrtrv1alpha1.LastRevokeSequence(mrtrv1alpha1.ParseRevokeRequests(value))
	if len(ids) == 0 {
		w.printf(0, "Requested the revocation of every key of %s as request %d (%s=%s).\n",
			refOf(kr), last, mrtrv1alpha1.RevokeAnnotation, value)
		w.printf(0, "The operator writes fresh keys on its next pass: every token in flight fails.\n")
	} else {
		w.printf(0, "Requested the revocation of key(s) %s of %s as request(s) %s (%s=%s).\n",
			strings.Join(ids, ", "), refOf(kr), sequences(last, len(ids)), mrtrv1alpha1.RevokeAnnotation, value)
		w.printf(0, "The operator removes them on its next pass, in any phase: tokens sealed with them fail from then on.\n")
	}
	if revoked := revokedBefore(kr, ids); len(revoked) > 0 {
		w.printf(0, "Key(s) %s were revoked before: nothing more is revoked for them.\n", strings.Join(revoked, ", "))
	}
	w.printf(0, "Handled once status.lastHandledRevokeSequence is %d or more.\n", last)
	followHint(w, kr)
}

// sequences names the n requests that end at last: "7", or "5-7".
func sequences(last int64, n int) string {
	if n == 1 {
		return fmt.Sprint(last)
	}
	return fmt.Sprintf("%d-%d", last-int64(n)+1, last)
}

// revokedBefore are those of ids that status records as revoked already.
func revokedBefore(kr *mrtrv1alpha1.MRTRKeyring, ids []string) []string {
	var revoked []string
	for _, id := range ids {
		if slices.ContainsFunc(kr.Status.RevokedKeys, func(k mrtrv1alpha1.RevokedKey) bool { return k.ID == id }) {
			revoked = append(revoked, id)
		}
	}
	return revoked
}
