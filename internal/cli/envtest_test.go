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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// The envtest tests run the plugin as kubectl runs it, with nothing but a kubeconfig, against a
// real kube-apiserver with the CRDs: keyrings are created and given a status through the status
// subresource, as the operator writes it (no operator runs), and the Deployments and pods the
// keyrings select are made by hand (no controller-manager runs either).

// cluster is the envtest API server, started by the first test that needs it and stopped by
// TestMain.
var cluster struct {
	once       sync.Once
	env        *testenv.Env
	kubeconfig string // a file, as kubectl users have one
	err        error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cluster.env.Stop(); err != nil && code == 0 {
		code = 1
	}
	if cluster.kubeconfig != "" {
		_ = os.RemoveAll(filepath.Dir(cluster.kubeconfig))
	}
	os.Exit(code)
}

// startCluster starts the API server once, and returns a kubeconfig file for it and a client.
func startCluster(t *testing.T) (string, client.Client) {
	t.Helper()
	cluster.once.Do(func() {
		if cluster.env, cluster.err = testenv.Start(context.Background(), testenv.Options{CRDs: true, Scheme: scheme}); cluster.err != nil {
			return
		}
		dir, err := os.MkdirTemp("", "kubectl-mrtr-envtest-")
		if err != nil {
			cluster.err = err
			return
		}
		cluster.kubeconfig = filepath.Join(dir, "kubeconfig")
		cluster.err = cluster.env.WriteKubeconfig(cluster.kubeconfig, "admin")
	})
	if cluster.err != nil {
		t.Fatalf("envtest: %v", cluster.err)
	}
	return cluster.kubeconfig, cluster.env.Client
}

// createKeyring creates kr as a user would (spec and metadata), then writes its status through the
// status subresource as the operator would.
func createKeyring(t *testing.T, ctx context.Context, c client.Client, kr *mrtrv1alpha1.MRTRKeyring) {
	t.Helper()
	status := kr.Status
	kr = kr.DeepCopy()
	kr.ResourceVersion, kr.Generation, kr.Status = "", 0, mrtrv1alpha1.MRTRKeyringStatus{}
	if err := c.Create(ctx, kr); err != nil {
		t.Fatalf("create MRTRKeyring %s/%s: %v", kr.Namespace, kr.Name, err)
	}
	if status.Phase == "" {
		return
	}
	status.ObservedGeneration = kr.Generation
	kr.Status = status
	if err := c.Status().Update(ctx, kr); err != nil {
		t.Fatalf("update the status of MRTRKeyring %s/%s: %v", kr.Namespace, kr.Name, err)
	}
}

