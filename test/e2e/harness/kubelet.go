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
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// StartFunc starts a process that must not outlive the cluster: (*localcluster.Cluster).StartProcess.
type StartFunc func(name string, cmd *exec.Cmd) (*testenv.Process, error)

// Kubelet plays, on kwok's node only, the part of the kubelet that kwok leaves out: it runs the
// containers. On the real node the kubelet does all of it, and the harness uses PodNetwork instead;
// what stays here serves the machines where the real node cannot run and the specs that steer it
// (Freeze). kwok marks the pods of the simulated node Ready without running anything; Kubelet runs
// one real example-server process per Ready pod of a namespace (started when the pod turns Ready,
// stopped when it is deleted), mounts each pod's Secret volume the way the kubelet does (Project,
// into a folder per pod), updates those folders a little after the Secret changes, and keeps the
// Balancer's backends in step.
type Kubelet struct {
	// Cache is an informer cache for the namespace (pods and Secrets are read from it).
	Cache crcache.Cache
	// Namespace holds the pods to run.
	Namespace string
	// Binary is the example server's executable. The container's args are passed to it, followed by
	// --listen, --keyring-dir and --replica, which override any the pod names.
	Binary string
	// DataDir holds one folder per pod with its mounted Secret.
	DataDir string
	// Start starts a process.
	Start StartFunc
	// Balancer receives a backend per serving replica, named BackendPrefix + the pod's name (a
	// prefix tells apart the pods of two clusters behind one balancer).
	Balancer      *Balancer
	BackendPrefix string
	// SyncDelay returns how long after a Secret changes a running pod's folder is updated; nil means
	// a random 0.5 to 1 s, per pod. The real kubelet takes up to its sync period plus cache TTL.
	SyncDelay func() time.Duration
	// Logf receives one line per replica started or stopped; nil discards them.
	Logf func(format string, args ...any)
	// Client requests each pod's ServiceAccount token (TokenRequest, bound to the pod), and
	// Config is the API server each replica talks to (its host and CA), as the kubelet gives
	// them to a container: a token, ca.crt and namespace in one folder, and the in-cluster
	// environment (KUBERNETES_SERVICE_HOST/PORT, and POD_NAME/POD_NAMESPACE from the downward API).
	Client client.Client
	Config *rest.Config

	mu       sync.Mutex
	replicas map[string]*Replica // by pod name
	frozen   map[string]bool     // pods whose folder is never updated again
	// unbalanced: the replicas serve, but no longer behind the balancer (LeaveBalancer).
	unbalanced bool
	wg         sync.WaitGroup // stops and delayed projections in flight
	queue      chan string
}

// Replica is one running example-server process for a pod.
type Replica struct {
	Pod  string
	Addr string // host:port on loopback
	// Secret is the name of the Secret mounted into Dir.
	Secret string
	Dir    string
	// ServiceAccountDir holds the pod's token (bound to it), ca.crt and namespace.
	ServiceAccountDir string

	proc *testenv.Process
	mu   sync.Mutex // serialises projections into Dir
	gone bool       // set under Kubelet.mu once the replica is being stopped
}

// keyringVolumeMount is where the example server's Deployment mounts the keyring Secret; only the
// Secret volume mounted there is projected.
const keyringVolumeMount = "/etc/mrtr"

// Run starts following pods and Secrets and returns once the handlers are registered. The replicas
// run until ctx is done; Stop then waits for them to end.
func (k *Kubelet) Run(ctx context.Context) error {
	k.replicas = map[string]*Replica{}
	k.frozen = map[string]bool{}
	k.queue = make(chan string, 1024)
	podInf, err := k.Cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	secretInf, err := k.Cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == k.Namespace {
			k.queue <- p.Name
		}
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	if _, err := secretInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.secretChanged(o) },
		UpdateFunc: func(_, o any) { k.secretChanged(o) },
	}); err != nil {
		return err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case name := <-k.queue:
				k.syncPod(ctx, name)
			}
		}
	}()
	return nil
}

