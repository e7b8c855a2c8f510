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
	"testing"
	"time"
)

// The id lists (RevokedKeysAnnotation, HandledRevokeAnnotation, status.lastHandledRevokeRequest)
// read back what FormatIDs writes, blanks and spaces dropped, in order.
func TestIDLists(t *testing.T) {
	if got := ParseIDs(" k1,, *incident-4 ,k2,"); !slices.Equal(got, []string{"k1", "*incident-4", "k2"}) {
		t.Errorf("ParseIDs = %q", got)
	}
	if ParseIDs("") != nil || FormatIDs(nil) != "" {
		t.Error("an empty list is no ids, and no ids an empty value")
	}
	ids := []string{"k20260806-120000", "*2026-12-03T05:32:46Z"}
	if v := FormatIDs(ids); v != "k20260806-120000,*2026-12-03T05:32:46Z" || !slices.Equal(ParseIDs(v), ids) {
		t.Errorf("FormatIDs = %q, which does not read back", v)
	}
}

func TestParseRevokeRequests(t *testing.T) {
	got := ParseRevokeRequests(" k1, 7:k2,,*incident-4 ,12:*2026-12-03T05:32:46Z,07:k3,0:k4,x:k5,7:k2,k1,1234567890123456789:k6")
	want := []RevokeRequest{
		{Target: "k1"}, {Sequence: 7, Target: "k2"}, {Target: "*incident-4"}, {Sequence: 12, Target: "*2026-12-03T05:32:46Z"},
		// Not a positive number of at most 18 digits: unnumbered, and then no key id (the operator refuses it).
		{Target: "07:k3"}, {Target: "0:k4"}, {Target: "x:k5"}, {Target: "1234567890123456789:k6"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if s := FormatRevokeRequests(want[:4]); s != "k1,7:k2,*incident-4,12:*2026-12-03T05:32:46Z" {
		t.Errorf("formatted %q", s)
	}
	if !want[3].RevokesAll() || want[1].RevokesAll() || LastRevokeSequence(want) != 12 || LastRevokeSequence(nil) != 0 {
		t.Error("RevokesAll or LastRevokeSequence")
	}
}

func TestPendingRevokeRequests(t *testing.T) {
	rs := ParseRevokeRequests("k1,*a,3:k3,4:*b,5:k5")
	got := PendingRevokeRequests(rs, 4, []string{"k1"})
	if want := ParseRevokeRequests("*a,5:k5"); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAppendRevokeRequests(t *testing.T) {
	cases := []struct {
		value   string
		handled int64
		targets []string
		want    string
	}{
		{"", 0, []string{"k1"}, "1:k1"},
		// Numbered on from the status, when the annotation holds none (pruned).
		{"", 41, []string{"k1", "*"}, "42:k1,43:*"},
		// Handled ones are pruned, unhandled and unnumbered kept, in order.
		{"k0,*old,5:k5,6:k6,7:*x", 6, []string{"k8"}, "k0,*old,7:*x,8:k8"},
		// On from the highest the annotation holds, above the status.
		{"9:k9", 3, []string{"k10"}, "9:k9,10:k10"},
		// Nothing to append: still pruned.
		{"1:k1", 1, nil, ""},
	}
	for _, c := range cases {
		got, added := AppendRevokeRequests(c.value, c.handled, c.targets...)
		if got != c.want || len(added) != len(c.targets) {
			t.Errorf("AppendRevokeRequests(%q, %d, %v) = %q, %v; want %q", c.value, c.handled, c.targets, got, added, c.want)
		}
	}
}

func TestRotateRequests(t *testing.T) {
	now := time.Date(2026, 12, 3, 5, 32, 46, 123, time.FixedZone("x", 3600))
	if v := NewRotateRequest(now); v != "2026-12-03T04:32:46.000000123Z" {
		t.Errorf("NewRotateRequest = %q", v)
	}
	if RotateRequested("") || RotateRequested("a", "b", "a") || !RotateRequested("a", "b", "") {
		t.Error("RotateRequested")
	}
	if PhaseStable.UnderWay() || Phase("").UnderWay() || !PhaseRevoking.UnderWay() || !PhaseAccepting.UnderWay() {
		t.Error("UnderWay")
	}
}