// envtestNamespace creates namespace ns on the test cluster with the keyrings given (and their
// status) and objs, and returns a client for checks and the --kubeconfig flag for the plugin.
func envtestNamespace(t *testing.T, ns string, keyrings []*mrtrv1alpha1.MRTRKeyring, objs ...client.Object) (client.Client, string) {
	t.Helper()
	kubeconfig, c := startCluster(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, kr := range keyrings {
		kr.Namespace = ns
		createKeyring(t, ctx, c, kr)
	}
	for _, obj := range objs {
		obj.SetNamespace(ns)
		if err := c.Create(ctx, apiServerReady(obj)); err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	return c, "--kubeconfig=" + kubeconfig
}

func TestEnvtestStatus(t *testing.T) {
	_, kc := envtestNamespace(t, "mcp", []*mrtrv1alpha1.MRTRKeyring{payments(), search(), broken(), paused(), fresh()},
		paymentsObjects()...)
	envtestNamespace(t, "tools", []*mrtrv1alpha1.MRTRKeyring{tools()})
	o := Options{} // the client comes from --kubeconfig, as in kubectl

	t.Run("table", func(t *testing.T) {
		r := run(t, o, "", "status", kc, "-n", "mcp")
		if r.err != nil {
			t.Fatalf("%v: %s", r.err, r.errOut)
		}
		// The table shows status only, whose times the test wrote: the golden file holds.
		golden(t, "envtest-status-table", r.out)
	})

	t.Run("every namespace", func(t *testing.T) {
		r := run(t, o, "", "status", kc, "-A")
		assertOutput(t, r, "NAMESPACE NAME PHASE", "mcp payments SealingWithNew", "tools tools Stable")
	})

	t.Run("NAME reads the pods the workloads select", func(t *testing.T) {
		r := run(t, o, "", "status", kc, "-n", "mcp", "payments")
		assertOutput(t, r,
			"Phase: SealingWithNew since 2026-12-01T11:58:30Z (90s ago)",
			"Waiting for: 2 of 4 pods to acknowledge keyring "+fpNew+" (laggards: payments-mcp-7d9f-c, payments-canary-0), "+
				"so that no pod seals with the old key any more.",
			"k20261201-115800 Primary 2026-12-01T11:58:00Z (2m ago)",
			"Deployment/payments-mcp: not up to date, 3/3 ready, 2 of 3 pods acknowledged",
			"payments-mcp-7d9f-a "+fpNew,
			"payments-mcp-7d9f-c "+fpOld,
			"behind: acknowledged another keyring, laggard",
			"payments-canary-0 -",
			"Stalled False NotStalled 30d nothing blocks progress",
		)
		if strings.Contains(r.out, "search-worker-0") {
			t.Errorf("the output shows a pod no target selects:\n%s", r.out)
		}
	})

	t.Run("the kubeconfig context's namespace is the default", func(t *testing.T) {
		path := strings.TrimPrefix(kc, "--kubeconfig=")
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Contexts[cfg.CurrentContext].Namespace = "tools"
		path = filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		r := run(t, o, "", "status", "--kubeconfig="+path)
		if r.err != nil || !strings.HasPrefix(squash(r.out), "NAME PHASE PRIMARY PRIMARY AGE ACKNOWLEDGED NEXT ROTATION READY MESSAGE\ntools Stable") {
			t.Fatalf("status without -n: %v\n%s", r.err, r.out)
		}
	})
}

func TestEnvtestRotate(t *testing.T) {
	kr := payments()
	kr.Annotations["team"] = "payments" // a rotate must leave the other annotations alone
	c, kc := envtestNamespace(t, "rotate", []*mrtrv1alpha1.MRTRKeyring{kr, search()})
	ctx := context.Background()

	before := getKeyring(t, ctx, c, "rotate", "payments")
	r := run(t, Options{}, "", "rotate", kc, "-n", "rotate", "payments")
	want := "Requested a rotation of MRTRKeyring rotate/payments (mrtr.dev/rotate=2026-12-01T12:00:00Z).\n" +
		"A rotation is under way (phase SealingWithNew): the one requested starts when it completes.\n" +
		"Follow it with: kubectl mrtr status payments -n rotate\n"
	if r.err != nil || r.out != want {
		t.Fatalf("rotate: %v\n%s\nwant\n%s", r.err, r.out, want)
	}
	got := getKeyring(t, ctx, c, "rotate", "payments")
	if v := got.Annotations[mrtrv1alpha1.RotateAnnotation]; v != "2026-12-01T12:00:00Z" {
		t.Errorf("%s = %q after rotate", mrtrv1alpha1.RotateAnnotation, v)
	}
	if got.Annotations["team"] != "payments" || got.Status.Phase != mrtrv1alpha1.PhaseSealingWithNew || got.Generation != before.Generation {
		t.Errorf("rotate changed more than its annotation: %+v", got.ObjectMeta)
	}

	later := Options{Now: func() time.Time { return now.Add(1500 * time.Millisecond) }}
	if r := run(t, later, "", "rotate", kc, "-n", "rotate", "payments"); r.err != nil {
		t.Fatalf("%v: %s", r.err, r.errOut)
	}
	if v := getKeyring(t, ctx, c, "rotate", "payments").Annotations[mrtrv1alpha1.RotateAnnotation]; v != "2026-12-01T12:00:01.5Z" {
		t.Errorf("a second request set %s = %q: it must be a new value", mrtrv1alpha1.RotateAnnotation, v)
	}

	r = run(t, Options{}, "", "rotate", kc, "-n", "rotate", "search")
	if r.err != nil || !strings.Contains(r.out, "The operator starts it on its next pass.") {
		t.Fatalf("rotate of a Stable keyring: %v\n%s", r.err, r.out)
	}
}

func TestEnvtestSuspendResume(t *testing.T) {
	kr := search()
	kr.Annotations = map[string]string{mrtrv1alpha1.RotateAnnotation: "2026-12-01T11:59:00Z"} // requested, not handled yet
	c, kc := envtestNamespace(t, "suspend", []*mrtrv1alpha1.MRTRKeyring{kr})
	ctx := context.Background()
	o := Options{}

	r := run(t, o, "", "suspend", kc, "-n", "suspend", "search")
	want := "Suspended MRTRKeyring suspend/search: no new rotation starts.\nResume with: kubectl mrtr resume search -n suspend\n"
	if r.err != nil || r.out != want {
		t.Fatalf("suspend: %v\n%s\nwant\n%s", r.err, r.out, want)
	}
	suspended := getKeyring(t, ctx, c, "suspend", "search")
	if !suspended.Spec.Suspend {
		t.Fatal("spec.suspend is false after suspend")
	}
	assertOutput(t, run(t, o, "", "status", kc, "-n", "suspend", "search"),
		"Waiting for: the operator to act on the latest spec (generation 2; the status is of generation 1).")
	// As the operator's next pass writes them (rotation.Step, which TestWaitingFor checks).
	suspended.Status.ObservedGeneration = suspended.Generation
	suspended.Status.WaitingFor = &mrtrv1alpha1.WaitingFor{What: mrtrv1alpha1.WaitResume,
		Message: "a resume: rotations are suspended (spec.suspend), and the rotation requested by mrtr.dev/rotate=2026-12-01T11:59:00Z starts once they are resumed"}
	if err := c.Status().Update(ctx, suspended); err != nil {
		t.Fatal(err)
	}
	assertOutput(t, run(t, o, "", "status", kc, "-n", "suspend", "search"),
		"Waiting for: a resume: rotations are suspended (spec.suspend), and the rotation requested by "+
			"mrtr.dev/rotate=2026-12-01T11:59:00Z starts once they are resumed (kubectl mrtr resume search).")

	r = run(t, o, "", "resume", kc, "-n", "suspend", "search")
	want = "Resumed MRTRKeyring suspend/search: rotations start again.\n" +
		"The rotation requested by mrtr.dev/rotate=2026-12-01T11:59:00Z starts now.\n" +
		"Follow it with: kubectl mrtr status search -n suspend\n"
	if r.err != nil || r.out != want {
		t.Fatalf("resume: %v\n%s\nwant\n%s", r.err, r.out, want)
	}
	if getKeyring(t, ctx, c, "suspend", "search").Spec.Suspend {
		t.Fatal("spec.suspend is true after resume")
	}
}

func TestEnvtestRevoke(t *testing.T) {
	c, kc := envtestNamespace(t, "revoke", []*mrtrv1alpha1.MRTRKeyring{search()})
	ctx := context.Background()
	o := Options{}

	r := run(t, o, "", "revoke", kc, "-n", "revoke", "search", "k20261121-090000", "k20261122-090000")
	want := "Requested the revocation of key(s) k20261121-090000, k20261122-090000 of MRTRKeyring revoke/search as request(s) 1-2 " +
		"(mrtr.dev/revoke=1:k20261121-090000,2:k20261122-090000).\n" +
		"The operator removes them on its next pass, in any phase: tokens sealed with them fail from then on.\n" +
		"Handled once status.lastHandledRevokeSequence is 2 or more.\n" +
		"Follow it with: kubectl mrtr status search -n revoke\n"
	if r.err != nil || r.out != want {
		t.Fatalf("revoke: %v\n%s\nwant\n%s", r.err, r.out, want)
	}
	if got := getKeyring(t, ctx, c, "revoke", "search").Annotations[mrtrv1alpha1.RevokeAnnotation]; got != "1:k20261121-090000,2:k20261122-090000" {
		t.Fatalf("annotation = %q", got)
	}

	// A later request is appended: the earlier ones, which the operator may not have handled yet,
	// stay.
	r = run(t, o, "", "revoke", kc, "-n", "revoke", "search", "--all")
	value := getKeyring(t, ctx, c, "revoke", "search").Annotations[mrtrv1alpha1.RevokeAnnotation]
	if r.err != nil || value != "1:k20261121-090000,2:k20261122-090000,3:*"+now.UTC().Format(time.RFC3339) ||
		!strings.Contains(r.out, "every token in flight fails") || !strings.Contains(r.out, "as request 3 ") {
		t.Fatalf("revoke --all: %v, annotation %q\n%s", r.err, value, r.out)
	}

	// Once the operator handled them, the next append prunes them: the annotation stays short
	// however many requests a keyring sees, and an unnumbered one (written by hand) stays.
	kr := getKeyring(t, ctx, c, "revoke", "search")
	kr.Annotations[mrtrv1alpha1.RevokeAnnotation] = "*incident-1," + value
	if err := c.Update(ctx, kr); err != nil {
		t.Fatal(err)
	}
	kr.Status.LastHandledRevokeSequence = 2
	kr.Status.RevokedKeys = []mrtrv1alpha1.RevokedKey{{ID: "k20261121-090000", RevokedAt: metav1.NewTime(now)}}
	if err := c.Status().Update(ctx, kr); err != nil {
		t.Fatal(err)
	}
	r = run(t, o, "", "revoke", kc, "-n", "revoke", "search", "k20261121-090000")
	value = getKeyring(t, ctx, c, "revoke", "search").Annotations[mrtrv1alpha1.RevokeAnnotation]
	if r.err != nil || value != "*incident-1,3:*"+now.UTC().Format(time.RFC3339)+",4:k20261121-090000" ||
		!strings.Contains(r.out, "Key(s) k20261121-090000 were revoked before: nothing more is revoked for them.") {
		t.Fatalf("revoke after the operator handled 1-2: %v, annotation %q\n%s", r.err, value, r.out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"revoke", "search"}, "name the keys to revoke"},
		{[]string{"revoke", "search", "k1", "--all"}, "give key ids or --all, not both"},
		{[]string{"revoke", "search", "not an id"}, `key id "not an id"`},
	} {
		r := run(t, o, "", append(tc.args, kc, "-n", "revoke")...)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%v: error %v; want one that says %q", tc.args, r.err, tc.want)
		}
	}
}

