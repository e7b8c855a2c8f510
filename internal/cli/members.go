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

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// memberView is one member cluster of a ClusterMRTRKeyring: how spec.members reaches it, what the
// operator's status says of reaching it, and its namespaces among those status lists.
type memberView struct {
	name string
	// via is how the hub reaches it: its kubeconfig Secret, local, or that spec.members no longer
	// names it (status still reports it).
	via string
	// status is status.members' entry; nil before the operator reports the member.
	status *mrtrv1alpha1.MemberStatus
	// upToDate and selected count the member's namespaces among status.namespaces.items.
	upToDate, selected int
}

// membersOf joins ck's spec.members and status.members by name, in the spec's order, then the
// members status reports that the spec no longer names; nil without members. Each member's
// namespaces are counted from status.namespaces.items: status counts the namespaces of all
// members together, and lists at most MaxNamespacesListed of them.
func membersOf(ck *mrtrv1alpha1.ClusterMRTRKeyring) []memberView {
	var out []memberView
	index := map[string]int{}
	for _, m := range ck.Spec.Members {
		via := "Secret " + m.KubeconfigSecret
		if m.Local {
			via = "local"
		}
		index[m.Name] = len(out)
		out = append(out, memberView{name: m.Name, via: via})
	}
	for i := range ck.Status.Members {
		ms := &ck.Status.Members[i]
		j, ok := index[ms.Name]
		if !ok {
			j = len(out)
			index[ms.Name] = j
			out = append(out, memberView{name: ms.Name, via: "removed from spec.members"})
		}
		out[j].status = ms
	}
	for _, n := range ck.Status.Namespaces.Items {
		j, ok := index[n.Cluster]
		if !ok || n.State == mrtrv1alpha1.NamespaceLeft {
			continue
		}
		out[j].selected++
		if n.State == mrtrv1alpha1.NamespaceUpToDate {
			out[j].upToDate++
		}
	}
	return out
}

// members writes a ClusterMRTRKeyring's members: how each is reached, reachable or not and since
// when, why not (the operator's message, which names no credential), and its namespaces up to date
// of those selected.
func (d *textWriter) members(kr *mrtrv1alpha1.MRTRKeyring, ns mrtrv1alpha1.NamespacesStatus, members []memberView) {
	reachable, reported := 0, 0
	for _, m := range members {
		if m.status != nil {
			reported++
			if m.status.Reachable {
				reachable++
			}
		}
	}
	summary := fmt.Sprintf("%d of %d reachable", reachable, len(members))
	if reported == 0 {
		summary = "none in status yet"
	}
	d.heading("Members", summary)
	rows := append(make([][]string, 0, 1+len(members)), []string{"MEMBER", "VIA", "REACHABLE", "SINCE", "NAMESPACES", columnMessage})
	for _, m := range members {
		state, since, message := "Unknown", "-", "not reported by the operator yet"
		if s := m.status; s != nil {
			state, since, message = "No", d.stampOrDash(s.LastTransitionTime.Time), orDash(oneLine(s.Message))
			if s.Reachable {
				state = "Yes"
			}
		}
		rows = append(rows, []string{m.name, m.via, state, since, fmt.Sprintf("%d/%d", m.upToDate, m.selected), message})
	}
	d.table(1, rows)
	// The per-member counts are exact only when status lists every namespace it counts.
	if listed, all := len(ns.Items), int(ns.Selected+ns.Left); listed < all {
		d.printf(1, "namespaces counted among the %d status lists of %d (kubectl get cmkr %s -o yaml)\n", listed, all, kr.Name)
	}
}
