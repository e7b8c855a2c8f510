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

package leaderguard

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mrtr-dev/mrtr-operator/internal/testenv"
	"github.com/mrtr-dev/mrtr-operator/internal/testenv/testsuite"
)

// The guard is tested against a real kube-apiserver and etcd (envtest): a real client-go leader
// elector renews a real Lease through the guard's lock, and the guarded client's writes either
// reach the API server or do not, as the server's own copy shows.

var (
	ctx       context.Context
	cfg       *rest.Config
	k8sClient client.Client
)

func TestLeaderGuard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Leader Guard Suite")
}

var _ = BeforeSuite(func() {
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	env := testsuite.Start(ctx, testenv.Options{})
	cfg, k8sClient = env.Config, env.Client
})
