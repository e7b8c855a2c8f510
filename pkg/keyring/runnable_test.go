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

package keyring_test

import (
	"context"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The method sets of controller-runtime's manager.Runnable and manager.LeaderElectionRunnable,
// mirrored rather than imported: the package and its tests stay free of controller-runtime, which
// MCP servers importing pkg/keyring do not need.
type (
	runnable               interface{ Start(context.Context) error }
	leaderElectionRunnable interface{ NeedLeaderElection() bool }
)

// A FileSource can be handed to mgr.Add and runs on every replica.
var (
	_ runnable               = (*keyring.FileSource)(nil)
	_ leaderElectionRunnable = (*keyring.FileSource)(nil)
	_ keyring.Source         = (*keyring.FileSource)(nil)
	_ keyring.Source         = keyring.StaticSource{}
)
