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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// tenants is a ClusterMRTRKeyring over 150 selected namespaces halfway through a rotation, as the
// operator writes its status: 40 namespaces behind, 3 in conflict, 107 up to date, and 2 that
// left; status lists 100 of them, those behind first, then those in conflict, those that left and
// those up to date, each group in name order.
func tenants() *mrtrv1alpha1.ClusterMRTRKeyring {
	s := spec()
	s.SecretName = "mcp-keyring"
	s.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mcp"}}
	ns := mrtrv1alpha1.NamespacesStatus{Selected: 150, UpToDate: 107, Conflicts: 3, Left: 2}
	for i := range 40 {
		ns.Items = append(ns.Items, mrtrv1alpha1.NamespaceStatus{Name: fmt.Sprintf("tenant-%03d", i), State: mrtrv1alpha1.NamespaceBehind,
			Message: "its Secret does not hold keyring " + fpNew + " yet"})
	}
	for i := range 3 {
		ns.Items = append(ns.Items, mrtrv1alpha1.NamespaceStatus{Name: fmt.Sprintf("tenant-%03d", 40+i), State: mrtrv1alpha1.NamespaceConflict,
			Message: "Secret mcp-keyring belongs to MRTRKeyring mcp-keyring: it is never overwritten"})
	}
	for _, name := range []string{"retired-a", "retired-b"} {
		ns.Items = append(ns.Items, mrtrv1alpha1.NamespaceStatus{Name: name, State: mrtrv1alpha1.NamespaceLeft,
			Message: "no longer selected: not rotated; its Secret stays"})
	}
	for i := 43; len(ns.Items) < mrtrv1alpha1.MaxNamespacesListed; i++ {
		ns.Items = append(ns.Items, mrtrv1alpha1.NamespaceStatus{Name: fmt.Sprintf("tenant-%03d", i), State: mrtrv1alpha1.NamespaceUpToDate})
	}
	return &mrtrv1alpha1.ClusterMRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", Generation: 1},
		Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: s,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"mrtr.dev/tenant": "true"}}},
		Status: mrtrv1alpha1.ClusterMRTRKeyringStatus{
			MRTRKeyringStatus: mrtrv1alpha1.MRTRKeyringStatus{
				ObservedGeneration: 1,
				Phase:              mrtrv1alpha1.PhaseAccepting,
				SecretName:         "mcp-keyring",
				Keys: []mrtrv1alpha1.KeyStatus{
					{ID: "k20261121-090000", Role: mrtrv1alpha1.KeyPrimary, CreatedAt: at(-10*day - 3*time.Hour)},
					{ID: "k20261201-115900", Role: mrtrv1alpha1.KeyStaged, CreatedAt: at(-time.Minute)},
				},
				SecretFingerprint: fpNew,
				TargetFingerprint: fpNew,
				Workloads: []mrtrv1alpha1.WorkloadStatus{
					{Kind: mrtrv1alpha1.KindDeployment, Name: "mcp", Found: true, ReadyReplicas: 2, DesiredReplicas: 2, Pods: 2, PodsAcknowledged: 1,
						Laggards: []string{"tenant-000/mcp-7d9f-b"}},
				},
				WorkloadCount:     147,
				WorkloadsUpToDate: 107,
				PodCount:          294,
				PodsAcknowledged:  214,
				PhaseStartedAt:    atp(-time.Minute),
				NextRotationTime:  atp(29 * day),
				TTLWaits:          ttlWaits(false),
				WaitingFor: &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitDelivery,
					Message: "the Secret in 40 namespaces to hold keyring " + fpNew + " (tenant-000, tenant-001 and 38 more), so that every pod can open tokens sealed with the new key"},
				Conditions: healthy("mcp-keyring", mrtrv1alpha1.PhaseAccepting, fpNew,
					"Accepting: 40 namespaces do not hold keyring "+fpNew+" yet", -time.Minute),
			},
			Namespaces: ns,
		},
	}
}

