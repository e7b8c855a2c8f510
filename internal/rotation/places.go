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
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// A place is where consumers of a keyring run and read it from a Secret of their own: a namespace
// selected by a ClusterMRTRKeyring, which holds a copy of the keyring Secret. An MRTRKeyring has no
// places (Input.Places is empty): its consumers read Input.Secret itself. A ClusterMRTRKeyring's
// Input.Secret is the lead Secret in the operator's namespace, which no consumer reads and no
// tenant writes; each copy is only ever compared with it, never read back as the truth, since the
// tenants of its namespace may write to it.
//
// The rules, all of them here and in observeDelivery:
//   - whose the Secret in a place is, from its raw facts (Place.conflict): a copy is this keyring's
//     when it carries ClusterKeyringLabel with its name and no live claim of another keyring; one
//     of another type, or immutable, can never be written, and is a conflict too;
//   - a place is rotated unless it is being deleted (it never blocks a phase), its Secret is a
//     conflict (never written; reported), or the API server refused to create its Secret (nothing
//     there holds a keyring that could reject a token; the write is retried each pass);
//   - every rotated place whose copy differs from the lead Secret is written (Decision.CopyTo), after
//     the lead Secret and the status, so that a pass killed between copies resumes from the lead
//     Secret and writes exactly the copies still behind;
//   - a phase that waits for its keyring to reach every pod also waits for every rotated copy to
//     hold it, and a pod counts by the write of its own place's copy: an acknowledgement by that
//     write's time, a pod by its creation after it, a Restart rollout by its stamp written after it;
//   - a place's workloads are stamped, and its pods evicted, only while its copy holds the
//     keyring they must run (or is written with it in the same pass, for the stamp): a refused or
//     failed copy write never restarts pods onto the keyring it failed to replace;
//   - a copy whose write the API server refused holds the phase, and stalls it after
//     rolloutDeadline (its pods lack the keyring);
//   - in WaitingTTL, a place behind (one that joined again holding an older keyring) restarts the
//     TTL wait from the time its pods run the phase's keyring: they may have sealed with the old
//     primary until then;
//   - a namespace no longer selected that holds a copy this keyring wrote (its uid on the copy) is
//     Left: not rotated, its Secret kept (servers there may still seal with it), reported by a
//     Warning that names the keys it holds; with spec.onLeave Rekey, a rotation to a fresh key
//     starts as soon as the keyring is Stable, dropping the staged key the namespace holds.
//
//   - a place in a member cluster the operator cannot reach (Place.Unreachable) is rotated but
//     never caught up: its copy is unknown, so it is behind in every phase that waits for the
//     copies (nothing is removed, no key it may lack is made primary, Accepting cannot pass), it
//     is never written, stamped or evicted, and it stalls the phase after rolloutDeadline with a
//     message naming it and why; once reachable again, its copy is written from the lead Secret.
//     The shell gives an unreachable member one place of its own name when it cannot list its
//     namespaces.
//
// Nothing here reads a namespace's fields, so places in other clusters are added by the shell,
// which names them MEMBER/NAMESPACE: a place name may hold a "/", a pod or workload name not.

// Place is one place as observed: raw facts only, which the rules above judge.
type Place struct {
	// Name is the namespace; UID its uid.
	Name, UID string
	// Copy is the Secret of the keyring's name there, as read.
	Copy SecretObservation
	// Ownership is what that Secret says of whose it is.
	Ownership Ownership
	// Terminating: the namespace is being deleted.
	Terminating bool
	// WriteRefused, when not empty, is how the API server refused the operator's last write of the
	// Secret there ("Forbidden: ...", with its reason first): the shell remembers it until a write
	// succeeds or the Secret changes.
	WriteRefused string
	// Unreachable, when not empty, says why the member cluster of the place cannot be reached
	// (never a credential): its Copy is unknown.
	Unreachable string
	// UnreachableSince is when the member was lost (status.members[].lastTransitionTime), zero
	// when unknown: a due rotation it holds in Stable has no phase start to count rolloutDeadline
	// from (heldByUnreachable).
	UnreachableSince time.Time
	// Pending: the place is not seen yet, and Unreachable says why: its member is connecting (the
	// operator started, or the member's kubeconfig changed), or its namespace's cache in the member
	// is syncing (it just joined). It is held as an unreachable place is (no key it may still need
	// is removed, none it may lack seals, nothing is written there), while the other places go on,
	// a revocation among them; but it is not reported as lost: no MemberUnreachable event, no
	// PartiallyReady, and status keeps what it said of the namespace. Within the member's sync
	// timeout it is either seen or Unreachable.
	Pending bool
}

