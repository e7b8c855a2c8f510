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
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/rotation"
)

// describe writes one keyring in words, kubectl describe's way: a field per line, then the keys,
// the workloads with their pods, and the conditions as indented tables. It prints ids, roles and
// fingerprints, which reveal nothing of a key; status holds no key bytes to print.
func describe(out io.Writer, v keyringView, now time.Time) error {
	kr, st := v.kr, v.kr.Status
	d := &textWriter{out: out, now: now}

	fields := []string{"Name", kr.Name, "Namespace", kr.Namespace, "Secret", secretName(kr)}
	if v.namespaces != nil {
		kind, where := "ClusterMRTRKeyring (spec.namespaceSelector selects its namespaces)", " in each selected namespace"
		if len(v.members) > 0 {
			kind, where = "ClusterMRTRKeyring (spec.namespaceSelector selects its namespaces in each member)", " in each selected namespace of each member"
		}
		fields = []string{"Name", kr.Name, "Kind", kind, "Secret", secretName(kr) + where}
	}
	fields = append(fields,
		"Delivery", deliveryName(kr),
		"Phase", phaseLine(kr, now),
		"Waiting for", waitingFor(kr, now),
		"Fingerprints", fingerprints(st),
		"TTL wait", ttlWaitLine(st, now),
		"Next rotation", nextRotationLine(kr, now),
		"Last rotation", lastRotationLine(st, now),
	)
	if len(kr.Spec.RotationWindows) > 0 {
		fields = append(fields, "Next window", nextWindowLine(kr, now))
	}
	if kr.Spec.KeySource.IsSecret() {
		fields = append(fields, "Key source", keySourceLine(kr, v.namespaces != nil, now))
	}
	if r, pending := pendingRotateRequest(kr); r != "" {
		state := "handled"
		if pending {
			state = "pending"
		}
		fields = append(fields, "Rotate request", fmt.Sprintf("%s=%s (%s)", mrtrv1alpha1.RotateAnnotation, r, state))
	}
	if len(st.RestartedPods) > 0 {
		fields = append(fields, "Restarted pods", list(st.RestartedPods, 10)+" (no acknowledgement within spec.reloadDeadline)")
	}
	d.fields(fields...)

	if len(st.Keys) == 0 {
		d.heading("Keys", "none in status yet")
	} else {
		d.heading("Keys", "")
		// The python kid column only once the operator writes kids (status of older operators has none).
		kids := slices.ContainsFunc(st.Keys, func(k mrtrv1alpha1.KeyStatus) bool { return k.PythonKid != "" })
		head := []string{"ID", "ROLE", "CREATED"}
		if kids {
			head = append(head, "PYTHON KID")
		}
		rows := append(make([][]string, 0, 1+len(st.Keys)), head)
		for _, k := range st.Keys {
			row := []string{k.ID, string(k.Role), d.stampOrDash(k.CreatedAt.Time)}
			if kids {
				row = append(row, orDash(k.PythonKid))
			}
			rows = append(rows, row)
		}
		d.table(1, rows)
	}
	if len(st.RevokedKeys) > 0 {
		d.heading("Revoked keys", "tokens sealed with them fail (mrtr.dev/revoke)")
		rows := append(make([][]string, 0, 1+len(st.RevokedKeys)), []string{"ID", "ROLE THEN", "REVOKED"})
		for _, k := range st.RevokedKeys {
			rows = append(rows, []string{k.ID, orDash(string(k.Role)), d.stampOrDash(k.RevokedAt.Time)})
		}
		d.table(1, rows)
	}

	if n := len(st.StampFights); n > 0 {
		d.heading("Stamp fights", "another field manager puts back the stamp: no stamp before the back-off ends (StampReverted)")
		d.cappedTable(1, []string{"WORKLOAD", "MANAGER", "REVERTS", "HELD UNTIL"}, n, func(i int) []string {
			f := st.StampFights[i]
			return []string{string(f.Kind) + "/" + f.Name, f.Manager, fmt.Sprint(f.Reverts), d.stampOrDash(f.Until.Time)}
		})
	}
	if n := len(st.RefusedAcknowledgements); n > 0 {
		d.heading("Refused acknowledgements", "not taken as proof that the pod loaded the keyring")
		d.cappedTable(1, []string{"POD", "WHY"}, n, func(i int) []string {
			r := st.RefusedAcknowledgements[i]
			return []string{r.Pod, oneLine(r.Message)}
		})
	}

	if len(v.members) > 0 {
		d.members(kr, *v.namespaces, v.members)
	}
	if v.namespaces != nil {
		d.namespaces(kr, *v.namespaces)
	}
	d.workloads(v)
	if v.selected != nil {
		summary := "none"
		if sp := st.SelectedPods; sp != nil {
			summary = fmt.Sprintf("%d of %d acknowledged keyring %s", sp.PodsAcknowledged, sp.Pods, orDash(st.TargetFingerprint))
		}
		d.heading("Selected pods", summary+" (spec.podSelector)")
		d.pods(1, v.selected, kr, nil)
	}

	if len(st.Conditions) == 0 {
		d.heading("Conditions", "none yet")
		return d.err
	}
	d.heading("Conditions", "")
	rows := append(make([][]string, 0, 1+len(st.Conditions)), []string{"TYPE", "STATUS", "REASON", "SINCE", columnMessage})
	for _, c := range st.Conditions {
		rows = append(rows, []string{c.Type, string(c.Status), c.Reason, age(c.LastTransitionTime.Time, now), oneLine(c.Message)})
	}
	d.table(1, rows)
	return d.err
}

