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
