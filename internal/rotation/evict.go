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
	"slices"
	"time"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// The Reload delivery's restarts: a pod of a target that has not run the phase's keyring
// reloadDeadline after the phase began (or it was created) is evicted, alone.

// reloadDeadline is when pod must run the target keyring, or be restarted: reloadDeadline after
// the phase began or the pod was created, whichever is later.
func reloadDeadline(in Input, st mrtrv1alpha1.MRTRKeyringStatus, pod Pod) time.Time {
	start := phaseStart(in, st)
	if pod.CreatedAt.After(start) {
		start = pod.CreatedAt
	}
	return start.Add(in.Settings.ReloadDeadline)
}

// restartOverdue evicts the laggards of targets past their reload deadline that are not already
// on their way out, records them in status.restartedPods and names the new ones in a Warning
// event. An eviction a PodDisruptionBudget refuses is asked again on the next pass, without
// another event. Selected pods are never restarted (nothing would re-create a bare pod), nor pods
// while this pass writes (their deadline is for the keyring written before).
func restartOverdue(f facts, o outcome) outcome {
	if !f.in.Settings.Reload() || o.write != nil || o.conflict {
		return o
	}
	for _, t := range f.delivery.targets {
		for _, pod := range t.laggards {
			if !pod.Terminating && !f.in.Now.Before(reloadDeadline(f.in, o.status, pod)) {
				o.evict = append(o.evict, pod.Name)
			}
		}
	}
	var fresh []string
	for _, name := range o.evict {
		if !slices.Contains(o.status.RestartedPods, name) {
			fresh = append(fresh, name)
			if len(o.status.RestartedPods) < MaxListedPods {
				o.status.RestartedPods = append(slices.Clip(o.status.RestartedPods), name)
			}
		}
	}
	if len(fresh) > 0 {
		o = o.event(corev1Warning, mrtrv1alpha1.ReasonAcknowledgementMissing, "Restart",
			"%s did not acknowledge keyring %s within %s; restarting them through the eviction API",
			joinSome(fresh, ", ", len(fresh)), o.status.TargetFingerprint, f.in.Settings.ReloadDeadline)
	}
	return o
}

// nextReloadDeadline is the earliest future reload deadline of a laggard of a target, zero for none.
func nextReloadDeadline(in Input, st mrtrv1alpha1.MRTRKeyringStatus, v delivery) time.Time {
	if !v.reload {
		return time.Time{}
	}
	var next time.Time
	for _, t := range v.targets {
		for _, pod := range t.laggards {
			if at := reloadDeadline(in, st, pod); !pod.Terminating && at.After(in.Now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next
}

// MaxListedPods is the most pods status.restartedPods names.
const MaxListedPods = 100
