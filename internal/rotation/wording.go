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

package rotation

import (
	"fmt"
	"strings"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Wording every stage may use: how keys, workloads, pods and long lists are named in events,
// conditions and status messages.

// describeKeys lists kr's ids for messages, the staged one marked.
func describeKeys(kr *keyring.Keyring, staged string) string {
	ids := kr.IDs()
	for i, id := range ids {
		if id == staged {
			ids[i] += " (staged)"
		}
	}
	return strings.Join(ids, ", ")
}

func condition(typ string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message}
}

// refs names the workloads, as in messages.
func refs(ts []shown) string {
	s := make([]string, min(len(ts), maxNamed+1))
	for i := range s {
		s[i] = ts[i].ref()
	}
	return joinSome(s, ", ", len(ts))
}

// messages joins what each workload waits for.
func messages(ts []shown) string {
	s := make([]string, min(len(ts), maxNamed+1))
	for i := range s {
		s[i] = ts[i].message
	}
	return joinSome(s, "; ", len(ts))
}

// joinSome joins the first maxNamed of s, which holds at least those of the total items, and
// counts the others.
func joinSome(s []string, sep string, total int) string {
	if total <= maxNamed {
		return strings.Join(s, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(s[:maxNamed], sep), sep, total-maxNamed)
}

// podNames names up to maxNamed of pods (the status lists of laggards).
func podNames(pods []Pod) []string {
	out := make([]string, min(len(pods), maxNamed))
	for i := range out {
		out[i] = pods[i].ref()
	}
	return out
}
