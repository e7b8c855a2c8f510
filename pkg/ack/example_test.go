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

package ack_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

func ExampleAnnotationKey() {
	fmt.Println(ack.AnnotationKey("weather"))
	// Over 63 characters: cut and hashed.
	fmt.Println(ack.AnnotationKey("weather-keyring-of-the-production-cluster-in-europe-west4-and-north1"))
	// Output:
	// loaded.mrtr.dev/weather
	// loaded.mrtr.dev/weather-keyring-of-the-production-cluster-in-e-9e9190002525a62d
}

// A program that plays many pods writes their acknowledgements with a client of its own; the patch
// is a Reporter's.
func ExamplePatch() {
	fmt.Printf("PATCH /api/v1/namespaces/mcp/pods/weather-0?fieldManager=%s\n%s\n", ack.FieldManager, ack.Patch("weather", "0123456789abcdef"))
	// Output:
	// PATCH /api/v1/namespaces/mcp/pods/weather-0?fieldManager=mrtr-ack
	// {"metadata":{"annotations":{"loaded.mrtr.dev/weather":"0123456789abcdef"}}}
}

// A server that follows its mounted keyring acknowledges every keyring it loads. In the pod, POD_NAME
// and POD_NAMESPACE come from the downward API, the rest from the service account (see the package
// documentation).
func ExampleReporter_Follow() {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	src, err := keyring.NewFileSource("/etc/mrtr/" + keyring.SecretDataKey)
	if err != nil {
		log.Error("no keyring", "err", err)
		return
	}
	go func() { _ = src.Start(ctx) }()

	r, err := ack.New(ack.Config{
		Secret:  "weather",
		OnError: func(err error) { log.Warn("keyring not acknowledged yet", "err", err) },
	})
	if err != nil {
		log.Error("cannot acknowledge keyrings", "err", err) // misconfigured pod: fail at start
		return
	}
	r.Follow(src)
	go func() { _ = r.Run(ctx) }()
}