// maxSectionRows is how many rows the sections of status lists that grow with the targets (stamp
// fights, refused acknowledgements, a ClusterMRTRKeyring's namespaces) show: the rest are counted, so that the status of a keyring
// with many targets stays readable.
const maxSectionRows = 10

// cappedTable writes a table of head and the rows of the first maxSectionRows of n items, then
// counts the others.
func (d *textWriter) cappedTable(level int, head []string, n int, row func(i int) []string) {
	rows := append(make([][]string, 0, 1+min(n, maxSectionRows)), head)
	for i := range min(n, maxSectionRows) {
		rows = append(rows, row(i))
	}
	d.table(level, rows)
	if n > maxSectionRows {
		d.printf(level, "and %d more\n", n-maxSectionRows)
	}
}

// namespaces writes a ClusterMRTRKeyring's namespaces: the counts of its status, then the first
// maxSectionRows of those it lists (those behind first: the order of status), and how many more
// there are.
func (d *textWriter) namespaces(kr *mrtrv1alpha1.MRTRKeyring, ns mrtrv1alpha1.NamespacesStatus) {
	behind := ns.Selected - ns.UpToDate - ns.Conflicts - ns.Refused
	refused := ""
	if ns.Refused > 0 {
		refused = fmt.Sprintf(", %d refusing the write", ns.Refused)
	}
	summary := fmt.Sprintf("%d selected: %d up to date, %d behind, %d in conflict%s; %d left", ns.Selected, ns.UpToDate, behind, ns.Conflicts, refused, ns.Left)
	if ns.PendingRekey != "" {
		summary += "; a rekey is owed: " + ns.PendingRekey
	}
	if kr.Status.Phase == "" {
		summary = "none in status yet"
	}
	d.heading("Namespaces", summary)
	shown := ns.Items[:min(len(ns.Items), maxSectionRows)]
	if len(shown) > 0 {
		// The MEMBER column only for a keyring with members (the namespaces of one without have
		// no cluster): "-" for a namespace of the hub's own cluster.
		member := slices.ContainsFunc(ns.Items, func(n mrtrv1alpha1.NamespaceStatus) bool { return n.Cluster != "" })
		head := []string{"NAMESPACE", "STATE", columnMessage}
		if member {
			head = append([]string{"MEMBER"}, head...)
		}
		rows := append(make([][]string, 0, 1+len(shown)), head)
		for _, n := range shown {
			row := []string{n.Name, string(n.State), orDash(oneLine(n.Message))}
			if member {
				row = append([]string{orDash(n.Cluster)}, row...)
			}
			rows = append(rows, row)
		}
		d.table(1, rows)
	}
	// Every namespace status counts is one of the selected or of those that left.
	if more := int(ns.Selected+ns.Left) - len(shown); more > 0 {
		listed := ""
		if len(ns.Items) > len(shown) {
			listed = fmt.Sprintf(" (status lists %d in all: kubectl get cmkr %s -o yaml)", len(ns.Items), kr.Name)
		}
		d.printf(1, "and %d more%s\n", more, listed)
	}
}

