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

package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fakeOptions are Options whose API client holds exactly the fixtures, so that the outputs are
// deterministic: every time in them is the fixtures', relative to the tests' clock. The envtest
// tests run the same commands against a real API server.
func fakeOptions() Options {
	objs := append([]client.Object{payments(), search(), weather(), broken(), paused(), fresh(), tools()}, paymentsObjects()...)
	objs = append(objs, weatherObjects()...)
	return Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()}
}

func TestStatusGolden(t *testing.T) {
	o := fakeOptions()
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"status-table", []string{"status", "-n", "mcp"}},
		{"status-table-all-namespaces", []string{"status", "-A"}},
		{"status-payments", []string{"status", "payments", "-n", "mcp"}},
		{"status-search", []string{"status", "search", "-n", "mcp"}},
		{"status-weather", []string{"status", "weather", "-n", "mcp"}},
		{"status-broken", []string{"status", "broken", "-n", "mcp"}},
		{"status-paused", []string{"status", "paused", "-n", "mcp"}},
		{"status-fresh", []string{"status", "fresh", "-n", "mcp"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, o, "", tc.args...)
			if r.err != nil || r.errOut != "" {
				t.Fatalf("kubectl mrtr %s: %v, stderr %q", strings.Join(tc.args, " "), r.err, r.errOut)
			}
			golden(t, tc.golden, r.out)
		})
	}
}

// The pods shown are those the operator counts: the Deployment's selector's, and the podSelector's
// apart from those; each with the fingerprint it acknowledged, against the target.
func TestStatusShowsEachPodsAcknowledgement(t *testing.T) {
	r := run(t, fakeOptions(), "", "status", "payments", "-n", "mcp")
	assertOutput(t, r,
		"payments-mcp-7d9f-a "+fpNew+" 2d runs the target keyring",
		"payments-mcp-7d9f-c "+fpOld+" 2d behind: acknowledged another keyring, laggard",
		"payments-mcp-7d9f-d "+fpOld+" 2d behind: acknowledged another keyring, terminating",
		"payments-canary-0 - 30s no acknowledgement, created after this phase began, laggard",
		"Waiting for: 2 of 4 pods to acknowledge keyring "+fpNew+" (laggards: payments-mcp-7d9f-c, payments-canary-0)",
	)
	if strings.Contains(r.out, "search-worker-0") {
		t.Errorf("the output shows a pod that no target selects:\n%s", r.out)
	}
}

// A pod list that cannot be read (a workload deleted since, or no permission) leaves the rest of
// the picture.
func TestStatusShowsWhatItCannotRead(t *testing.T) {
	kr := weather()
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()}
	r := run(t, o, "", "status", "weather", "-n", "mcp")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := `pods: cannot read them: get Deployment weather-mcp: deployments.apps "weather-mcp" not found`; !strings.Contains(r.out, want) {
		t.Errorf("the output lacks %q:\n%s", want, r.out)
	}
	if !strings.Contains(r.out, "Conditions:") {
		t.Errorf("the output stops at the error:\n%s", r.out)
	}
}

// A newer operator may write phases and key roles this build does not know: status still reads
// them, and says what the phase waits for from the counts and the operator's own messages.
func TestStatusToleratesPhasesItDoesNotKnow(t *testing.T) {
	kr := payments()
	kr.Status.Phase = "Rebalancing"
	kr.Status.Keys[1].Role = "Quarantined"
	all := weather()
	all.Status.Phase = "Rebalancing"
	all.Status.Conditions[1].Message = "Rebalancing: every pod runs keyring " + fpNew
	all.Status.WaitingFor = nil // an operator that does not say what it waits for
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(paymentsObjects(), kr, all)...).Build()}

	r := run(t, o, "", "status", "payments", "-n", "mcp")
	assertOutput(t, r,
		"Phase: Rebalancing since 2026-12-01T11:58:30Z (90s ago)",
		"Waiting for: 2 of 4 pods to acknowledge keyring "+fpNew+" (laggards: payments-mcp-7d9f-c, payments-canary-0), so that no pod seals with the old key any more.",
		"k20261101-120000 Quarantined 2026-11-01T12:00:00Z (30d ago)")
	r = run(t, o, "", "status", "weather", "-n", "mcp")
	assertOutput(t, r, "Waiting for: the operator's next pass: its status does not say what the rotation waits for.")
	r = run(t, o, "", "status", "-n", "mcp")
	assertOutput(t, r, "payments Rebalancing k20261201-115800 2m 2/4 under way True")
}

// assertOutput fails unless r succeeded and its output holds each of want, spaces squashed.
func assertOutput(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%v: %s", r.err, r.errOut)
	}
	out := squash(r.out)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the output lacks %q:\n%s", w, r.out)
		}
	}
}

func TestStatusErrors(t *testing.T) {
	o := fakeOptions()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"not found":       {[]string{"status", "missing", "-n", "mcp"}, "MRTRKeyring missing not found in namespace mcp"},
		"name across all": {[]string{"status", "payments", "-A"}, "a keyring NAME cannot be combined with --all-namespaces"},
		"two names":       {[]string{"status", "a", "b", "-n", "mcp"}, "accepts at most 1 arg(s), received 2"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, o, "", tc.args...)
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("error %v; want one that says %q", r.err, tc.want)
			}
		})
	}
	r := run(t, o, "", "status", "-n", "empty")
	if r.err != nil || r.out != "" || r.errOut != "No MRTRKeyrings found in namespace empty.\n" {
		t.Fatalf("an empty namespace: %v, stdout %q, stderr %q", r.err, r.out, r.errOut)
	}
}

