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

// Package harness runs the whole product on this machine for the end-to-end suite and the demo: the
// local cluster (test/localcluster), the operator as its own process, a Deployment of the example MCP
// server whose pods run as containers on the real node (PodNetwork follows them) or as processes of
// this machine on kwok's (Kubelet), a non-sticky round-robin Balancer in front of them, a Load of
// real MCP clients doing MRTR round trips through it, and a Timeline of what the operator and the
// Deployment controller did.
package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/test/container"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// Options configures Start. Zero values take the defaults in the field comments.
type Options struct {
	// Namespace of the keyring and the Deployment: "mcp"; with ClusterKeyring, the first of Namespaces.
	Namespace string
	// Name of the keyring, its Secret and the Deployment: "weather".
	Name string
	// Replicas of each Deployment: 3.
	Replicas int32
	// TokenTTL of the keyring and of the servers' request state: 5s.
	TokenTTL time.Duration
	// ClockSkew of the keyring: 1s (every replica runs on this machine's clock).
	ClockSkew time.Duration
	// TerminationGrace of the keyring and of the pods: 1s.
	TerminationGrace time.Duration
	// Delivery of the keyring: Reload (the API's default).
	Delivery mrtrv1alpha1.Delivery
	// ReloadDeadline of the keyring: 15s, well past the kubelet's 0.5 to 1 s projection delay here.
	ReloadDeadline time.Duration
	// LogDir receives every process's log; empty means a temporary folder removed by Stop.
	LogDir string
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// Verbose adds a line to Logf for every replica process started or stopped.
	Verbose bool
	// OnEvent receives each Timeline event as it happens.
	OnEvent func(Event)
	// Node is what plays the cluster's node (localcluster.ChooseNode): on the real node the
	// servers run as containers of their image, the kubelet mounts their Secret and token, and the
	// balancer reaches them over the pod network; on kwok the emulated Kubelet runs them as
	// processes of this machine.
	Node localcluster.NodeKind
	// ReloadTrigger of the keyring: the API's default (PodAnnotation) when empty.
	ReloadTrigger mrtrv1alpha1.ReloadTrigger
	// Servers are the SDKs of the example servers, one Deployment of Replicas pods each, all
	// consuming the keyring and behind one Service and balancer: [ServerGo] when empty. The first
	// Deployment is named Name, the others Name-<kind>. Servers other than Go need the real node.
	Servers []ServerKind
	// ArgoRollout runs the one server (Go) as an Argo Rollout named Name in place of its
	// Deployment: a canary of a setWeight 50 step and a pause step, at which each rollout waits
	// until it is promoted (PromoteRollout), on a cluster that runs the Argo Rollouts controller
	// (localcluster.Options.ArgoRollouts).
	ArgoRollout bool
	// ClusterKeyring makes the keyring a ClusterMRTRKeyring named Name (the chart installed with
	// clusterKeyrings.enable), whose namespaceSelector selects the namespaces labelled
	// SelectorLabel=Name, and runs the servers in each of Namespaces (AddNamespace adds more), all
	// behind the one balancer: a request state sealed in one namespace is opened in another. It
	// needs the real node.
	ClusterKeyring bool
	// Namespaces, with ClusterKeyring, are the namespaces selected from the start: [Namespace]
	// when empty.
	Namespaces []string
	// ExternalSecrets runs the External Secrets Operator's controller on the cluster, with its
	// CRDs (localcluster.Options.ExternalSecrets).
	ExternalSecrets bool
	// BeforeKeyring, when set, runs once the servers' namespaces and Deployments exist and before
	// the keyring is created: where a test creates what the keyring's spec names, such as the
	// ExternalSecret that writes its key source.
	BeforeKeyring func(ctx context.Context, c client.Client) error
	// KeyringSpec, when set, changes the keyring's spec before it is created (of a cluster keyring,
	// the spec it shares with an MRTRKeyring).
	KeyringSpec func(*mrtrv1alpha1.MRTRKeyringSpec)
	// Member, with ClusterKeyring, is the name of a member cluster (MemberCluster): a second local
	// cluster on kwok's node, the chart installed on it in mode member, its servers (the Go server,
	// Replicas pods) in MemberNamespace behind the one balancer; the keyring's spec.members names
	// the hub (local, HubMember) and it. Empty: no member, and no spec.members.
	Member string
	// MemberNamespace is the namespace selected on the member: Namespace when empty.
	MemberNamespace string
}

// SelectorLabel is the namespace label a cluster keyring's namespaceSelector matches (its value
// is the keyring's name).
const SelectorLabel = "e2e.mrtr.dev/keyring"

func (o *Options) defaults() {
	if o.ClusterKeyring && len(o.Namespaces) > 0 {
		o.Namespace = o.Namespaces[0]
	}
	if o.Namespace == "" {
		o.Namespace = "mcp"
	}
	if o.ClusterKeyring && len(o.Namespaces) == 0 {
		o.Namespaces = []string{o.Namespace}
	}
	if o.Name == "" {
		o.Name = "weather"
	}
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 5 * time.Second
	}
	if o.ClockSkew == 0 {
		o.ClockSkew = time.Second
	}
	if o.TerminationGrace == 0 {
		o.TerminationGrace = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Delivery == "" {
		o.Delivery = mrtrv1alpha1.DeliveryReload
	}
	if o.ReloadDeadline == 0 {
		o.ReloadDeadline = 15 * time.Second
	}
	if len(o.Servers) == 0 {
		o.Servers = []ServerKind{ServerGo}
	}
	if o.MemberNamespace == "" {
		o.MemberNamespace = o.Namespace
	}
}

