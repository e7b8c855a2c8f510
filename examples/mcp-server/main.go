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

// Command mcp-server is an example MCP server that uses a rotated MRTR keyring.
//
// It serves stateless streamable HTTP on /mcp, so it can run as many replicas behind a non-sticky
// load balancer. Its get_weather tool asks for the caller's GitHub login through an elicitation
// before it answers: round 1 returns an input-required result whose requestState is sealed
// (AES-256-GCM, pkg/token) with the first key of the keyring, and the client's retry, which may land
// on any replica, opens it with whichever key sealed it.
//
// The keyring comes from a mounted Secret folder (--keyring-dir, holding keyring.json; followed as
// the kubelet updates it, no restart needed) or from the MRTR_KEYRING environment variable (read once).
// The server logs every keyring it loads by fingerprint and key ids, and shows the same on
// GET /debug/keyring and in the Mrtr-* headers of every /mcp response. GET /metrics serves the
// consumer metrics of the contract (docs/consumers.md, "Metrics": tokens sealed, tokens opened by
// result, the keyring in service, failed reloads, the acknowledgement's state) through
// pkg/metrics/prommetrics. With --keyring-secret it also
// acknowledges each keyring it loads on its own Pod (package ack), which the operator's reload mode
// waits for before each rotation step.
//
//	mcp-server --listen :8080 --keyring-dir /etc/mrtr --server https://weather.example.com/mcp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics/prommetrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
	"github.com/mrtr-dev/mrtr-operator/pkg/token/mcpstate"
)

// keyringFile is the data key of the keyring Secret, and so the file name in its mounted folder.
const keyringFile = "keyring.json"

// serviceAccountDir is where the kubelet mounts the pod's service account token and CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

type config struct {
	listen            string
	keyringDir        string
	keyringSecret     string
	serviceAccountDir string
	server            string
	replica           string
	tokenTTL          time.Duration
	grace             time.Duration
	codec             string
}

func main() {
	var c config
	flag.StringVar(&c.listen, "listen", ":8080", "address to serve HTTP on")
	flag.StringVar(&c.keyringDir, "keyring-dir", "",
		"folder of the mounted keyring Secret (holding "+keyringFile+"), followed for changes; if empty, $"+keyring.EnvVar+" is read once")
	flag.StringVar(&c.keyringSecret, "keyring-secret", os.Getenv("MRTR_KEYRING_SECRET"),
		"name of the mounted keyring Secret; when set (with --keyring-dir), the server acknowledges each keyring it loads on its own Pod "+
			"(package ack), which the operator's reload mode waits for (default $MRTR_KEYRING_SECRET)")
	flag.StringVar(&c.serviceAccountDir, "serviceaccount-dir", serviceAccountDir,
		"folder of the pod's service account token and ca.crt, used to acknowledge keyrings")
	flag.StringVar(&c.server, "server", "mrtr-example",
		"server identity bound into every request state; the same on every replica, different for every other server sharing the keyring")
	flag.StringVar(&c.replica, "replica", defaultReplica(), "name of this replica in logs and headers (default $POD_NAME or the host name)")
	flag.DurationVar(&c.tokenTTL, "token-ttl", 5*time.Minute,
		"lifetime of a request state; must not exceed the MRTRKeyring's tokenTTL, which the rotation waits for")
	flag.DurationVar(&c.grace, "shutdown-grace", 5*time.Second, "how long to let requests in flight finish on SIGTERM")
	flag.StringVar(&c.codec, "codec", "sealed",
		"sealed (token.Sealed: AES-256-GCM, bound to --server) or signed (token.Signed: Snodo's mrtr2 format, bound to the whole "+
			"params, which the TypeScript package (clients/typescript) seals too: replicas of both behind one Service share the state) "+
			"or rs2 (token.RS2: rmcp's format, bound as the Rust example server binds it, examples/rust-server: Go and Rust replicas "+
			"share the state)")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("replica", c.replica)
	if err := run(c, log); err != nil {
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}

func defaultReplica() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h
}