// A keyring the operator has not taken in yet may be one re-created for a Secret that records
// requests handled before: the command cannot number after them, so it writes nothing.
func TestEnvtestRevokeWaitsForTheOperator(t *testing.T) {
	kr := search()
	kr.Status = mrtrv1alpha1.MRTRKeyringStatus{}
	c, kc := envtestNamespace(t, "revoke-new", []*mrtrv1alpha1.MRTRKeyring{kr})
	r := run(t, Options{}, "", "revoke", kc, "-n", "revoke-new", "search", "k20261121-090000")
	if r.err == nil || !strings.Contains(r.err.Error(), "has no status yet: the operator has not taken it in") {
		t.Fatalf("revoke: error %v; want one that says the operator has not taken the keyring in", r.err)
	}
	if got := getKeyring(t, context.Background(), c, "revoke-new", "search").Annotations[mrtrv1alpha1.RevokeAnnotation]; got != "" {
		t.Fatalf("annotation = %q, want none", got)
	}
}

// kubectl mrtr revoke never loses a request written between its read and its write, nor gives its
// sequence twice: its write is conditional on the keyring as read, and on a conflict it reads
// again and appends to what it finds.
func TestEnvtestRevokeKeepsAConcurrentRequest(t *testing.T) {
	c, kc := envtestNamespace(t, "revoke-race", []*mrtrv1alpha1.MRTRKeyring{search()})
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", strings.TrimPrefix(kc, "--kubeconfig="))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	raced := false
	racing := interceptor.NewClient(direct, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if !raced {
				// Another revoke lands after this command read the keyring, before it writes: it
				// took sequence 1 too.
				raced = true
				other := getKeyring(t, ctx, cl, "revoke-race", "search")
				value, _ := mrtrv1alpha1.AppendRevokeRequests("", other.Status.LastHandledRevokeSequence, "k20261120-000000")
				other.Annotations = map[string]string{mrtrv1alpha1.RevokeAnnotation: value}
				if err := cl.Update(ctx, other); err != nil {
					t.Fatalf("the concurrent revoke: %v", err)
				}
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	})
	r := run(t, Options{Client: racing}, "", "revoke", "-n", "revoke-race", "search", "k20261121-090000")
	if r.err != nil {
		t.Fatalf("revoke: %v\n%s", r.err, r.errOut)
	}
	if got := getKeyring(t, ctx, c, "revoke-race", "search").Annotations[mrtrv1alpha1.RevokeAnnotation]; !raced || got != "1:k20261120-000000,2:k20261121-090000" {
		t.Fatalf("annotation = %q after a concurrent revoke (raced %v); want both requests, numbered 1 and 2", got, raced)
	}
}

