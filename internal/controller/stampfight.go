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

package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

// A fight over a stamp. In Restart delivery the operator stamps a workload's pod template with the
// keyring's fingerprint, and each new stamp restarts the workload's pods. A GitOps tool that has the
// stamp in its source (or any other writer) puts the old value back, which restarts them again, and
// re-stamping at once would restart them on every sync: a silent restart storm. So when the
// workload's managedFields show that another field manager wrote back a stamp this operator wrote,
// the operator leaves the workload alone for a back-off (2 minutes, doubling to an hour), says so
// (a Warning event at each revert, and the StampReverted condition while the stamp is not its own),
// and then stamps once more: if the writer was fixed meanwhile, the rotation goes on. The rotation
// itself waits, as for any workload that has not rolled out: nothing advances on a reverted stamp.
//
// What it remembers (which workloads it stamped, the fights) lives in memory: a restarted operator
// stamps a fought-over workload once more before it notices again, one extra rollout.

// Back-off of a fought-over stamp: stampBackoff after the first revert, doubling with each revert
// of a stamp written after a back-off, up to maxStampBackoff.
const (
	stampBackoff    = 2 * time.Minute
	maxStampBackoff = time.Hour
)

// stampFights remembers the stamps this operator wrote and the fights over them, by workload.
type stampFights struct {
	mu      sync.Mutex
	stamped map[types.UID]string // the fingerprint this operator last stamped on the workload
	fights  map[types.UID]*stampFight
}

// stampFight is one workload's fight.
type stampFight struct {
	ref, manager string // the workload (Kind/name) and the field manager that reverted its stamp
	reverts      int
	until        time.Time // no stamp before this
	// retried is set once the stamp is written again after the back-off: a revert of that write is
	// the next revert, with a longer back-off.
	retried bool
}

func (f *stampFight) String() string {
	return fmt.Sprintf("%s: field manager %q put back the stamp the operator wrote (%d times); not stamped again before %s",
		f.ref, f.manager, f.reverts, f.until.UTC().Format(time.RFC3339))
}

// plan returns the targets to stamp with fingerprint now, those held back, and the holds that are
// new reverts (to report once each).
func (s *stampFights) plan(targets []client.Object, keyring, fingerprint string, now time.Time) (stamp []client.Object, held, reverted []*stampFight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fights == nil {
		s.stamped, s.fights = map[types.UID]string{}, map[types.UID]*stampFight{}
	}
	for _, obj := range targets {
		uid, key := obj.GetUID(), workload.StampKey(obj, keyring)
		f := s.fights[uid]
		if workload.FingerprintAt(obj, key) == fingerprint {
			stamp = append(stamp, obj) // a no-op but for the claim: Stamp writes nothing if all is in place
			continue
		}
		if f != nil && now.Before(f.until) {
			held = append(held, f)
			continue
		}
		writer, _ := workload.StampWriter(obj, key)
		foreign := writer.Manager != "" && writer.Manager != mrtrv1alpha1.FieldManager
		stampedBefore := s.stamped[uid] != "" ||
			(key == mrtrv1alpha1.FingerprintAnnotation && workload.StampedBy(obj) == keyring)
		switch {
		case !foreign || !stampedBefore:
			stamp = append(stamp, obj)
		case f == nil || f.retried:
			if f == nil {
				ref, _ := workload.RefOf(obj)
				f = &stampFight{ref: ref.String()}
				s.fights[uid] = f
			}
			f.manager, f.retried = writer.Manager, false
			f.reverts++
			f.until = now.Add(min(stampBackoff<<(f.reverts-1), maxStampBackoff))
			held, reverted = append(held, f), append(reverted, f)
		default: // the back-off is over: once more
			f.retried = true
			stamp = append(stamp, obj)
		}
	}
	return stamp, held, reverted
}

// wrote records that the operator stamped obj with fingerprint.
func (s *stampFights) wrote(obj client.Object, fingerprint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamped[obj.GetUID()] = fingerprint
}

// setStampCondition sets StampReverted on st while stamps are held, and removes it otherwise.
func setStampCondition(st *mrtrv1alpha1.MRTRKeyringStatus, held []*stampFight, generation int64, now time.Time) {
	if len(held) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, mrtrv1alpha1.ConditionStampReverted)
		return
	}
	msgs := make([]string, len(held))
	for i, f := range held {
		msgs[i] = f.String()
	}
	slices.Sort(msgs)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: mrtrv1alpha1.ConditionStampReverted, Status: metav1.ConditionTrue, Reason: mrtrv1alpha1.ReasonRevertedByOtherManager,
		Message:            strings.Join(msgs, "; ") + ". Keep the stamp out of that manager's source (docs/runbook.md#revertedbyothermanager)",
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
}