func (d *textWriter) stampOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return stamp(t, d.now)
}

// workloads writes each target workload's rollout and, when read, its pods.
func (d *textWriter) workloads(v keyringView) {
	st := v.kr.Status
	switch {
	case st.WorkloadCount == 0 && v.selected == nil:
		d.heading("Workloads", "none: nothing acknowledges or rolls out, so each phase waits spec.propagationDelay")
		return
	case st.WorkloadCount == 0:
		d.heading("Workloads", "none")
		return
	}
	summary := fmt.Sprintf("%d of %d up to date", st.WorkloadsUpToDate, st.WorkloadCount)
	if n := len(st.Workloads); int32(n) < st.WorkloadCount {
		summary += fmt.Sprintf(" (status lists %d: those not up to date first)", n)
	}
	d.heading("Workloads", summary)
	for _, w := range v.workloads {
		d.printf(1, "%s/%s: %s\n", w.Kind, w.Name, rollout(v.kr, w.WorkloadStatus))
		if w.Message != "" {
			d.printf(2, "%s\n", oneLine(w.Message))
		}
		switch {
		case w.pods != nil:
			d.pods(2, w.pods, v.kr, w.Laggards)
		case len(w.Laggards) > 0: // a ClusterMRTRKeyring's: its pods are not read (gather)
			d.printf(2, "laggards: %s\n", list(w.Laggards, 10))
		}
	}
}

// rollout is one workload's state: "up to date, 3/3 ready, 3 of 3 pods acknowledged".
func rollout(kr *mrtrv1alpha1.MRTRKeyring, w mrtrv1alpha1.WorkloadStatus) string {
	if !w.Found {
		return "not found"
	}
	state := "not up to date"
	if w.UpToDate {
		state = "up to date"
	}
	state += fmt.Sprintf(", %d/%d ready", w.ReadyReplicas, w.DesiredReplicas)
	if reload(kr) {
		state += fmt.Sprintf(", %d of %d pods acknowledged", w.PodsAcknowledged, w.Pods)
	}
	return state
}

// pods writes a table of pods and what each acknowledged, indented by level; laggards the operator
// names that are not among them (gone since, or not readable) are named after it.
func (d *textWriter) pods(level int, pv *podsView, kr *mrtrv1alpha1.MRTRKeyring, laggards []string) {
	if pv.err != nil {
		d.printf(level, "pods: cannot read them: %v\n", pv.err)
	}
	if len(pv.pods) == 0 && pv.err == nil {
		d.printf(level, "no pods\n")
	}
	if len(pv.pods) > 0 {
		rows := append(make([][]string, 0, 1+len(pv.pods)), []string{"POD", "KEYRING", "AGE", "STATE"})
		for _, p := range pv.pods {
			rows = append(rows, []string{p.name, orDash(p.acknowledged), age(p.created, d.now), podState(p, kr)})
		}
		d.table(level, rows)
	}
	var missing []string
	for _, l := range laggards {
		if !slices.ContainsFunc(pv.pods, func(p podView) bool { return p.name == l }) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		d.printf(level, "laggards in status, not among these pods: %s\n", list(missing, 10))
	}
}