func TestEnvtestErrors(t *testing.T) {
	_, kc := envtestNamespace(t, "empty", nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rotate", "missing"}, "MRTRKeyring missing not found in namespace empty"},
		{[]string{"suspend", "missing"}, "MRTRKeyring missing not found in namespace empty"},
		{[]string{"status", "missing"}, "MRTRKeyring missing not found in namespace empty"},
		{[]string{"rotate"}, "name the MRTRKeyring (NAME) or the ClusterMRTRKeyring (cmkr/NAME): kubectl mrtr rotate (NAME | cmkr/NAME)"},
		{[]string{"resume", "a", "b"}, "accepts 1 arg(s), received 2"},
	} {
		r := run(t, Options{}, "", append(tc.args, kc, "-n", "empty")...)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%v: error %v; want one that says %q", tc.args, r.err, tc.want)
		}
	}
	r := run(t, Options{}, "", "status", kc, "-n", "empty")
	if r.err != nil || r.out != "" || r.errOut != "No MRTRKeyrings found in namespace empty.\n" {
		t.Fatalf("status of an empty namespace: %v, stdout %q, stderr %q", r.err, r.out, r.errOut)
	}
}

// apiServerReady clears what only the API server may set (it refuses a creation timestamp on
// create, and a pod being deleted), and gives pods and Deployments the spec it requires.
func apiServerReady(obj client.Object) client.Object {
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetDeletionTimestamp(nil)
	obj.SetFinalizers(nil)
	container := []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1"}}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec.Containers = container
	case *appsv1.Deployment:
		o.Spec.Template = corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: o.Spec.Selector.MatchLabels},
			Spec:       corev1.PodSpec{Containers: container},
		}
	}
	return obj
}

func getKeyring(t *testing.T, ctx context.Context, c client.Client, ns, name string) *mrtrv1alpha1.MRTRKeyring {
	t.Helper()
	kr := &mrtrv1alpha1.MRTRKeyring{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, kr); err != nil {
		t.Fatal(err)
	}
	return kr
}