// quiet is a ClusterMRTRKeyring that has not rotated since it reached its namespaces: each of them
// is up to date.
func quiet() *mrtrv1alpha1.ClusterMRTRKeyring {
	ck := tenants()
	ck.Name = "quiet"
	st := &ck.Status
	st.Phase, st.Keys, st.SecretFingerprint, st.TargetFingerprint = mrtrv1alpha1.PhaseStable, st.Keys[:1], fpOld, fpOld
	st.Workloads, st.WorkloadCount, st.WorkloadsUpToDate, st.PodCount, st.PodsAcknowledged = nil, 0, 0, 0, 0
	st.WaitingFor = &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitNextRotation, Until: atp(20 * day), Message: "the next rotation, due at 2026-12-21T12:00:00Z"}
	st.Conditions = healthy("mcp-keyring", mrtrv1alpha1.PhaseStable, fpOld, "", -10*day)
	st.Namespaces = mrtrv1alpha1.NamespacesStatus{Selected: 2, UpToDate: 2, Items: []mrtrv1alpha1.NamespaceStatus{
		{Name: "blue", State: mrtrv1alpha1.NamespaceUpToDate}, {Name: "green", State: mrtrv1alpha1.NamespaceUpToDate}}}
	return ck
}

func clusterOptions(objs ...client.Object) Options {
	return Options{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()}
}

// A look at a keyring over 150 namespaces: the counts of its status, the 10 first namespaces it
// lists (those behind), and how many more there are; one screen, however many namespaces.
func TestStatusClusterGolden(t *testing.T) {
	o := clusterOptions(tenants(), quiet(), payments())
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"status-cluster-tenants", []string{"status", "cmkr/tenants"}},
		{"status-cluster-table", []string{"status", "clustermrtrkeyrings"}},
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

func TestStatusClusterKeyring(t *testing.T) {
	o := clusterOptions(tenants(), quiet(), payments())
	r := run(t, o, "", "status", "cmkr/tenants")
	assertOutput(t, r,
		"Kind: ClusterMRTRKeyring (spec.namespaceSelector selects its namespaces)",
		"Secret: mcp-keyring in each selected namespace",
		"Namespaces: 150 selected: 107 up to date, 40 behind, 3 in conflict; 2 left",
		"tenant-000 Behind its Secret does not hold keyring "+fpNew+" yet",
		"tenant-009 Behind",
		"and 142 more (status lists 100 in all: kubectl get cmkr tenants -o yaml)",
		"Deployment/mcp: not up to date, 2/2 ready, 1 of 2 pods acknowledged",
		"laggards: tenant-000/mcp-7d9f-b",
	)
	if out := squash(r.out); strings.Contains(out, "tenant-010") || strings.Contains(out, "Namespace: ") {
		t.Errorf("more than 10 namespaces, or a namespace of the keyring, shown:\n%s", r.out)
	}

	// Few namespaces: all of them, nothing more to count.
	r = run(t, o, "", "status", "clustermrtrkeyring.mrtr.dev/quiet")
	assertOutput(t, r, "Namespaces: 2 selected: 2 up to date, 0 behind, 0 in conflict; 0 left", "blue UpToDate -", "green UpToDate -")
	if strings.Contains(r.out, "more") {
		t.Errorf("more namespaces counted than there are:\n%s", r.out)
	}

	// Every kubectl name of the kind names it; a bare NAME stays an MRTRKeyring of -n.
	for _, arg := range []string{"ClusterMRTRKeyring/quiet", "clustermrtrkeyrings/quiet", "cmkr.v1alpha1.mrtr.dev/quiet"} {
		assertOutput(t, run(t, o, "", "status", arg), "Name: quiet")
	}
	for _, arg := range []string{"mkr/payments", "mrtrkeyring/payments", "payments"} {
		assertOutput(t, run(t, o, "", "status", arg, "-n", "mcp"), "Name: payments", "Namespace: mcp")
	}
	for arg, want := range map[string]string{
		"cmkr/missing":     "ClusterMRTRKeyring missing not found",
		"deployment/x":     `"deployment/x" is not a keyring`,
		"cmkr/":            `"cmkr/": give one name after cmkr/`,
		"mrtrkeyring/a/b":  `"mrtrkeyring/a/b": give one name after mrtrkeyring/`,
		"mkr/quiet":        "MRTRKeyring quiet not found in namespace mcp",
		"clustermrtrkeyng": "MRTRKeyring clustermrtrkeyng not found in namespace mcp",
	} {
		r := run(t, o, "", "status", arg, "-n", "mcp")
		if r.err == nil || !strings.Contains(r.err.Error(), want) {
			t.Errorf("status %s: error %v; want one that says %q", arg, r.err, want)
		}
	}
	// A cluster keyring has no namespace: -A does not get in its way.
	assertOutput(t, run(t, o, "", "status", "cmkr/quiet", "-A"), "Name: quiet")

	r = run(t, clusterOptions(), "", "status", "cmkr")
	if r.err != nil || r.out != "" || r.errOut != "No ClusterMRTRKeyrings found.\n" {
		t.Fatalf("status cmkr without any: %v, stdout %q, stderr %q", r.err, r.out, r.errOut)
	}
}

