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
//   - a place is rotated unless it is being deleted (it never blocks a phase) or a Secret of that
//     name there is not this keyring's copy (Place.Owner: never overwritten; reported);
//   - every rotated place whose copy differs from the lead Secret is written (Decision.CopyTo), after
//     the lead Secret and the status, so that a pass killed between copies resumes from the lead
//     Secret and writes exactly the copies still behind;
//   - a phase that waits for its keyring to reach every pod also waits for every rotated copy to
//     hold it, and a pod counts by the write of its own place's copy;
//   - a namespace no longer selected that holds a copy (Input.Left) is not rotated and keeps its
//     Secret, which servers there may still seal with.
//
// A place is a namespace today; nothing here reads a namespace's fields, so places in other
// clusters would be added to the shell, not here.

// Place is one place as observed.
type Place struct {
	// Name is the namespace.
	Name string
	// Copy is the Secret of the keyring's name there, as read.
	Copy SecretObservation
	// Owner, when not empty, says whose that Secret is, when it is not this keyring's copy: "MRTRKeyring
	// web", "ClusterMRTRKeyring other", or "no keyring" (it does not carry ClusterKeyringLabel).
	Owner string
	// Terminating: the namespace is being deleted.
	Terminating bool
}

// rotated reports whether the place takes part in the rotation.
func (p Place) rotated() bool { return !p.Terminating && p.Owner == "" }

// holds reports whether the place's copy holds the keyring of fingerprint fp.
func (p Place) holds(fp string) bool {
	return p.Copy.State == SecretValid && p.Copy.Keyring.Fingerprint() == fp
}

// rotatedPlaces filters in to what the rotation covers: the workloads and pods of the places it does
// not rotate are left out, so no later stage counts them.
func rotatedPlaces(in Input) Input {
	if len(in.Places) == 0 {
		return in
	}
	skip := map[string]bool{}
	for _, p := range in.Places {
		if !p.rotated() {
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

// copyTo are the rotated places whose copy differs from what the lead Secret holds after the move:
// its keyring and the token lifetime it declares. None when the lead Secret is not usable (another
// keyring's, invalid, or of another type): then there is nothing to copy.
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
		if p.rotated() && (!p.holds(fp) || p.Copy.TokenTTL != in.Settings.TokenTTL || !p.Copy.writtenByUs()) {
			out = append(out, p.Name)
		}
	}
	return out
}

// placeEvents are the events of places that changed state since the status was written: a copy
// found to be another's, a namespace that left.
func placeEvents(f facts, o outcome) outcome {
	if len(f.in.Places) == 0 && len(f.in.Left) == 0 {
		return o
	}
	was := map[string]mrtrv1alpha1.NamespaceState{}
	for _, n := range f.in.Namespaces.Items {
		was[n.Name] = n.State
	}
	for _, p := range f.in.Places {
		if !p.Terminating && p.Owner != "" && was[p.Name] != mrtrv1alpha1.NamespaceConflict {
			o = o.event(corev1Warning, mrtrv1alpha1.ReasonConflict, "Rotate",
				"Secret %s/%s belongs to %s: it is never overwritten, and namespace %s is not rotated until it is removed",
				p.Name, f.in.SecretName, p.Owner, p.Name)
		}
	}
	for _, name := range f.in.Left {
		if s, listed := was[name]; listed && s != mrtrv1alpha1.NamespaceLeft {
			o = o.event(corev1Normal, mrtrv1alpha1.EventNamespaceLeft, "Rotate",
				"namespace %s is no longer selected: it is not rotated any more, and its Secret %s stays", name, f.in.SecretName)
		}
	}
	return o
}

// namespacesStatus is status.namespaces: the counts, and at most MaxNamespacesListed namespaces,
// those behind first.
func namespacesStatus(f facts, o outcome) mrtrv1alpha1.NamespacesStatus {
	in, v := f.in, o.progress.v
	var ns mrtrv1alpha1.NamespacesStatus
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
		switch {
		case p.Terminating:
			continue
		case p.Owner != "":
			ns.Conflicts++
			add(mrtrv1alpha1.NamespaceStatus{Name: p.Name, State: mrtrv1alpha1.NamespaceConflict,
				Message: fmt.Sprintf("Secret %s belongs to %s: it is never overwritten", in.SecretName, p.Owner)})
		case len(behind[p.Name]) > 0:
			add(mrtrv1alpha1.NamespaceStatus{Name: p.Name, State: mrtrv1alpha1.NamespaceBehind,
				Message: joinSome(behind[p.Name], "; ", len(behind[p.Name]))})
		default:
			ns.UpToDate++
			add(mrtrv1alpha1.NamespaceStatus{Name: p.Name, State: mrtrv1alpha1.NamespaceUpToDate})
		}
		ns.Selected++
	}
	for _, name := range in.Left {
		ns.Left++
		add(mrtrv1alpha1.NamespaceStatus{Name: name, State: mrtrv1alpha1.NamespaceLeft,
			Message: "no longer selected: not rotated; its Secret stays"})
	}
	for _, s := range []mrtrv1alpha1.NamespaceState{mrtrv1alpha1.NamespaceBehind, mrtrv1alpha1.NamespaceConflict,
		mrtrv1alpha1.NamespaceLeft, mrtrv1alpha1.NamespaceUpToDate} {
		g := groups[s]
		slices.SortFunc(g, func(a, b mrtrv1alpha1.NamespaceStatus) int { return cmp.Compare(a.Name, b.Name) })
		ns.Items = append(ns.Items, g[:min(len(g), mrtrv1alpha1.MaxNamespacesListed-len(ns.Items))]...)
	}
	if len(ns.Items) == 0 {
		ns.Items = nil
	}
	return ns
}

// copiesVerdict is what a phase waits for while copies are behind: the places named, at most
// maxNamed, the rest counted.
func copiesVerdict(v delivery, purpose string) *verdict {
	return &verdict{what: mrtrv1alpha1.WaitDelivery, forWhom: v.behind[:min(len(v.behind), maxNamed)],
		message: fmt.Sprintf("the Secret in %d namespaces to hold keyring %s (%s)%s", len(v.behind), v.target,
			joinSome(v.behind[:min(len(v.behind), maxNamed+1)], ", ", len(v.behind)), purpose)}
}

// placeName qualifies name with its place, when it has one.
func placeName(place, name string) string {
	if place == "" {
		return name
	}
	return place + "/" + name
}

// PlacedPod splits a pod name of Decision.Evict or Decision.Nudge into its place ("" for none) and
// its name: a pod's name holds no "/".
func PlacedPod(qualified string) (place, name string) {
	if place, name, ok := strings.Cut(qualified, "/"); ok {
		return place, name
	}
	return "", qualified
}

// PlacedRef is a workload reference ("Kind/name") as Decision.StampTargets names it in place.
func PlacedRef(place, ref string) string { return placeName(place, ref) }
