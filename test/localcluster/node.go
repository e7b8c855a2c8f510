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
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// NodeKind says what plays the cluster's node: a real kubelet with containerd, or kwok.
type NodeKind string

const (
	// NodeAuto picks NodeReal where this machine can run it, else NodeKwok, and says why.
	NodeAuto NodeKind = ""
	// NodeReal is one node of a real kubelet, containerd with runc and CNI (bridge, host-local,
	// portmap) and kube-proxy in iptables mode: pods run as containers of imported images, get an
	// address on a bridge, their Secret volumes and projected ServiceAccount tokens from the kubelet,
	// and reach the API server through its Service address.
	NodeReal NodeKind = "real"
	// NodeKwok is kwok's simulated nodes: pods are scheduled and turn Ready, nothing runs.
	NodeKwok NodeKind = "kwok"
)

// NodeEnv forces the node kind where Options.Node leaves it to the machine: MRTR_NODE=real fails
// where the real node cannot run, and says why; MRTR_NODE=kwok never tries it.
const NodeEnv = "MRTR_NODE"

// containerdName is containerd's command, and the name of its process in the cluster's list.
const containerdName = "containerd"

// RealNodeName is the name the real node registers under.
const RealNodeName = "localcluster-node"

// The real node's fixed settings.
const (
	// podCIDR is the bridge's range; pods get their addresses from it.
	podCIDR = "10.88.0.0/16"
	// bridgeName is the bridge the CNI plugin makes, and the name of the CNI network.
	bridgeName = "mrtr-lc0"
	cniNetwork = "mrtr-localcluster"
	// guardComment marks the iptables rule that keeps pod traffic on this machine.
	guardComment = "mrtr-localcluster: pods reach nothing beyond this machine"
	// cniDir holds the CNI plugins of Debian's containernetworking-plugins.
	cniDir = "/usr/lib/cni"
	// PauseImage is the pod sandbox image the node builds and imports.
	PauseImage = "localhost/mrtr-localcluster/pause:local"
)

// apiServiceIP is the first address of envtest's Service range (10.0.0.0/24): the API server's
// Service, the address in-cluster clients dial.
var apiServiceIP = net.IPv4(10, 0, 0, 1)

// ChooseNode decides what plays the node: want unless it is NodeAuto; else $MRTR_NODE if set; else
// the real node where this machine can run it (Linux, root, containerd, runc, ctr, iptables,
// conntrack and the CNI plugins installed, one node asked for). The reason says why, in words to print.
func ChooseNode(want NodeKind, nodes int) (NodeKind, string, error) {
	forced := ""
	if want == NodeAuto {
		if v := os.Getenv(NodeEnv); v != "" {
			want, forced = NodeKind(v), NodeEnv+"="+v
		}
	} else {
		forced = "Options.Node=" + string(want)
	}
	switch want {
	case NodeKwok:
		return NodeKwok, "kwok simulates the node: " + forced, nil
	case NodeReal, NodeAuto:
	default:
		return "", "", fmt.Errorf("%s=%q: the node must be %q or %q", NodeEnv, want, NodeReal, NodeKwok)
	}
	why := realNodeMissing(nodes)
	switch {
	case why == "":
		reason := "a real kubelet and containerd run the node: this machine can (root, containerd, runc, CNI plugins)"
		if forced != "" {
			reason += "; " + forced
		}
		return NodeReal, reason, nil
	case want == NodeReal:
		return "", "", fmt.Errorf("%s, but the real node cannot run here: %s", forced, why)
	default:
		return NodeKwok, "kwok simulates the node, because the real node cannot run here: " + why +
			" (" + NodeEnv + "=real or =kwok forces either)", nil
	}
}

// realNodeMissing says what this machine lacks for the real node, or "".
func realNodeMissing(nodes int) string {
	if runtime.GOOS != "linux" {
		return "it needs Linux"
	}
	if nodes > 1 {
		return fmt.Sprintf("%d nodes were asked for and the real node is one", nodes)
	}
	if os.Geteuid() != 0 {
		return "it needs root (mounts, network namespaces, iptables)"
	}
	var missing []string
	for _, tool := range []string{containerdName, "containerd-shim-runc-v2", "ctr", "runc", "iptables", "iptables-save",
		"iptables-restore", "conntrack", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniDir, plugin))
		}
	}
	if len(missing) > 0 {
		return "missing " + strings.Join(missing, ", ") +
			" (apt-get install containerd runc containernetworking-plugins iptables conntrack iproute2)"
	}
	if _, err := hostIP(); err != nil {
		return err.Error()
	}
	return ""
}