// createClusterKeyring creates ck as a user would, then writes its status as the operator would.
func createClusterKeyring(t *testing.T, ctx context.Context, c client.Client, ck *mrtrv1alpha1.ClusterMRTRKeyring) {
	t.Helper()
	status := ck.Status
	ck = ck.DeepCopy()
	ck.ResourceVersion, ck.Generation, ck.Status = "", 0, mrtrv1alpha1.ClusterMRTRKeyringStatus{}
	if err := c.Create(ctx, ck); err != nil {
		t.Fatalf("create ClusterMRTRKeyring %s: %v", ck.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ck) })
	if status.Phase == "" {
		return
	}
	status.ObservedGeneration = ck.Generation
	ck.Status = status
	if err := c.Status().Update(ctx, ck); err != nil {
		t.Fatalf("update the status of ClusterMRTRKeyring %s: %v", ck.Name, err)
	}
}

func getTenants(t *testing.T, ctx context.Context, c client.Client) *mrtrv1alpha1.ClusterMRTRKeyring {
	t.Helper()
	ck := &mrtrv1alpha1.ClusterMRTRKeyring{}
	if err := c.Get(ctx, client.ObjectKey{Name: "tenants"}, ck); err != nil {
		t.Fatal(err)
	}
	return ck
}

// The commands against a real API server, which holds the CRD of the cluster-scoped kind: its
// status over 150 namespaces (the CRD caps the list at 100) reads back as the operator wrote it,
// and rotate, suspend, resume and revoke patch the ClusterMRTRKeyring as they patch an
// MRTRKeyring.
func TestEnvtestClusterKeyring(t *testing.T) {
	kubeconfig, c := startCluster(t)
	kc := "--kubeconfig=" + kubeconfig
	ctx := context.Background()
	ck := tenants()
	ck.Annotations = map[string]string{"team": "platform"}
	createClusterKeyring(t, ctx, c, ck)
	o := Options{}

	t.Run("status", func(t *testing.T) {
		r := run(t, o, "", "status", kc, "cmkr/tenants")
		if r.err != nil {
			t.Fatalf("%v: %s", r.err, r.errOut)
		}
		golden(t, "status-cluster-tenants", r.out) // status only: the same text as from the fixture
		assertOutput(t, run(t, o, "", "status", kc, "cmkr"), "tenants Accepting k20261121-090000 10d 107/150 214/294 under way True")
	})

	t.Run("rotate", func(t *testing.T) {
		before := getTenants(t, ctx, c)
		r := run(t, o, "", "rotate", kc, "cmkr/tenants")
		want := "Requested a rotation of ClusterMRTRKeyring tenants (mrtr.dev/rotate=2026-12-01T12:00:00Z).\n" +
			"A rotation is under way (phase Accepting): the one requested starts when it completes.\n" +
			"Follow it with: kubectl mrtr status cmkr/tenants\n"
		if r.err != nil || r.out != want {
			t.Fatalf("rotate: %v\n%s\nwant\n%s", r.err, r.out, want)
		}
		got := getTenants(t, ctx, c)
		if v := got.Annotations[mrtrv1alpha1.RotateAnnotation]; v != "2026-12-01T12:00:00Z" || got.Annotations["team"] != "platform" || got.Generation != before.Generation {
			t.Errorf("rotate wrote %s=%q, left %+v", mrtrv1alpha1.RotateAnnotation, v, got.ObjectMeta)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		r := run(t, o, "", "suspend", kc, "clustermrtrkeyring/tenants")
		want := "Suspended ClusterMRTRKeyring tenants: no new rotation starts.\nThe rotation under way (phase Accepting) finishes.\n" +
			"Resume with: kubectl mrtr resume cmkr/tenants\n"
		if r.err != nil || r.out != want {
			t.Fatalf("suspend: %v\n%s\nwant\n%s", r.err, r.out, want)
		}
		if !getTenants(t, ctx, c).Spec.Suspend {
			t.Fatal("spec.suspend is false after suspend")
		}
		r = run(t, o, "", "resume", kc, "cmkr/tenants")
		if r.err != nil || !strings.HasPrefix(r.out, "Resumed ClusterMRTRKeyring tenants: rotations start again.\n") {
			t.Fatalf("resume: %v\n%s", r.err, r.out)
		}
		if getTenants(t, ctx, c).Spec.Suspend {
			t.Fatal("spec.suspend is true after resume")
		}
	})

	t.Run("revoke", func(t *testing.T) {
		r := run(t, o, "", "revoke", kc, "cmkr/tenants", "k20261121-090000")
		want := "Requested the revocation of key(s) k20261121-090000 of ClusterMRTRKeyring tenants as request(s) 1 " +
			"(mrtr.dev/revoke=1:k20261121-090000).\n" +
			"The operator removes them on its next pass, in any phase: tokens sealed with them fail from then on.\n" +
			"Handled once status.lastHandledRevokeSequence is 1 or more.\n" +
			"Follow it with: kubectl mrtr status cmkr/tenants\n"
		if r.err != nil || r.out != want {
			t.Fatalf("revoke: %v\n%s\nwant\n%s", r.err, r.out, want)
		}
		// Numbered on from what the operator handled, and the handled ones pruned, as on an
		// MRTRKeyring: the same helpers make the value.
		got := getTenants(t, ctx, c)
		got.Status.LastHandledRevokeSequence = 1
		if err := c.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		r = run(t, o, "", "revoke", kc, "cmkr/tenants", "--all")
		if v := getTenants(t, ctx, c).Annotations[mrtrv1alpha1.RevokeAnnotation]; r.err != nil || v != "2:*"+now.UTC().Format(time.RFC3339) {
			t.Fatalf("revoke --all: %v, annotation %q\n%s", r.err, v, r.out)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"rotate", "cmkr/missing"}, "ClusterMRTRKeyring missing not found"},
			{[]string{"revoke", "cmkr/missing", "--all"}, "ClusterMRTRKeyring missing not found"},
			{[]string{"suspend", "cmkr"}, "name the ClusterMRTRKeyring: cmkr/NAME"},
			{[]string{"rotate", "pod/tenants"}, `"pod/tenants" is not a keyring`},
		} {
			r := run(t, o, "", append(tc.args, kc)...)
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("%v: error %v; want one that says %q", tc.args, r.err, tc.want)
			}
		}
		fresh := quiet()
		fresh.Name, fresh.Status = "fresh", mrtrv1alpha1.ClusterMRTRKeyringStatus{}
		createClusterKeyring(t, ctx, c, fresh)
		r := run(t, o, "", "revoke", kc, "cmkr/fresh", "k20261121-090000")
		if r.err == nil || !strings.Contains(r.err.Error(), "ClusterMRTRKeyring fresh has no status yet") {
			t.Errorf("revoke of a cluster keyring without status: error %v", r.err)
		}
		assertOutput(t, run(t, o, "", "status", kc, "cmkr/fresh"), "Namespaces: none in status yet")
	})
}