// Ownership is what a Secret in a place says of whose it is: its labels and annotations, and what
// the shell found of the keyrings they name.
type Ownership struct {
	// Keyring is its KeyringLabel: an MRTRKeyring of the namespace owns it while that exists.
	Keyring      string
	KeyringClaim Claim
	// ClusterKeyring is its ClusterKeyringLabel; ClusterClaim what was found of that
	// ClusterMRTRKeyring when it is not this one.
	ClusterKeyring string
	ClusterClaim   Claim
	// WriterUID is its ClusterKeyringUIDAnnotation: the uid of the ClusterMRTRKeyring that wrote it.
	WriterUID string
	// Immutable: the Secret is marked immutable, so no write can change it.
	Immutable bool
}

// Claim is what was found of a keyring that an object names as its owner.
type Claim struct {
	Exists, Deleting bool
}

// live reports whether the claim holds: its keyring exists and is not on its way out.
func (c Claim) live() bool { return c.Exists && !c.Deleting }

// conflict says, when the Secret in p is not one this keyring may write, why ("belongs to
// MRTRKeyring web", "is immutable"); "" when it is (or there is none). self is the keyring's name.
func (p Place) conflict(self string) string {
	if p.Copy.State == SecretAbsent || p.Unreachable != "" {
		return ""
	}
	o := p.Ownership
	switch {
	case o.Keyring != "" && o.KeyringClaim.live():
		return "belongs to MRTRKeyring " + o.Keyring
	case o.ClusterKeyring == self:
	case o.ClusterKeyring != "" && o.ClusterClaim.live():
		return "belongs to ClusterMRTRKeyring " + o.ClusterKeyring
	default:
		// A copy of a cluster keyring that is gone stays its servers', not ours to take.
		return fmt.Sprintf("belongs to no keyring (it is not labelled %s=%s)", mrtrv1alpha1.ClusterKeyringLabel, self)
	}
	switch {
	case p.Copy.State == SecretWrongType:
		return "is not a keyring Secret: " + p.Copy.Problem
	case o.Immutable:
		return "is immutable, so it can never be written again"
	}
	return ""
}

// createRefused reports whether the API server refused to create the place's Secret: no pod there
// holds a keyring of ours, so none can reject a token sealed with it.
func (p Place) createRefused() bool {
	return p.WriteRefused != "" && p.Copy.State == SecretAbsent && p.Unreachable == ""
}

// rotated reports whether the place takes part in the rotation.
func (p Place) rotated(self string) bool {
	return !p.Terminating && p.conflict(self) == "" && !p.createRefused()
}

// holds reports whether the place's copy holds the keyring of fingerprint fp: never while its
// member is unreachable, since what it held when last seen may have changed.
func (p Place) holds(fp string) bool {
	return p.Unreachable == "" && p.Copy.State == SecretValid && p.Copy.Keyring.Fingerprint() == fp
}

// rotatedPlaces filters in to what the rotation covers: the workloads and pods of the places it does
// not rotate are left out, so no later stage counts them.
func rotatedPlaces(in Input) Input {
	if len(in.Places) == 0 {
		return in
	}
	skip := map[string]bool{}
	for _, p := range in.Places {
		if !p.rotated(in.Name) {
			skip[p.Name] = true
		}
	}
	if len(skip) == 0 {
		return in
	}
	in.Workloads = slices.DeleteFunc(slices.Clone(in.Workloads), func(w Workload) bool { return skip[w.Place] })
	in.SelectedPods = slices.DeleteFunc(slices.Clone(in.SelectedPods), func(p Pod) bool { return skip[p.Place] })
	return in
}

// place returns the place of that name, false when there is none.
func (in Input) place(name string) (Place, bool) {
	i := slices.IndexFunc(in.Places, func(p Place) bool { return p.Name == name })
	if i < 0 {
		return Place{}, false
	}
	return in.Places[i], true
}