// TotalReplicas is the number of pods of all the servers' Deployments in one namespace.
func (o Options) TotalReplicas() int32 { return o.Replicas * int32(len(o.Servers)) }

// TTLWait is the wait the keyring asks for between sealing with the new key and removing the old one.
func (o Options) TTLWait() time.Duration { return o.TokenTTL + o.ClockSkew + o.TerminationGrace }

// Env is a running stack. Stop it in any case, also after a failed Start (Start stops what it
// started when it fails, and Stop on a nil *Env is a no-op).
type Env struct {
	Opts     Options
	Cluster  *localcluster.Cluster
	Client   client.Client
	Cache    crcache.Cache
	Operator *Operator
	Balancer *Balancer
	// Kubelet runs the servers on kwok; nil on the real node.
	Kubelet *Kubelet
	// Pods keeps the balancer on the real node's serving pods; nil on kwok.
	Pods *PodNetwork
	// Member is the member cluster (Options.Member); nil without one.
	Member *MemberCluster
	// memberLeft: the member's servers left the balancer and its keyring (DetachMember).
	memberLeft bool
	Timeline   *Timeline
	// MCPURL is the balancer's MCP endpoint.
	MCPURL string

	// selected are the namespaces whose servers consume the keyring: Namespace alone, or those the
	// cluster keyring selects, in the order they were selected.
	selected  []string
	workDir   string
	cancel    context.CancelFunc
	cacheDone chan struct{}
	lbServer  *http.Server
	// stops stop what was added after Start (DeployUnmanaged), in reverse order, before the cluster.
	stops []func() error
}

// Scheme knows the core types and MRTRKeyring.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	_ = mrtrv1alpha1.AddToScheme(s)
	_ = workload.AddToScheme(s)
	return s
}

// Build compiles the operator and the example server (static, as the images hold them) into dir.
func Build(ctx context.Context, dir string) (operator, server string, err error) {
	operator, server = filepath.Join(dir, "manager"), filepath.Join(dir, "mcp-server")
	for out, pkg := range map[string]string{operator: testenv.ManagerPackage, server: "./examples/mcp-server"} {
		if err := testenv.Build(ctx, pkg, out); err != nil {
			return "", "", err
		}
	}
	return operator, server, nil
}

// imageRef is the name of the manager's image in the e2e suites.
const imageRef = "controller:latest"