func run(c config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The reporter comes first: a pod that is told to acknowledge but cannot must not start, or the
	// operator would wait for it at every rotation.
	reg := prometheus.NewRegistry()
	rec, err := prommetrics.New(reg)
	if err != nil {
		return err
	}
	rep, err := reporter(c, log, rec)
	if err != nil {
		return err
	}
	src, err := keyringSource(ctx, c.keyringDir, log, rec)
	if err != nil {
		return err
	}
	// rep is set only with --keyring-dir, so src is the FileSource of that folder.
	if fs, ok := src.(*keyring.FileSource); ok && rep != nil {
		rep.Follow(fs)
		go func() { _ = rep.Run(ctx) }() // nil once ctx is done; failures go to OnError
	}
	var codec token.Codec
	var opts []mcpstate.Option
	switch c.codec {
	case "sealed":
		codec, err = token.NewSealed(src, c.server, token.SealedTTL(c.tokenTTL), token.SealedAnonymousTTL(c.tokenTTL),
			token.SealedMetrics(rec))
	case "signed":
		codec, err = token.NewSigned(src, token.SignedTTL(c.tokenTTL), token.SignedMetrics(rec))
		opts = append(opts, mcpstate.WholeParams(mcpstate.RecordedParams))
	case "rs2":
		var rs2 *token.RS2
		if rs2, err = token.NewRS2(src, token.RS2TTL(c.tokenTTL), token.RS2Metrics(rec)); err == nil {
			codec = rs2Codec{rs2: rs2, server: c.server}
		}
	default:
		err = fmt.Errorf("--codec %q: want sealed, signed or rs2", c.codec)
	}
	if err != nil {
		return err
	}
	a := &app{replica: c.replica, src: src, guard: newGuard(codec, log, opts...), log: log, ack: rep, wholeParams: len(opts) > 0,
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}

	srv := &http.Server{Addr: c.listen, Handler: a.handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("serving", "listen", c.listen, "server", c.server, "tokenTTL", c.tokenTTL)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), c.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// reporter returns the Reporter that acknowledges the keyrings loaded from --keyring-dir, or nil if
// --keyring-secret or --keyring-dir is not set. The pod's name and namespace and the API server come
// from the environment (the downward API and the kubelet).
func reporter(c config, log *slog.Logger, rec metrics.Recorder) (*ack.Reporter, error) {
	if c.keyringSecret == "" {
		return nil, nil
	}
	if c.keyringDir == "" {
		// A keyring read once from the environment is never rotated in place: nothing to acknowledge.
		log.Warn("--keyring-secret has no effect without --keyring-dir", "keyringSecret", c.keyringSecret)
		return nil, nil
	}
	r, err := ack.New(ack.Config{
		Secret:            c.keyringSecret,
		ServiceAccountDir: c.serviceAccountDir,
		Metrics:           rec,
		OnError: func(err error) {
			log.Warn("keyring not acknowledged yet, retrying", "secret", c.keyringSecret, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("--keyring-secret=%s: %w", c.keyringSecret, err)
	}
	return r, nil
}

// keyringSource returns the keyring from dir, followed until ctx is done, or else from the environment.
// It fails if there is no valid keyring: a server must not start without keys.
func keyringSource(ctx context.Context, dir string, log *slog.Logger, rec metrics.Recorder) (keyring.Source, error) {
	if dir == "" {
		r, err := keyring.FromEnv()
		if errors.Is(err, keyring.ErrEnvUnset) {
			return nil, fmt.Errorf("no keyring: set --keyring-dir or $%s", keyring.EnvVar)
		}
		if err != nil {
			return nil, err
		}
		logKeyring(log, "keyring loaded", "env", r)
		rec.KeyringInService(r.Fingerprint())
		return keyring.Static(r), nil
	}
	path := filepath.Join(dir, keyringFile)
	fs, err := keyring.NewFileSource(path, keyring.WithMetrics(rec), keyring.WithErrorHandler(func(err error) {
		log.Warn("keyring reload failed, keeping the last good keyring", "err", err)
	}))
	if err != nil {
		return nil, err
	}
	logKeyring(log, "keyring loaded", path, fs.Keyring())
	fs.OnChange(func(r *keyring.Keyring) { logKeyring(log, "keyring changed", path, r) })
	go func() {
		if err := fs.Start(ctx); err != nil {
			log.Error("cannot follow the keyring file; serving the keyring loaded at start", "err", err)
		}
	}()
	return fs, nil
}

func logKeyring(log *slog.Logger, msg, from string, r *keyring.Keyring) {
	log.Info(msg, "from", from, "fingerprint", r.Fingerprint(), "keyIds", r.IDs(), "sealKey", r.Primary().ID())
}
