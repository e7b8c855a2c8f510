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

// Command goconsumer is the smallest keyring consumer on pkg/keyring and pkg/ack, speaking the
// conformance check's probe protocol (docs/consumers.md, "Conformance"): it follows
// $MRTR_KEYRING_DIR/keyring.json with a FileSource, acknowledges every keyring it loads with an
// ack.Reporter, prints "loaded <fingerprint> <token-ttl|none>" for each one before it is
// acknowledged, answers "serving?" on stdin with "serving <fingerprint> <token-ttl|none>" and
// "seal?" with "sealed <token>" (a token.Signed over the FileSource, lifetime 60 s: at most every
// token-ttl the check mounts), and writes every error to stderr. A Go MCP server does the same with
// its codec in place of the probe.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "goconsumer:", err)
		os.Exit(1)
	}
}

// out serialises the probe lines: a listener and the stdin reader both write them.
var out sync.Mutex

func say(word string, k *keyring.Keyring) {
	ttl := "none"
	if d := k.MaxTokenTTL(); d > 0 {
		ttl = strconv.FormatInt(int64(d/time.Second), 10)
	}
	out.Lock()
	defer out.Unlock()
	fmt.Printf("%s %s %s\n", word, k.Fingerprint(), ttl)
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logErr := func(err error) { fmt.Fprintln(os.Stderr, err) }
	// The consumer metrics (docs/consumers.md, "Metrics"), answered to "metrics?".
	rec := &metrics.Text{}
	src, err := keyring.NewFileSource(filepath.Join(os.Getenv("MRTR_KEYRING_DIR"), keyring.SecretDataKey),
		keyring.WithErrorHandler(logErr), keyring.WithMetrics(rec))
	if err != nil {
		return err // no valid keyring: do not start
	}
	rep, err := ack.New(ack.Config{Secret: os.Getenv("MRTR_SECRET_NAME"), OnError: logErr, Metrics: rec})
	if err != nil {
		return err
	}
	// Listeners run in registration order: "loaded" is printed before Follow's listener reports it.
	src.OnChange(func(k *keyring.Keyring) { say("loaded", k) })
	say("loaded", src.Keyring())
	rep.Follow(src)
	// The codec reads the source's keyring on every seal: keys[0] of the keyring in service.
	codec, err := token.NewSigned(src, token.SignedTTL(60*time.Second), token.SignedMetrics(rec))
	if err != nil {
		return err
	}

	go func() {
		sc := bufio.NewScanner(os.Stdin)
		probe := token.Binding{Method: "tools/call", Params: []byte(`{"name":"conformance"}`), Principal: token.Anonymous}
		for sc.Scan() {
			if tok, ok := strings.CutPrefix(sc.Text(), "open? "); ok {
				result := "ok"
				if _, err := codec.Open(probe, tok); err != nil {
					result = "rejected"
				}
				out.Lock()
				fmt.Printf("opened %s\n", result)
				out.Unlock()
				continue
			}
			switch sc.Text() {
			case "metrics?":
				var b strings.Builder
				_, _ = rec.WriteTo(&b)
				out.Lock()
				for l := range strings.Lines(b.String()) {
					fmt.Printf("metric %s", l)
				}
				fmt.Println("metrics end")
				out.Unlock()
			case "serving?":
				say("serving", src.Keyring())
			case "seal?":
				tok, err := codec.Seal(probe, []byte(`{"probe":true}`))
				if err != nil {
					logErr(err)
					continue
				}
				out.Lock()
				fmt.Printf("sealed %s\n", tok)
				out.Unlock()
			}
		}
	}()
	errs := make(chan error, 2)
	go func() { errs <- src.Start(ctx) }()
	go func() { errs <- rep.Run(ctx) }()
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}
