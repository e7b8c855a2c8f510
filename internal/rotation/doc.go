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

// Package rotation is the keyring phase machine, as one pure function: Step takes everything the
// reconciler observed of an MRTRKeyring or a ClusterMRTRKeyring (the policy and last status, the
// Secret, its places and their copies, the target workloads and their pods, fresh candidate keys
// and an explicit now) and returns what to do (the keyring to write, the copies to write, the
// stamps, nudges and evictions, the new status, the events, when to look again). It makes no API
// calls and reads no clock, so every rule is table-tested here, and the shells in
// internal/controller decide nothing.
//
// The story, the invariant and the phases are told once, in docs/how-it-works.md. Step is three
// stages, each a function of values, none reading what a later one sets; a rule's file follows
// from its stage and its concern:
//
//   - observe: the facts of the Input, derived once (observe.go; ackproof.go, the acceptance rule
//     for acknowledgements; places.go, whose copy a place's Secret is and what it holds).
//   - decide: the move and everything it implies (decide.go, the phases and their exit checks;
//     schedule.go, when a rotation is due and the windows; windows.go, the windows' calendar;
//     keys.go, key roles, new keys and TTL waits; revoke.go; evict.go, the overdue pods;
//     stampfight.go; progress.go, how far the keyring reached and the stalls; places.go, the
//     copies to write and the places to gate; verdict.go, what an exit check waits for).
//   - describe: the Decision and the status rendered from the facts and the outcome (describe.go;
//     places.go's namespaces status and PartiallyReady).
//
// wording.go (how things are named in messages) and timing.go (the times a phase counts from)
// serve every stage; input.go is the contract with the shells; step.go composes the stages.
package rotation
