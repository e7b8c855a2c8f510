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

// Package register stands in, at build time only (go build -overlay, hack/build-external-secrets.sh),
// for the External Secrets Operator's pkg/provider/register, which imports every provider and with
// them every cloud SDK. The end-to-end suite's stores use the fake provider alone: registering it
// alone builds 898 packages of 87 modules instead of 2260 of 334.
package register

import (
	_ "github.com/external-secrets/external-secrets/pkg/provider/fake"
)