// placeWrite is what the acceptance rule knows of the write of place's copy (keyringWrite's, for
// the pods there): what the copy holds, and when it came to hold it, zero when unknown.
func placeWrite(in Input, place string) written {
	p, ok := in.place(place)
	if !ok || p.Copy.State != SecretValid || !p.Copy.writtenByUs() || p.Copy.WrittenAt.IsZero() {
		return written{}
	}
	return keyringWrite(Input{Secret: p.Copy, Status: in.Status})
}

// leftPlaces are the places of in.Left that hold a copy this keyring wrote (its uid on it): a
// Secret that anyone labelled in a namespace never selected is none of ours.
func leftPlaces(in Input) []Place {
	var out []Place
	for _, p := range in.Left {
		if in.UID != "" && p.Ownership.WriterUID == in.UID && p.Ownership.ClusterKeyring == in.Name {
			out = append(out, p)
		}
	}
	return out
}

// copyTo are the places whose copy differs from what the lead Secret holds after the move: its
// keyring, the token lifetime it declares, and this keyring's uid. The rotated ones, and those
// whose creation was refused (retried each pass). None when the lead Secret is not usable
// (another keyring's, invalid, or of another type): then there is nothing to copy.
func copyTo(f facts, o outcome) []string {
	in := f.in
	if len(in.Places) == 0 || o.conflict {
		return nil
	}
	var fp string
	switch {
	case o.write != nil:
		fp = o.write.keyring.Fingerprint()
	case in.Secret.State == SecretValid && in.Secret.writtenByUs():
		fp = in.Secret.Keyring.Fingerprint()
	default:
		return nil
	}
	var out []string
	for _, p := range in.Places {
		if p.Unreachable != "" || !p.rotated(in.Name) && (!p.createRefused() || p.Terminating) {
			continue
		}
		if !p.holds(fp) || p.Copy.TokenTTL != in.Settings.TokenTTL || !p.Copy.writtenByUs() || p.Ownership.WriterUID != in.UID {
			out = append(out, p.Name)
		}
	}
	return out
}

// placeHolds reports whether the copy of place holds the keyring of fingerprint fp; true with no
// place (an MRTRKeyring's consumers read the Secret itself).
func (in Input) placeHolds(place, fp string) bool {
	if place == "" {
		return true
	}
	p, ok := in.place(place)
	return ok && p.holds(fp)
}

// gatePlaces keeps a place's workloads unstamped while its copy does not hold the stamp's
// keyring: they are stamped only where the copy holds it, or where this pass writes it and no
// write there was refused (the shell drops the stamps of a place whose write then fails). A
// rollout onto a stale copy would restart the pods onto the old keyring. (restartOverdue evicts
// only where the copy holds the target keyring, for the same reason.)
func gatePlaces(f facts, o outcome) outcome {
	if len(f.in.Places) == 0 || o.stamp == "" {
		return o
	}
	copied := map[string]bool{}
	for _, name := range o.copyTo {
		if p, _ := f.in.place(name); p.WriteRefused == "" {
			copied[name] = true
		}
	}
	o.stampTargets = slices.DeleteFunc(slices.Clone(o.stampTargets), func(ref string) bool {
		place := refPlace(ref)
		return place != "" && !f.in.placeHolds(place, o.stamp) && !copied[place]
	})
	return o
}

// pendingRekey is status.namespaces.pendingRekey after this pass's observations: what it said,
// and the namespaces that left since, when spec.onLeave is Rekey.
func pendingRekey(in Input) string {
	pending := in.Namespaces.PendingRekey
	if in.OnLeave != mrtrv1alpha1.OnLeaveRekey {
		return pending
	}
	var left []string
	for _, p := range newlyLeft(in) {
		left = append(left, p.Name)
	}
	if len(left) == 0 {
		return pending
	}
	s := fmt.Sprintf("namespace %s left (spec.onLeave: Rekey)", joinSome(left, ", ", len(left)))
	if pending != "" {
		s = pending + "; " + s
	}
	return Truncate(s, 1024)
}

// listed is status.namespaces.items as last written, by place name (MEMBER/NAMESPACE with
// members).
func listed(in Input) map[string]mrtrv1alpha1.NamespaceStatus {
	was := make(map[string]mrtrv1alpha1.NamespaceStatus, len(in.Namespaces.Items))
	for _, n := range in.Namespaces.Items {
		was[placeName(n.Cluster, n.Name)] = n
	}
	return was
}

