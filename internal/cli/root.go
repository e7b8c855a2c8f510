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

// Package cli is kubectl mrtr, the kubectl plugin for MRTRKeyrings: status shows where a rotation
// is and what it waits for, rotate, suspend, resume and revoke act on a keyring the way the API
// defines (one merge patch each), inspect reads a request-state token offline, and member kubeconfig
// prints the hub's kubeconfig Secret for a member cluster of a ClusterMRTRKeyring.
//
// Every command is a file of its own that builds a *cobra.Command from the shared env (the
// kubeconfig flags, the output streams, the clock); NewRootCommand lists them.
package cli

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options are what the plugin takes from its process. The zero value of each field but Streams
// is the real thing.
type Options struct {
	Streams genericiooptions.IOStreams
	// Now is the clock that ages and deadlines are measured against; time.Now when nil.
	Now func() time.Time
	// Client, when set, is used instead of one built from the kubeconfig flags (for tests).
	Client client.Client
}

// commands are the plugin's subcommands, each built from the shared env.
var commands = []func(*env) *cobra.Command{
	newStatusCommand,
	newRotateCommand,
	newSuspendCommand,
	newResumeCommand,
	newRevokeCommand,
	newInspectCommand,
	newMemberCommand,
}

// NewRootCommand returns the kubectl mrtr command with its subcommands and kubectl's connection
// flags (--kubeconfig, --context, -n/--namespace, ...).
func NewRootCommand(o Options) *cobra.Command {
	e := &env{
		flags:   genericclioptions.NewConfigFlags(true),
		streams: o.Streams,
		now:     o.Now,
		client:  o.Client,
	}
	if e.now == nil {
		e.now = time.Now
	}
	root := &cobra.Command{
		Use: "mrtr",
		// kubectl runs the binary kubectl-mrtr as "kubectl mrtr": help and usage say so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mrtr"},
		Short:       "See and act on MRTRKeyrings and ClusterMRTRKeyrings: rotation status, rotate, suspend, resume, revoke, inspect tokens",
		Long: "kubectl mrtr shows where each MRTRKeyring's (and ClusterMRTRKeyring's: cmkr/NAME) key rotation is and what it\nwaits for, requests " +
			"rotations, suspends and resumes them, revokes keys, and reads MRTR request-state tokens offline.",
		SilenceUsage: true, // a failed request is not a usage mistake
	}
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	e.flags.AddFlags(root.PersistentFlags())
	for _, newCommand := range commands {
		root.AddCommand(newCommand(e))
	}
	return root
}