// hostIP is the IPv4 address of the interface of the default route: the node's InternalIP, where
// the API server listens for the pods (through kube-proxy) and the kubelet for the API server.
func hostIP() (net.IP, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[1] != "00000000" {
			continue
		}
		iface, err := net.InterfaceByName(fields[0])
		if err != nil {
			return nil, err
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.To4(), nil
			}
		}
	}
	return nil, errors.New("no IPv4 default route: the node needs an address that pods can reach")
}

// realNode is the running node: its processes are in the Cluster's list, its state in dir.
type realNode struct {
	dir     string // inside the cluster's working directory
	ip      net.IP
	sock    string // containerd's socket
	runcDir string // runc's state, per containerd namespace
	caPEM   []byte // the API server's serving CA
	binDir  string
	before  hostBefore
}

// prepareRealNode picks the node's address and writes the API server's PKI, before the API server
// starts: it must listen where the pods can reach it and serve a certificate for its Service address.
func (c *Cluster) prepareRealNode(binDir string, api *envtest.APIServer) error {
	ip, err := hostIP()
	if err != nil {
		return err
	}
	n := &realNode{dir: filepath.Join(c.workDir, "node"), ip: ip, binDir: binDir, before: recordHost()}
	n.sock = filepath.Join(n.dir, "containerd", "containerd.sock")
	n.runcDir = filepath.Join(n.dir, "runc")
	c.node = n
	certDir := c.certDir()
	if n.caPEM, err = apiserverPKI(certDir, []net.IP{ip}); err != nil {
		return fmt.Errorf("the API server's certificates: %w", err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	api.CertDir = certDir
	api.CA = n.caPEM
	api.Address, api.Port = ip.String(), fmt.Sprint(port)
	api.Configure().
		// The Node authorizer gives the kubelet what its pods need (their Secrets, tokens bound to
		// them) and RBAC the rest; envtest's default is RBAC alone.
		Set("authorization-mode", "Node,RBAC").
		// The ServiceAccount admission plugin mounts each pod's projected token; envtest turns it off.
		Set("disable-admission-plugins", "").
		Set("enable-admission-plugins", "ServiceAccount").
		// Without it, logs and exec look the node's name up in DNS, and fail.
		Set("kubelet-preferred-address-types", "InternalIP")
	return nil
}

// startRealNode starts containerd, imports the pause image and opts.Images, then the kubelet and
// kube-proxy, and returns once the node is Ready and kube-proxy serves the API server's Service.
func (c *Cluster) startRealNode(ctx context.Context, images []string) error {
	n := c.node
	for _, d := range []string{"containerd", "cni/conf", "cni/ipam", "kubelet", "pod-logs", "runc", "images"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	// Until kube-proxy serves the API server's Service, a pod's packets to 10.0.0.1 would follow the
	// default route off this machine; so would any other address. The guard refuses every packet
	// from the pods that would leave through another interface than their bridge.
	if err := iptablesRestore("filter", fmt.Sprintf("-I FORWARD -s %s ! -o %s -m comment --comment %q -j REJECT\n",
		podCIDR, bridgeName, guardComment)); err != nil {
		return fmt.Errorf("the guard that keeps pod traffic on this machine: %w", err)
	}
	pause, err := c.buildPauseImage(ctx, filepath.Join(n.dir, "images", "pause"))
	if err != nil {
		return err
	}
	if err := c.startContainerd(ctx); err != nil {
		return err
	}
	for _, img := range append([]string{pause}, images...) {
		if err := c.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	if err := c.startKubelet(); err != nil {
		return err
	}
	if err := c.startKubeProxy(); err != nil {
		return err
	}
	if err := c.waitNodes(ctx, 1); err != nil {
		return err
	}
	return c.waitServiceRule(ctx)
}

// buildPauseImage builds ./test/localcluster/cmd/pause, static, and puts it on an image with
// hack/image; it returns the image's OCI layout tar.
func (c *Cluster) buildPauseImage(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "pause")
	if err := testenv.Build(ctx, "./test/localcluster/cmd/pause", bin); err != nil {
		return "", err
	}
	img, err := BuildImage(ctx, ImageSpec{Ref: PauseImage, Binary: bin, Entrypoint: "/pause"}, filepath.Join(dir, "image"))
	return img.Tar, err
}

// ImageSpec is what BuildImage puts on an image: either a static Linux binary on the manager
// image's base, or directory trees.
type ImageSpec struct {
	// Ref names the image.
	Ref string
	// Binary is put at Entrypoint ("" means the manager's path) on the manager image's base.
	Binary, Entrypoint string
	// Layers are directory trees, one layer each in order, instead of Binary: the image runs Cmd
	// with Env added. It is how the Python and TypeScript example servers are put on a Debian root
	// (hack/server-rootfs.sh) with their runtime.
	Layers, Cmd, Env []string
}

// Image is an image that BuildImage wrote.
type Image struct {
	// Layout is the OCI image layout folder, Tar the same as one file (what ImportImage takes).
	Layout, Tar string
	Ref         string
}

// BuildImage builds spec with hack/image, as `make image` does, into outDir: the one way the tests
// make an image, be it the manager's, the pause image or an example server's.
func BuildImage(ctx context.Context, spec ImageSpec, outDir string) (Image, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return Image{}, err
	}
	args := []string{"run", ".", "-tag", spec.Ref, "-out", outDir}
	entrypoint := spec.Entrypoint
	switch {
	case len(spec.Layers) > 0:
		if len(spec.Cmd) == 0 {
			return Image{}, fmt.Errorf("image %s: layers need a Cmd", spec.Ref)
		}
		cmdJSON, err := json.Marshal(spec.Cmd)
		if err != nil {
			return Image{}, err
		}
		entrypoint = spec.Cmd[len(spec.Cmd)-1]
		args = append(args, "-cmd", string(cmdJSON), "-title", filepath.Base(spec.Ref))
		for _, l := range spec.Layers {
			args = append(args, "-layer", l)
		}
		for _, e := range spec.Env {
			args = append(args, "-env", e)
		}
	case spec.Binary != "":
		args = append(args, "-binary", spec.Binary)
		if entrypoint != "" {
			args = append(args, "-title", filepath.Base(entrypoint))
		}
	default:
		return Image{}, fmt.Errorf("image %s: give a Binary or Layers", spec.Ref)
	}
	if entrypoint != "" {
		args = append(args, "-entrypoint", entrypoint)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Join(root, "hack", "image")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("building image %s (hack/image): %w\n%s", spec.Ref, err, out)
	}
	return Image{Layout: filepath.Join(outDir, "oci"), Tar: filepath.Join(outDir, "oci.tar"), Ref: spec.Ref}, nil
}

// ImportImage imports an OCI layout tar (hack/image's oci.tar) into the real node's containerd,
// under the name its index gives it: pods use it with imagePullPolicy IfNotPresent or Never, since
// nothing can be pulled here.
func (c *Cluster) ImportImage(ctx context.Context, ociTar string) error {
	if c.node == nil {
		return errors.New("importing an image: the cluster has no real node")
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.node.sock, "--namespace", "k8s.io",
		"images", "import", ociTar).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", ociTar, err, out)
	}
	return nil
}

func (c *Cluster) startContainerd(ctx context.Context) error {
	n := c.node
	cfg := filepath.Join(n.dir, "containerd", "config.toml")
	if err := os.WriteFile(cfg, []byte(n.containerdConfig()), 0o644); err != nil {
		return err
	}
	conflist := filepath.Join(n.dir, "cni", "conf", "10-"+cniNetwork+".conflist")
	if err := os.WriteFile(conflist, []byte(n.cniConfig()), 0o644); err != nil {
		return err
	}
	if _, err := c.StartProcess(containerdName, exec.Command(containerdName, "--config", cfg)); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.procErr(); err != nil {
			return false, err
		}
		return exec.CommandContext(ctx, "ctr", "--address", n.sock, "version").Run() == nil, nil
	})
}