// Start builds the binaries and the image, starts the cluster (with an audit log), installs the
// operator's Helm chart, starts the operator (see Operator), the kubelet and the balancer, creates
// the MRTRKeyring and the Deployment, and returns once the keyring is Stable and every replica
// serves with the keyring's fingerprint.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	opts.defaults()
	e := &Env{Opts: opts, selected: []string{opts.Namespace}}
	if opts.ClusterKeyring {
		e.selected = slices.Clone(opts.Namespaces)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	if e.workDir, err = os.MkdirTemp("", "mrtr-e2e-"); err != nil {
		return nil, err
	}
	opts.Logf("building the operator and the example server")
	operatorBin, serverBin, err := Build(ctx, e.workDir)
	if err != nil {
		return nil, err
	}
	opts.Logf("building the operator's image (hack/image)")
	image, err := localcluster.BuildImage(ctx, localcluster.ImageSpec{Ref: imageRef, Binary: operatorBin}, filepath.Join(e.workDir, "image"))
	if err != nil {
		return nil, err
	}
	node, reason, err := localcluster.ChooseNode(opts.Node, 1)
	if err != nil {
		return nil, err
	}
	images, err := e.serverImages(ctx, root, serverBin, node, reason)
	if err != nil {
		return nil, err
	}
	if opts.ArgoRollout {
		opts.Logf("the cluster runs the Argo Rollouts controller (hack/build-argo-rollouts.sh builds it once per machine)")
	}
	opts.Logf("starting the local cluster (apiserver, etcd, controller-manager, scheduler) and its node: %s", reason)
	if opts.ExternalSecrets {
		opts.Logf("the cluster runs the External Secrets Operator's controller (hack/build-external-secrets.sh builds it once per machine)")
	}
	e.Cluster, err = localcluster.Start(ctx, localcluster.Options{LogDir: opts.LogDir, Audit: true, Node: node, Images: images,
		ArgoRollouts: opts.ArgoRollout, ExternalSecrets: opts.ExternalSecrets})
	if err != nil {
		return nil, err
	}
	cfg := e.Cluster.RESTConfig()
	if e.Client, err = client.New(cfg, client.Options{Scheme: Scheme()}); err != nil {
		return nil, err
	}
	opts.Logf("installing the operator with Helm (dist/chart): CRDs, RBAC, ServiceAccount, what keyring consumers need")
	if err := installChart(ctx, root, e.Cluster.KubeconfigPath(), opts.ClusterKeyring); err != nil {
		return nil, err
	}
	if err := waitForCRDs(ctx, e.Client); err != nil {
		return nil, fmt.Errorf("the chart's CRDs: %w", err)
	}
	if opts.Member != "" {
		if err := e.startMember(ctx, root); err != nil {
			return nil, err
		}
	}
	cacheOpts := crcache.Options{Scheme: Scheme(), DefaultNamespaces: map[string]crcache.Config{opts.Namespace: {}}}
	if opts.ClusterKeyring {
		// Every namespace: those added later, and the cluster-scoped keyring.
		cacheOpts.DefaultNamespaces = nil
	}
	if e.Cache, err = crcache.New(cfg, cacheOpts); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.cacheDone = make(chan struct{})
	go func() { defer close(e.cacheDone); _ = e.Cache.Start(runCtx) }()

	e.Timeline = &Timeline{Namespace: opts.Namespace, Keyring: opts.Name, Secret: opts.Name, Deployment: opts.Name,
		ArgoRollout: opts.ArgoRollout, ClusterKeyring: opts.ClusterKeyring, OnEvent: opts.OnEvent}
	if err := e.Timeline.Run(ctx, e.Cache); err != nil {
		return nil, err
	}
	e.Balancer = NewBalancer()
	if err := e.serveBalancer(); err != nil {
		return nil, err
	}
	if err := e.followServers(runCtx, serverBin); err != nil {
		return nil, err
	}
	if e.Member != nil {
		if err := e.followMember(runCtx, serverBin); err != nil {
			return nil, err
		}
	}
	if e.Operator, err = e.newOperator(ctx, operatorBin, image); err != nil {
		return nil, err
	}
	if e.Operator.Fallback != "" {
		opts.Logf("runc cannot run the image here (%s): running the manager binary instead, as the same ServiceAccount", e.Operator.Fallback)
		opts.Logf("starting the operator (binary) as ServiceAccount %s/%s, with the chart's flags", OperatorNamespace, OperatorServiceAccount)
	} else {
		opts.Logf("starting the operator: its image under runc as uid 65532 on a read-only root, as ServiceAccount %s/%s, with the chart's flags",
			OperatorNamespace, OperatorServiceAccount)
	}
	if err := e.Operator.Launch(); err != nil {
		return nil, err
	}
	if err := e.deploy(ctx); err != nil {
		return nil, err
	}
	if err := e.WaitSettled(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	return e, nil
}

// serverImages checks that the servers can run on node, and builds their images for the real node.
func (e *Env) serverImages(ctx context.Context, root, serverBin string, node localcluster.NodeKind, reason string) ([]string, error) {
	opts := e.Opts
	if opts.ArgoRollout && !slices.Equal(opts.Servers, []ServerKind{ServerGo}) {
		return nil, fmt.Errorf("servers %v: an Argo Rollout runs the Go server alone", opts.Servers)
	}
	if len(opts.Servers) > 1 && slices.Contains(opts.Servers, ServerPython) {
		// The python-sdk seals in a format of its own, which no other SDK opens.
		return nil, fmt.Errorf("servers %v: the Python server shares its request state with Python servers only", opts.Servers)
	}
	if slices.Contains(opts.Servers, ServerRust) && slices.Contains(opts.Servers, ServerTypeScript) {
		// rmcp seals rs2, which the Go server seals too (--codec=rs2); the TypeScript package seals mrtr2.
		return nil, fmt.Errorf("servers %v: the Rust server shares its request state (rs2) with Go and Rust servers only", opts.Servers)
	}
	if opts.Member != "" && (!opts.ClusterKeyring || !slices.Equal(opts.Servers, []ServerKind{ServerGo}) || opts.ArgoRollout) {
		return nil, fmt.Errorf("a member cluster serves a cluster keyring's Go servers (Deployments) only, on kwok's node")
	}
	if node != localcluster.NodeReal {
		if opts.ClusterKeyring {
			return nil, fmt.Errorf("a cluster keyring's servers run on the real node only (%s)", reason)
		}
		if !slices.Equal(opts.Servers, []ServerKind{ServerGo}) {
			return nil, fmt.Errorf("servers %v: only the Go server runs on kwok (%s); the others need the real node", opts.Servers, reason)
		}
		return nil, nil
	}
	images := make([]string, 0, len(opts.Servers))
	for _, kind := range opts.Servers {
		opts.Logf("building the %s example server's image (hack/image)", kind)
		img, err := buildServerImage(ctx, root, kind, serverBin, e.serverImageDir(kind))
		if err != nil {
			return nil, err
		}
		images = append(images, img)
	}
	return images, nil
}

// followServers puts the servers' pods behind the balancer as they serve: on the real node the
// PodNetwork follows them, on kwok the emulated Kubelet runs them.
func (e *Env) followServers(ctx context.Context, serverBin string) error {
	if e.Real() {
		e.Pods = &PodNetwork{Cache: e.Cache, Namespaces: slices.Clone(e.selected), Balancer: e.Balancer, Port: serverPort}
		return e.Pods.Run(ctx)
	}
	e.Kubelet = &Kubelet{
		Cache: e.Cache, Namespace: e.Opts.Namespace, Binary: serverBin,
		DataDir: filepath.Join(e.workDir, "pods"), Start: e.Cluster.StartProcess, Balancer: e.Balancer,
		Client: e.Client, Config: e.Cluster.RESTConfig(),
	}
	if e.Opts.Verbose {
		e.Kubelet.Logf = e.Opts.Logf
	}
	return e.Kubelet.Run(ctx)
}

// Real reports whether the servers run on the real node, as containers.
func (e *Env) Real() bool { return e.Cluster != nil && e.Cluster.Node() == localcluster.NodeReal }

// ServerImage is the example server's image on the real node, imported, never pulled.
const ServerImage = "example.com/mrtr-example-mcp-server:dev"

// serverPort is where the example server listens in its pod.
const serverPort = 8080

// newOperator prepares the manager's runs: the chart's flags, its ServiceAccount mounted, the image
// when runc can run it here.
func (e *Env) newOperator(ctx context.Context, binary string, image Image) (*Operator, error) {
	args, err := managerArgs(ctx, e.Client)
	if err != nil {
		return nil, err
	}
	if e.Opts.ClusterKeyring {
		// In its pod the manager finds its namespace in POD_NAMESPACE (the downward API): nothing
		// sets it here, so it is told where the cluster keyrings' lead Secrets go.
		args = withFlag(args, "--cluster-resource-namespace", OperatorNamespace)
	}
	cfg := e.Cluster.RESTConfig()
	o := &Operator{Binary: binary, Image: image, Start: e.Cluster.StartProcess, Args: args, Server: cfg.Host,
		WorkDir: filepath.Join(e.workDir, "operator"), LogDir: e.Cluster.LogDir(),
		ServiceAccountDir: filepath.Join(e.workDir, "operator", "serviceaccount")}
	if err := writeServiceAccount(ctx, e.Client, cfg.CAData, OperatorNamespace, OperatorServiceAccount, nil, o.ServiceAccountDir); err != nil {
		return nil, err
	}
	if os.Getenv(BinaryEnv) != "" {
		o.Image, o.Fallback = Image{}, BinaryEnv+" is set"
		return o, nil
	}
	if err := container.Available(ctx, image.Layout, image.Ref); err != nil {
		if !errors.Is(err, container.ErrUnavailable) {
			return nil, err // the image is broken: that is a failure, not a reason to fall back
		}
		o.Image, o.Fallback = Image{}, err.Error()
	}
	return o, nil
}

// BinaryEnv, set to anything, runs the manager binary instead of its image even where runc can
// run it: the way a machine without runc (or root) runs the suite, to test that way here.
const BinaryEnv = "E2E_OPERATOR_BINARY"

func (e *Env) serveBalancer() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	e.lbServer = &http.Server{Handler: e.Balancer, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.lbServer.Serve(l) }()
	e.MCPURL = "http://" + l.Addr().String() + "/mcp"
	return nil
}