// podState says which keyring a pod acknowledged, against the one the phase rolls out.
func podState(p podView, kr *mrtrv1alpha1.MRTRKeyring) string {
	st := kr.Status
	var s string
	switch {
	case p.acknowledged == "":
		s = "no acknowledgement"
		if st.PhaseStartedAt != nil && p.created.After(st.PhaseStartedAt.Time) {
			s += ", created after this phase began"
		}
	case st.TargetFingerprint == "":
		s = "acknowledged"
	case p.acknowledged == st.TargetFingerprint:
		s = "runs the target keyring"
	case p.acknowledged == st.SecretFingerprint:
		s = "runs the Secret's keyring, not the target"
	default:
		s = "behind: acknowledged another keyring"
	}
	if p.laggard {
		s += ", laggard"
	}
	if p.terminating {
		s += ", terminating"
	}
	return s
}

func deliveryName(kr *mrtrv1alpha1.MRTRKeyring) string {
	if kr.Spec.Delivery == "" {
		return string(mrtrv1alpha1.DeliveryReload) + " (the default)"
	}
	return string(kr.Spec.Delivery)
}

func phaseLine(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	st := kr.Status
	switch {
	case st.Phase == "":
		return "- (no status yet)"
	case st.PhaseStartedAt == nil:
		return string(st.Phase)
	}
	return fmt.Sprintf("%s since %s", st.Phase, stamp(st.PhaseStartedAt.Time, now))
}

func fingerprints(st mrtrv1alpha1.MRTRKeyringStatus) string {
	switch {
	case st.SecretFingerprint == "" && st.TargetFingerprint == "":
		return "-"
	case st.SecretFingerprint == st.TargetFingerprint:
		return "Secret and target " + st.TargetFingerprint
	}
	return fmt.Sprintf("Secret %s, target %s", orDash(st.SecretFingerprint), orDash(st.TargetFingerprint))
}

// ttlWaitLine says when the TTL wait ends, or how long the next one lasts: the longest wait
// declared while the primary key sealed (status.ttlWaits), which a lowered tokenTTL never
// shortens.
func ttlWaitLine(st mrtrv1alpha1.MRTRKeyringStatus, now time.Time) string {
	switch {
	case st.TTLWaitUntil != nil && st.TTLWaitUntil.After(now):
		return fmt.Sprintf("until %s (%s left)", st.TTLWaitUntil.UTC().Format(time.RFC3339), duration.HumanDuration(st.TTLWaitUntil.Sub(now)))
	case st.TTLWaitUntil != nil:
		return "ended " + stamp(st.TTLWaitUntil.Time, now)
	case st.TTLWaits == nil:
		return "-"
	}
	return fmt.Sprintf("none under way; %s once the primary key stops sealing (the longest tokenTTL + clockSkew + terminationGracePeriod declared while it sealed)",
		duration.HumanDuration(st.TTLWaits.Primary.Duration))
}

// waitingFor renders status.waitingFor, what the operator decided the rotation waits for, with
// the time left until a timed wait ends. It adds only what the operator's status cannot say: that
// the operator has not yet seen the keyring, or its latest spec.
func waitingFor(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	st, w := kr.Status, kr.Status.WaitingFor
	switch {
	case st.Phase == "":
		return "the operator to reconcile the keyring for the first time: it has no status yet."
	case st.ObservedGeneration < kr.Generation:
		return fmt.Sprintf("the operator to act on the latest spec (generation %d; the status is of generation %d).",
			kr.Generation, st.ObservedGeneration)
	case w == nil:
		return "the operator's next pass: its status does not say what the rotation waits for."
	case w.What == mrtrv1alpha1.WaitResume:
		name := kr.Name // -n is the user's already
		if r := refOf(kr); r.cluster {
			name = r.args()
		}
		return fmt.Sprintf("%s (kubectl mrtr resume %s).", oneLine(w.Message), name)
	case w.Until != nil && w.Until.After(now):
		return fmt.Sprintf("%s (%s left).", oneLine(w.Message), duration.HumanDuration(w.Until.Sub(now)))
	case w.Until != nil:
		return fmt.Sprintf("%s (reached %s: the operator acts on its next pass).", oneLine(w.Message), relative(w.Until.Time, now))
	}
	return oneLine(w.Message) + "."
}