// containerdConfig keeps containerd's root, state, socket, runc state and the pods' network
// namespaces inside the node's folder, and turns on what this machine needs (see docs/benchmarks.md
// and the README's real-node section): restrict_oom_score_adj, because root here lacks
// CAP_SYS_RESOURCE and runc cannot lower a sandbox's oom_score_adj; a locally built pause image.
func (n *realNode) containerdConfig() string {
	d := filepath.Join(n.dir, "containerd")
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[8]q
`, filepath.Join(d, "root"), filepath.Join(d, "state"), n.sock, filepath.Join(d, "opt"), PauseImage,
		cniDir, filepath.Join(n.dir, "cni", "conf"), n.runcDir)
}

// cniConfig is a bridge with masquerading and hairpin (a pod reaches itself through a Service),
// addresses from host-local with its state in the node's folder, and portmap for hostPorts.
func (n *realNode) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cniNetwork, bridgeName, podCIDR, filepath.Join(n.dir, "cni", "ipam"))
}

// startKubelet runs the kubelet as system:node:<RealNodeName>, with its root, its pods' logs and its
// certificates in the node's folder.
func (c *Cluster) startKubelet() error {
	n := c.node
	kubeconfig, err := c.userKubeconfig(envtest.User{Name: "system:node:" + RealNodeName, Groups: []string{"system:nodes"}},
		filepath.Join(n.dir, "kubelet.kubeconfig"))
	if err != nil {
		return err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "kubelet.yaml")
	// The default syncFrequency (1m) on purpose: the pace of a real kubelet is what the operator
	// must live with. Image garbage collection is off (the images are imported, never pulled) and
	// the eviction thresholds low, so that a full disk elsewhere on this machine evicts nothing.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
podLogsDir: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization:
  mode: Webhook
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
registerWithTaints: []
`, n.sock, n.ip, port, filepath.Join(n.dir, "pod-logs"))
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return err
	}
	kubelet := exec.Command(filepath.Join(n.binDir, "kubelet"), "--config="+cfg, "--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--cert-dir="+filepath.Join(n.dir, "kubelet", "pki"),
		"--hostname-override="+RealNodeName, "--node-ip="+n.ip.String())
	_, err = c.start("kubelet", kubelet)
	return err
}