// keyringObject is the keyring this Env creates: an MRTRKeyring, or with ClusterKeyring a
// ClusterMRTRKeyring of the same policy over the namespaces labelled SelectorLabel=Name, whose
// consumers are the workloads that mount its Secret (a cluster keyring names no workload).
func (e *Env) keyringObject() client.Object {
	o := e.Opts
	k := &mrtrv1alpha1.MRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Spec: mrtrv1alpha1.MRTRKeyringSpec{
			// Rotations are requested through the mrtr.dev/rotate annotation: the shortest interval the
			// API allows (1m) is longer than a test should wait.
			RotationInterval:       metav1.Duration{Duration: time.Hour},
			TokenTTL:               metav1.Duration{Duration: o.TokenTTL},
			ClockSkew:              metav1.Duration{Duration: o.ClockSkew},
			TerminationGracePeriod: metav1.Duration{Duration: o.TerminationGrace},
			Delivery:               o.Delivery,
			ReloadDeadline:         metav1.Duration{Duration: o.ReloadDeadline},
			ReloadTrigger:          o.ReloadTrigger,
			Workloads:              e.workloads(),
		},
	}
	if o.KeyringSpec != nil {
		o.KeyringSpec(&k.Spec)
	}
	if !o.ClusterKeyring {
		return k
	}
	spec := k.Spec
	spec.Workloads = nil
	var members []mrtrv1alpha1.Member
	if e.Member != nil {
		members = e.members()
	}
	// Named, though it is the default (the keyring's name): the operator on this branch reads the
	// consumers of a defaulted secretName by the wrong name (see the branch's report).
	spec.SecretName = o.Name
	return &mrtrv1alpha1.ClusterMRTRKeyring{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: mrtrv1alpha1.ClusterMRTRKeyringSpec{MRTRKeyringSpec: spec, Members: members,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{SelectorLabel: o.Name}}},
	}
}

// keyringKey is the keyring's key: no namespace for a cluster keyring.
func (e *Env) keyringKey() client.ObjectKey {
	if e.Opts.ClusterKeyring {
		return client.ObjectKey{Name: e.Opts.Name}
	}
	return client.ObjectKey{Namespace: e.Opts.Namespace, Name: e.Opts.Name}
}

// emptyKeyring is an object of the keyring's kind, to read or patch it.
func (e *Env) emptyKeyring() client.Object {
	key := e.keyringKey()
	meta := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
	if e.Opts.ClusterKeyring {
		return &mrtrv1alpha1.ClusterMRTRKeyring{ObjectMeta: meta}
	}
	return &mrtrv1alpha1.MRTRKeyring{ObjectMeta: meta}
}

// keyringState reads the keyring's status and spec.delivery, whichever its kind.
func (e *Env) keyringState(ctx context.Context) (mrtrv1alpha1.MRTRKeyringStatus, mrtrv1alpha1.Delivery,
	*mrtrv1alpha1.NamespacesStatus, error) {
	obj := e.emptyKeyring()
	if err := e.Client.Get(ctx, e.keyringKey(), obj); err != nil {
		return mrtrv1alpha1.MRTRKeyringStatus{}, "", nil, err
	}
	switch k := obj.(type) {
	case *mrtrv1alpha1.ClusterMRTRKeyring:
		return k.Status.MRTRKeyringStatus, k.Spec.Delivery, &k.Status.Namespaces, nil
	case *mrtrv1alpha1.MRTRKeyring:
		return k.Status, k.Spec.Delivery, nil, nil
	}
	return mrtrv1alpha1.MRTRKeyringStatus{}, "", nil, fmt.Errorf("keyring of type %T", obj)
}

// workloads are the keyring's targets: every server's Deployment, or the Rollout.
func (e *Env) workloads() []mrtrv1alpha1.WorkloadReference {
	if e.Opts.ArgoRollout {
		return []mrtrv1alpha1.WorkloadReference{rolloutReference(e.Opts.Name)}
	}
	refs := make([]mrtrv1alpha1.WorkloadReference, 0, len(e.Opts.Servers))
	for i := range e.Opts.Servers {
		name := deploymentName(e.Opts.Name, e.Opts.Servers, i)
		refs = append(refs, mrtrv1alpha1.WorkloadReference{Kind: mrtrv1alpha1.KindDeployment, Name: name})
	}
	return refs
}

