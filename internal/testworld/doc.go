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

// Package testworld is the one simulated cluster the tests and tools run the operator against.
// envtest (a kube-apiserver and etcd) runs no kube-controller-manager, no kubelet and no MCP
// server, so something has to do what those would: roll a workload's new revision out to its pods,
// or stall it; create the consumer pods that mount a keyring Secret; and, as a server that reloaded
// its keyring does in Reload delivery, acknowledge it on the pod.
//
// Each of those is one function here, for tests that decide when and how far a rollout gets
// (RollOut, Stall, Acknowledge), and Player runs them all on its own for tools that only need a
// healthy cluster that keeps up (hack/benchscale). Both write what the real components write,
// through the same API: a workload's status as its controller computes it (the operator reads
// nothing else of a rollout), and an acknowledgement as pkg/ack's Reporter sends it (ack.Patch,
// under ack.FieldManager, on the Pod itself and not through pods/status), so that the operator's
// checks of who wrote an acknowledgement accept it for the reason they accept a real one.
//
// The e2e suite runs real server processes on a real or kwok node instead (test/e2e/harness); they
// acknowledge through pkg/ack themselves. Production code must not import this package (a depguard
// rule in .golangci.yml).
package testworld
