//go:build e2e && linux

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

package localcluster_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// binDir builds the control plane once per test binary (a no-op when it is in the cache already), so
// that the build does not count against the start timeouts below.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := localcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDeploymentBecomesAvailable(t *testing.T) {
	g := NewWithT(t)
	bin := binDir(t)
	ctx := t.Context()

	begin := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: bin, LogDir: t.TempDir(), Node: localcluster.NodeKwok})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("cluster started in %s", time.Since(begin).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.TailLogs(40))
		}
		if !stopped {
			_ = c.Stop()
		}
	})

	cl, err := client.New(c.RESTConfig(), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	const name = "web"
	labels := map[string]string{"app": name}
	replicas := int32(3)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// kwok never pulls or runs the image; it only has to be a valid reference.
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "example.invalid/web:1"}}},
			},
		},
	}
	begin = time.Now()
	g.Expect(cl.Create(ctx, deploy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.ObservedGeneration).To(Equal(deploy.Generation))
		g.Expect(deploy.Status.UpdatedReplicas).To(BeEquivalentTo(3))
		g.Expect(deploy.Status.AvailableReplicas).To(BeEquivalentTo(3))
		g.Expect(deploy.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable),
			HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("3-replica Deployment Available %s after creation", time.Since(begin).Round(time.Millisecond))

	var pods corev1.PodList
	g.Expect(cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
	g.Expect(pods.Items).To(HaveEach(HaveField("Spec.NodeName", "kwok-node-0")))

	// Deletions behave as in a real cluster: the garbage collector takes a deleted Deployment's
	// ReplicaSets and pods, and the namespace controller empties a deleted namespace and removes it.
	g.Expect(cl.Delete(ctx, deploy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
		var rss appsv1.ReplicaSetList
		g.Expect(cl.List(ctx, &rss, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
		g.Expect(rss.Items).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	g.Expect(cl.Create(ctx, ns)).To(Succeed())
	g.Expect(cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns.Name}})).To(Succeed())
	g.Expect(cl.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(ns), ns))
	}).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(BeTrue(), "the namespace never finished terminating")

	g.Expect(childrenOf(os.Getpid())).NotTo(BeEmpty(), "the cluster should run as our children")
	stopped = true
	g.Expect(c.Stop()).To(Succeed())
	g.Expect(childrenOf(os.Getpid())).To(BeEmpty(), "Stop must leave no process behind")
	g.Expect(c.Stop()).To(Succeed(), "a second Stop is a no-op")
}

func TestStartCleansUpAfterAFailedStep(t *testing.T) {
	g := NewWithT(t)
	bin := binDir(t)

	// The CRDs are installed after etcd and kube-apiserver are up, so this fails with both running.
	_, err := localcluster.Start(t.Context(), localcluster.Options{
		BinDir:            bin,
		Node:              localcluster.NodeKwok,
		CRDDirectoryPaths: []string{filepath.Join(t.TempDir(), "no-such-dir")},
	})
	g.Expect(err).To(MatchError(ContainSubstring("no-such-dir")))
	g.Expect(childrenOf(os.Getpid())).To(BeEmpty())
}

// helperEnv makes the test binary, run again by TestNothingOutlivesAKilledParent, start a cluster,
// print the ids of its children and block until it is killed.
const helperEnv = "LOCALCLUSTER_TEST_HELPER_BIN_DIR"

func TestNothingOutlivesAKilledParent(t *testing.T) {
	if bin := os.Getenv(helperEnv); bin != "" {
		runHelper(bin)
		return
	}
	g := NewWithT(t)
	bin := binDir(t)

	helper := exec.Command(os.Args[0], "-test.run=^TestNothingOutlivesAKilledParent$")
	// Everything the helper leaves in TMPDIR (it cannot clean up after kill -9) goes with our TempDir.
	helper.Env = append(os.Environ(), helperEnv+"="+bin, "TMPDIR="+t.TempDir())
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helper.Start()).To(Succeed())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PIDS "); ok {
			for f := range strings.FieldsSeq(rest) {
				pid, err := strconv.Atoi(f)
				g.Expect(err).NotTo(HaveOccurred())
				pids = append(pids, pid)
			}
			break
		}
	}
	g.Expect(pids).To(HaveLen(5), "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")

	g.Expect(helper.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = helper.Wait()
	for _, pid := range pids {
		g.Eventually(alive).WithArguments(pid).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
			Should(BeFalse(), "process %d outlived its killed parent", pid)
	}
}

func runHelper(bin string) {
	c, err := localcluster.Start(context.Background(), localcluster.Options{BinDir: bin, Node: localcluster.NodeKwok})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	pids := childrenOf(os.Getpid())
	fmt.Printf("PIDS %s\n", strings.Trim(fmt.Sprint(pids), "[]"))
	_ = c // never stopped: the parent kills us with SIGKILL
	select {}
}

// childrenOf lists the live (not zombie) processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := stat(id)
		if ok && ppid == pid && state != "Z" {
			kids = append(kids, id)
		}
	}
	return kids
}

// alive reports whether pid exists and is not a zombie (an orphan reparented to a PID 1 that does not
// reap stays a zombie, but it runs no more).
func alive(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != "Z"
}

// stat reads the state and parent id from /proc/<pid>/stat: "pid (comm) state ppid ...", where comm
// may itself contain spaces and parentheses.
func stat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// A kwok cluster's API server stopped and started again is the same server: the same address,
// certificates and ServiceAccount key, and etcd's objects; the token controller fills in a token
// Secret, whose token authenticates until the Secret is deleted.
func TestAPIServerStopsAndStartsAsTheSameServer(t *testing.T) {
	g := NewWithT(t)
	bin := binDir(t)
	ctx := t.Context()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: bin, LogDir: t.TempDir(), Node: localcluster.NodeKwok,
		ServiceAccountTokens: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.TailLogs(40))
		}
		_ = c.Stop()
	})
	admin, err := client.New(c.RESTConfig(), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hub"}}
	g.Expect(admin.Create(ctx, sa)).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hub-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name}}, Type: corev1.SecretTypeServiceAccountToken}
	g.Expect(admin.Create(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveKey(corev1.ServiceAccountTokenKey))
		g.Expect(secret.Data).To(HaveKeyWithValue(corev1.ServiceAccountRootCAKey, c.RESTConfig().CAData))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	tokenCfg := c.RESTConfig()
	tokenCfg.CertData, tokenCfg.KeyData = nil, nil
	tokenCfg.BearerToken = string(secret.Data[corev1.ServiceAccountTokenKey])
	hub, err := client.New(tokenCfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	// Authenticated, and refused by RBAC: the token is good.
	g.Expect(apierrors.IsForbidden(hub.List(ctx, &corev1.SecretList{}))).To(BeTrue())

	g.Expect(c.StopAPIServer()).To(Succeed())
	err = admin.Get(ctx, client.ObjectKeyFromObject(sa), sa)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))

	g.Expect(c.StartAPIServer()).To(Succeed())
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed(), "the same address, CA and client certificate")
	g.Expect(apierrors.IsForbidden(hub.List(ctx, &corev1.SecretList{}))).To(BeTrue(), "the same ServiceAccount key")

	g.Expect(admin.Delete(ctx, secret)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsUnauthorized(hub.List(ctx, &corev1.SecretList{})) }).
		WithTimeout(30*time.Second).Should(BeTrue(), "a token whose Secret is gone no longer authenticates")
}