// serverLabel tells the Deployments of several servers apart (their selectors must not overlap);
// the Service selects them all by app.kubernetes.io/name.
const serverLabel = "mrtr.dev/example-server"

// deploymentObjects are the example servers as they would be deployed for real, one Deployment
// per server kind: the keyring Secret mounted at /etc/mrtr, the server identity, the TTL and the
// Secret it acknowledges as args, under a ServiceAccount of its own that may acknowledge
// (consumerObjects); as containers of the real node when real, else as the Kubelet runs them.
func (e *Env) deploymentObjects(ns string, real bool) []*appsv1.Deployment {
	o := e.Opts
	out := make([]*appsv1.Deployment, 0, len(o.Servers))
	for i, kind := range o.Servers {
		labels := map[string]string{"app.kubernetes.io/name": o.Name}
		if len(o.Servers) > 1 {
			labels[serverLabel] = string(kind)
		}
		d := e.kwokDeploymentObject(ns, labels)
		d.Name = deploymentName(o.Name, o.Servers, i)
		if kind == ServerGo && len(o.Servers) > 1 {
			// Beside another SDK's replicas, the Go server seals in the format they share: rmcp's rs2
			// beside Rust replicas, else Snodo's (token.Signed over the whole params), which the
			// TypeScript package writes too.
			c := &d.Spec.Template.Spec.Containers[0]
			if slices.Contains(o.Servers, ServerRust) {
				c.Args = append(c.Args, "--codec=rs2")
			} else {
				c.Args = append(c.Args, "--codec=signed")
			}
		}
		if real {
			e.realContainer(&d.Spec.Template.Spec.Containers[0], kind)
		}
		out = append(out, d)
	}
	return out
}

// realContainer makes c what a user deploys on the real node: the image, the keyring folder it
// follows, its pod's name and namespace from the downward API (to acknowledge on its own Pod, with
// the token the kubelet mounts), and a readiness probe in place of the kwok Deployment's
// minReadySeconds.
func (e *Env) realContainer(c *corev1.Container, kind ServerKind) {
	c.Image, c.ImagePullPolicy = kind.Image(), corev1.PullNever
	c.Args = append(c.Args, "--keyring-dir="+keyringVolumeMount, fmt.Sprintf("--listen=:%d", serverPort))
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(serverPort)}},
		PeriodSeconds: 1,
	}
}

// serviceObject is the example server's Service: the address kube-proxy serves on the real node.
func (e *Env) serviceObject(ns string) *corev1.Service {
	o := e.Opts
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": o.Name},
			Ports:    []corev1.ServicePort{{Name: "mcp", Port: 80, TargetPort: intstr.FromInt32(serverPort)}},
		},
	}
}

// kwokDeploymentObject is the Deployment as the emulated Kubelet runs it.
func (e *Env) kwokDeploymentObject(ns string, labels map[string]string) *appsv1.Deployment {
	o := e.Opts
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// A pod counts as available one second after it is Ready, which is when its process
			// serves (the harness starts it on Ready): the role a readiness probe plays for real.
			MinReadySeconds: 1,
			// All new pods at once, old ones removed as the new ones become available: a rollout
			// takes one pod start instead of three, and old and new pods still serve side by side.
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: new(intstr.FromString("100%")), MaxUnavailable: new(intstr.FromInt32(0)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            o.Name,
					TerminationGracePeriodSeconds: new(int64(o.TerminationGrace / time.Second)),
					Containers: []corev1.Container{{
						Name:  "server",
						Image: "example.com/mrtr-example-mcp-server:dev",
						Args: []string{
							"--server=" + e.serverIdentity(),
							"--token-ttl=" + o.TokenTTL.String(),
							"--keyring-secret=" + o.Name,
						},
						Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						VolumeMounts: []corev1.VolumeMount{{Name: "keyring", MountPath: keyringVolumeMount, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "keyring",
						VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: o.Name}},
					}},
				},
			},
		},
	}
}

// serverIdentity is what the servers bind into their request states: their Service's URL, or with
// a cluster keyring one identity for the servers of every namespace, which serve as one behind
// the balancer.
func (e *Env) serverIdentity() string {
	if e.Opts.ClusterKeyring {
		return "http://" + e.Opts.Name + "/mcp"
	}
	return "http://" + e.Opts.Name + "." + e.Opts.Namespace + ".svc/mcp"
}

// consumerObjects are the ServiceAccount of the server's pods and its RoleBinding to the
// consumers' ClusterRole that the operator ships (config/consumer), which lets each pod acknowledge
// the keyring it loaded on its own Pod.
func (e *Env) consumerObjects(ns string) []client.Object {
	o := e.Opts
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name + "-keyring-consumer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kindClusterRole, Name: ConsumerClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: o.Name}},
		},
	}
}

// ConsumerClusterRole is the ClusterRole in config/consumer that keyring consumers are bound to.
const ConsumerClusterRole = "mrtr-keyring-consumer"

func (e *Env) deploy(ctx context.Context) error {
	o := e.Opts
	if o.ClusterKeyring {
		o.Logf("deploying ClusterMRTRKeyring %s (delivery %s) and in each of %v %d Deployment(s) of %d replicas: servers %v",
			o.Name, o.Delivery, e.selected, len(o.Servers), o.Replicas, o.Servers)
	} else {
		o.Logf("deploying MRTRKeyring %s/%s (delivery %s) and %d Deployment(s) of %d replicas: servers %v",
			o.Namespace, o.Name, o.Delivery, len(o.Servers), o.Replicas, o.Servers)
	}
	// The Deployments first: a keyring created before its targets reports them missing.
	for _, ns := range e.selected {
		if err := e.deployServers(ctx, ns, e.Opts.ClusterKeyring); err != nil {
			return err
		}
	}
	if e.Member != nil {
		if err := e.deployMember(ctx); err != nil {
			return err
		}
	}
	if o.BeforeKeyring != nil {
		if err := o.BeforeKeyring(ctx, e.Client); err != nil {
			return fmt.Errorf("before the keyring: %w", err)
		}
	}
	return e.create(ctx, e.keyringObject())
}

