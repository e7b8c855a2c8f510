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

// newRotateCommand requests a rotation the way the API defines it: a new value of the
// mrtr.dev/rotate annotation starts one rotation, and status.lastHandledRotateRequest records it,
// so the value must differ from every earlier request: the time now, to the nanosecond.
func newRotateCommand(e *env) *cobra.Command {
	return e.actionCommand(action{
		use:   "rotate (NAME | cmkr/NAME)",
		short: "Request a rotation of a keyring now (annotation " + mrtrv1alpha1.RotateAnnotation + ")",
		long: "rotate sets the " + mrtrv1alpha1.RotateAnnotation + " annotation of the MRTRKeyring to the time now. A new value\n" +
			"starts one rotation: at once when the keyring is Stable, after the rotation under way otherwise,\n" +
			"and once resumed when it is suspended.",
		example: "  kubectl mrtr rotate payments -n mcp\n  kubectl mrtr rotate cmkr/tenants",
		patch: func(_ []string, now time.Time) (map[string]any, error) {
			return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				mrtrv1alpha1.RotateAnnotation: mrtrv1alpha1.NewRotateRequest(now),
			}}}, nil
		},
		report: reportRotate,
	})
}

func reportRotate(w *textWriter, kr *mrtrv1alpha1.MRTRKeyring, _ []string) {
	w.printf(0, "Requested a rotation of %s (%s=%s).\n",
		refOf(kr), mrtrv1alpha1.RotateAnnotation, kr.Annotations[mrtrv1alpha1.RotateAnnotation])
	switch phase := kr.Status.Phase; {
	case kr.Spec.Suspend:
		w.printf(0, "The keyring is suspended (spec.suspend): the rotation starts once it is resumed "+
			"(kubectl mrtr resume %s).\n", refOf(kr).args())
	case phase.UnderWay():
		w.printf(0, "A rotation is under way (phase %s): the one requested starts when it completes.\n", phase)
	default:
		w.printf(0, "The operator starts it on its next pass.\n")
	}
	followHint(w, kr)
}

// pendingRotateRequest returns the value of kr's rotate annotation if no rotation has started for
// it yet. (The operator also skips a value its Secret records as handled, for a keyring deleted
// and re-created; the plugin does not read Secrets.)
func pendingRotateRequest(kr *mrtrv1alpha1.MRTRKeyring) (string, bool) {
	r := kr.Annotations[mrtrv1alpha1.RotateAnnotation]
	return r, mrtrv1alpha1.RotateRequested(r, kr.Status.LastHandledRotateRequest)
}