// eastUnreachable is the error the operator reports for a member whose API server does not answer.
const eastUnreachable = `Get "https://east.example.com:6443/api?timeout=32s": dial tcp 10.0.3.7:6443: connect: connection refused`

// fleet is a ClusterMRTRKeyring over two members, halfway through Accepting: west is reachable,
// one of its namespaces up to date and one behind; east has not answered for 12 minutes, so its
// namespaces are unknown and hold the phase.
func fleet() *mrtrv1alpha1.ClusterMRTRKeyring {
	ck := tenants()
	ck.Name = "fleet"
	ck.Spec.Members = []mrtrv1alpha1.Member{{Name: "west", KubeconfigSecret: "west-kubeconfig"}, {Name: "east", KubeconfigSecret: "east-kubeconfig"}}
	st := &ck.Status
	st.Workloads = []mrtrv1alpha1.WorkloadStatus{{Kind: mrtrv1alpha1.KindDeployment, Name: "mcp", Found: true, ReadyReplicas: 2, DesiredReplicas: 2, Pods: 2}}
	st.WorkloadCount, st.WorkloadsUpToDate, st.PodCount, st.PodsAcknowledged = 4, 1, 8, 2
	st.Members = []mrtrv1alpha1.MemberStatus{
		{Name: "west", Reachable: true, LastTransitionTime: at(-3 * day)},
		{Name: "east", Message: eastUnreachable, LastTransitionTime: at(-12 * time.Minute)},
	}
	effect := ": the rotation waits for it (and stalls after spec.rolloutDeadline): no key is removed and no key it may lack is made primary; its copies are written once it is reached"
	st.Namespaces = mrtrv1alpha1.NamespacesStatus{Selected: 4, UpToDate: 1, Items: []mrtrv1alpha1.NamespaceStatus{
		{Name: "blue", Cluster: "east", State: mrtrv1alpha1.NamespaceUnreachable, Message: eastUnreachable + effect},
		{Name: "green", Cluster: "east", State: mrtrv1alpha1.NamespaceUnreachable, Message: eastUnreachable + effect},
		{Name: "green", Cluster: "west", State: mrtrv1alpha1.NamespaceBehind, Message: "its Secret does not hold keyring " + fpNew + " yet"},
		{Name: "blue", Cluster: "west", State: mrtrv1alpha1.NamespaceUpToDate},
	}}
	st.WaitingFor = &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitDelivery,
		Message: "the Secret in 3 namespaces to hold keyring " + fpNew + " (east/blue, east/green and west/green), so that every pod can open tokens sealed with the new key"}
	st.Conditions = healthy("mcp-keyring", mrtrv1alpha1.PhaseAccepting, fpNew, "Accepting: 3 namespaces do not hold keyring "+fpNew+" yet", -time.Minute)
	return ck
}

