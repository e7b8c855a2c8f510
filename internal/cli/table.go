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
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/printers"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// columnMessage heads the columns of the conditions' and operator's messages, in every table.
const columnMessage = "MESSAGE"

// writeTable writes one line per keyring, kubectl get's way (a NAMESPACE column with -A).
func writeTable(out io.Writer, items []mrtrv1alpha1.MRTRKeyring, namespaced bool, now time.Time) error {
	w := printers.GetNewTabWriter(out)
	head := []string{"NAME", "PHASE", "PRIMARY", "PRIMARY AGE", "ACKNOWLEDGED", "NEXT ROTATION", "READY", columnMessage}
	if namespaced {
		head = append([]string{"NAMESPACE"}, head...)
	}
	_, _ = fmt.Fprintln(w, strings.Join(head, "\t")) // buffered: Flush reports
	for i := range items {
		kr := &items[i]
		row := tableRow(kr, now)
		if namespaced {
			row = append([]string{kr.Namespace}, row...)
		}
		_, _ = fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// writeClusterTable writes one line per ClusterMRTRKeyring: the columns of writeTable, and its
// namespaces up to date of those selected.
func writeClusterTable(out io.Writer, items []mrtrv1alpha1.ClusterMRTRKeyring, now time.Time) error {
	w := printers.GetNewTabWriter(out)
	head := []string{"NAME", "PHASE", "PRIMARY", "PRIMARY AGE", "NAMESPACES", "ACKNOWLEDGED", "NEXT ROTATION", "READY", columnMessage}
	_, _ = fmt.Fprintln(w, strings.Join(head, "\t")) // buffered: Flush reports
	for i := range items {
		kr, ns := keyringOf(&items[i])
		row := tableRow(kr, now)
		namespaces := "-"
		if kr.Status.Phase != "" {
			namespaces = fmt.Sprintf("%d/%d", ns.UpToDate, ns.Selected)
		}
		row = append(row[:4:4], append([]string{namespaces}, row[4:]...)...)
		_, _ = fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// tableRow is kr's cells of writeTable, without its namespace.
func tableRow(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) []string {
	primary, primaryAge := "-", "-"
	if keys := kr.Status.Keys; len(keys) > 0 {
		primary, primaryAge = keys[0].ID, age(keys[0].Sealing().Time, now)
	}
	ready, message := "Unknown", ""
	if c := meta.FindStatusCondition(kr.Status.Conditions, mrtrv1alpha1.ConditionReady); c != nil {
		ready, message = string(c.Status), oneLine(c.Message)
	}
	return []string{kr.Name, orDash(string(kr.Status.Phase)), primary, primaryAge,
		acknowledged(kr), nextRotation(kr, now), ready, message}
}

// acknowledged is "acknowledged/pods" of the pods gated by acknowledgement; "-" when none are (a
// Restart delivery gates by rollout, unless it has a podSelector).
func acknowledged(kr *mrtrv1alpha1.MRTRKeyring) string {
	st := kr.Status
	if st.PodCount == 0 && (!reload(kr) || st.Phase == "") {
		return "-"
	}
	return fmt.Sprintf("%d/%d", st.PodsAcknowledged, st.PodCount)
}

// nextRotation says when the next rotation starts, relative to now.
func nextRotation(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	switch next := kr.Status.NextRotationTime; {
	case kr.Spec.Suspend:
		return "suspended"
	case kr.Status.Phase.UnderWay():
		return "under way"
	case kr.Spec.KeySource.IsSecret():
		return "on source change"
	case next == nil:
		return "-"
	case !next.After(now):
		return "due"
	default:
		return relative(next.Time, now)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
