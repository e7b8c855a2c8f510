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

package rotation

// Step decides one reconcile pass. It is pure: same Input, same Decision. It makes at most one
// phase transition, and at most one Secret write, per pass; the write or the stamps it causes wake
// the next pass through the watches, and timed steps through Decision.RequeueAfter.
//
// It runs in three stages, each a function of values: observe derives every fact of the Input
// once; decide makes the phase machine's move from the facts alone, and says what is stalled;
// describe renders the status, the conditions and what the rotation waits for from the move and
// its verdicts. No stage reads what a later one sets.
func Step(in Input) Decision {
	f := observe(in)
	return describe(f, decide(f))
}