// fleetSecrets are the Secrets the hub and a member hold for fleet: the kubeconfigs that reach
// the members (a token and a client key), the lead Secret and a copy, with the bytes of keyA and
// keyB.
func fleetSecrets(t *testing.T) []client.Object {
	t.Helper()
	ring, err := keyring.Marshal(mustRing(t, keyA, keyB))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(server string) []byte {
		return []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n    server: " + server + "\n" +
			"users:\n- name: m\n  user:\n    token: " + fleetToken + "\n    client-key-data: " + fleetClientKey + "\n")
	}
	system := "mrtr-operator-system"
	return []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "west-kubeconfig", Namespace: system},
			Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfig("https://west.example.com:6443")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "east-kubeconfig", Namespace: system},
			Data: map[string][]byte{mrtrv1alpha1.MemberKubeconfigKey: kubeconfig("https://east.example.com:6443")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: mrtrv1alpha1.LeadSecretName("fleet"), Namespace: system},
			Data: map[string][]byte{keyring.SecretDataKey: ring}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mcp-keyring", Namespace: "blue"},
			Data: map[string][]byte{keyring.SecretDataKey: ring}},
	}
}

const (
	fleetToken     = "eyJhbGciOiJSUzI1NiJ9.member-service-account-token"
	fleetClientKey = "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCm1lbWJlcg=="
)

