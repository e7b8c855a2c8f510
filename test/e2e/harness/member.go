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

package harness

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/cli"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/test/localcluster"
)

// MemberCluster is a second local cluster, a member of the hub's ClusterMRTRKeyring
// (docs/multi-cluster.md), set up as a user sets one up: the chart installed on it in mode member,
// and the hub's <member>-kubeconfig Secret printed by `kubectl mrtr member kubeconfig` against it.
// Its node is kwok's: its servers run as processes of this machine (a Kubelet of its own, against
// its API server), behind the hub's Balancer beside the hub's pods.
type MemberCluster struct {
	// Name is the member's name in spec.members.
	Name string
	// Namespace is the namespace selected on the member, where its servers run.
	Namespace string
	Cluster   *localcluster.Cluster
	// Client speaks to the member as its system:masters user (the test's view, not the hub's).
	Client  client.Client
	Cache   crcache.Cache
	Kubelet *Kubelet

	cancel    context.CancelFunc
	cacheDone chan struct{}
}

// MemberRelease is the release of the chart in mode member on the member cluster; with
// fullnameOverride mrtr-operator, its ServiceAccount is MemberServiceAccount.
const (
	MemberRelease        = "mrtr-member"
	MemberServiceAccount = ReleaseName + "-member"
	// MemberTokenSecret is the member ServiceAccount's long-lived token Secret, which the hub's
	// kubeconfig Secret carries the token of: deleting it revokes the hub's access.
	MemberTokenSecret = MemberServiceAccount + "-token"
)

// KubeconfigSecret is the hub's Secret, in the operator's namespace, that reaches the member.
func (m *MemberCluster) KubeconfigSecret() string { return m.Name + "-kubeconfig" }

// startMember starts the member cluster (kwok's node, an audit log, the ServiceAccount token
// controller that fills in the member chart's token Secret), installs the chart on it in mode
// member, and gives the hub its kubeconfig Secret. Its servers are deployed with the hub's
// (deploy), and run once its Kubelet follows them (followMember).
func (e *Env) startMember(ctx context.Context, root string) error {
	o := e.Opts
	m := &MemberCluster{Name: o.Member, Namespace: o.MemberNamespace}
	e.Member = m
	logDir := ""
	if o.LogDir != "" {
		// Its own folder: both clusters have a kube-apiserver.log, an etcd.log, ...
		logDir = filepath.Join(o.LogDir, "member-"+m.Name)
	}
	o.Logf("starting the member cluster %s (apiserver, etcd, controller-manager with the token controller, scheduler, kwok)", m.Name)
	var err error
	m.Cluster, err = localcluster.Start(ctx, localcluster.Options{LogDir: logDir, Audit: true, Node: localcluster.NodeKwok,
		ServiceAccountTokens: true})
	if err != nil {
		return fmt.Errorf("the member cluster %s: %w", m.Name, err)
	}
	if m.Client, err = client.New(m.Cluster.RESTConfig(), client.Options{Scheme: Scheme()}); err != nil {
		return err
	}
	o.Logf("installing the chart on the member in mode member (helm install %s ... --set mode=member)", MemberRelease)
	if err := e.helmMember(ctx, root, "install"); err != nil {
		return err
	}
	if err := e.ConnectMember(ctx); err != nil {
		return err
	}
	if m.Cache, err = crcache.New(m.Cluster.RESTConfig(), crcache.Options{Scheme: Scheme(),
		DefaultNamespaces: map[string]crcache.Config{m.Namespace: {}}}); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel, m.cacheDone = cancel, make(chan struct{})
	go func() { defer close(m.cacheDone); _ = m.Cache.Start(runCtx) }()
	return nil
}

// helmMember runs helm install (or upgrade) of the chart in mode member on the member, as
// docs/multi-cluster.md has a user do it. An upgrade re-creates the token Secret if it was deleted.
func (e *Env) helmMember(ctx context.Context, root, verb string) error {
	args := []string{verb, MemberRelease}
	if verb == "install" {
		args = append(args, "--create-namespace")
	}
	if err := runHelm(ctx, root, e.Member.Cluster.KubeconfigPath(), args, "mode=member", "fullnameOverride="+ReleaseName); err != nil {
		return fmt.Errorf("on the member: %w", err)
	}
	return nil
}

// RenewMemberToken makes the member's token Secret again (helm upgrade of the member chart, as
// the runbook says after a revocation) and gives the hub a kubeconfig Secret with the new token.
func (e *Env) RenewMemberToken(ctx context.Context) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if err := e.helmMember(ctx, root, "upgrade"); err != nil {
		return err
	}
	return e.ConnectMember(ctx)
}

