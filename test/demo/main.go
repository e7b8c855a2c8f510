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

// Command demo shows the operator rotating a keyring under live MRTR traffic, on a local cluster:
// it starts the cluster, the operator, an MRTRKeyring and a 3-replica Deployment of the example MCP
// server, runs MCP clients through a round-robin balancer, requests two rotations, prints each
// phase, which key every replica seals with and the running counts of round trips, then a summary,
// and cleans up (also on Ctrl-C).
//
// Where this machine can run it (root, containerd; see localcluster.ChooseNode) the node is a real
// kubelet with containerd: the replicas are containers of the server's image, the kubelet mounts
// their Secret and token, the balancer reaches them over the pod network, and one more client goes
// through their Service (kube-proxy). Elsewhere kwok simulates the node and the harness runs the
// replicas as processes. MRTR_NODE=real or kwok forces either.
//
// It is a program of the test platform, not one the project ships: it drives the e2e harness
// (test/e2e/harness), so it lives under test/ with it (docs/development.md, "The test platform").
//
//	make demo     (or: go run ./test/demo [-delivery=Restart] [-reload-trigger=None] [-server=python|typescript|rust|go,rust])
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/test/e2e/harness"
)

func main() {
	delivery := flag.String("delivery", string(mrtrv1alpha1.DeliveryReload),
		"how each keyring reaches the replicas: Reload (they reload and acknowledge; nothing restarts) or Restart (rollouts)")
	trigger := flag.String("reload-trigger", string(mrtrv1alpha1.ReloadTriggerPodAnnotation),
		"Reload delivery: PodAnnotation (the operator tells the kubelet to sync each pod at once) "+
			"or None (the kubelet's own pace, up to ~2 min a round)")
	server := flag.String("server", string(harness.ServerGo),
		"the example servers' SDK, comma-separated for several Deployments behind one Service: go, python, typescript, rust "+
			"(python, typescript and rust need the real node; go,typescript and go,rust share one keyring)")
	flag.Parse()
	var servers []harness.ServerKind
	for name := range strings.SplitSeq(*server, ",") {
		k, err := harness.ParseServerKind(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo: -server:", err)
			os.Exit(2)
		}
		servers = append(servers, k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, mrtrv1alpha1.Delivery(*delivery), mrtrv1alpha1.ReloadTrigger(*trigger), servers); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Println("interrupted; everything is stopped")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// printer writes the demo's lines with the time since the start.
type printer struct {
	mu           sync.Mutex
	start        time.Time
	lastReplicas string // the last replicas line, printed again only when it changes
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Printf("[%5.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, delivery mrtrv1alpha1.Delivery, trigger mrtrv1alpha1.ReloadTrigger, servers []harness.ServerKind) error {
	p := &printer{start: time.Now()}
	logf.SetLogger(logr.Discard()) // the demo prints its own lines; client-side logs would drown them
	var env *harness.Env
	var load *harness.Load
	counts := func() string {
		if load == nil {
			return ""
		}
		c := load.Counts()
		return fmt.Sprintf("  | round trips: %d completed, %d rejected, %d failed", c.Completed, c.Rejected, c.Failed)
	}
	rotating := false // set at the first phase after Stable: a Stable before it is the keyring's creation
	onEvent := func(e harness.Event) {
		switch e.Kind {
		case harness.EventPhase:
			meaning := phaseMeaning[e.Phase]
			if e.Phase != mrtrv1alpha1.PhaseStable {
				rotating = true
			} else if !rotating {
				meaning = "keyring created: the primary key seals, the next one is staged"
			}
			p.printf("phase %-15s %s%s", e.Phase, meaning, counts())
		case harness.EventSecret:
			p.printf("Secret now holds [%s] (first one seals)", strings.Join(e.KeyIDs, ", "))
		case harness.EventRolledOut:
			p.printf("Deployment rolled out (pods restarted with keyring %s)%s", e.Fingerprint, counts())
		case harness.EventAck:
			p.printf("pod %s acknowledged keyring %s", shortPod(e.Pod), e.Fingerprint)
		}
	}

	p.printf("starting: builds what is missing (the first build of the control plane takes ~10 min)")
	opts := harness.Options{
		Delivery:      delivery,
		ReloadTrigger: trigger,
		Servers:       servers,
		Logf:          func(f string, a ...any) { p.printf(f, a...) },
		OnEvent:       onEvent,
	}
	rotationLimit := 3 * time.Minute
	if trigger == mrtrv1alpha1.ReloadTriggerNone {
		// The kubelet's own pace: syncFrequency (1m) plus its cache, per round; the API's default
		// reloadDeadline covers it.
		opts.ReloadDeadline, rotationLimit = 2*time.Minute, 8*time.Minute
	}
	env, err := harness.Start(ctx, opts)
	defer func() {
		p.printf("cleaning up")
		if err := env.Stop(); err != nil {
			p.printf("cleanup: %v", err)
		}
	}()
	if err != nil {
		return err
	}
	p.printf("ready: MRTRKeyring %s/%s is Stable; %d replicas serve; MCP endpoint %s",
		env.Opts.Namespace, env.Opts.Name, env.Opts.Replicas, env.MCPURL)
	printReplicas(p, env)
	restartsBefore, uidsBefore, err := env.Restarts(ctx)
	if err != nil {
		return err
	}

	load = &harness.Load{URL: env.MCPURL, Workers: 4}
	loadStart := time.Now()
	stopLoad := load.Start(ctx)
	defer stopLoad()
	var viaService *harness.Load
	if env.Real() {
		p.printf("traffic: 4 MCP clients run get_weather round trips (elicitation + retry) through the round-robin balancer, " +
			"to the pods' addresses on the node's bridge")
		url, err := env.ServiceURL(ctx)
		if err != nil {
			return err
		}
		viaService = &harness.Load{URL: url, Workers: 1}
		stopService := viaService.Start(ctx)
		defer stopService()
		p.printf("traffic: 1 more MCP client through Service %s/%s (%s), which kube-proxy balances", env.Opts.Namespace, env.Opts.Name, url)
	} else {
		p.printf("traffic: 4 MCP clients run get_weather round trips (elicitation + retry) through the round-robin balancer")
	}

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	rotationAt := len(env.Timeline.Events())
	for i := 1; i <= 2; i++ {
		p.printf("requesting rotation %d (annotation %s)", i, mrtrv1alpha1.RotateAnnotation)
		if err := env.RequestRotation(ctx, fmt.Sprintf("demo-%d-%d", time.Now().Unix(), i)); err != nil {
			return err
		}
		if err := waitRotations(ctx, env, int64(i), ticker, p, rotationLimit); err != nil {
			return err
		}
		if err := env.WaitSettled(ctx, time.Minute); err != nil {
			return err
		}
		printReplicas(p, env)
	}
	stopLoad()
	elapsed := time.Since(loadStart)
	restartsAfter, uidsAfter, err := env.Restarts(ctx)
	if err != nil {
		return err
	}

	c := load.Counts()
	rotations := harness.Rotations(env.Timeline.Events()[rotationAt:], env.Opts.TTLWait(), env.Timeline.TTLWaitUntils())
	fmt.Println()
	fmt.Println("summary")
	if env.Real() {
		fmt.Printf("  node: %s, a real kubelet with containerd and runc (%s)\n", strings.Join(env.Cluster.NodeNames(), ", "), trigger)
	} else {
		fmt.Printf("  node: %s, simulated by kwok; the harness runs the replicas as processes\n", strings.Join(env.Cluster.NodeNames(), ", "))
	}
	fmt.Printf("  servers: %v, one Deployment of %d replicas each, behind one Service\n", env.Opts.Servers, env.Opts.Replicas)
	fmt.Printf("  round trips: %s in %v (%.0f/s)\n", c, elapsed.Round(time.Second), float64(c.Completed)/elapsed.Seconds())
	if viaService != nil {
		fmt.Printf("  round trips through the Service (kube-proxy): %s\n", viaService.Counts())
		c.Rejected += viaService.Counts().Rejected
		c.Failed += viaService.Counts().Failed
	}
	var lat []time.Duration
	podsAdded := 0
	for i, r := range rotations {
		fmt.Printf("  rotation %d: %s\n", i+1, r)
		lat = append(lat, r.RolloutToWrite...)
		lat = append(lat, r.AckToWrite...)
		podsAdded += r.PodsAdded
	}
	replaced := 0
	for name, uid := range uidsBefore {
		if uidsAfter[name] != uid {
			replaced++
		}
	}
	fmt.Printf("  restarts during rotations: %d container restarts (restartCount), %d pods replaced (UIDs), %d pods added\n",
		restartsAfter-restartsBefore, replaced, podsAdded)
	what := "the last acknowledgement"
	if delivery == mrtrv1alpha1.DeliveryRestart {
		what = "a rollout completing"
	}
	fmt.Printf("  operator latency from %s to its next write: median %v, max %v\n",
		what, harness.Median(lat).Round(time.Millisecond), harness.Max(lat).Round(time.Millisecond))
	if c.Rejected+c.Failed == 0 {
		fmt.Println("  no request state was rejected: every token sealed by any replica opened on every replica")
	} else {
		errs := load.Errors()
		if viaService != nil {
			errs = append(errs, viaService.Errors()...)
		}
		fmt.Printf("  some round trips failed: %s\n", strings.Join(errs[:min(len(errs), 5)], "; "))
		// After the cleanup (deferred), the demo exits 1: zero rejected is the bar it shows.
		return fmt.Errorf("%d round trips rejected, %d failed", c.Rejected, c.Failed)
	}
	return nil
}

var phaseMeaning = map[mrtrv1alpha1.Phase]string{
	mrtrv1alpha1.PhaseAccepting:      "new key added second: every replica learns to open it",
	mrtrv1alpha1.PhaseSealingWithNew: "new key moved first (every replica already opens it): replicas start sealing with it",
	mrtrv1alpha1.PhaseWaitingTTL:     "waiting for tokens sealed with the old key to expire",
	mrtrv1alpha1.PhaseRemoving:       "old key removed, the next key staged",
	mrtrv1alpha1.PhaseRevoking:       "revoked keys removed at once",
	mrtrv1alpha1.PhaseStable:         "rotation done; the next key is staged",
}

func waitRotations(ctx context.Context, env *harness.Env, n int64, ticker *time.Ticker, p *printer, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		s, err := env.Observe(ctx)
		if err == nil && s.RotationsCompleted >= n {
			return nil
		}
		if err := env.Operator.Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("rotation %d did not complete within %v", n, limit)
		case <-ticker.C:
			printReplicas(p, env)
		}
	}
}

// printReplicas prints which key the replicas seal with and which keys they open, grouping replicas
// that agree, when that changed since the last call.
func printReplicas(p *printer, env *harness.Env) {
	var groups []string
	members := map[string][]string{}
	for _, r := range env.ReplicaKeyrings() {
		g := fmt.Sprintf("seal with %s, open [%s]", r.SealKey, strings.Join(r.KeyIDs, " "))
		if _, ok := members[g]; !ok {
			groups = append(groups, g)
		}
		members[g] = append(members[g], shortPod(r.Replica))
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(members[g], ",") + " " + g
	}
	line := strings.Join(parts, "; ")
	p.mu.Lock()
	same := line == p.lastReplicas
	p.lastReplicas = line
	p.mu.Unlock()
	if !same {
		p.printf("replicas: %s", line)
	}
}

// shortPod keeps the random suffix of a pod name, which is what tells replicas apart.
func shortPod(name string) string {
	if i := strings.LastIndex(name, "-"); i >= 0 {
		return name[i+1:]
	}
	return name
}
