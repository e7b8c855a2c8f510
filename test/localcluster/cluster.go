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

// Package localcluster runs a small but real Kubernetes cluster on this machine, for end-to-end tests
// and demos: etcd and kube-apiserver (started by controller-runtime's envtest), kube-controller-manager
// with the workload and node-lifecycle controllers, kube-scheduler, and a node, so that Deployments,
// StatefulSets and DaemonSets really roll out and become Available. The node is one of two (see
// ChooseNode):
//   - a real one (NodeReal): the kubelet, containerd with runc and the CNI plugins, and kube-proxy.
//     Pods run as containers of images imported with ImportImage, get an address on a bridge, their
//     Secret volumes and ServiceAccount tokens from the kubelet, and reach the API server through
//     its Service address. It needs Linux, root and Debian's containerd, runc,
//     containernetworking-plugins, iptables and conntrack packages;
//   - kwok's simulated nodes (NodeKwok), where nothing runs: pods get a fake IP and turn Ready, their
//     images are never pulled. Any number of them, anywhere, and cheap: the scale benchmark's node.
//
// The binaries are put into a cache once per machine by hack/build-controlplane.sh (see BinDir): the
// release binaries, checked against their published SHA-256, else built from source.
//
// Nothing outlives the cluster. Every process runs in its own process group and gets SIGKILL from the
// kernel if the process that started it dies (Linux), so a crash, a kill -9 or a Ctrl-C of the test
// leaves no process of ours behind; Stop terminates and reaps everything and, for the real node, also
// removes what it made outside its processes (containers, shims, mounts, the bridge, iptables rules,
// cgroups, files outside the cluster's folder, kernel settings); Start undoes what it did if a step fails.
package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// buildScript is the script, relative to the repository root, that builds the control plane.
const buildScript = "hack/build-controlplane.sh"

// argoRolloutsBuildScript is the script, relative to the repository root, that builds the Argo
// Rollouts controller and copies its CRDs (Options.ArgoRollouts).
const argoRolloutsBuildScript = "hack/build-argo-rollouts.sh"

// externalSecretsBuildScript is the script, relative to the repository root, that builds the
// External Secrets Operator's controller and copies its CRDs (Options.ExternalSecrets).
const externalSecretsBuildScript = "hack/build-external-secrets.sh"

// controllers are the kube-controller-manager controllers the cluster runs: enough to roll out the
// three workload kinds; node-lifecycle, which lifts the not-ready taint once kwok reports a node
// Ready; and the garbage collector and the namespace controller, so that deletions behave as in a
// real cluster (a deleted Deployment takes its ReplicaSets and pods with it, a deleted namespace
// empties and goes). Anything that would need a real kubelet or cloud stays off.
var controllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"node-lifecycle-controller",
	"garbage-collector-controller",
	"namespace-controller",
}

// Options configures Start. The zero value is a working cluster with one node and no CRDs.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CustomResourceDefinitions to install before
	// Start returns; every path must exist.
	CRDDirectoryPaths []string
	// LogDir receives one <component>.log per process (etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok, and whatever StartProcess adds). It is created if missing and kept after
	// Stop. Empty means a folder inside the cluster's working directory, removed by Stop.
	LogDir string
	// BinDir holds the binaries. Empty means BinDir(), which builds them if needed.
	BinDir string
	// Nodes is the number of simulated nodes, named kwok-node-0, kwok-node-1, ...; 0 means 1. The
	// real node is one, RealNodeName: more than one asks for kwok.
	Nodes int
	// Node says what plays the node; NodeAuto (the zero value) leaves it to $MRTR_NODE, else to what
	// this machine can run (ChooseNode). Cluster.NodeReason says why.
	Node NodeKind
	// Images are OCI layout tars (hack/image's oci.tar, see BuildImage) that the real node imports
	// before Start returns; ignored on kwok, which runs nothing.
	Images []string
	// Audit makes kube-apiserver write an audit log (every request's user, verb, object and
	// response code; no bodies) to AuditLogPath: how a test learns what an identity did.
	Audit bool
	// ArgoRollouts installs the Argo Rollouts CRDs and runs its controller, rollouts-controller,
	// as one of the cluster's processes (log argo-rollouts.log), as its Deployment would run in a
	// real cluster: Rollouts then really roll out, step by step, and wait at their pause steps for
	// a promotion. Both come from ArgoRolloutsDir.
	ArgoRollouts bool
	// ExternalSecrets installs the External Secrets Operator's CRDs and runs its controller,
	// external-secrets, as one of the cluster's processes (log external-secrets.log), as its
	// Deployment would run in a real cluster: ExternalSecrets then write their Secrets from their
	// stores, and rewrite them on every refresh. It is built with the fake provider only
	// (hack/build-external-secrets.sh). Both come from ExternalSecretsDir.
	ExternalSecrets bool
	// ServiceAccountTokens runs kube-controller-manager's ServiceAccount token controller, which
	// fills in the token Secrets (type kubernetes.io/service-account-token) that a chart creates
	// for a long-lived credential, such as the member chart's for the hub, with the token and the
	// API server's CA; and, as in a real cluster, a token stops authenticating once its Secret is
	// deleted.
	ServiceAccountTokens bool
}

