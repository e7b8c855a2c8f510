/*
Copyright 2026.

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

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// keyIDLayout makes ids like k20260806-142233: the UTC second the key was made. They sort by age
// and say it, and fit the 32-character limit.
const keyIDLayout = "k20060102-150405"

// NewKeyID returns the id for a key made at now, later than every time-based id in current (nil for
// none). Ids therefore only grow within a keyring and are never reused, even when two keys are made
// within one second or the clock went back; only a keyring emptied of all its time-based ids by
// hand, with the clock set back, could see an old id again.
func NewKeyID(now time.Time, current *keyring.Keyring) string {
	t := now.UTC().Truncate(time.Second)
	if current != nil {
		for _, id := range current.IDs() {
			if used, err := time.Parse(keyIDLayout, id); err == nil && !used.Before(t) {
				t = used.Add(time.Second)
			}
		}
	}
	return t.Format(keyIDLayout)
}