// newlyLeft are the left places that status did not list as Left yet.
func newlyLeft(in Input) []Place {
	was := listed(in)
	var out []Place
	for _, p := range leftPlaces(in) {
		if n, listed := was[p.Name]; listed && n.State != mrtrv1alpha1.NamespaceLeft {
			out = append(out, p)
		}
	}
	return out
}

// placeEvents are the events of places that changed state since the status was written: a copy
// found to be another's or unwritable, a write refused, a namespace that joined (newly selected,
// or created again under a selected name) and one that left.
func placeEvents(f facts, o outcome) outcome {
	in := f.in
	if len(in.Places) == 0 && len(in.Left) == 0 {
		return o
	}
	was := listed(in)
	copied := map[string]bool{}
	for _, name := range o.copyTo {
		copied[name] = true
	}
	for _, p := range in.Places {
		prev, listed := was[p.Name]
		switch c := p.conflict(in.Name); {
		case p.Terminating:
		case c != "":
			if prev.State != mrtrv1alpha1.NamespaceConflict {
				o = o.event(corev1Warning, mrtrv1alpha1.ReasonConflict, "Rotate",
					"Secret %s/%s %s: it is never overwritten, and namespace %s is not rotated until it is removed",
					p.Name, in.SecretName, c, p.Name)
			}
		case p.Unreachable != "":
			if prev.State != mrtrv1alpha1.NamespaceUnreachable && !p.Pending {
				o = o.event(corev1Warning, mrtrv1alpha1.ReasonMemberUnreachable, "Rotate", "%s cannot be reached (%s): %s",
					p.Name, p.Unreachable, unreachableEffect)
			}
		case p.WriteRefused != "":
			if prev.State != mrtrv1alpha1.NamespaceWriteRefused {
				o = o.event(corev1Warning, mrtrv1alpha1.EventWriteRefused, "Rotate", "the write of Secret %s/%s was refused (%s): %s",
					p.Name, in.SecretName, p.WriteRefused, refusedEffect(p))
			}
		case p.Copy.State == SecretAbsent && copied[p.Name] && (!listed || prev.UID != p.UID):
			o = o.event(corev1Normal, mrtrv1alpha1.EventNamespaceJoined, "Rotate", "namespace %s (uid %s) joined: Secret %s is written there", p.Name, p.UID, in.SecretName)
		}
	}
	for _, p := range newlyLeft(in) {
		held := "no valid keyring"
		if p.Copy.State == SecretValid {
			held = "keys " + strings.Join(p.Copy.Keyring.IDs(), ", ")
		}
		cut := "set spec.onLeave to Rekey beforehand to replace them at once"
		if in.OnLeave == mrtrv1alpha1.OnLeaveRekey {
			cut = "spec.onLeave is Rekey: a rotation to a fresh key replaces them"
		}
		o = o.event(corev1Warning, mrtrv1alpha1.EventNamespaceLeft, "Rotate",
			"namespace %s is no longer selected: it is not rotated any more, a revocation no longer reaches it, and its Secret %s stays, holding %s, which every selected namespace still accepts; "+
				"whoever reads Secrets there can seal tokens they accept until those keys are retired: to cut them off now, kubectl mrtr revoke cmkr/%s KEYID...; %s",
			p.Name, in.SecretName, held, in.Name, cut)
	}
	return o
}

// unreachableEffect says what an unreachable member means for the rotation.
const unreachableEffect = "the rotation waits for it (and stalls after spec.rolloutDeadline): no key is removed and no key it may lack is made primary; its copies are written once it is reached"

// refusedEffect says what a refused write means for the place.
func refusedEffect(p Place) string {
	if p.createRefused() {
		return "the namespace has no keyring Secret, so it is not rotated; the write is retried"
	}
	return "its pods lack the keyring, so the rotation waits for it (and stalls after spec.rolloutDeadline); its workloads are not restarted meanwhile"
}

