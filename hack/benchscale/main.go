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

// Command benchscale measures how the operator scales with the number of keyrings: for each N it
// starts a fresh envtest (a real kube-apiserver and etcd), runs the real manager binary as its own
// process against it, creates N Deployments and N MRTRKeyrings, rotates all of them at once and
// reports the times, the manager's API requests and CPU per keyring rotation, its steady-state
// traffic and its memory. No controller-manager runs in envtest, so benchscale plays the
// Deployment controller itself (and, in Reload delivery, the pods' acknowledgements), at once, so
// that everything it measures is the operator's own time.
//
//	KUBEBUILDER_ASSETS=$(hack/build-controlplane.sh envtest | tail -1) go run ./hack/benchscale -n 100,1000
//
// `make bench-scale` does exactly that (SCALE_N=100,1000 by default). -cluster measures one
// ClusterMRTRKeyring over N namespaces instead (clusterkeyring.go), and -members a hub whose
// ClusterMRTRKeyring names M member clusters of N namespaces each, every one its own envtest
// (members.go; `make bench-members`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
)

// config is what one invocation measures, from flags and the SCALE_* environment variables.
type config struct {
	sizes         []int
	delivery      mrtrv1alpha1.Delivery
	nextKey       mrtrv1alpha1.NextKey
	managerArgs   []string
	managerEnv    []string
	profileDir    string // where profiles go; "" takes none
	readyTimeout  time.Duration
	rotateTimeout time.Duration
	steadyWindow  time.Duration
	workers       int
	// cluster: one ClusterMRTRKeyring over N namespaces instead of N keyrings (clusterkeyring.go).
	cluster bool
	// members: one ClusterMRTRKeyring naming M member clusters of N namespaces each, for every M
	// here and N of sizes (members.go); rotations is how many rotations each point measures.
	members   []int
	rotations int
}

// start is when the program began; progress lines print the time since.
var start = time.Now()

