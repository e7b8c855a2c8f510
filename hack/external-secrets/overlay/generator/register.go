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
// for the External Secrets Operator's pkg/generator/register, which imports every generator (ECR,
// GCR, ACR, Vault and more, each with its cloud SDK). The end-to-end suite uses no generator, so
// none is registered.
package register