// namespacesStatus is status.namespaces: the counts, and at most MaxNamespacesListed namespaces,
// those behind first.
func namespacesStatus(f facts, o outcome) mrtrv1alpha1.NamespacesStatus {
	in, v := f.in, o.progress.v
	was := listed(in)
	var ns mrtrv1alpha1.NamespacesStatus
	if !o.rekeyed {
		ns.PendingRekey = f.rekey
	}
	behind := map[string][]string{} // what each place waits for
	for _, name := range v.behind {
		behind[name] = append(behind[name], "its Secret does not hold keyring "+v.target+" yet")
	}
	for _, t := range v.targets {
		if t.Found && !t.upToDate {
			behind[t.Place] = append(behind[t.Place], string(t.Kind)+"/"+t.Name+" does not run it yet")
		}
	}
	for _, p := range v.selectedLaggards {
		behind[p.Place] = append(behind[p.Place], "pod "+p.Name+" does not run it yet")
	}
	groups := map[mrtrv1alpha1.NamespaceState][]mrtrv1alpha1.NamespaceStatus{}
	add := func(s mrtrv1alpha1.NamespaceStatus) { groups[s.State] = append(groups[s.State], s) }
	for _, p := range in.Places {
		item := namespaceItem(p)
		switch c := p.conflict(in.Name); {
		case p.Terminating:
			continue
		case c != "":
			ns.Conflicts++
			item.State, item.Message = mrtrv1alpha1.NamespaceConflict, fmt.Sprintf("Secret %s %s: it is never overwritten", in.SecretName, c)
		case p.Pending && was[p.Name].State != "" && was[p.Name].State != mrtrv1alpha1.NamespaceLeft:
			// Not seen yet since the operator started: as status last said.
			item.State, item.Message = was[p.Name].State, was[p.Name].Message
			switch item.State {
			case mrtrv1alpha1.NamespaceUpToDate:
				ns.UpToDate++
			case mrtrv1alpha1.NamespaceConflict:
				ns.Conflicts++
			case mrtrv1alpha1.NamespaceWriteRefused:
				ns.Refused++
			}
		case p.Unreachable != "":
			item.State, item.Message = mrtrv1alpha1.NamespaceUnreachable, Truncate(p.Unreachable+": "+unreachableEffect, 1024)
		case p.WriteRefused != "":
			ns.Refused++
			item.State, item.Message = mrtrv1alpha1.NamespaceWriteRefused, Truncate(p.WriteRefused+": "+refusedEffect(p), 1024)
		case len(behind[p.Name]) > 0:
			item.State, item.Message = mrtrv1alpha1.NamespaceBehind, joinSome(behind[p.Name], "; ", len(behind[p.Name]))
		default:
			ns.UpToDate++
			item.State = mrtrv1alpha1.NamespaceUpToDate
		}
		add(item)
		ns.Selected++
	}
	for _, p := range leftPlaces(in) {
		ns.Left++
		item := namespaceItem(p)
		item.State, item.Message = mrtrv1alpha1.NamespaceLeft, "no longer selected: not rotated, and no revocation reaches it; its Secret stays"
		add(item)
	}
	for _, s := range []mrtrv1alpha1.NamespaceState{mrtrv1alpha1.NamespaceUnreachable, mrtrv1alpha1.NamespaceBehind, mrtrv1alpha1.NamespaceWriteRefused, mrtrv1alpha1.NamespaceConflict,
		mrtrv1alpha1.NamespaceLeft, mrtrv1alpha1.NamespaceUpToDate} {
		g := groups[s]
		slices.SortFunc(g, func(a, b mrtrv1alpha1.NamespaceStatus) int {
			return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name))
		})
		ns.Items = append(ns.Items, g[:min(len(g), mrtrv1alpha1.MaxNamespacesListed-len(ns.Items))]...)
	}
	if len(ns.Items) == 0 {
		ns.Items = nil
	}
	return ns
}

// namespaceItem is p as status.namespaces.items names it: a place of a member (MEMBER/NAMESPACE)
// is its namespace, with the member as its cluster.
func namespaceItem(p Place) mrtrv1alpha1.NamespaceStatus {
	cluster, ns, ok := strings.Cut(p.Name, "/")
	if !ok {
		cluster, ns = "", p.Name
	}
	return mrtrv1alpha1.NamespaceStatus{Name: ns, Cluster: cluster, UID: p.UID}
}

