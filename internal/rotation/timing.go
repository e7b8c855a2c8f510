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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
)

// Time helpers every stage may use: the pass's time as status stores it, and the times a phase
// counts from.

// nowRef is the pass's time, as status stores times, in a pointer of its own.
func nowRef(f facts) *metav1.Time {
	t := f.now
	return &t
}

// later is now + d, as status stores times.
func later(now metav1.Time, d time.Duration) *metav1.Time {
	t := metav1.NewTime(now.Add(d))
	return &t
}

// phaseStart is when the phase in st began, now when not known.
func phaseStart(in Input, st mrtrv1alpha1.MRTRKeyringStatus) time.Time {
	if st.PhaseStartedAt == nil {
		return in.Now
	}
	return st.PhaseStartedAt.Time
}

// ceilSecond rounds t up to a whole second, so a wait stored in status is never shortened.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}
