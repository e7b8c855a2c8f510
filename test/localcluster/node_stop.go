//go:build unix

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

package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HostPaths are the places outside the cluster's folder that a kubelet, containerd or the CNI
// plugins write to whatever they are told (libcni's cache, the kubelet's device-plugin socket
// folder and container-log links, containerd's shim sockets). Stop removes each one the node
// created; a test compares them before Start and after Stop.
var HostPaths = []string{
	"/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd",
	"/etc/cni", "/opt/cni", "/opt/containerd", "/var/lib/containerd", "/etc/kubernetes", "/run/netns",
}

// Sysctls are the kernel settings the kubelet (its kernel tunables), the bridge plugin (forwarding)
// and kube-proxy may change; Stop puts back what they were at Start.
var Sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
}

// hostBefore is what the node may change outside its folder, as it was before it started.
type hostBefore struct {
	existed  map[string]bool    // HostPaths and the kubepods cgroups
	sysctls  map[string]string  // Sysctls' values
	cgroups  []string           // the kubepods folder the kubelet makes in each cgroup hierarchy
	hadLinks map[string]bool    // /var/log/containers entries
	iptables map[string]ruleset // by save command: iptables-save, ip6tables-save
}

func recordHost() hostBefore {
	b := hostBefore{existed: map[string]bool{}, sysctls: map[string]string{}, hadLinks: map[string]bool{},
		iptables: map[string]ruleset{}}
	for save := range iptablesFamilies {
		if rs, err := saveIptables(save); err == nil {
			b.iptables[save] = rs
		}
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		b.cgroups = append(b.cgroups, filepath.Join(h, "kubepods"))
	}
	for _, p := range append(slices.Clone(HostPaths), b.cgroups...) {
		_, err := os.Lstat(p)
		b.existed[p] = err == nil
	}
	for _, s := range Sysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			b.sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		b.hadLinks[e.Name()] = true
	}
	return b
}

// drainNode deletes every pod while the API server, the kubelet and containerd still run, so that
// the kubelet stops each sandbox the regular way (its network torn down by the CNI plugins). The
// controllers that would replace the pods are stopped first. If the kubelet cannot do it in time,
// cleanup removes what is left by force.
func (c *Cluster) drainNode() error {
	for _, p := range slices.Backward(c.procs) {
		if !slices.Contains([]string{containerdName, "kubelet", "kube-proxy"}, p.Name()) {
			_ = p.Stop() // stopped for good below; an error is reported there
		}
	}
	if c.config == nil {
		return nil
	}
	cl, err := client.New(c.RESTConfig(), client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := cl.List(ctx, &pods); err != nil {
		return nil //nolint:nilerr // the API server is gone: cleanup does it all by force
	}
	for i := range pods.Items {
		_ = cl.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(1))
	}
	// An error here (time out) leaves the rest to cleanup's force.
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := cl.List(ctx, &pods); err != nil {
			return false, nil //nolint:nilerr // retried until ctx ends
		}
		return len(pods.Items) == 0, nil
	})
	return nil
}

// cleanup removes, once every process of the cluster is stopped, whatever the node left outside
// the processes' own exits: containers and their shims (which outlive containerd by design),
// mounts, the bridge, iptables rules, cgroups, files outside the cluster's folder, and kernel
// settings. Each step runs whatever the earlier ones did; the errors are joined.
func (n *realNode) cleanup(workDir, logDir string) error {
	var errs []error
	// Containers first, by runc's own state: then the shims have nothing left to wait for.
	ids, _ := filepath.Glob(filepath.Join(n.runcDir, "*", "*"))
	for _, id := range ids {
		root := filepath.Dir(id)
		if out, err := exec.Command("runc", "--root", root, "delete", "--force", filepath.Base(id)).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("runc delete %s: %w: %s", filepath.Base(id), err, out))
		}
	}
	errs = append(errs, killShims(n.sock))
	errs = append(errs, unmountUnder(workDir))
	errs = append(errs, n.cleanNetwork(logDir))
	errs = append(errs, n.cleanHost())
	return errors.Join(errs...)
}

// killShims kills the containerd shims of the node's containerd (their command line names its
// socket) and waits until they are gone.
func killShims(sock string) error {
	pids := processesWith(sock)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(sock)) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd shims %v survived SIGKILL", processesWith(sock))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// processesWith lists the live processes whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// unmountUnder detaches every mount point under dir, the deepest first: the containers' root