func nextRotationLine(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	next, interval := kr.Status.NextRotationTime, duration.HumanDuration(rotation.SettingsFrom(kr.Spec).RotationInterval)
	switch phase := kr.Status.Phase; {
	case kr.Spec.Suspend:
		return "suspended (spec.suspend): none starts until resumed"
	case kr.Spec.KeySource.IsSecret() && phase.UnderWay():
		return "when source Secret " + kr.Spec.KeySource.Secret.Name + " holds a new key, after the rotation under way completes"
	case kr.Spec.KeySource.IsSecret():
		return "when source Secret " + kr.Spec.KeySource.Secret.Name + " holds a new key"
	case phase.UnderWay():
		return fmt.Sprintf("%s after the rotation under way completes", interval)
	case next == nil:
		return "-"
	}
	return fmt.Sprintf("%s, every %s", stamp(next.Time, now), interval)
}

// nextWindowLine is the rotation window the next rotation is due in, as status says (the operator
// computed it; this recomputes no rule), and the windows of the spec.
func nextWindowLine(kr *mrtrv1alpha1.MRTRKeyring, now time.Time) string {
	specs := make([]string, len(kr.Spec.RotationWindows))
	for i, w := range kr.Spec.RotationWindows {
		specs[i] = fmt.Sprintf("%s (%s) for %s", w.Schedule, cmp.Or(w.TimeZone, "UTC"), shortDuration(w.Duration.Duration))
	}
	windows := "windows: " + strings.Join(specs, ", ")
	w := kr.Status.NextWindow
	if w == nil {
		return "- (" + windows + ")"
	}
	state := "opens " + stamp(w.OpensAt.Time, now)
	if !w.OpensAt.After(now) {
		state = "open since " + stamp(w.OpensAt.Time, now)
	}
	return fmt.Sprintf("%s, closes %s (%s)", state, stamp(w.ClosesAt.Time, now), windows)
}

// shortDuration is d as Go writes it without its trailing zero units: 2h, 1h30m, 90m stays 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func lastRotationLine(st mrtrv1alpha1.MRTRKeyringStatus, now time.Time) string {
	if st.LastRotationTime == nil {
		return "never"
	}
	return fmt.Sprintf("%s; %d completed", stamp(st.LastRotationTime.Time, now), st.RotationsCompleted)
}

// keySourceLine is the source Secret of a keyring with spec.keySource type Secret, the source
// version in service and since when, the version the source holds (when it is another), the
// versions skipped and retired, and the KeySourceReady condition's message when the source is
// refused: what status says, recomputing no rule.
func keySourceLine(kr *mrtrv1alpha1.MRTRKeyring, cluster bool, now time.Time) string {
	src := kr.Spec.KeySource.Secret
	where := "in the keyring's namespace"
	if cluster {
		where = "in the operator's namespace"
	}
	dataKey := src.Key
	if dataKey == "" {
		dataKey = "key"
	}
	line := fmt.Sprintf("Secret %s (%s, data key %s)", src.Name, where, dataKey)
	ks := kr.Status.KeySource
	switch {
	case ks == nil:
		return line + "; not read yet"
	case ks.Version != "" && ks.InServiceSince != nil:
		line += fmt.Sprintf("; version %s in service since %s", ks.Version, stamp(ks.InServiceSince.Time, now))
	case ks.Version != "":
		line += "; version " + ks.Version + " in service"
	default:
		line += "; no source version in service"
	}
	if ks.ObservedVersion != "" && ks.ObservedVersion != ks.Version {
		line += "; the source holds version " + ks.ObservedVersion
	}
	if len(ks.SkippedVersions) > 0 {
		line += "; skipped " + strings.Join(ks.SkippedVersions, ", ")
	}
	if n := len(ks.Retired); n > 0 {
		line += fmt.Sprintf("; %d retired (latest %s)", n, ks.Retired[n-1].Version)
	}
	if c := meta.FindStatusCondition(kr.Status.Conditions, mrtrv1alpha1.ConditionKeySourceReady); c != nil && c.Status == metav1.ConditionFalse {
		line += fmt.Sprintf("; refused (%s): %s", c.Reason, oneLine(c.Message))
	}
	return line
}
