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
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNudgeValueAlwaysChangesThePod(t *testing.T) {
	const fp = "0123456789abcdef"
	for _, tc := range []struct{ current, want string }{
		{"", fp + "/1"},
		{fp, fp + "/1"}, // an older operator's value, or anyone's
		{fp + "/1", fp + "/2"},
		{fp + "/41", fp + "/42"},
		{"fedcba9876543210/7", fp + "/1"}, // another keyring written before
		{fp + "/01", fp + "/1"},           // not one of ours: any value other than it does
		{fp + "/-3", fp + "/1"},
		{fp + "/x", fp + "/1"},
		{fp + "/" + strconv.Itoa(maxNudges), fp + "/1"},
		{fp + "/99999999999999999999999", fp + "/1"},
	} {
		got := nudgeValue(fp, tc.current)
		if got != tc.want {
			t.Errorf("nudgeValue(%q) = %q, want %q", tc.current, got, tc.want)
		}
		if got == tc.current {
			t.Errorf("nudgeValue(%q) does not change the pod", tc.current)
		}
	}
}

func TestAnAcceptedEvictionCountsUntilTheCacheShowsIt(t *testing.T) {
	var e evictions
	now := time.Date(2026, 8, 6, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-1", UID: "u-1"}}
	if e.pending(pod, now) {
		t.Fatal("a pod never evicted is pending")
	}
	e.accepted(pod.UID, now)
	if !e.pending(pod, now.Add(time.Second)) {
		t.Fatal("an accepted eviction the cache does not show yet is not pending")
	}
	again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-1", UID: "u-2"}}
	if e.pending(again, now.Add(time.Second)) {
		t.Fatal("a pod re-created under the same name is pending")
	}
	shown := pod.DeepCopy()
	shown.DeletionTimestamp = &metav1.Time{Time: now}
	if e.pending(shown, now.Add(2*time.Second)) || e.pending(pod, now.Add(2*time.Second)) {
		t.Fatal("still pending once the cache showed the pod terminating")
	}
	e.accepted(pod.UID, now)
	if e.pending(pod, now.Add(evictionMemory+time.Second)) {
		t.Fatal("pending past evictionMemory")
	}
}
