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

// Command kubectl-mrtr is the kubectl plugin for MRTRKeyrings (kubectl mrtr once it is on PATH):
// see internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"

	// All client-go auth plugins (OIDC, exec, ...), so that any kubeconfig kubectl accepts works.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mrtr-dev/mrtr-operator/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := cli.NewRootCommand(cli.Options{Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}})
	if err := root.ExecuteContext(ctx); err != nil {
		os.Exit(1) // cobra has printed the error
	}
}