// Cluster is a running local cluster. Its methods are safe to call from one goroutine at a time.
type Cluster struct {
	env        *testenv.Env
	config     *rest.Config
	workDir    string
	logDir     string
	kubeconfig string
	procs      []*testenv.Process // in start order; stopped in reverse
	logFiles   []*os.File         // etcd's and kube-apiserver's logs, written by processes envtest starts
	auditLog   string             // "" without Options.Audit
	nodes      int
	nodeKind   NodeKind
	nodeReason string
	node       *realNode // nil on kwok
}

// Node is what plays the node: NodeReal or NodeKwok.
func (c *Cluster) Node() NodeKind { return c.nodeKind }

// NodeReason says, in words to print, why the node is what it is.
func (c *Cluster) NodeReason() string { return c.nodeReason }

// NodeNames are the names of the cluster's nodes.
func (c *Cluster) NodeNames() []string {
	if c.nodeKind == NodeReal {
		return []string{RealNodeName}
	}
	names := make([]string, c.nodes)
	for i := range names {
		names[i] = kwokNodeName(i)
	}
	return names
}

func kwokNodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// auditPolicy records every request at the Metadata level (who, what, the response code) once it
// is answered; no request or response bodies, so no Secret data.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// AuditLogPath is the kube-apiserver's audit log, one JSON audit.k8s.io/v1 Event per line; "" when
// the cluster was started without Options.Audit.
func (c *Cluster) AuditLogPath() string { return c.auditLog }

// BinDir returns the folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
// and kwok's stage definitions, downloading or building whatever is missing first (a minute or two
// where the releases can be downloaded, kwok then the longest, about 10 minutes of build where not,
// a second once there).
// It runs hack/build-controlplane.sh from the repository root, which it finds by walking up from the
// working directory.
func BinDir() (string, error) { return binDir("all") }

// NodeBinDir is BinDir plus the kubelet and kube-proxy, which the real node runs (about 5 more
// minutes where they must be built).
func NodeBinDir() (string, error) { return binDir("node") }

// ArgoRolloutsDir returns the folder with the Argo Rollouts controller (rollouts-controller) and its
// CRDs (crds/), at the version hack/argo-rollouts/go.mod pins, building the controller first if it
// is missing (about 7 minutes of CPU on a cold machine, well under a second when built). It runs
// hack/build-argo-rollouts.sh from the repository root.
func ArgoRolloutsDir() (string, error) { return runBuild(argoRolloutsBuildScript) }

// ExternalSecretsDir returns the folder with the External Secrets Operator's controller
// (external-secrets, with the fake provider only) and its CRDs (crds/), at the version
// hack/external-secrets/go.mod pins, building the controller first if it is missing (minutes of
// CPU on a cold machine, well under a second when built; docs/development.md has the figures). It
// runs hack/build-external-secrets.sh from the repository root.
func ExternalSecretsDir() (string, error) { return runBuild(externalSecretsBuildScript) }

func binDir(target string) (string, error) { return runBuild(buildScript, target) }

// runBuild runs a build script of the repository and returns the absolute folder it prints as its
// last line.
func runBuild(script string, args ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Dir = root
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr // build progress: the first build takes minutes and should say so
	name := strings.Join(append([]string{script}, args...), " ")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dir := lines[len(lines)-1]
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s printed %q, not an absolute folder", name, dir)
	}
	return dir, nil
}