// startKubeProxy runs kube-proxy in iptables mode, for the pods' packets to Service addresses
// (the API server's above all) and the host's. It changes no sysctl: no conntrack sizing, no
// localhost NodePorts (route_localnet).
func (c *Cluster) startKubeProxy() error {
	n := c.node
	health, err := testenv.FreePort()
	if err != nil {
		return err
	}
	metrics, err := testenv.FreePort()
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "kube-proxy.yaml")
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, c.kubeconfig, RealNodeName, podCIDR, health, metrics)
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return err
	}
	_, err = c.start("kube-proxy", exec.Command(filepath.Join(n.binDir, "kube-proxy"), "--config="+cfg))
	return err
}

// waitServiceRule waits until kube-proxy has written the rule that takes the API server's Service
// address to the API server: before it, a pod cannot reach the API server.
func (c *Cluster) waitServiceRule(ctx context.Context) error {
	want := apiServiceIP.String() + "/32"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.procErr(); err != nil {
			return false, err
		}
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES").Output()
		return err == nil && strings.Contains(string(out), want), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-proxy to serve the API server's Service %s (logs in %s): %w", apiServiceIP, c.logDir, err)
	}
	return nil
}

// userKubeconfig writes a kubeconfig of user (a client certificate from envtest's CA) to path.
func (c *Cluster) userKubeconfig(user envtest.User, path string) (string, error) {
	u, err := c.env.Environment().AddUser(user, &rest.Config{})
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", user.Name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o600)
}

// procErr is the first error of a process that ended on its own.
func (c *Cluster) procErr() error {
	for _, p := range c.procs {
		if err := p.Err(); err != nil {
			return err
		}
	}
	return nil
}

// iptablesRestore applies rules (iptables-restore syntax, without the table line and COMMIT) to
// table, leaving every other rule as it is.
func iptablesRestore(table, rules string) error {
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader("*" + table + "\n" + rules + "COMMIT\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, out)
	}
	return nil
}