// ConnectMember runs `kubectl mrtr member kubeconfig` (internal/cli, in this process) against the
// member, with --server its API server's https address, which the operator on this machine
// reaches, and applies the Secret it prints to the hub (created, or replaced). It retries while
// the token controller has not filled the token Secret in yet.
func (e *Env) ConnectMember(ctx context.Context) error {
	m := e.Member
	args := []string{"member", "kubeconfig", "--kubeconfig", m.Cluster.KubeconfigPath(), "-n", OperatorNamespace,
		"--name", m.Name, "--server", m.Cluster.RESTConfig().Host, "--hub-namespace", OperatorNamespace}
	var printed []byte
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var out, errOut bytes.Buffer
		root := cli.NewRootCommand(cli.Options{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}})
		root.SetArgs(args)
		if err := root.ExecuteContext(ctx); err != nil {
			if ctx.Err() == nil {
				last = err // the attempt's own error, not the wait's end
			}
			return false, nil // the token Secret is filled in a moment after it is created
		}
		printed = out.Bytes()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kubectl mrtr %s: %w (the last attempt's error: %w)", strings.Join(args[:2], " "), err, last)
	}
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(printed, &s); err != nil {
		return fmt.Errorf("kubectl mrtr member kubeconfig printed no Secret: %w", err)
	}
	if s.Name != m.KubeconfigSecret() || s.Namespace != OperatorNamespace || len(s.Data[mrtrv1alpha1.MemberKubeconfigKey]) == 0 {
		return fmt.Errorf("kubectl mrtr member kubeconfig printed Secret %s/%s, want %s/%s with data key %s",
			s.Namespace, s.Name, OperatorNamespace, m.KubeconfigSecret(), mrtrv1alpha1.MemberKubeconfigKey)
	}
	s.TypeMeta = metav1.TypeMeta{}
	err = e.Client.Create(ctx, &s)
	if apierrors.IsAlreadyExists(err) {
		var cur corev1.Secret
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(&s), &cur); err != nil {
			return err
		}
		cur.Data = s.Data
		err = e.Client.Update(ctx, &cur)
	}
	return err
}

// RevokeMemberToken deletes the member's token Secret: the API server no longer accepts the token
// the hub's kubeconfig Secret holds (docs/multi-cluster.md, "To revoke the hub's access").
func (e *Env) RevokeMemberToken(ctx context.Context) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: OperatorNamespace, Name: MemberTokenSecret}}
	return e.Member.Client.Delete(ctx, s)
}

// followMember runs the member's servers: a Kubelet of the member's own, against its API
// server, whose replicas serve behind the hub's balancer (named MEMBER/POD there).
func (e *Env) followMember(ctx context.Context, serverBin string) error {
	m := e.Member
	m.Kubelet = &Kubelet{
		Cache: m.Cache, Namespace: m.Namespace, Binary: serverBin, BackendPrefix: m.Name + "/",
		DataDir: filepath.Join(e.workDir, "member-pods"), Start: m.Cluster.StartProcess, Balancer: e.Balancer,
		Client: m.Client, Config: m.Cluster.RESTConfig(),
	}
	if e.Opts.Verbose {
		m.Kubelet.Logf = e.Opts.Logf
	}
	return m.Kubelet.Run(ctx)
}

// deployMember creates the member's namespace, labelled for the keyring's namespaceSelector, and
// in it the servers as they run on kwok: their ServiceAccount and RoleBinding to the consumer
// role the member chart installed, and their Deployments.
func (e *Env) deployMember(ctx context.Context) error {
	m := e.Member
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.Namespace, Labels: map[string]string{SelectorLabel: e.Opts.Name}}}
	objs := append([]client.Object{ns}, e.consumerObjects(m.Namespace)...)
	for _, d := range e.deploymentObjects(m.Namespace, false) {
		objs = append(objs, d)
	}
	for _, obj := range objs {
		if err := m.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s on the member: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// members are the keyring's spec.members with a member cluster: the hub itself (local) and the
// member, through its kubeconfig Secret.
func (e *Env) members() []mrtrv1alpha1.Member {
	return []mrtrv1alpha1.Member{
		{Name: HubMember, Local: true},
		{Name: e.Member.Name, KubeconfigSecret: e.Member.KubeconfigSecret()},
	}
}

// DetachMember takes the member's servers out of the balancer, before a test removes the member
// from spec.members: they run on, and are no longer counted among the keyring's servers, copies
// or pods (Observe, Settled, Restarts).
func (e *Env) DetachMember() {
	e.Member.Kubelet.LeaveBalancer()
	e.memberLeft = true
}

// servingMember is the member whose servers serve behind the balancer and consume the keyring:
// nil without one, or once it was detached.
func (e *Env) servingMember() *MemberCluster {
	if e.memberLeft {
		return nil
	}
	return e.Member
}

// HubMember is the hub's own name in spec.members.
const HubMember = "hub"

// stop stops the member's servers, its cache and its cluster.
func (m *MemberCluster) stop() error {
	if m.Kubelet != nil && m.Kubelet.replicas != nil {
		m.Kubelet.Stop()
	}
	if m.cancel != nil {
		m.cancel()
		<-m.cacheDone
	}
	if m.Cluster != nil {
		return m.Cluster.Stop()
	}
	return nil
}

// MemberAudit reads the member's audit log for the hub's member ServiceAccount: each of its
// requests refused (403), and each Secret write it made, by namespace ("verb name code").
func (e *Env) MemberAudit() (forbidden []string, secretWrites map[string][]string, err error) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", OperatorNamespace, MemberServiceAccount)
	path := e.Member.Cluster.AuditLogPath()
	if _, forbidden, err = readAudit(path, user); err != nil {
		return nil, nil, err
	}
	if secretWrites, err = readSecretWrites(path, user); err != nil {
		return nil, nil, err
	}
	return forbidden, secretWrites, nil
}