func main() {
	cfg, err := parseConfig(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(2)
	}
	// The harness's own caches and clients log through controller-runtime; only progress lines and
	// results belong on the terminal.
	logf.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := run(ctx, cfg)
	if len(results) > 0 {
		fmt.Println()
		fmt.Print(markdownTable(results))
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	sizes := fs.String("n", envOr("SCALE_N", "100,1000"), "comma-separated numbers of keyrings, one fresh envtest each (env SCALE_N)")
	delivery := fs.String("delivery", envOr("SCALE_DELIVERY", string(mrtrv1alpha1.DeliveryRestart)),
		"Restart (the harness rolls the Deployments out) or Reload (the harness acknowledges on Pods) (env SCALE_DELIVERY)")
	nextKey := fs.String("next-key", envOr("SCALE_NEXT_KEY", string(mrtrv1alpha1.NextKeyAtRotation)),
		"AtRotation (three rounds per rotation, the baseline of docs/benchmarks.md) or Staged (two rounds; no Accepting, "+
			"so no rollout -> next write step to time) (env SCALE_NEXT_KEY)")
	managerArgs := fs.String("manager-args", os.Getenv("SCALE_MANAGER_ARGS"),
		"space-separated extra arguments for the manager, appended to the harness's own (env SCALE_MANAGER_ARGS)")
	managerEnv := fs.String("manager-env", envOr("SCALE_MANAGER_ENV", chartContainer),
		"space-separated NAME=value environment variables for the manager, e.g. GOMEMLIMIT=230MiB to run it as in a container "+
			"whose memory limit is 256Mi; by default as in the chart's container (env SCALE_MANAGER_ENV)")
	profileDir := fs.String("profile-dir", os.Getenv("SCALE_PROFILE_DIR"),
		"a folder for a CPU profile of the API server during the rotation, one keyring and Secret as served, and the manager's heap "+
			"profile after the run; empty takes none (env SCALE_PROFILE_DIR)")
	readyTimeout := fs.Duration("ready-timeout", 10*time.Minute, "how long all keyrings may take to become Ready")
	rotateTimeout := fs.Duration("rotate-timeout", 20*time.Minute, "how long the rotation of all keyrings may take")
	steady := fs.Duration("steady", 10*time.Second, "the window, once everything is Stable, over which steady-state traffic is counted")
	cluster := fs.Bool("cluster", os.Getenv("SCALE_CLUSTER") != "",
		"one ClusterMRTRKeyring over N namespaces (each with its copy and one Deployment) instead of N keyrings (env SCALE_CLUSTER)")
	members := fs.String("members", os.Getenv("SCALE_MEMBERS"),
		"comma-separated numbers of member clusters, each its own envtest: a hub's ClusterMRTRKeyring names them all, "+
			"and -n counts the namespaces of each member; every M with every N (env SCALE_MEMBERS)")
	rotations := fs.Int("rotations", 2, "how many rotations, one after the other, each point of -members measures")
	workers := fs.Int("workers", 8, "parallel requests of the harness when it creates objects and requests rotations")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	c := config{delivery: mrtrv1alpha1.Delivery(*delivery), nextKey: mrtrv1alpha1.NextKey(*nextKey),
		managerArgs: strings.Fields(*managerArgs), managerEnv: strings.Fields(*managerEnv), profileDir: *profileDir,
		readyTimeout: *readyTimeout, rotateTimeout: *rotateTimeout, steadyWindow: *steady, workers: *workers, cluster: *cluster}
	var err error
	if c.sizes, err = positiveList(*sizes); err != nil {
		return config{}, fmt.Errorf("-n / SCALE_N: %w", err)
	}
	if *members != "" {
		if c.members, err = positiveList(*members); err != nil {
			return config{}, fmt.Errorf("-members / SCALE_MEMBERS: %w", err)
		}
	}
	if c.rotations = *rotations; c.rotations < 1 {
		return config{}, errors.New("-rotations must be at least 1")
	}
	if c.delivery != mrtrv1alpha1.DeliveryRestart && c.delivery != mrtrv1alpha1.DeliveryReload {
		return config{}, fmt.Errorf("-delivery / SCALE_DELIVERY: %q is neither Restart nor Reload", *delivery)
	}
	if c.nextKey != mrtrv1alpha1.NextKeyAtRotation && c.nextKey != mrtrv1alpha1.NextKeyStaged {
		return config{}, fmt.Errorf("-next-key / SCALE_NEXT_KEY: %q is neither AtRotation nor Staged", *nextKey)
	}
	if c.workers < 1 {
		return config{}, errors.New("-workers must be at least 1")
	}
	return c, nil
}

// positiveList parses a comma-separated list of positive numbers.
func positiveList(list string) ([]int, error) {
	var out []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// chartContainer runs the manager as in the chart's container, whose memory limit is 512Mi: the soft
// limit memlimit.Set gives it there (0.9 of the limit), and so the GOGC memlimit.TuneGC sets.
const chartContainer = "GOMEMLIMIT=460MiB"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run measures every size in turn, each on a fresh control plane, and returns the results of those
// that completed.
func run(ctx context.Context, cfg config) ([]result, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, testenv.ErrNoAssets // before a build of a minute that would be for nothing
	}
	bin, cleanup, err := buildManager(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if len(cfg.members) > 0 {
		return nil, runMembers(ctx, cfg, bin)
	}
	if cfg.cluster {
		return nil, runCluster(ctx, cfg, bin)
	}

	var results []result
	for _, n := range cfg.sizes {
		r, err := measure(ctx, cfg, bin, n)
		if err != nil {
			return results, fmt.Errorf("with %d keyrings: %w", n, err)
		}
		results = append(results, r)
		fmt.Print(r.block())
		fmt.Println(r.jsonLine())
	}
	return results, nil
}

// progress prints one line, stamped with the time since the program started.
func progress(format string, args ...any) {
	fmt.Printf("[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// namespacesFor is how many namespaces N keyrings are spread over: one up to 1000, else one per 100
// keyrings, so that 10000 keyrings spread over 100 namespaces.
func namespacesFor(n int) int {
	if n <= 1000 {
		return 1
	}
	return n / 100
}
