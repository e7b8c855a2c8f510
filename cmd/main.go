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

// Command manager runs the MRTRKeyring controller: flags, scheme, cache, metrics, health probes and
// leader election, then the reconciler (internal/controller), in managers that internal/supervise
// starts again after an outage of the API server or a lost lease, without leaving the process.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	// All client-go auth plugins (OIDC, exec, ...), so that `make run` works with any kubeconfig.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"
	"github.com/mrtr-dev/mrtr-operator/internal/controller"
	"github.com/mrtr-dev/mrtr-operator/internal/leaderguard"
	"github.com/mrtr-dev/mrtr-operator/internal/members"
	"github.com/mrtr-dev/mrtr-operator/internal/memlimit"
	"github.com/mrtr-dev/mrtr-operator/internal/metricsauth"
	"github.com/mrtr-dev/mrtr-operator/internal/supervise"
	"github.com/mrtr-dev/mrtr-operator/internal/watchtrim"
	"github.com/mrtr-dev/mrtr-operator/internal/workload"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(mrtrv1alpha1.AddToScheme(scheme))
	// The workload kinds read in types of the operator's own (the Argo Rollout).
	utilruntime.Must(workload.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, metricsCertPath, metricsCertName, metricsCertKey string
		probeAddr, pprofAddr                                          string
		enableLeaderElection, secureMetrics, enableHTTP2              bool
		leaderElectionNamespace, namespaces                           string
		clusterNamespace                                              string
		clusterKeyrings                                               bool
		concurrency                                                   int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve the metrics endpoint over HTTPS, behind Kubernetes authentication and authorization. Use --metrics-secure=false for plain HTTP.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "",
		"The directory that holds the metrics server's certificate; empty: a self-signed one, made at start.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Serve the metrics endpoint over HTTP/2 too (off: see below).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0",
		"The address of Go's profiling endpoints (/debug/pprof/), e.g. 127.0.0.1:6060; 0 disables them.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Elect a leader among the manager's replicas (a Lease), so that one reconciles at a time.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "",
		"The namespace of the leader election Lease; empty: the namespace the manager runs in, which outside a cluster must be given.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", controller.DefaultConcurrency,
		"How many keyrings are reconciled at once (never two passes of one keyring): each pass waits on a few API requests, "+
			"so a few workers keep thousands of keyrings moving.")
	flag.StringVar(&namespaces, "namespaces", "",
		"Comma-separated namespaces to watch (keyrings, their Secrets, workloads and pods), with a Role in each instead of a ClusterRole; "+
			"empty watches every namespace.")
	flag.BoolVar(&clusterKeyrings, "cluster-keyrings", false,
		"Rotate ClusterMRTRKeyrings, which write a keyring Secret into every namespace they select: only for a cluster-wide install "+
			"(not with --namespaces), and only where whoever may create a ClusterMRTRKeyring may put keys into any namespace (docs/security.md).")
	flag.StringVar(&clusterNamespace, "cluster-resource-namespace", "",
		"The namespace of the ClusterMRTRKeyrings' lead Secrets; "+
			"empty: the namespace the manager runs in (POD_NAMESPACE, or its service account's).")
	// Production logging by default: JSON at info level (one line per change, none per pass). The
	// zap flags change it: --zap-devel, --zap-log-level=debug, --zap-encoder=console.
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	switch limit, err := memlimit.Set(); {
	case err != nil:
		setupLog.Error(err, "Not setting a soft memory limit")
	case limit > 0:
		setupLog.Info("soft memory limit set from the container's", "bytes", limit, "fraction", memlimit.Fraction)
	}
	if gc, _ := memlimit.TuneGC(); gc != 100 {
		setupLog.Info("garbage collection paced for the soft memory limit", "GOGC", gc,
			"heapFloor", memlimit.HeapFloor(debug.SetMemoryLimit(-1)))
	}

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		// HTTP/2 stays off unless asked for: its Stream Cancellation and Rapid Reset attacks
		// (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8) cost a server more than HTTP/1.1 does.
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsServerOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if secureMetrics {
		// Only callers that the API server authenticates and authorizes for GET /metrics
		// (config/rbac/metrics_reader_role.yaml) read the metrics.
		metricsServerOptions.FilterProvider = metricsauth.FilterProvider
	}
	if metricsCertPath != "" {
		setupLog.Info("serving metrics with the certificate given", "metrics-cert-path", metricsCertPath,
			"metrics-cert-name", metricsCertName, "metrics-cert-key", metricsCertKey)
		metricsServerOptions.CertDir = metricsCertPath
		metricsServerOptions.CertName = metricsCertName
		metricsServerOptions.KeyName = metricsCertKey
	}

	clusterKeyringsNamespace := ""
	if clusterKeyrings {
		var err error
		if clusterKeyringsNamespace, err = clusterResourceNamespace(clusterNamespace, namespaces); err != nil {
			setupLog.Error(err, "Cannot turn on cluster keyrings")
			os.Exit(1)
		}
		setupLog.Info("cluster keyrings on", "cluster-resource-namespace", clusterKeyringsNamespace)
	}

	config := ctrl.GetConfigOrDie()
	// Uncompressed answers: the manager's requests and watches carry small objects, one at a time,
	// which gzip makes no faster to move but costs CPU at both ends (3 % of the manager's CPU in a
	// rotation of 1,000 keyrings, docs/benchmarks.md).
	config.DisableCompression = true
	// The keyrings' watch events without their managed fields, which the cache drops anyway:
	// decoding them was a tenth of the manager's CPU in that rotation (internal/watchtrim).
	config.Wrap(watchtrim.Transport(mrtrv1alpha1.GroupVersion.Group))
	ctx := ctrl.SetupSignalHandler()
	// The probes outlive each manager: the process is healthy while it waits for the API server.
	if err := supervise.ServeProbes(ctx, probeAddr, setupLog); err != nil {
		setupLog.Error(err, "Failed to serve the health probes")
		os.Exit(1)
	}
	// One lease lock for the process, so that a manager started again competes under the same
	// identity, and one guard in front of each manager's writes (internal/leaderguard).
	var lease *leaderguard.Lease
	if enableLeaderElection {
		var err error
		if lease, err = leaderguard.NewLease(config, leaderguard.LeaseConfig{
			Namespace: leaderElectionNamespace, Name: leaderElectionID, Validity: renewDeadline,
		}); err != nil {
			setupLog.Error(err, "Failed to set up leader election")
			os.Exit(1)
		}
		// The replica's lease identity in its User-Agent: the API server's audit log then tells the
		// replicas' requests apart, a deposed leader's from its successor's.
		config = rest.CopyConfig(config)
		config.UserAgent = rest.DefaultKubernetesUserAgent() + " replica/" + lease.Identity()
	}

	setupLog.Info("Starting manager")
	err := supervise.Run(ctx, supervise.Options{Config: config, Log: setupLog, Build: func() (manager.Manager, error) {
		return newManager(config, ctrl.Options{
			Scheme:           scheme,
			Cache:            controller.CacheOptions(splitNamespaces(namespaces)...),
			Metrics:          metricsServerOptions,
			PprofBindAddress: pprofAddr,
			// The manager does nothing after it stops, so the leader may hand the Lease over at
			// once instead of letting its successor wait out the lease duration.
			LeaderElectionReleaseOnCancel: true,
		}, lease, concurrency, len(splitNamespaces(namespaces)) == 0, clusterKeyringsNamespace)
	}})
	if lease != nil {
		lease.Close()
	}
	if err != nil {
		setupLog.Error(err, "Failed to run manager")
		os.Exit(1)
	}
}