// With rotation windows, status shows the window the next rotation is due in, as the operator
// wrote it, and the windows of the spec.
func TestStatusShowsTheNextWindow(t *testing.T) {
	kr := search()
	kr.Spec.RotationWindows = []mrtrv1alpha1.RotationWindow{{Schedule: "0 2 * * SUN", Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Berlin"}}
	opens := metav1.NewTime(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC))
	kr.Status.NextRotationTime = &opens
	kr.Status.NextWindow = &mrtrv1alpha1.RotationWindowStatus{OpensAt: opens, ClosesAt: metav1.NewTime(opens.Add(2 * time.Hour))}
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()}
	assertOutput(t, run(t, o, "", "status", "search", "-n", "mcp"),
		"Next window: opens 2026-12-06T01:00:00Z (in 4d13h), closes 2026-12-06T03:00:00Z (in 4d15h) (windows: 0 2 * * SUN (Europe/Berlin) for 2h)")
}

// The stamp fights and the refused acknowledgements the operator keeps in status are shown, one
// row each; without them, neither section appears.
func TestStatusShowsStampFightsAndRefusedAcknowledgements(t *testing.T) {
	kr := search()
	until := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	kr.Status.StampFights = []mrtrv1alpha1.StampFight{{Kind: "Deployment", Name: "search", Manager: "argocd-controller", Reverts: 2, Until: until}}
	kr.Status.RefusedAcknowledgements = []mrtrv1alpha1.RefusedAcknowledgement{{Pod: "search-7d9f-x2", Message: "written by kubectl-edit, not through pods/status"}}
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()}
	r := run(t, o, "", "status", "search", "-n", "mcp")
	assertOutput(t, r, "Stamp fights:", "Deployment/search argocd-controller 2 ",
		"Refused acknowledgements:", "search-7d9f-x2 written by kubectl-edit, not through pods/status")

	plain := search()
	o = Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(plain).Build()}
	r = run(t, o, "", "status", "search", "-n", "mcp")
	if strings.Contains(r.out, "Stamp fights:") || strings.Contains(r.out, "Refused acknowledgements:") {
		t.Errorf("sections shown for a keyring without fights or refusals:\n%s", r.out)
	}
}

// A keyring with many targets keeps status readable: each section shows ten rows, those status
// lists first, and counts the rest.
func TestStatusCapsStampFightsAndRefusedAcknowledgements(t *testing.T) {
	kr := search()
	until := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	for i := range 13 {
		kr.Status.StampFights = append(kr.Status.StampFights, mrtrv1alpha1.StampFight{Kind: "Deployment", Name: fmt.Sprintf("fought-%02d", i), Manager: "argocd-controller", Reverts: 2, Until: until})
	}
	for i := range 25 {
		kr.Status.RefusedAcknowledgements = append(kr.Status.RefusedAcknowledgements, mrtrv1alpha1.RefusedAcknowledgement{Pod: fmt.Sprintf("refused-%02d", i), Message: "written by kubectl-edit"})
	}
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()}
	r := run(t, o, "", "status", "search", "-n", "mcp")
	assertOutput(t, r, "Deployment/fought-09 argocd-controller", "and 3 more", "refused-09 written by kubectl-edit", "and 15 more")
	for _, hidden := range []string{"fought-10", "fought-12", "refused-10", "refused-24"} {
		if strings.Contains(r.out, hidden) {
			t.Errorf("the output shows %s, past the first ten rows of its section:\n%s", hidden, r.out)
		}
	}
	// Each count follows its own section.
	fights, refused := strings.Index(r.out, "and 3 more"), strings.Index(r.out, "Refused acknowledgements:")
	if fights < 0 || refused < 0 || fights > refused {
		t.Errorf("the stamp fights' count is not within their section:\n%s", r.out)
	}
}

// A keyring with a source Secret shows the source, the version in service and the one the source
// holds, what was skipped and retired, and why the source is refused; its next rotation is the
// source's next change.
func TestStatusShowsTheKeySource(t *testing.T) {
	kr := search()
	kr.Spec.RotationInterval = metav1.Duration{}
	kr.Spec.NextKey = mrtrv1alpha1.NextKeyAtRotation
	kr.Spec.KeySource = &mrtrv1alpha1.KeySource{Type: mrtrv1alpha1.KeySourceSecret, Secret: &mrtrv1alpha1.SecretKeySource{Name: "search-key", Key: "key"}}
	kr.Status.NextRotationTime = nil
	kr.Status.KeySource = &mrtrv1alpha1.KeySourceStatus{Version: "v7", InServiceSince: atp(-2 * day), ObservedVersion: "v9",
		SkippedVersions: []string{"v8"}, Retired: []mrtrv1alpha1.RetiredSourceKey{{Version: "v6", Digest: strings.Repeat("0", 24), RetiredAt: at(-day)}}}
	kr.Status.Conditions = append(kr.Status.Conditions, metav1.Condition{Type: mrtrv1alpha1.ConditionKeySourceReady, Status: metav1.ConditionFalse,
		Reason: mrtrv1alpha1.ReasonSourceKeyTooShort, Message: "source Secret search-key: data key \"key\" holds 16 bytes"})
	o := Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()}
	assertOutput(t, run(t, o, "", "status", "search", "-n", "mcp"),
		"Key source: Secret search-key (in the keyring's namespace, data key key); version v7 in service since",
		"; the source holds version v9; skipped v8; 1 retired (latest v6); refused (SourceKeyTooShort): source Secret search-key",
		"Next rotation: when source Secret search-key holds a new key")
	assertOutput(t, run(t, o, "", "status", "-n", "mcp"), "on source change")
}
