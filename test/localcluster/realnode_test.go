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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// TestRealNodeRunsPodsAndLeavesNothingBehind runs pods as containers on the real node and checks
// that Stop leaves the machine as it found it: no process, mount, network namespace, link,
// iptables rule, cgroup, file outside the cluster's folder or kernel setting of the node's.
func TestRealNodeRunsPodsAndLeavesNothingBehind(t *testing.T) {
	g := NewWithT(t)
	bin, err := localcluster.NodeBinDir()
	g.Expect(err).NotTo(HaveOccurred())
	before := snapshotHost(t)

	begin := time.Now()
	c, err := localcluster.Start(t.Context(), localcluster.Options{BinDir: bin, LogDir: t.TempDir(), Node: localcluster.NodeReal})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("cluster with a real node started in %s", time.Since(begin).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.TailLogs(40))
		}
		if !stopped {
			_ = c.Stop()
		}
	})
	g.Expect(c.Node()).To(Equal(localcluster.NodeReal))
	g.Expect(c.NodeNames()).To(Equal([]string{localcluster.RealNodeName}))

	ctx := t.Context()
	cl, err := client.New(c.RESTConfig(), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "sandboxes"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxes", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// The pause image is the one image the node always has.
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64(1)),
					Containers: []corev1.Container{{Name: "pause", Image: localcluster.PauseImage,
						ImagePullPolicy: corev1.PullNever}},
				},
			},
		},
	}
	begin = time.Now()
	g.Expect(cl.Create(ctx, deploy)).To(Succeed())
	_, podNet, _ := net.ParseCIDR("10.88.0.0/16")
	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			g.Expect(p.Spec.NodeName).To(Equal(localcluster.RealNodeName))
			g.Expect(p.Status.ContainerStatuses).To(ConsistOf(HaveField("State.Running", Not(BeNil()))))
			g.Expect(podNet.Contains(net.ParseIP(p.Status.PodIP))).To(BeTrue(), "pod IP %q", p.Status.PodIP)
		}
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("2 pods running %s after the Deployment's creation", time.Since(begin).Round(time.Millisecond))

	// The containers run on this machine, under the node's shims.
	g.Expect(processes()).To(ContainElement(HavePrefix("pause ")))
	g.Expect(processes()).To(ContainElement(HavePrefix("containerd-shim ")))

	stopped = true
	begin = time.Now()
	g.Expect(c.Stop()).To(Succeed())
	t.Logf("stopped in %s", time.Since(begin).Round(time.Millisecond))
	g.Expect(childrenOf(os.Getpid())).To(BeEmpty(), "Stop must leave no process behind")
	g.Expect(snapshotHost(t)).To(Equal(before), "Stop must leave the machine as Start found it")
}

// hostSnapshot is what the real node could leave behind on this machine.
type hostSnapshot struct {
	Processes []string // "comm pid" of the node's kinds of process
	Mounts    []string
	Links     []string
	Iptables  []string // the rules of every table, IPv4 and IPv6, without counters
	Paths     []string // localcluster.HostPaths and everything under them
	Cgroups   []string
	Sysctls   []string
}

func snapshotHost(t *testing.T) hostSnapshot {
	t.Helper()
	var s hostSnapshot
	s.Processes = processes()
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 4 {
				s.Mounts = append(s.Mounts, fields[4])
			}
		}
		_ = f.Close()
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		s.Links = append(s.Links, i.Name)
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			t.Fatalf("%s: %v", save, err)
		}
		table := ""
		for line := range strings.Lines(string(out)) {
			// The rules, and the chains other than the built-in ones, without counters: a table
			// that the node's tools made appear (iptables-nft makes it at its first rule) and that
			// is empty again is no rule left behind.
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "*"):
				table = line
			case strings.HasPrefix(line, "-A "):
				s.Iptables = append(s.Iptables, save+" "+table+" "+line)
			case strings.HasPrefix(line, ":"):
				chain := strings.Fields(line)[0]
				if !slices.Contains([]string{":PREROUTING", ":INPUT", ":FORWARD", ":OUTPUT", ":POSTROUTING"}, chain) {
					s.Iptables = append(s.Iptables, save+" "+table+" "+chain)
				}
			}
		}
	}
	for _, p := range localcluster.HostPaths {
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err == nil {
				s.Paths = append(s.Paths, path)
			}
			return nil
		})
	}
	s.Cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/kubepods*")
	for _, k := range localcluster.Sysctls {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", k))
		s.Sysctls = append(s.Sysctls, k+"="+strings.TrimSpace(string(v)))
	}
	for _, l := range [][]string{s.Mounts, s.Links, s.Paths} {
		slices.Sort(l)
	}
	return s
}

// processes lists the live processes of the kinds a node runs, as "comm pid".
func processes() []string {
	kinds := []string{"containerd", "containerd-shim", "kubelet", "kube-proxy", "pause", "runc"}
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if slices.Contains(kinds, name) && alive(atoi(e.Name())) {
			out = append(out, name+" "+e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
