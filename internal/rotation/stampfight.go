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
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// A fight over a stamp. In Restart delivery the operator stamps a workload's pod template with the
// keyring's fingerprint, and each new stamp restarts the workload's pods. A GitOps tool that has the
// stamp in its source (or any other writer) puts the old value back, which restarts them again, and
// re-stamping at once would restart them on every sync: a silent restart storm. So when the
// workload's managedFields show that another field manager wrote a stamp that is the operator's
// (Workload.OwnStamp), the operator leaves the workload alone for a back-off (StampBackoff,
// doubling to MaxStampBackoff), says so (a Warning event at each revert, the StampReverted
// condition and the workload's message while the back-off lasts), and then stamps once more: if
// the writer was fixed meanwhile, the rotation goes on. The rotation itself waits, as for any
// workload that has not rolled out: nothing advances on a reverted stamp.
//
// The fights live in status.stampFights, so that a restarted operator keeps the back-off instead
// of stamping once more (one more rollout) before it notices the fight again.

// Back-off of a fought-over stamp: StampBackoff after the first revert, doubling with each revert
// of a stamp written after a back-off, up to MaxStampBackoff.
const (
	StampBackoff    = 2 * time.Minute
	MaxStampBackoff = time.Hour
)

// planStamps decides which found targets get o.stamp, and keeps status.stampFights: a target whose
// stamp another manager put back is held for its back-off, then stamped once more. The fights of
// workloads that are no longer found targets are dropped.
func planStamps(f facts, o outcome) outcome {
	if f.in.Settings.Reload() {
		o.status.StampFights = nil
		return o
	}
	var fights []mrtrv1alpha1.StampFight
	for _, w := range f.in.Workloads {
		if !w.Found || w.ClaimedBy != "" {
			continue
		}
		fight, stamp := fightOver(f.status.StampFights, w), false
		switch foreign := w.StampWriter.Manager != "" && w.StampWriter.Manager != mrtrv1alpha1.FieldManager; {
		case o.stamp == "":
		case w.Stamp == o.stamp:
			stamp = true // a no-op but for the claim: the stamp writes nothing if all is in place
		case fight != nil && f.in.Now.Before(fight.Until.Time):
			o.held = append(o.held, *fight)
		case !foreign || !w.OwnStamp:
			stamp = true
		case fight == nil || fight.Retried:
			if fight == nil {
				fight = &mrtrv1alpha1.StampFight{Namespace: w.Place, Kind: w.Kind, Name: w.Name}
			}
			fight.Manager, fight.Retried = w.StampWriter.Manager, false
			fight.Reverts++
			fight.Until = metav1.NewTime(f.now.Add(min(StampBackoff<<min(fight.Reverts-1, 30), MaxStampBackoff)))
			o.held = append(o.held, *fight)
			o = o.event(corev1Warning, mrtrv1alpha1.EventStampReverted, "Stamp", "%s", fightMessage(*fight))
		default: // the back-off is over: once more
			fight.Retried = true
			stamp = true
		}
		if stamp {
			o.stampTargets = append(o.stampTargets, w.ref())
		}
		if fight != nil && len(fights) < maxStampFights {
			fights = append(fights, *fight)
		}
	}
	o.status.StampFights = fights
	return o
}

// fightOver is a copy of the fight over w's stamp in fights, nil when there is none.
func fightOver(fights []mrtrv1alpha1.StampFight, w Workload) *mrtrv1alpha1.StampFight {
	i := slices.IndexFunc(fights, func(s mrtrv1alpha1.StampFight) bool {
		return s.Namespace == w.Place && s.Kind == w.Kind && s.Name == w.Name
	})
	if i < 0 {
		return nil
	}
	c := fights[i]
	return &c
}

// maxStampFights is the most fights status.stampFights keeps (its MaxItems).
const maxStampFights = 100

// fightMessage says what a fight holds back: the workload's message while it is held, and the
// StampReverted condition's and event's.
func fightMessage(s mrtrv1alpha1.StampFight) string {
	return fmt.Sprintf("%s: field manager %q put back the stamp the operator wrote (%d times); not stamped again before %s",
		placeName(s.Namespace, string(s.Kind)+"/"+s.Name), s.Manager, s.Reverts, s.Until.UTC().Format(time.RFC3339))
}

// heldFight is the fight that holds w's stamp back this pass, nil when none does.
func (o outcome) heldFight(w Workload) *mrtrv1alpha1.StampFight { return fightOver(o.held, w) }

// stampCondition is StampReverted while stamps are held back, nil otherwise.
func (o outcome) stampCondition() *metav1.Condition {
	if len(o.held) == 0 {
		return nil
	}
	msgs := make([]string, len(o.held))
	for i, s := range o.held {
		msgs[i] = fightMessage(s)
	}
	slices.Sort(msgs)
	c := condition(mrtrv1alpha1.ConditionStampReverted, true, mrtrv1alpha1.ReasonRevertedByOtherManager,
		joinSome(msgs[:min(len(msgs), maxNamed+1)], "; ", len(msgs))+". Keep the stamp out of that manager's source (docs/runbook.md#revertedbyothermanager)")
	return &c
}

// heldUntil is the earliest end of a back-off that holds a stamp, zero when none does.
func (o outcome) heldUntil() time.Time {
	var at time.Time
	for _, s := range o.held {
		if at.IsZero() || s.Until.Time.Before(at) {
			at = s.Until.Time
		}
	}
	return at
}