// Start brings up the cluster and returns once every node is Ready and schedulable and the CRDs are
// installed. ctx bounds the start only (default two minutes if it has no deadline); the cluster runs
// until Stop. On error, everything Start started is already stopped.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Nodes < 0 {
		return nil, fmt.Errorf("options: Nodes must not be negative, got %d", opts.Nodes)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	kind, reason, err := ChooseNode(opts.Node, opts.Nodes)
	if err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		build := BinDir
		if kind == NodeReal {
			build = NodeBinDir
		}
		if binDir, err = build(); err != nil {
			return nil, err
		}
	}
	argoDir := ""
	if opts.ArgoRollouts {
		if argoDir, err = ArgoRolloutsDir(); err != nil {
			return nil, err
		}
		opts.CRDDirectoryPaths = append(slices.Clone(opts.CRDDirectoryPaths), filepath.Join(argoDir, "crds"))
	}
	esoDir := ""
	if opts.ExternalSecrets {
		if esoDir, err = ExternalSecretsDir(); err != nil {
			return nil, err
		}
		opts.CRDDirectoryPaths = append(slices.Clone(opts.CRDDirectoryPaths), filepath.Join(esoDir, "crds"))
	}

	workDir, err := os.MkdirTemp("", "localcluster-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{workDir: workDir, logDir: opts.LogDir, nodes: opts.Nodes, nodeKind: kind, nodeReason: reason}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
			c = nil
		}
	}()
	if c.logDir == "" {
		c.logDir = filepath.Join(workDir, "logs")
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return c, err
	}

	if err := c.startAPIServer(binDir, opts.CRDDirectoryPaths, opts.Audit); err != nil {
		return c, err
	}
	if err := c.startComponents(binDir, opts.ServiceAccountTokens); err != nil {
		return c, err
	}
	if argoDir != "" {
		if err := c.startArgoRollouts(argoDir); err != nil {
			return c, err
		}
	}
	if esoDir != "" {
		if err := c.startExternalSecrets(esoDir); err != nil {
			return c, err
		}
	}
	if kind == NodeReal {
		return c, c.startRealNode(ctx, opts.Images)
	}
	if err := c.createNodes(ctx, opts.Nodes); err != nil {
		return c, err
	}
	return c, nil
}

// startAPIServer starts etcd and kube-apiserver through envtest, installs the CRDs, and writes a
// kubeconfig of a system:masters user for the other components and for the caller.
func (c *Cluster) startAPIServer(binDir string, crdPaths []string, audit bool) error {
	etcdPath, err := c.guard(filepath.Join(binDir, "etcd"))
	if err != nil {
		return err
	}
	apiserverPath, err := c.guard(filepath.Join(binDir, "kube-apiserver"))
	if err != nil {
		return err
	}
	etcdLog, err := c.createLog("etcd")
	if err != nil {
		return err
	}
	apiserverLog, err := c.createLog("kube-apiserver")
	if err != nil {
		return err
	}
	env, err := testenv.Start(context.Background(), testenv.Options{
		BinDir: binDir,
		Configure: func(env *envtest.Environment) error {
			env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = crdPaths, true
			env.ControlPlaneStopTimeout = testenv.StopGrace
			env.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, Out: etcdLog, Err: etcdLog}
			env.ControlPlane.APIServer = &envtest.APIServer{Path: apiserverPath, Out: apiserverLog, Err: apiserverLog}
			if c.nodeKind == NodeReal {
				if err := c.prepareRealNode(binDir, env.ControlPlane.APIServer); err != nil {
					return err
				}
			} else {
				// A folder of the cluster's, not one envtest makes and removes when the API server
				// stops: so that StartAPIServer serves the same certificates and signs with the same
				// ServiceAccount key as before StopAPIServer (envtest writes them once, into an empty
				// folder), and the token controller finds the signing key.
				dir := c.certDir()
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				env.ControlPlane.APIServer.CertDir = dir
			}
			if audit {
				policy := filepath.Join(c.workDir, "audit-policy.yaml")
				if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
					return err
				}
				c.auditLog = filepath.Join(c.logDir, "kube-apiserver-audit.log")
				env.ControlPlane.APIServer.Configure().Set("audit-policy-file", policy).Set("audit-log-path", c.auditLog)
			}
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, c.logDir)
	}
	c.env, c.config = env, env.Config
	if c.nodeKind != NodeReal {
		// The real node's PKI writes its CA there (apiserverPKI); envtest keeps its own in memory.
		if err := os.WriteFile(filepath.Join(c.certDir(), "ca.crt"), env.Config.CAData, 0o600); err != nil {
			return err
		}
	}
	c.kubeconfig = filepath.Join(c.workDir, "kubeconfig")
	return env.WriteKubeconfig(c.kubeconfig, "localcluster-admin")
}

// certDir holds the API server's serving certificate and its CA (ca.crt), and the ServiceAccount
// signing key (sa-signer.key).
func (c *Cluster) certDir() string { return filepath.Join(c.workDir, "apiserver-pki") }

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same address and port,
// with the same certificates, ServiceAccount key and etcd: every client configuration, token and
// object of before is still good. It returns once the API server is healthy.
func (c *Cluster) StartAPIServer() error {
	if c.env == nil {
		return errors.New("the cluster is stopped")
	}
	api := c.env.Environment().ControlPlane.APIServer
	if api.CertDir == "" {
		// envtest made a temporary folder and removed it on stop: new certificates would break
		// every client's configuration.
		return errors.New("kube-apiserver's certificates were not kept: it cannot restart as the same server")
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again (logs in %s): %w", c.logDir, err)
	}
	return nil
}