// A keyring over members: each member with the Secret that reaches it, reachable since when or
// unreachable since when and why, and its namespaces up to date of those selected; the
// namespaces with their member.
func TestStatusMembersGolden(t *testing.T) {
	o := clusterOptions(append(fleetSecrets(t), fleet(), quiet())...)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"status-cluster-members", []string{"status", "cmkr/fleet"}},
		{"status-cluster-members-table", []string{"status", "cmkr"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, o, "", tc.args...)
			if r.err != nil || r.errOut != "" {
				t.Fatalf("kubectl mrtr %s: %v, stderr %q", strings.Join(tc.args, " "), r.err, r.errOut)
			}
			golden(t, tc.golden, r.out)
			assertNoSecrets(t, r.out)
			for _, credential := range []string{fleetToken, fleetClientKey, "member-service-account-token"} {
				if strings.Contains(r.out, credential) {
					t.Fatalf("the output shows a member's credential %q:\n%s", credential, r.out)
				}
			}
		})
	}
}

func TestStatusMembers(t *testing.T) {
	ck := fleet()
	r := run(t, clusterOptions(ck), "", "status", "cmkr/fleet")
	assertOutput(t, r,
		"Kind: ClusterMRTRKeyring (spec.namespaceSelector selects its namespaces in each member)",
		"Secret: mcp-keyring in each selected namespace of each member",
		"Members: 1 of 2 reachable",
		"MEMBER VIA REACHABLE SINCE NAMESPACES MESSAGE",
		"west Secret west-kubeconfig Yes 2026-11-28T12:00:00Z (3d ago) 1/2 -",
		"east Secret east-kubeconfig No 2026-12-01T11:48:00Z (12m ago) 0/2 "+eastUnreachable,
		"MEMBER NAMESPACE STATE MESSAGE",
		"east blue Unreachable "+eastUnreachable,
		"west blue UpToDate -",
	)
	if strings.Contains(r.out, "counted among") {
		t.Errorf("per-member counts flagged as partial while status lists every namespace:\n%s", r.out)
	}

	// The hub's own cluster as a member; a member the operator has not reported yet; one that
	// status still reports after spec.members dropped it. Status lists fewer namespaces than it
	// counts: the per-member counts say so.
	ck.Spec.Members = []mrtrv1alpha1.Member{{Name: "hub", Local: true}, {Name: "west", KubeconfigSecret: "west-kubeconfig"}, {Name: "south", KubeconfigSecret: "south-kubeconfig"}}
	ck.Status.Members = append([]mrtrv1alpha1.MemberStatus{{Name: "hub", Reachable: true, LastTransitionTime: at(-day)}}, ck.Status.Members...)
	ck.Status.Namespaces.Selected = 150
	ck.Status.Namespaces.Items = append(ck.Status.Namespaces.Items, mrtrv1alpha1.NamespaceStatus{Name: "tools", Cluster: "hub", State: mrtrv1alpha1.NamespaceUpToDate})
	r = run(t, clusterOptions(ck), "", "status", "cmkr/fleet")
	assertOutput(t, r,
		"Members: 2 of 4 reachable",
		"hub local Yes 2026-11-30T12:00:00Z (24h ago) 1/1 -",
		"south Secret south-kubeconfig Unknown - 0/0 not reported by the operator yet",
		"east removed from spec.members No",
		"namespaces counted among the 5 status lists of 150 (kubectl get cmkr fleet -o yaml)",
		"hub tools UpToDate -",
	)

	// Spec members before the operator's first pass: nothing in status yet.
	ck = fleet()
	ck.Status = mrtrv1alpha1.ClusterMRTRKeyringStatus{}
	assertOutput(t, run(t, clusterOptions(ck), "", "status", "cmkr/fleet"),
		"Members: none in status yet", "west Secret west-kubeconfig Unknown - 0/0 not reported by the operator yet")

	// Without members, neither the section nor the column.
	r = run(t, clusterOptions(quiet()), "", "status", "cmkr/quiet")
	if strings.Contains(r.out, "Members:") || strings.Contains(r.out, "MEMBER") {
		t.Errorf("members shown for a keyring without any:\n%s", r.out)
	}
}
