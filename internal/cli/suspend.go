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
	"time"

	"github.com/spf13/cobra"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// newSuspendCommand sets spec.suspend: no new rotation starts, on schedule or on request; one
// under way finishes (stopping halfway would leave an extra key in place for nothing).
func newSuspendCommand(e *env) *cobra.Command {
	return e.actionCommand(action{
		use:     "suspend (NAME | cmkr/NAME)",
		short:   "Stop new rotations of a keyring from starting (spec.suspend: true)",
		long:    "suspend sets spec.suspend of the MRTRKeyring to true: no new rotation starts, on schedule or on\nrequest. A rotation under way finishes.",
		example: "  kubectl mrtr suspend payments -n mcp\n  kubectl mrtr suspend cmkr/tenants",
		patch:   suspendPatch(true),
		report: func(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring, _ []string) {
			w.printf(0, "Suspended %s: no new rotation starts.\n", refOf(kr))
			if phase := kr.Status.Phase; phase.UnderWay() {
				w.printf(0, "The rotation under way (phase %s) finishes.\n", phase)
			}
			w.printf(0, "Resume with: kubectl mrtr resume %s\n", refOf(kr).args())
		},
	})
}

// newResumeCommand clears spec.suspend: rotations start again, on schedule or on request.
func newResumeCommand(e *env) *cobra.Command {
	return e.actionCommand(action{
		use:     "resume (NAME | cmkr/NAME)",
		short:   "Let rotations of a keyring start again (spec.suspend: false)",
		long:    "resume sets spec.suspend of the MRTRKeyring to false: rotations start again, on schedule or on\nrequest. A rotation that fell due while suspended starts at once.",
		example: "  kubectl mrtr resume payments -n mcp\n  kubectl mrtr resume cmkr/tenants",
		patch:   suspendPatch(false),
		report: func(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring, _ []string) {
			w.printf(0, "Resumed %s: rotations start again.\n", refOf(kr))
			request, pending := pendingRotateRequest(kr)
			switch next := kr.Status.NextRotationTime; {
			case kr.Status.Phase.UnderWay():
				w.printf(0, "A rotation is under way (phase %s).\n", kr.Status.Phase)
			case pending:
				w.printf(0, "The rotation requested by %s=%s starts now.\n", mrtrv1alpha1.RotateAnnotation, request)
			case next != nil && next.After(w.now):
				w.printf(0, "The next rotation is due %s.\n", stamp(next.Time, w.now))
			case next != nil:
				w.printf(0, "The next rotation fell due %s: it starts now.\n", stamp(next.Time, w.now))
			}
			followHint(w, kr)
		},
	})
}

func suspendPatch(suspend bool) func([]string, time.Time) (map[string]any, error) {
	return func([]string, time.Time) (map[string]any, error) {
		return map[string]any{"spec": map[string]any{"suspend": suspend}}, nil
	}
}