// Stop stops every replica and waits until they and every pending projection are done.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	for name, r := range k.replicas {
		k.stopLocked(name, r)
	}
	k.mu.Unlock()
	k.wg.Wait()
}

// Freeze stops updating the mounted Secret of pod: its replica keeps the keyring it has, as when
// the kubelet's sync of one node is stuck.
func (k *Kubelet) Freeze(pod string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.frozen[pod] = true
}

// LeaveBalancer takes every replica out of the balancer, and keeps those started later out: the
// servers run on, but get no traffic, as a cluster taken out of a global load balancer.
func (k *Kubelet) LeaveBalancer() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unbalanced = true
	for name := range k.replicas {
		k.Balancer.Remove(k.BackendPrefix + name)
	}
}

// Replicas returns the replicas that serve, in no order.
func (k *Kubelet) Replicas() []*Replica {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*Replica, 0, len(k.replicas))
	for _, r := range k.replicas {
		out = append(out, r)
	}
	return out
}

func (k *Kubelet) logf(format string, args ...any) {
	if k.Logf != nil {
		k.Logf(format, args...)
	}
}

// syncPod makes the replica of one pod match the pod: running while the pod is Ready and not
// terminating, gone otherwise.
func (k *Kubelet) syncPod(ctx context.Context, name string) {
	var pod corev1.Pod
	err := k.Cache.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, &pod)
	alive := err == nil && pod.DeletionTimestamp == nil && podReady(&pod)

	k.mu.Lock()
	r, running := k.replicas[name]
	if running && !alive && (err != nil || pod.DeletionTimestamp != nil) {
		// Deleted or terminating. A pod that only turns un-Ready keeps its process, like a container
		// failing a readiness probe; kwok never does that anyway.
		k.stopLocked(name, r)
	}
	k.mu.Unlock()
	if running || !alive {
		return
	}
	r, err = k.start(ctx, &pod)
	if err != nil {
		k.logf("kubelet: cannot start %s: %v", name, err)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.replicas[name] = r
	if !k.unbalanced {
		k.Balancer.Add(k.BackendPrefix+name, r.Addr)
	}
	k.logf("kubelet: %s serving on %s", name, r.Addr)
}

// drainDelay is how long a replica keeps running after it left the balancer, before SIGTERM: the
// usual preStop sleep. Without it, a request the balancer routed to the replica just before its
// removal can meet a keep-alive connection that the stopping server is closing (a 502).
const drainDelay = 500 * time.Millisecond

// stopLocked takes the replica out of the balancer first, as endpoints go before the container gets
// SIGTERM, then, after drainDelay, stops the process in the background (it finishes the requests in
// flight).
func (k *Kubelet) stopLocked(name string, r *Replica) {
	delete(k.replicas, name)
	r.gone = true
	k.Balancer.Remove(k.BackendPrefix + name)
	k.wg.Go(func() {
		time.Sleep(drainDelay)
		_ = r.proc.Stop()
		k.logf("kubelet: %s stopped", name)
	})
}