// leaderElectionID names the leader election Lease. Kept from the scaffold: a new name would let an
// old and a new replica both lead during an upgrade.
const leaderElectionID = "4710c0f2.dev"

// renewDeadline is how long a leader keeps leading without renewing its lease (controller-runtime's
// default, of a lease duration of 15 s), and so how long after its last renewal its writes pass the
// lease guard.
const renewDeadline = 10 * time.Second

// How members are reached: a new member's cache, and its cache of a namespace that joins a
// keyring's selection, have memberSyncTimeout to sync (the keyrings naming it wait meanwhile);
// its API server's /readyz is asked every memberHealthEvery, and each request (not a watch) to it
// may take memberRequestTimeout.
const (
	memberSyncTimeout    = 30 * time.Second
	memberHealthEvery    = 5 * time.Second
	memberRequestTimeout = 5 * time.Second
)

// newManager makes one run's manager with the reconciler, its writes guarded by lease (nil: no
// leader election, nothing to guard). readNodes: the install is cluster-wide, and its ClusterRole
// lets it read Nodes (a namespace-scoped install's Roles cannot).
func newManager(config *rest.Config, opts ctrl.Options, lease *leaderguard.Lease, concurrency int,
	readNodes bool, clusterKeyrings string) (manager.Manager, error) {
	opts.LeaderElection = lease != nil
	if lease != nil {
		opts.LeaderElectionResourceLockInterface = lease
		opts.RenewDeadline = new(renewDeadline)
	}
	// The probes are served across managers (supervise.ServeProbes).
	opts.HealthProbeBindAddress = "0"
	// Each run registers the same controller again, in the same process.
	opts.Controller.SkipNameValidation = new(true)
	mgr, err := ctrl.NewManager(config, opts)
	if err != nil {
		return nil, fmt.Errorf("create the manager: %w", err)
	}
	c, err := controller.NewClient(mgr)
	if err != nil {
		return nil, err
	}
	// One lease session per manager run, shared by the hub's client and every member's: a second
	// session would end this one, and every write would be refused.
	var guard func(client.Client) client.Client
	if lease != nil {
		session := lease.Session()
		guard = func(c client.Client) client.Client { return leaderguard.NewClient(c, session) }
		c = guard(c)
	}
	// Wired here, where a reader sees them: the cached client behind the lease guard, the live
	// reader for the few reads the cache cannot answer (see Shared.APIReader). Both controllers
	// share them; SetupWithManager adds the events recorder (internal/events) once.
	shared := &controller.Shared{
		Client:          c,
		APIReader:       mgr.GetAPIReader(),
		ReadNodes:       readNodes,
		ClusterKeyrings: clusterKeyrings,
		// The source Secrets' watch covers the namespaces the manager's cache does.
		Namespaces: slices.Sorted(maps.Keys(opts.Cache.DefaultNamespaces)),
	}
	if err := (&controller.MRTRKeyringReconciler{Shared: shared, MaxConcurrentReconciles: concurrency}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("create the mrtrkeyring controller: %w", err)
	}
	if clusterKeyrings != "" {
		cr := &controller.ClusterMRTRKeyringReconciler{Shared: shared, MaxConcurrentReconciles: concurrency,
			Members: &members.Registry{SyncTimeout: memberSyncTimeout, HealthEvery: memberHealthEvery, HealthTimeout: memberRequestTimeout,
				WrapClient: guard}}
		if err := cr.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("create the clustermrtrkeyring controller: %w", err)
		}
	}
	return mgr, nil
}

// clusterResourceNamespace is the namespace of the cluster keyrings' lead Secrets: flagged, else
// the manager's own. Cluster keyrings need a cluster-wide install: a namespace-scoped one holds
// Roles in its namespaces only, and a keyring that selects others could not be rotated there.
func clusterResourceNamespace(flagged, namespaces string) (string, error) {
	if len(splitNamespaces(namespaces)) > 0 {
		return "", fmt.Errorf("--cluster-keyrings needs a cluster-wide install, not --namespaces=%s", namespaces)
	}
	if flagged != "" {
		return flagged, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns, nil
	}
	return "", errors.New("--cluster-resource-namespace is not set, and the manager does not run in a namespace " +
		"(no POD_NAMESPACE, no service account namespace)")
}

// splitNamespaces parses --namespaces: comma-separated names, blanks ignored.
func splitNamespaces(list string) []string {
	var out []string
	for ns := range strings.SplitSeq(list, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
