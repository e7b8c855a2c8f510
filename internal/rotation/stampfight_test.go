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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// A GitOps tool puts back the stamp the operator wrote: the workload is held for a back-off that
// status keeps (so a restart changes nothing), stamped once more after it, and held twice as long
// at the next revert; the workload's message, the condition and the event say the same.
func TestStampFight(t *testing.T) {
	a, b := "k20260101-000000", newID
	old, target := fp(t, a), fp(t, a, b)
	argocd := Writer{Manager: "argocd-controller"}
	web := func(stamp string, writer Writer, own bool) Workload {
		w := deployment("web", stamp, true)
		w.StampWriter, w.OwnStamp = writer, own
		return w
	}
	fight := func(reverts int32, until time.Duration, retried bool) []mrtrv1alpha1.StampFight {
		return []mrtrv1alpha1.StampFight{{Kind: mrtrv1alpha1.KindDeployment, Name: "web", Manager: "argocd-controller",
			Reverts: reverts, Until: *at(until), Retried: retried}}
	}
	for name, c := range map[string]struct {
		w       Workload
		fights  []mrtrv1alpha1.StampFight // in status before the pass
		stamped bool
		want    []mrtrv1alpha1.StampFight
		event   bool
	}{
		"a stamp not yet written: stamped":             {w: web(old, Writer{Manager: mrtrv1alpha1.FieldManager}, true), stamped: true},
		"another manager's stamp, never ours: stamped": {w: web(old, argocd, false), stamped: true},
		"the first revert: held for the back-off": {w: web(old, argocd, true),
			want: fight(1, StampBackoff, false), event: true},
		"within the back-off, after a restart: still held": {w: web(old, argocd, true), fights: fight(1, time.Minute, false),
			want: fight(1, time.Minute, false)},
		"the back-off over: stamped once more": {w: web(old, argocd, true), fights: fight(1, -time.Second, false), stamped: true,
			want: fight(1, -time.Second, true)},
		"reverted again after that: twice as long": {w: web(old, argocd, true), fights: fight(1, -time.Minute, true),
			want: fight(2, 2*StampBackoff, false), event: true},
		"the stamp holds: stamped (a no-op), the fight kept": {w: web(target, Writer{Manager: mrtrv1alpha1.FieldManager}, true),
			fights: fight(2, -time.Minute, true), stamped: true, want: fight(2, -time.Minute, true)},
	} {
		t.Run(name, func(t *testing.T) {
			st := status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b)
			st.StampFights = c.fights
			in := input(st, ours(t, mrtrv1alpha1.PhaseAccepting, a, b), c.w)
			d := Step(in)
			if got := slices.Contains(d.StampTargets, "Deployment/web"); got != c.stamped || d.Stamp != target {
				t.Errorf("stamp %s of %v, want Deployment/web stamped: %v", d.Stamp, d.StampTargets, c.stamped)
			}
			if !slices.Equal(d.Status.StampFights, c.want) {
				t.Errorf("stampFights = %+v\nwant %+v", d.Status.StampFights, c.want)
			}
			if got := slices.ContainsFunc(d.Events, func(e Event) bool { return e.Reason == mrtrv1alpha1.EventStampReverted }); got != c.event {
				t.Errorf("StampReverted event: %v, want %v (%+v)", got, c.event, d.Events)
			}
			cond := meta.FindStatusCondition(d.Status.Conditions, mrtrv1alpha1.ConditionStampReverted)
			held := !c.stamped
			if (cond != nil) != held {
				t.Fatalf("StampReverted = %+v, want it while held: %v", cond, held)
			}
			if held {
				msg := d.Status.Workloads[0].Message
				if !strings.Contains(msg, `field manager "argocd-controller" put back the stamp`) || !strings.Contains(cond.Message, msg) {
					t.Errorf("the workload says %q, the condition %q", msg, cond.Message)
				}
				if until := c.want[0].Until.Sub(now); d.RequeueAfter == 0 || d.RequeueAfter > until {
					t.Errorf("requeue in %s, after the back-off's end in %s", d.RequeueAfter, until)
				}
			}
			agree(t, 0, in, d)
		})
	}
}

// A forged acknowledgement is listed in status and reported once; the pods to nudge after a write
// are the consumers that have not acknowledged it.
func TestRefusalsAndNudges(t *testing.T) {
	a, b := "k20260101-000000", "k20260806-120000"
	ab, old := fp(t, a, b), fp(t, a)
	forged := Pod{Name: "forged", Loaded: ab, AckWriter: Writer{Manager: "kubectl-annotate"}, CreatedAt: now.Add(-time.Hour), Mounts: true}
	honest := acked("honest", ab)
	honest.Mounts = true
	st := status(t, mrtrv1alpha1.PhaseAccepting, time.Minute, a, b)
	in := reloadInput(st, ours(t, mrtrv1alpha1.PhaseAccepting, a, b), withPods(forged, honest))
	d := Step(in)
	want := []mrtrv1alpha1.RefusedAcknowledgement{{Pod: "forged", Message: `field manager "kubectl-annotate" wrote it, not the pod's reporter (` + ack.FieldManager + ")"}}
	if !slices.Equal(d.Status.RefusedAcknowledgements, want) {
		t.Fatalf("refusedAcknowledgements = %+v, want %+v", d.Status.RefusedAcknowledgements, want)
	}
	if got := d.Status.Workloads[0].Laggards; !slices.Equal(got, []string{"forged"}) {
		t.Errorf("laggards %v, want the forged pod", got)
	}
	reported := func(d Decision) int {
		n := 0
		for _, e := range d.Events {
			if e.Reason == mrtrv1alpha1.EventAcknowledgementRefused {
				n++
			}
		}
		return n
	}
	if reported(d) != 1 {
		t.Errorf("events %+v, want one refusal", d.Events)
	}
	in.Status = d.Status
	if n := reported(Step(in)); n != 0 {
		t.Errorf("the refusal is reported again on the next pass (%d events)", n)
	}

	// A rotation's write: nudge the consumers that do not run what it writes, forged or not.
	stable := status(t, mrtrv1alpha1.PhaseStable, time.Hour, a)
	stable.NextRotationTime = at(-time.Second)
	lagging, current, bare := acked("lagging", old), acked("current", old), acked("bare", old)
	lagging.Mounts, current.Mounts = true, true
	gone := lagging
	gone.Name, gone.Terminating = "gone", true
	in = reloadInput(stable, ours(t, mrtrv1alpha1.PhaseStable, a), withPods(lagging, current, bare, gone))
	d = Step(in)
	if d.Secret == nil || !slices.Equal(d.Nudge, []string{"lagging", "current"}) {
		t.Errorf("nudge %v after writing %v, want the mounting consumers, not terminating", d.Nudge, d.Secret)
	}
	in.Settings.ReloadTrigger = mrtrv1alpha1.ReloadTriggerNone
	if d := Step(in); len(d.Nudge) > 0 {
		t.Errorf("reloadTrigger None nudged %v", d.Nudge)
	}
}
