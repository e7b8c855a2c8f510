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

// Package checks tests the repository's check scripts through their real runs: hack/check-tracked-files.sh
// (make lint: no executable and no file over 1 MB outside testdata/ tracked by git) against git
// repositories made for each case, and hack/check-prereqs.sh (make test's first step) on a PATH made
// of the machine's own python3, node and npm, less the one a case takes away. It holds no code of
// its own; make test runs it with the root module's packages.
package checks