// file systems, their shm, the pods' network namespaces and the kubelet's volumes.
func unmountUnder(dir string) error {
	var errs []error
	for _, m := range slices.Backward(mountsUnder(dir)) {
		if out, err := exec.Command("umount", "--lazy", m).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %w: %s", m, err, out))
		}
	}
	if left := mountsUnder(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %v", left))
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points under dir, sorted (a parent before its children).
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// mountinfo escapes spaces and the like as octal; none of our paths has them.
		if p := fields[4]; strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cleanNetwork removes kube-proxy's rules (kube-proxy --cleanup), then every rule and chain the
// node added to iptables (see cleanIptables), and the bridge.
func (n *realNode) cleanNetwork(logDir string) error {
	var errs []error
	proxy := exec.Command(filepath.Join(n.binDir, "kube-proxy"), "--cleanup")
	if log, err := os.OpenFile(filepath.Join(logDir, "kube-proxy-cleanup.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		proxy.Stdout, proxy.Stderr = log, log
		_ = proxy.Run() // it also tries IPVS and nftables, absent here; cleanIptables takes what it leaves
		_ = log.Close()
	}
	for family, before := range n.before.iptables {
		errs = append(errs, cleanIptables(family, before))
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link delete %s: %w: %s", bridgeName, err, out))
		}
	}
	return errors.Join(errs...)
}

// iptablesFamilies are the save and restore commands of IPv4 and IPv6.
var iptablesFamilies = map[string]string{"iptables-save": "iptables-restore", "ip6tables-save": "ip6tables-restore"}

// ruleset is one family's iptables-save output: per table, its chains and its rules.
type ruleset map[string]*table

type table struct {
	chains map[string]bool
	rules  []string // without the leading "-A "
}

func saveIptables(save string) (ruleset, error) {
	out, err := exec.Command(save).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", save, err)
	}
	rs := ruleset{}
	var t *table
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			t = &table{chains: map[string]bool{}}
			rs[line[1:]] = t
		case t == nil:
		case strings.HasPrefix(line, ":"):
			t.chains[strings.Fields(line[1:])[0]] = true
		case strings.HasPrefix(line, "-A "):
			t.rules = append(t.rules, line[len("-A "):])
		}
	}
	return rs, nil
}

// cleanIptables removes from one family what the node added: the chains named KUBE-* (the
// kubelet's and kube-proxy's) or CNI-* (the bridge and portmap plugins') that were not there
// before, every rule that jumps to one of them, and the rules that carry the guard's or the CNI
// network's mark. Rules and chains that were there before stay, whoever made them.
func cleanIptables(save string, before ruleset) error {
	now, err := saveIptables(save)
	if err != nil {
		return err
	}
	var script strings.Builder
	for name, t := range now {
		var added []string
		for ch := range t.chains {
			existed := before[name] != nil && before[name].chains[ch]
			if !existed && (strings.HasPrefix(ch, "KUBE-") || strings.HasPrefix(ch, "CNI-")) {
				added = append(added, ch)
			}
		}
		var cmds []string
		for _, rule := range t.rules {
			chain, _, _ := strings.Cut(rule, " ")
			if slices.Contains(added, chain) {
				continue // flushed with its chain
			}
			_, target, _ := strings.Cut(rule, " -j ")
			jumpsToAdded := target != "" && slices.Contains(added, strings.Fields(target)[0])
			if jumpsToAdded || strings.Contains(rule, guardComment) || strings.Contains(rule, `name: \"`+cniNetwork+`\"`) {
				cmds = append(cmds, "-D "+rule)
			}
		}
		for _, ch := range added {
			cmds = append(cmds, "-F "+ch)
		}
		for _, ch := range added {
			cmds = append(cmds, "-X "+ch)
		}
		if len(cmds) > 0 {
			script.WriteString("*" + name + "\n" + strings.Join(cmds, "\n") + "\nCOMMIT\n")
		}
	}
	if script.Len() == 0 {
		return nil
	}
	cmd := exec.Command(iptablesFamilies[save], "-w", "--noflush")
	cmd.Stdin = strings.NewReader(script.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", iptablesFamilies[save], err, out)
	}
	return nil
}

// cleanHost removes the kubepods cgroups and the HostPaths the node created, the container-log
// links it added, and puts the Sysctls back.
func (n *realNode) cleanHost() error {
	var errs []error
	for _, cg := range n.before.cgroups {
		if !n.before.existed[cg] {
			errs = append(errs, removeCgroup(cg))
		}
	}
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		if !n.before.hadLinks[e.Name()] {
			errs = append(errs, os.Remove(filepath.Join("/var/log/containers", e.Name())))
		}
	}
	for _, p := range HostPaths {
		if !n.before.existed[p] {
			errs = append(errs, os.RemoveAll(p))
		}
	}
	for s, v := range n.before.sysctls {
		p := filepath.Join("/proc/sys", s)
		if now, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(now)) != v {
			errs = append(errs, os.WriteFile(p, []byte(v), 0o644))
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup folder and the ones below it, the deepest first (a cgroup folder is
// removed with rmdir, and only once it has no children and no processes).
func removeCgroup(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