func (c *Cluster) createLog(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(c.logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c.logFiles = append(c.logFiles, f)
	return f, nil
}

// guard returns an executable that runs bin with a parent-death signal. envtest starts etcd and
// kube-apiserver itself, without one, so they would outlive a killed test; a two-line script that
// execs bin through setpriv (util-linux) keeps the same process, and so the same parent, as envtest's
// child.
func (c *Cluster) guard(bin string) (string, error) {
	if !testenv.DeathSignalSupported {
		return bin, nil
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return "", fmt.Errorf("setpriv (util-linux) is needed so that %s dies with this process: %w",
			filepath.Base(bin), err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q --pdeathsig KILL -- %q \"$@\"\n", setpriv, bin)
	path := filepath.Join(c.workDir, filepath.Base(bin))
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// realNodeControllers are the controllers the real node needs besides: every namespace's default
// ServiceAccount, the kube-root-ca.crt ConfigMap that a pod's projected token volume reads the API
// server's CA from, and the EndpointSlices kube-proxy serves Services from.
var realNodeControllers = []string{
	"serviceaccount-controller",
	"root-ca-certificate-publisher-controller",
	"endpointslice-controller",
}

// startComponents starts the controller manager, the scheduler and kwok (unless the node is real)
// against the apiserver; the controller manager with the ServiceAccount token controller when
// tokens is set.
func (c *Cluster) startComponents(binDir string, tokens bool) error {
	kc := "--kubeconfig=" + c.kubeconfig
	kcmControllers := slices.Clone(controllers)
	var kcmExtra []string
	if c.nodeKind == NodeReal {
		kcmControllers = append(kcmControllers, realNodeControllers...)
	}
	if c.nodeKind == NodeReal || tokens {
		kcmExtra = []string{"--root-ca-file=" + filepath.Join(c.certDir(), "ca.crt")}
	}
	if tokens {
		kcmControllers = append(kcmControllers, "serviceaccount-token-controller")
		kcmExtra = append(kcmExtra, "--service-account-private-key-file="+filepath.Join(c.certDir(), "sa-signer.key"))
	}
	kcm := append([]string{kc, "--controllers=" + strings.Join(kcmControllers, ","), "--leader-elect=false", "--secure-port=0"},
		kcmExtra...)
	components := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", kcm},
		{"kube-scheduler", []string{kc, "--leader-elect=false", "--secure-port=0"}},
	}
	if c.nodeKind == NodeKwok {
		// kwok exits with "no stages found" unless it is given the stages that make it act as a
		// kubelet; the build script assembles them from the kwok module.
		components = append(components, struct {
			name string
			args []string
		}{"kwok", []string{kc, "--manage-all-nodes=true", "--config=" + filepath.Join(binDir, "kwok-stages.yaml")}})
	}
	for _, comp := range components {
		if _, err := c.StartProcess(comp.name, exec.Command(filepath.Join(binDir, comp.name), comp.args...)); err != nil {
			return err
		}
	}
	return nil
}

// startArgoRollouts runs the Argo Rollouts controller against the API server as the cluster's
// system:masters user (its chart's ClusterRole would grant it about as much). Its health and
// metrics servers listen on ports the kernel picks: the defaults (8080, 8090) may be taken on this
// machine, and nothing here reads them.
func (c *Cluster) startArgoRollouts(dir string) error {
	cmd := exec.Command(filepath.Join(dir, "rollouts-controller"), "--kubeconfig="+c.kubeconfig,
		"--leader-elect=false", "--healthzPort=0", "--metricsport=0")
	_, err := c.StartProcess("argo-rollouts", cmd)
	return err
}

// startExternalSecrets runs the External Secrets Operator's controller against the API server as
// the cluster's system:masters user (its chart's ClusterRole grants it about as much over Secrets),
// with the chart's defaults but for what cannot hold on a shared machine: its metrics and liveness
// servers are off (their default ports, 8080 and 8082, may be taken here, and nothing reads them),
// and it runs alone, without leader election, as the chart's single replica does. It finds the API
// server through $KUBECONFIG, as controller-runtime's GetConfig does; the controller takes no
// --kubeconfig flag.
func (c *Cluster) startExternalSecrets(dir string) error {
	cmd := exec.Command(filepath.Join(dir, "external-secrets"), "--metrics-addr=0", "--live-addr=0",
		"--enable-leader-election=false", "--loglevel=info")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	_, err := c.StartProcess("external-secrets", cmd)
	return err
}

// createNodes registers the simulated nodes and waits until they are Ready and carry no NoSchedule or
// NoExecute taint (node-lifecycle lifts the not-ready taint once kwok reports Ready). The nodes carry
// no kwok taint: every node of this cluster is simulated, so there is no real node to keep pods off,
// and workloads need no tolerations.
func (c *Cluster) createNodes(ctx context.Context, n int) error {
	cl, err := client.New(c.config, client.Options{})
	if err != nil {
		return err
	}
	for i := range n {
		name := kwokNodeName(i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/role":     "agent",
				"type":                   "kwok",
			},
		}}
		if err := cl.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return c.waitNodes(ctx, n)
}

// waitNodes waits until n nodes are registered, Ready and carry no NoSchedule or NoExecute taint.
func (c *Cluster) waitNodes(ctx context.Context, n int) error {
	cl, err := client.New(c.config, client.Options{})
	if err != nil {
		return err
	}
	var notReady string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.procErr(); err != nil {
			return false, err
		}
		var nodes corev1.NodeList
		if err := cl.List(ctx, &nodes); err != nil {
			return false, nil //nolint:nilerr // the apiserver may be briefly busy; retry until ctx ends
		}
		notReady = ""
		for i := range nodes.Items {
			if !schedulable(&nodes.Items[i]) {
				notReady = nodes.Items[i].Name
				return false, nil
			}
		}
		return len(nodes.Items) == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %q to be Ready and schedulable (logs in %s): %w", notReady, c.logDir, err)
	}
	return nil
}