// start mounts the pod's keyring Secret and starts its process, returning once it serves.
func (k *Kubelet) start(ctx context.Context, pod *corev1.Pod) (*Replica, error) {
	secretName, args, err := keyringContainer(pod)
	if err != nil {
		return nil, err
	}
	var secret corev1.Secret
	if err := k.Cache.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: secretName}, &secret); err != nil {
		return nil, fmt.Errorf("secret %s: %w", secretName, err) // retried on the Secret's add event
	}
	r := &Replica{Pod: pod.Name, Secret: secretName, Dir: filepath.Join(k.DataDir, pod.Name, "keyring")}
	if err := Project(r.Dir, secret.Data); err != nil {
		return nil, err
	}
	r.ServiceAccountDir = filepath.Join(k.DataDir, pod.Name, "serviceaccount")
	if err := k.mountServiceAccount(ctx, pod, r.ServiceAccountDir); err != nil {
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	r.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	args = append(args, "--listen="+r.Addr, "--keyring-dir="+r.Dir, "--replica="+pod.Name, "--serviceaccount-dir="+r.ServiceAccountDir)
	cmd := exec.Command(k.Binary, args...)
	api, err := url.Parse(k.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", k.Config.Host, err)
	}
	cmd.Env = append(os.Environ(), "POD_NAME="+pod.Name, "POD_NAMESPACE="+pod.Namespace,
		"KUBERNETES_SERVICE_HOST="+api.Hostname(), "KUBERNETES_SERVICE_PORT="+api.Port())
	r.proc, err = k.Start("replica-"+pod.Name, cmd)
	if err != nil {
		return nil, err
	}
	if err := waitServing(ctx, r); err != nil {
		_ = r.proc.Stop()
		return nil, err
	}
	return r, nil
}

// mountServiceAccount writes what the kubelet projects at /var/run/secrets/kubernetes.io/serviceaccount
// into dir: a token of the pod's ServiceAccount bound to the pod (so the API server knows which pod
// speaks: userInfo.extra carries its name and uid), the cluster's CA and the namespace.
func (k *Kubelet) mountServiceAccount(ctx context.Context, pod *corev1.Pod, dir string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return writeServiceAccount(ctx, k.Client, k.Config.CAData, pod.Namespace, sa,
		&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}, dir)
}

// secretChanged schedules the update of every running pod folder that mounts the Secret.
func (k *Kubelet) secretChanged(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Namespace != k.Namespace {
		return
	}
	// A pod that waited for its Secret to exist starts now.
	pods := &corev1.PodList{}
	if err := k.Cache.List(context.Background(), pods, client.InNamespace(k.Namespace)); err == nil {
		for _, p := range pods.Items {
			k.queue <- p.Name
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.replicas {
		if r.Secret != s.Name || k.frozen[r.Pod] {
			continue
		}
		delay := k.syncDelay()
		k.wg.Go(func() {
			time.Sleep(delay)
			k.project(r)
		})
	}
}

// project writes the Secret as it is now into the replica's folder, unless the replica is gone.
func (k *Kubelet) project(r *Replica) {
	var secret corev1.Secret
	if err := k.Cache.Get(context.Background(), client.ObjectKey{Namespace: k.Namespace, Name: r.Secret}, &secret); err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k.mu.Lock()
	gone := r.gone
	k.mu.Unlock()
	if gone {
		return
	}
	if err := Project(r.Dir, secret.Data); err != nil {
		k.logf("kubelet: updating the keyring of %s: %v", r.Pod, err)
	}
}

func (k *Kubelet) syncDelay() time.Duration {
	if k.SyncDelay != nil {
		return k.SyncDelay()
	}
	return 500*time.Millisecond + rand.N(500*time.Millisecond)
}

// keyringContainer returns the Secret mounted at /etc/mrtr and the args of the container mounting it.
func keyringContainer(pod *corev1.Pod) (secret string, args []string, err error) {
	volumes := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			volumes[v.Name] = v.Secret.SecretName
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if s, ok := volumes[m.Name]; ok && m.MountPath == keyringVolumeMount {
				return s, append([]string(nil), c.Args...), nil
			}
		}
	}
	return "", nil, fmt.Errorf("pod %s mounts no Secret at %s", pod.Name, keyringVolumeMount)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitServing polls the replica's /healthz until it answers, the process exits, or 15 s pass.
func waitServing(ctx context.Context, r *Replica) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	healthz := "http://" + r.Addr + "/healthz"
	for {
		if resp, err := http.Get(healthz); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.proc.Done():
			return fmt.Errorf("%s exited before serving: %v (log %s)", r.Pod, r.proc.Err(), r.proc.LogPath())
		case <-ctx.Done():
			return fmt.Errorf("%s does not serve on %s: %w", r.Pod, r.Addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