// deployServers creates namespace ns (labelled for the cluster keyring when selected) and in it
// the servers: their ServiceAccount and RoleBinding, their Deployments and, on the real node,
// their Service.
func (e *Env) deployServers(ctx context.Context, ns string, selected bool) error {
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if selected {
		nsObj.Labels = map[string]string{SelectorLabel: e.Opts.Name}
	}
	objs, err := e.serverObjects(ns)
	if err != nil {
		return err
	}
	return e.create(ctx, append([]client.Object{nsObj}, objs...)...)
}

// serverObjects are the servers of namespace ns: their ServiceAccount and RoleBinding, their
// Deployments (or Rollout) and, on the real node, their Service.
func (e *Env) serverObjects(ns string) ([]client.Object, error) {
	objs := e.consumerObjects(ns)
	for _, d := range e.deploymentObjects(ns, e.Real()) {
		if !e.Opts.ArgoRollout {
			objs = append(objs, d)
			continue
		}
		ro, err := rolloutObject(d)
		if err != nil {
			return nil, err
		}
		objs = append(objs, ro)
	}
	if e.Real() {
		objs = append(objs, e.serviceObject(ns))
	}
	return objs, nil
}

func (e *Env) create(ctx context.Context, objs ...client.Object) error {
	for _, obj := range objs {
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// Selected are the namespaces whose servers consume the keyring and serve behind the balancer.
func (e *Env) Selected() []string { return slices.Clone(e.selected) }

// AddNamespace deploys the servers in a new namespace ns that the cluster keyring does not select
// yet: its pods wait for the Secret they mount, which Select brings.
func (e *Env) AddNamespace(ctx context.Context, ns string) error {
	if !e.Opts.ClusterKeyring {
		return errors.New("AddNamespace needs a cluster keyring")
	}
	return e.deployServers(ctx, ns, false)
}

// Select labels namespace ns for the cluster keyring's namespaceSelector, and puts its pods behind
// the balancer as they become Ready.
func (e *Env) Select(ctx context.Context, ns string) error {
	if err := e.labelNamespace(ctx, ns, true); err != nil {
		return err
	}
	e.selected = append(e.selected, ns)
	return e.Pods.Follow(ctx, ns)
}

// Deselect takes namespace ns's pods out of the balancer, then removes the label the cluster
// keyring selects it by: its servers get no more traffic before they stop being rotated.
func (e *Env) Deselect(ctx context.Context, ns string) error {
	e.Pods.Forget(ns)
	e.selected = slices.DeleteFunc(e.selected, func(s string) bool { return s == ns })
	return e.labelNamespace(ctx, ns, false)
}

func (e *Env) labelNamespace(ctx context.Context, ns string, on bool) error {
	value := "null" // a merge patch's way to remove the label
	if on {
		value = strconv.Quote(e.Opts.Name)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, SelectorLabel, value)
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	return e.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// State is one look at the keyring, its Secret and its Deployments (in every selected namespace).
type State struct {
	Phase              mrtrv1alpha1.Phase
	RotationsCompleted int64
	// Keys are the keys status lists, with their roles.
	Keys []mrtrv1alpha1.KeyStatus
	// SecretKeyIDs and SecretFingerprint are the Secret's keyring: of a cluster keyring, its lead
	// Secret's in the operator's namespace, which Copies follow.
	SecretKeyIDs      []string
	SecretFingerprint string
	// Namespaces is a cluster keyring's status.namespaces, nil for an MRTRKeyring.
	Namespaces *mrtrv1alpha1.NamespacesStatus
	// Copies are a cluster keyring's Secrets in the selected namespaces: the fingerprint of each,
	// by namespace ("" where it is missing).
	Copies       map[string]string
	TemplateHash string
	RolledOut    bool
	Serving      []ReplicaKeyring // what each serving replica has loaded, by pod name
}

// ReplicaKeyring is what one replica reports on /debug/keyring.
type ReplicaKeyring struct {
	Replica     string   `json:"replica"`
	Fingerprint string   `json:"fingerprint"`
	KeyIDs      []string `json:"keyIds"`
	SealKey     string   `json:"sealKey"`
	// Acknowledged is the fingerprint the replica's Pod last accepted as its acknowledgement.
	Acknowledged string `json:"acknowledged"`
	Completed    uint64 `json:"completed"`
	Rejected     uint64 `json:"rejected"`
	// RejectedByKey counts the rejections by the key id the rejected token names.
	RejectedByKey map[string]uint64 `json:"rejectedByKey"`
}

// Observe reads the current State.
func (e *Env) Observe(ctx context.Context) (State, error) {
	var s State
	status, _, namespaces, err := e.keyringState(ctx)
	if err != nil {
		return s, err
	}
	s.Phase, s.RotationsCompleted, s.Keys, s.Namespaces = status.Phase, status.RotationsCompleted, status.Keys, namespaces
	secretKey := client.ObjectKey{Namespace: e.Opts.Namespace, Name: e.Opts.Name}
	if e.Opts.ClusterKeyring {
		secretKey = client.ObjectKey{Namespace: OperatorNamespace, Name: mrtrv1alpha1.LeadSecretName(e.Opts.Name)}
		s.Copies = map[string]string{}
		for _, ns := range e.selected {
			_, s.Copies[ns] = e.secretKeyring(ctx, client.ObjectKey{Namespace: ns, Name: e.Opts.Name})
		}
		if m := e.servingMember(); m != nil {
			_, s.Copies[m.Name+"/"+m.Namespace] = secretKeyring(ctx, m.Client, client.ObjectKey{Namespace: m.Namespace, Name: e.Opts.Name})
		}
	}
	s.SecretKeyIDs, s.SecretFingerprint = e.secretKeyring(ctx, secretKey)
	s.RolledOut = true
	if e.Opts.ArgoRollout {
		ro, err := GetRollout(ctx, e.Client, e.Opts.Namespace, e.Opts.Name)
		if err != nil {
			return s, err
		}
		s.TemplateHash = rolloutStamp(ro)
		s.RolledOut = RolloutRolledOut(ro)
		s.Serving = e.ReplicaKeyrings()
		return s, nil
	}
	first := true
	for _, ns := range e.selected {
		for i := range e.Opts.Servers {
			var d appsv1.Deployment
			key := client.ObjectKey{Namespace: ns, Name: deploymentName(e.Opts.Name, e.Opts.Servers, i)}
			if err := e.Client.Get(ctx, key, &d); err != nil {
				return s, err
			}
			hash := d.Spec.Template.Annotations[mrtrv1alpha1.FingerprintAnnotation]
			if first {
				s.TemplateHash, first = hash, false
			} else if hash != s.TemplateHash {
				s.TemplateHash = "" // the Deployments disagree: none is stamped with the keyring
			}
			s.RolledOut = s.RolledOut && RolledOut(&d)
		}
	}
	if m := e.servingMember(); m != nil {
		var d appsv1.Deployment
		// Unreadable while the member's API server is down: not settled, and no error, so that a
		// test can still observe the hub.
		err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: e.Opts.Name}, &d)
		s.RolledOut = s.RolledOut && err == nil && RolledOut(&d)
	}
	s.Serving = e.ReplicaKeyrings()
	return s, nil
}

// secretKeyring is the key ids and fingerprint of the keyring in Secret key, empty when it is
// missing or unreadable.
func (e *Env) secretKeyring(ctx context.Context, key client.ObjectKey) ([]string, string) {
	return secretKeyring(ctx, e.Client, key)
}

// secretKeyring is the key ids and fingerprint of the keyring in Secret key read through c, empty
// when it is missing or unreadable.
func secretKeyring(ctx context.Context, c client.Client, key client.ObjectKey) ([]string, string) {
	var secret corev1.Secret
	if err := c.Get(ctx, key, &secret); err != nil {
		return nil, ""
	}
	r, err := keyring.Parse(secret.Data[keyring.SecretDataKey])
	if err != nil {
		return nil, ""
	}
	return r.IDs(), r.Fingerprint()
}

// ReplicaKeyrings asks every serving replica which keyring it has loaded, sorted by pod name.
func (e *Env) ReplicaKeyrings() []ReplicaKeyring {
	return replicaKeyrings(slices.Collect(maps.Values(e.serving())))
}

// replicaKeyrings asks the replicas at addrs which keyring they have loaded, sorted by pod name;
// those that do not answer (stopping) are left out.
func replicaKeyrings(addrs []string) []ReplicaKeyring {
	var out []ReplicaKeyring
	c := &http.Client{Timeout: 2 * time.Second}
	for _, addr := range addrs {
		resp, err := c.Get("http://" + addr + "/debug/keyring")
		if err != nil {
			continue // stopping
		}
		var rk ReplicaKeyring
		err = json.NewDecoder(resp.Body).Decode(&rk)
		_ = resp.Body.Close()
		if err == nil {
			out = append(out, rk)
		}
	}
	slices.SortFunc(out, func(a, b ReplicaKeyring) int { return cmp.Compare(a.Replica, b.Replica) })
	return out
}

// Settled reports whether the keyring is Stable with its primary key and at most a staged one,
// the Deployment is rolled out (in Restart delivery, with that keyring's fingerprint), and exactly
// the desired replicas serve with it (in Reload delivery, and have acknowledged it); of a cluster
// keyring, also that every selected namespace's copy holds it and its status counts them all
// selected and up to date.
func (s State) Settled(replicas int32, delivery mrtrv1alpha1.Delivery) bool {
	if s.Namespaces != nil {
		if s.Namespaces.Selected != int32(len(s.Copies)) || s.Namespaces.UpToDate != s.Namespaces.Selected {
			return false
		}
		for _, fp := range s.Copies {
			if fp != s.SecretFingerprint {
				return false
			}
		}
	}
	restart := delivery == mrtrv1alpha1.DeliveryRestart
	staged := len(s.Keys) == 2 && s.Keys[1].Role == mrtrv1alpha1.KeyStaged
	if s.Phase != mrtrv1alpha1.PhaseStable || len(s.SecretKeyIDs) != len(s.Keys) || (len(s.Keys) != 1 && !staged) || !s.RolledOut ||
		(restart && s.TemplateHash != s.SecretFingerprint) || len(s.Serving) != int(replicas) {
		return false
	}
	for _, r := range s.Serving {
		if r.Fingerprint != s.SecretFingerprint || (!restart && r.Acknowledged != s.SecretFingerprint) {
			return false
		}
	}
	return true
}

// WaitSettled waits until Observe reports a settled state, or fails after timeout, or as soon as the
// operator exits.
func (e *Env) WaitSettled(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last State
	for {
		if err := e.Operator.Err(); err != nil {
			return err
		}
		s, err := e.Observe(ctx)
		if err == nil && s.Settled(e.ServingReplicas(), e.delivery(ctx)) {
			return nil
		}
		last = s
		select {
		case <-ctx.Done():
			return fmt.Errorf("not settled after %v: %+v", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ServingReplicas is the number of pods that serve with the keyring: every server's Deployment in
// every selected namespace.
func (e *Env) ServingReplicas() int32 {
	n := e.Opts.TotalReplicas() * int32(len(e.selected))
	if e.servingMember() != nil {
		n += e.Opts.Replicas
	}
	return n
}

// delivery is the keyring's spec.delivery as it is now (a test may change it).
func (e *Env) delivery(ctx context.Context) mrtrv1alpha1.Delivery {
	_, d, _, err := e.keyringState(ctx)
	if err != nil {
		return e.Opts.Delivery
	}
	return d
}

// SetDelivery changes the keyring's spec.delivery.
func (e *Env) SetDelivery(ctx context.Context, d mrtrv1alpha1.Delivery) error {
	patch := fmt.Appendf(nil, `{"spec":{"delivery":%q}}`, d)
	return e.Client.Patch(ctx, e.emptyKeyring(), client.RawPatch(types.MergePatchType, patch))
}

// PodUIDs returns the UID of every pod of the selected namespaces, by name: the same map before
// and after means nothing was restarted.
func (e *Env) PodUIDs(ctx context.Context) (map[string]types.UID, error) {
	_, uids, err := e.Restarts(ctx)
	return uids, err
}

// ServiceURL is the MCP endpoint of the example server's Service, on the real node: its cluster
// IP, which kube-proxy takes to one of the pods. It returns once kube-proxy serves it: the
// Service's health check answered through it ten times in a row, each on a new connection (so on
// pods kube-proxy picked at random), within a minute.
func (e *Env) ServiceURL(ctx context.Context) (string, error) {
	var svc corev1.Service
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Opts.Namespace, Name: e.Opts.Name}, &svc); err != nil {
		return "", err
	}
	base := "http://" + svc.Spec.ClusterIP
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ok := 0
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := c.Get(base + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			ok = 0
			return false, nil
		}
		ok++
		return ok >= 10, nil
	})
	if err != nil {
		return "", fmt.Errorf("the Service %s/%s (%s) never served its pods: %w", e.Opts.Namespace, e.Opts.Name, base, err)
	}
	return base + "/mcp", nil
}

// Restarts is the number of container restarts of the selected namespaces' pods (their
// restartCount), and their UIDs by name (a member's pods as MEMBER/NAME): together, whatever
// restarted, a container or a pod.
// Pods being deleted are left out: one still draining from an earlier step (a rollout's old pod
// within its grace period) is not part of the step measured, and a pod deleted during the step is
// then missing from the snapshot after it, as a replaced pod should be.
func (e *Env) Restarts(ctx context.Context) (int32, map[string]types.UID, error) {
	var n int32
	uids := map[string]types.UID{}
	for _, ns := range e.selected {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return 0, nil, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			uids[p.Name] = p.UID
			for _, c := range p.Status.ContainerStatuses {
				n += c.RestartCount
			}
		}
	}
	if m := e.servingMember(); m != nil {
		var pods corev1.PodList
		if err := m.Client.List(ctx, &pods, client.InNamespace(m.Namespace)); err != nil {
			return 0, nil, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				uids[m.Name+"/"+p.Name] = p.UID
			}
		}
	}
	return n, uids, nil
}