// Truncate cuts s to at most n bytes, on a rune boundary, ending in "..." when it cut: for the
// messages of status, whose fields the API bounds.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// partiallyReady is the PartiallyReady condition of a keyring with places: True while some
// selected namespaces are in conflict or refuse the write, naming them and why.
func partiallyReady(f facts) *metav1.Condition {
	in := f.in
	if len(in.Places) == 0 {
		return nil
	}
	var failing []string
	reason := mrtrv1alpha1.ReasonConflict
	for _, p := range in.Places {
		switch c := p.conflict(in.Name); {
		case p.Terminating:
		case c != "":
			failing = append(failing, fmt.Sprintf("%s (Secret %s)", p.Name, c))
		case p.Pending:
		case p.Unreachable != "":
			failing = append(failing, fmt.Sprintf("%s (unreachable: %s)", p.Name, p.Unreachable))
			reason = mrtrv1alpha1.ReasonMemberUnreachable
		case p.WriteRefused != "":
			failing = append(failing, fmt.Sprintf("%s (%s)", p.Name, p.WriteRefused))
			if reason != mrtrv1alpha1.ReasonMemberUnreachable {
				reason = mrtrv1alpha1.ReasonWriteRefused
			}
		}
	}
	if len(failing) == 0 {
		c := condition(mrtrv1alpha1.ConditionPartiallyReady, false, mrtrv1alpha1.ReasonAllNamespacesReady, "every selected namespace takes part in the rotation")
		return &c
	}
	c := condition(mrtrv1alpha1.ConditionPartiallyReady, true, reason, Truncate(fmt.Sprintf("%d of %d selected namespaces do not take part: %s",
		len(failing), len(in.Places), joinSome(failing[:min(len(failing), maxNamed+1)], "; ", len(failing))), 32768))
	return &c
}

// copiesVerdict is what a phase waits for while copies are behind: the places named, at most
// maxNamed, the rest counted.
func copiesVerdict(v delivery, purpose string) *verdict {
	return &verdict{what: mrtrv1alpha1.WaitDelivery, forWhom: v.behind[:min(len(v.behind), maxNamed)],
		message: fmt.Sprintf("the Secret in %d namespaces to hold keyring %s (%s)%s", len(v.behind), v.target,
			joinSome(v.behind[:min(len(v.behind), maxNamed+1)], ", ", len(v.behind)), purpose)}
}

// copiesBlocked is the stall of a phase whose copies do not hold its keyring by rolloutDeadline:
// WriteRefused when the API server refuses some of the writes, naming why.
func copiesBlocked(f facts, v delivery, deadline time.Duration) *stall {
	if len(v.behind) == 0 {
		return nil
	}
	reason := mrtrv1alpha1.ReasonRolloutDeadlineExceeded
	named := make([]string, 0, min(len(v.behind), maxNamed+1))
	for _, name := range v.behind[:min(len(v.behind), maxNamed+1)] {
		switch p, _ := f.in.place(name); {
		case p.Unreachable != "":
			// An unreachable member outranks a refused write: no write can be tried there.
			reason = mrtrv1alpha1.ReasonMemberUnreachable
			name += " (unreachable: " + p.Unreachable + ")"
		case p.WriteRefused != "":
			if reason != mrtrv1alpha1.ReasonMemberUnreachable {
				reason = mrtrv1alpha1.ReasonWriteRefused
			}
			name += " (" + p.WriteRefused + ")"
		}
		named = append(named, name)
	}
	return &stall{reason, fmt.Sprintf("the Secret in %d namespaces does not hold keyring %s within %s: %s; the rotation continues once it does, and those namespaces' workloads are not restarted meanwhile",
		len(v.behind), v.target, deadline, joinSome(named, ", ", len(v.behind)))}
}

// placeName qualifies name with its place, when it has one.
func placeName(place, name string) string {
	if place == "" {
		return name
	}
	return place + "/" + name
}

// PlacedPod splits a pod name of Decision.Evict or Decision.Nudge into its place ("" for none) and
// its name: a pod's name holds no "/", a place's may (MEMBER/NAMESPACE), so the last one splits.
func PlacedPod(qualified string) (place, name string) {
	if i := strings.LastIndex(qualified, "/"); i >= 0 {
		return qualified[:i], qualified[i+1:]
	}
	return "", qualified
}

// refPlace is the place of a workload reference of Decision.StampTargets ("" for none): what
// precedes its "Kind/name", which may itself hold a "/" (MEMBER/NAMESPACE).
func refPlace(qualified string) string {
	kindAt := strings.LastIndex(qualified, "/")
	if kindAt < 0 {
		return ""
	}
	placeEnd := strings.LastIndex(qualified[:kindAt], "/")
	if placeEnd < 0 {
		return ""
	}
	return qualified[:placeEnd]
}

// PlacedRef is a workload reference ("Kind/name") as Decision.StampTargets names it in place.
func PlacedRef(place, ref string) string { return placeName(place, ref) }