func schedulable(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StartProcess runs cmd as part of the cluster: with KUBECONFIG pointing at the cluster as its
// system:masters user (added to cmd.Env, or to this process's environment if cmd.Env is nil,
// unless cmd.Env names a KUBECONFIG of its own: another identity), its output appended to
// <LogDir>/<name>.log as well as to cmd.Stdout and cmd.Stderr if set, and stopped by Stop before the
// control plane goes. Use it for the operator, or anything else that must not outlive the cluster.
func (c *Cluster) StartProcess(name string, cmd *exec.Cmd) (*testenv.Process, error) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	} else if slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") }) {
		return c.start(name, cmd)
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+c.kubeconfig)
	return c.start(name, cmd)
}

func (c *Cluster) start(name string, cmd *exec.Cmd) (*testenv.Process, error) {
	p, err := testenv.StartProcess(name, c.logDir, cmd)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// RESTConfig returns a fresh copy of a client configuration for a system:masters user.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// KubeconfigPath is a kubeconfig file for a system:masters user, e.g. for kubectl --kubeconfig.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// LogDir is the folder with one <component>.log per process, worth printing when a test fails.
func (c *Cluster) LogDir() string { return c.logDir }

// Stop stops every process (the ones from StartProcess and kwok, scheduler and controller manager
// first, then kube-apiserver and etcd), waits until they are gone, and removes the working directory.
// With the real node it first deletes every pod, so that the kubelet tears each one down the regular
// way, and once the processes are gone removes whatever the node left (see HostPaths and Sysctls).
// It is safe to call more than once.
func (c *Cluster) Stop() error {
	var errs []error
	if c.node != nil {
		errs = append(errs, c.drainNode())
	}
	for _, p := range slices.Backward(c.procs) {
		errs = append(errs, p.Stop())
	}
	c.procs = nil
	if c.node != nil {
		errs = append(errs, c.node.cleanup(c.workDir, c.logDir))
		c.node = nil
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver and etcd: %w", err))
		}
		c.env = nil
	}
	for _, f := range c.logFiles {
		errs = append(errs, f.Close())
	}
	c.logFiles = nil
	if c.workDir != "" {
		errs = append(errs, os.RemoveAll(c.workDir))
		c.workDir = ""
	}
	return errors.Join(errs...)
}

// TailLogs returns the last n lines of every log in LogDir, for a test to print when it fails.
func (c *Cluster) TailLogs(n int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(c.logDir)
	for _, e := range entries {
		lines, err := lastLines(filepath.Join(c.logDir, e.Name()), n)
		if err != nil {
			fmt.Fprintf(&b, "==> %s: %v\n", e.Name(), err)
			continue
		}
		fmt.Fprintf(&b, "==> %s (last %d lines) <==\n%s\n", e.Name(), len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

func lastLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines, sc.Err()
}