// RequestRotation sets the mrtr.dev/rotate annotation to value, which starts one rotation.
func (e *Env) RequestRotation(ctx context.Context, value string) error {
	return e.annotate(ctx, mrtrv1alpha1.RotateAnnotation, value)
}

// Revoke asks the operator to revoke keys, as `kubectl mrtr revoke` does: a numbered request for
// each of targets (key ids, or "*") appended to the mrtr.dev/revoke annotation, handled ones pruned
// (mrtrv1alpha1.AppendRevokeRequests), in an update conditional on the keyring as read, so that no
// earlier unhandled request is dropped.
func (e *Env) Revoke(ctx context.Context, targets ...string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		k := &mrtrv1alpha1.MRTRKeyring{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Opts.Namespace, Name: e.Opts.Name}, k); err != nil {
			return err
		}
		if k.Annotations == nil {
			k.Annotations = map[string]string{}
		}
		k.Annotations[mrtrv1alpha1.RevokeAnnotation], _ = mrtrv1alpha1.AppendRevokeRequests(
			k.Annotations[mrtrv1alpha1.RevokeAnnotation], k.Status.LastHandledRevokeSequence, targets...)
		return e.Client.Update(ctx, k)
	})
}

func (e *Env) annotate(ctx context.Context, key, value string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
	return e.Client.Patch(ctx, e.emptyKeyring(), client.RawPatch("application/merge-patch+json", patch))
}

// Stop stops everything Start started, in reverse order, and removes the temporary files.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	var errs []error
	if e.Operator != nil {
		errs = append(errs, e.Operator.Stop())
	}
	if e.Kubelet != nil && e.Kubelet.replicas != nil {
		e.Kubelet.Stop()
	}
	if e.Member != nil {
		errs = append(errs, e.Member.stop())
	}
	if e.lbServer != nil {
		errs = append(errs, e.lbServer.Close())
		e.Balancer.Close()
	}
	for _, stop := range slices.Backward(e.stops) {
		errs = append(errs, stop())
	}
	if e.cancel != nil {
		e.cancel()
		<-e.cacheDone
	}
	if e.Cluster != nil {
		errs = append(errs, e.Cluster.Stop())
	}
	if e.workDir != "" {
		errs = append(errs, os.RemoveAll(e.workDir))
	}
	return errors.Join(errs...)
}
