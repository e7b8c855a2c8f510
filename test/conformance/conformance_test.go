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

package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/conformance/check"
)

// build compiles one of the consumers of this directory (./name) into a temporary directory.
func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if err := testenv.Build(context.Background(), "./test/conformance/"+filepath.Base(pkg), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runCheck runs the conformance check on argv, logging each check's line.
func runCheck(t *testing.T, opts check.Options) check.Report {
	t.Helper()
	opts.Out = testWriter{t}
	rep, err := check.Run(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// TestGoConsumer: a consumer on pkg/keyring and pkg/ack passes every check.
func TestGoConsumer(t *testing.T) {
	rep := runCheck(t, check.Options{Command: []string{build(t, "./goconsumer")}})
	if failed := rep.Failed(); len(failed) > 0 || rep.Passed() != 27 {
		t.Errorf("%d passed; failed: %v", rep.Passed(), failed)
	}
}

// TestGoConsumerLostAnswer: the same with -lost-answer. pkg/ack before 7453a0a ("ack: resend after a
// lost answer") failed resends-after-lost-answer: after a PATCH was applied but its answer lost, it
// still took the older fingerprint for the acknowledged one and never sent it again when the keyring
// returned to it. Kept apart from TestGoConsumer so that this one check's history stays visible; it
// runs, and passes, since that fix.
func TestGoConsumerLostAnswer(t *testing.T) {
	rep := runCheck(t, check.Options{Command: []string{build(t, "./goconsumer")}, LostAnswer: true})
	if r, ok := rep.Get(check.CheckResendsLostAnswer); !ok || !r.Pass {
		t.Errorf("%s: %+v", check.CheckResendsLostAnswer, r)
	}
	if failed := rep.Failed(); len(failed) > 0 {
		t.Errorf("failed: %v", failed)
	}
}

// TestGoConsumerMetrics: with -metrics, the Go consumer's own counters (pkg/metrics, answered to
// "metrics?") move by exactly the results of the tokens the check opens through it; a consumer that
// exports none (brokenconsumer, which knows no "metrics?") fails reports-metrics.
func TestGoConsumerMetrics(t *testing.T) {
	rep := runCheck(t, check.Options{Command: []string{build(t, "./goconsumer")}, Metrics: true})
	if r, ok := rep.Get(check.CheckReportsMetrics); !ok || !r.Pass {
		t.Errorf("%s: %+v", check.CheckReportsMetrics, r)
	}
	if failed := rep.Failed(); len(failed) > 0 || rep.Passed() != 28 {
		t.Errorf("%d passed; failed: %v", rep.Passed(), failed)
	}
	rep = runCheck(t, check.Options{Command: []string{build(t, "./brokenconsumer")}, Metrics: true, Timeout: 5 * time.Second})
	if r, ok := rep.Get(check.CheckReportsMetrics); !ok || r.Pass {
		t.Errorf("a consumer without metrics: %s: %+v", check.CheckReportsMetrics, r)
	}
}

// TestBrokenConsumer proves the checks can fail: each mistake of brokenconsumer fails the checks
// that exist to catch it, while the checks it does not touch still pass. Without a flag the same
// program passes, so each failure is the flag's doing. The mistakes of issue 43 are among them: TLS
// verification off, redirects followed, the proxy used, keys logged as a bytes repr, a list of
// ints or a Node Buffer, tokens sealed with a stale keyring or beyond token-ttl.
func TestBrokenConsumer(t *testing.T) {
	bin := build(t, "./brokenconsumer")
	for name, tc := range map[string]struct {
		flags []string
		fail  []string
	}{
		"no mistake": {nil, nil},
		"lenient parser, errors unsaid": {[]string{"-lenient"}, []string{check.CheckReportsBadKeyring, check.CheckKeepsLastGood,
			check.CheckReportsBadTokenTTL, check.CheckKeepsLastGoodTTL, check.CheckRefusesVectors, check.CheckNoTornRead}},
		"files read through their links": {[]string{"-links"}, []string{check.CheckReadsOneSnapshot, check.CheckNoTornRead}},
		"no retry": {[]string{"-no-retry"}, []string{check.CheckRetries409, check.CheckRetries403, check.CheckRetries500,
			check.CheckRetriesTimeout, check.CheckAcksAfterRetries}},
		"token read once": {[]string{"-cache-token"}, []string{check.CheckRereadsToken, check.CheckRecovers}},
		// The consumer of issue 43: TLS verification off, every key logged as a bytes repr and a list of ints.
		"no TLS verification, keys as bytes repr and ints": {[]string{"-insecure", "-log-repr", "-log-ints"},
			[]string{check.CheckVerifiesTLS, check.CheckNoSecretInOutput}},
		"no TLS verification":        {[]string{"-insecure"}, []string{check.CheckVerifiesTLS}},
		"follows redirects":          {[]string{"-follow"}, []string{check.CheckRefusesRedirects}},
		"uses the proxy":             {[]string{"-proxy"}, []string{check.CheckNoProxy}},
		"keys as a bytes repr":       {[]string{"-log-repr"}, []string{check.CheckNoSecretInOutput}},
		"keys as a list of ints":     {[]string{"-log-ints"}, []string{check.CheckNoSecretInOutput}},
		"keys as a Node Buffer":      {[]string{"-log-buffer"}, []string{check.CheckNoSecretInOutput}},
		"seals with a stale keyring": {[]string{"-stale-seal"}, []string{check.CheckSealsWithPrimary}},
		"seals beyond token-ttl":     {[]string{"-long-ttl"}, []string{check.CheckSealsWithinTTL}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			argv := append([]string{bin}, tc.flags...)
			// A failing check waits out its timeout: keep it short, a passing one needs far less.
			rep := runCheck(t, check.Options{Command: argv, Timeout: 3 * time.Second, Hold: time.Second})
			failed := rep.Failed()
			for _, want := range tc.fail {
				if !slices.Contains(failed, want) {
					t.Errorf("%s passed; want it to fail", want)
				}
			}
			for _, must := range []string{check.CheckStarts, check.CheckAcknowledgesFirst, check.CheckRequestFormat, check.CheckKeepsRunning} {
				if slices.Contains(failed, must) {
					t.Errorf("%s failed; want it to pass", must)
				}
			}
			if tc.fail == nil && len(failed) > 0 {
				t.Errorf("failed: %v; want none", failed)
			}
		})
	}
}
