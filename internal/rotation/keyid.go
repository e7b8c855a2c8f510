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
)

// keyIDLayout makes ids like k20260806-142233: the UTC second the key was made. They sort by age
// and say it, and fit the 32-character limit.
const keyIDLayout = "k20060102-150405"

// NewKeyID returns the id for a key made at now, later than every time-based id in used (the ids of
// the Secret and of status). Ids therefore only grow within a keyring and are never reused, even
// when two keys are made within one second or the clock went back; only a keyring whose Secret and
// status both lost every time-based id, with the clock set back, could see an old id again.
func NewKeyID(now time.Time, used ...string) string {
	t := now.UTC().Truncate(time.Second)
	for _, id := range used {
		if u, err := time.Parse(keyIDLayout, id); err == nil && !u.Before(t) {
			t = u.Add(time.Second)
		}
	}
	return t.Format(keyIDLayout)
}
