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

// Command conformance checks that a keyring consumer, in any language, follows the contract of
// docs/consumers.md. It drives a Secret volume the way the kubelet does, answers as the Kubernetes
// API server, runs the consumer with the environment the contract names, and prints one line per
// check and a summary; it exits 1 if any check failed.
//
//	go run ./test/conformance -- python test/conformance/consumers/python/consumer.py
//	go run ./test/conformance -lost-answer -v -- go run ./test/conformance/goconsumer
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mrtr-dev/mrtr-operator/test/conformance/check"
)

func main() {
	lost := flag.Bool("lost-answer", false,
		"also check that an acknowledgement whose answer was lost is sent again when the keyring returns to the previous one")
	withMetrics := flag.Bool("metrics", false,
		"add the check reports-metrics: the consumer answers \"metrics?\" with its metrics and \"open? <token>\" with \"opened ok|rejected\"")
	timeout := flag.Duration("timeout", 15*time.Second, "how long to wait for the consumer to react to each change")
	verbose := flag.Bool("v", false, "echo the consumer's output")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./test/conformance [-lost-answer] [-timeout d] [-v] -- <consumer command...>")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	opts := check.Options{Command: flag.Args(), LostAnswer: *lost, Metrics: *withMetrics, Timeout: *timeout, Out: os.Stdout}
	if *verbose {
		opts.Echo = os.Stderr
	}
	rep, err := check.Run(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	failed := rep.Failed()
	fmt.Printf("%d passed, %d failed\n", rep.Passed(), len(failed))
	if len(failed) > 0 {
		os.Exit(1)
	}
}
