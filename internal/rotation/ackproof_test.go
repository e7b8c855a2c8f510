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
	"strings"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
)

// reporter is the writer of an acknowledgement taken as proof: the pod's own reporter, through
// the Pod, at a time not recorded.
var reporter = Writer{Manager: ack.FieldManager}

func TestAcknowledgement(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 10, 0, time.UTC)
	by := func(manager, subresource string, when time.Time) Writer {
		return Writer{Manager: manager, Subresource: subresource, At: when}
	}
	for name, c := range map[string]struct {
		value   string // "" for no annotation
		writer  Writer
		secret  written
		want    string
		refusal string // a substring of why, "" when taken
	}{
		"no acknowledgement": {secret: written{"fp-1", at}},
		"the reporter's, after the write": {value: "fp-1", secret: written{"fp-1", at},
			writer: by(ack.FieldManager, "", at.Add(time.Second)), want: "fp-1"},
		"the reporter's, in the write's second": {value: "fp-1", secret: written{"fp-1", at},
			writer: by(ack.FieldManager, "", at), want: "fp-1"},
		"the reporter's, of an older keyring, before the write": {value: "fp-0", secret: written{"fp-1", at},
			writer: by(ack.FieldManager, "", at.Add(-time.Minute)), want: "fp-0"},
		"the reporter's, when the write's time is unknown": {value: "fp-1", secret: written{fingerprint: "fp-1"},
			writer: by(ack.FieldManager, "", at.Add(-time.Minute)), want: "fp-1"},
		"the reporter's, before the write it acknowledges": {value: "fp-1", secret: written{"fp-1", at},
			writer:  by(ack.FieldManager, "", at.Add(-time.Second)),
			refusal: "written at 2026-12-02T08:00:09Z, before the Secret write at 2026-12-02T08:00:10Z"},
		"through pods/status, under the reporter's name": {value: "fp-1", secret: written{"fp-1", at},
			writer: by(ack.FieldManager, "status", at.Add(time.Second)), refusal: `field manager "mrtr-ack" wrote it through pods/status`},
		"by pkg/ack before it named its field manager": {value: "fp-1", secret: written{"fp-1", at},
			writer: by(LegacyAckFieldManager, "", at.Add(time.Second)), want: "fp-1"},
		"by kubectl": {value: "fp-1", secret: written{"fp-1", at}, writer: by("kubectl-annotate", "", at.Add(time.Second)),
			refusal: `field manager "kubectl-annotate" wrote it, not the pod's reporter (mrtr-ack)`},
		"no record of the writer": {value: "fp-1", secret: written{"fp-1", at}, refusal: "no managedFields entry records who wrote it"},
	} {
		t.Run(name, func(t *testing.T) {
			got, refusal := acknowledgement(Pod{Name: "p", Loaded: c.value, AckWriter: c.writer}, c.secret)
			if got != c.want {
				t.Errorf("loaded = %q, want %q", got, c.want)
			}
			if (c.refusal == "") != (refusal == "") || !strings.Contains(refusal, c.refusal) {
				t.Errorf("refusal = %q, want one containing %q", refusal, c.refusal)
			}
		})
	}
}
