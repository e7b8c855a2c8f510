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

package v1alpha1

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// The formats of the request annotations, RotateAnnotation and RevokeAnnotation, and of the lists
// that record what was handled and revoked (ParseIDs), in one place: the operator's core, the
// kubectl plugin and the test harnesses read and write them only through these helpers, so that
// they cannot drift apart.

// NewRotateRequest is a RotateAnnotation value for a request made at now: the time to the
// nanosecond, so that it differs from every earlier request and starts one rotation.
func NewRotateRequest(now time.Time) string { return now.UTC().Format(time.RFC3339Nano) }

// RotateRequested reports whether value, a RotateAnnotation value, asks for a rotation that none
// of handled (status.lastHandledRotateRequest, the Secret's HandledRotateAnnotation) started yet.
func RotateRequested(value string, handled ...string) bool {
	return value != "" && !slices.Contains(handled, value)
}

// RevokeRequest is one request of a RevokeAnnotation value, "SEQUENCE:TARGET" or, unnumbered,
// "TARGET". TARGET is a key id, or RevokeAll and an optional note ("*incident-42").
//
// A numbered request is handled once its sequence is at or below status.lastHandledRevokeSequence
// (and the Secret's HandledRevokeSequenceAnnotation): the operator remembers one number, however
// many requests a keyring sees, and a handled request may be pruned from the annotation (or
// re-applied by GitOps) without being handled again. kubectl mrtr revoke numbers its requests on
// from the highest sequence the keyring knows (AppendRevokeRequests).
//
// An unnumbered request, the only kind before sequences (and still what a person may write by
// hand), is handled once and remembered (status.lastHandledRevokeRequest) for as long as the
// annotation holds it: removed and written again, it is a new request. Nothing prunes one.
// +kubebuilder:object:generate=false
type RevokeRequest struct {
	// Sequence orders the request; 0 for an unnumbered one.
	Sequence int64
	// Target is what it revokes: a key id, or RevokeAll and a note.
	Target string
}

// revokeSequenceSeparator ends the sequence of a numbered request. No key id holds it (ids are
// A-Za-z0-9_-), but a RevokeAll note may ("*2026-12-03T05:32:46Z"), so only digits before it make a
// sequence.
const revokeSequenceSeparator = ":"

// String is the request as the annotation holds it.
func (r RevokeRequest) String() string {
	if r.Sequence == 0 {
		return r.Target
	}
	return strconv.FormatInt(r.Sequence, 10) + revokeSequenceSeparator + r.Target
}

// RevokesAll reports whether the request revokes every key.
func (r RevokeRequest) RevokesAll() bool { return strings.HasPrefix(r.Target, RevokeAll) }

// ParseRevokeRequest reads one request. A prefix that is not a positive decimal number followed by
// the separator leaves the request unnumbered: its target is then the whole item.
func ParseRevokeRequest(item string) RevokeRequest {
	item = strings.TrimSpace(item)
	seq, target, ok := strings.Cut(item, revokeSequenceSeparator)
	if !ok || seq == "" || seq[0] == '0' || len(seq) > 18 || strings.Trim(seq, "0123456789") != "" {
		return RevokeRequest{Target: item}
	}
	n, _ := strconv.ParseInt(seq, 10, 64) // at most 18 digits: no overflow
	return RevokeRequest{Sequence: n, Target: target}
}

// listSeparator separates the items of every list an annotation or a status string holds: the
// requests of a RevokeAnnotation value, and the ids of ParseIDs' lists.
const listSeparator = ","

// ParseIDs reads a list of key ids, or of unnumbered revoke requests (RevokeRequest.Target), comma
// separated, in order, blanks dropped: RevokedKeysAnnotation, and HandledRevokeAnnotation and
// status.lastHandledRevokeRequest. FormatIDs writes one.
func ParseIDs(value string) []string {
	var ids []string
	for id := range strings.SplitSeq(value, listSeparator) {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// FormatIDs is the list value that holds ids, which ParseIDs reads back.
func FormatIDs(ids []string) string { return strings.Join(ids, listSeparator) }

// ParseRevokeRequests are the requests of a RevokeAnnotation value, comma separated, in order;
// blanks are dropped and a request written twice is kept once.
func ParseRevokeRequests(value string) []RevokeRequest {
	var rs []RevokeRequest
	for item := range strings.SplitSeq(value, listSeparator) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if r := ParseRevokeRequest(item); !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	return rs
}

// FormatRevokeRequests is the RevokeAnnotation value that holds rs.
func FormatRevokeRequests(rs []RevokeRequest) string {
	items := make([]string, len(rs))
	for i, r := range rs {
		items[i] = r.String()
	}
	return strings.Join(items, listSeparator)
}

// LastRevokeSequence is the highest sequence of rs, 0 when none is numbered.
func LastRevokeSequence(rs []RevokeRequest) int64 {
	var last int64
	for _, r := range rs {
		last = max(last, r.Sequence)
	}
	return last
}

// PendingRevokeRequests are the requests of rs not handled yet: numbered above handledSequence, or
// unnumbered and not among handledUnnumbered.
func PendingRevokeRequests(rs []RevokeRequest, handledSequence int64, handledUnnumbered []string) []RevokeRequest {
	var pending []RevokeRequest
	for _, r := range rs {
		switch {
		case r.Sequence > handledSequence:
			pending = append(pending, r)
		case r.Sequence == 0 && !slices.Contains(handledUnnumbered, r.Target):
			pending = append(pending, r)
		}
	}
	return pending
}

// AppendRevokeRequests is value with a request for each of targets appended, numbered on from both
// handledSequence (status.lastHandledRevokeSequence) and every sequence value holds, and without
// the numbered requests at or below handledSequence: those are handled, and pruning them keeps the
// annotation short however many requests a keyring sees. Unnumbered requests are kept (GitOps may
// re-apply one, and the operator would take it for new once it was gone). It returns the new value
// and the requests appended. Write it on the condition that the keyring is still as read (its
// resourceVersion, which a status update changes too): then no request is dropped and no sequence
// is given twice, however many writers append at once.
func AppendRevokeRequests(value string, handledSequence int64, targets ...string) (string, []RevokeRequest) {
	held := ParseRevokeRequests(value)
	next := max(handledSequence, LastRevokeSequence(held))
	kept := held[:0]
	for _, r := range held {
		if r.Sequence == 0 || r.Sequence > handledSequence {
			kept = append(kept, r)
		}
	}
	added := make([]RevokeRequest, len(targets))
	for i, t := range targets {
		next++
		added[i] = RevokeRequest{Sequence: next, Target: t}
	}
	return FormatRevokeRequests(append(kept, added...)), added
}
