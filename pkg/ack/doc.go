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

// Package ack lets a pod acknowledge the keyring it has loaded, so that the mrtr-operator knows when
// every pod has caught up with a rotation.
//
// # What it publishes
//
// The operator rotates a keyring Secret (type mrtr.dev/keyring, data key keyring.json) in phases:
// first a new key is accepted everywhere, then it seals, then the old one is dropped. Moving on to
// the next phase is only safe once every pod that mounts the Secret serves the current phase's
// keyring: a pod still on the previous one would seal tokens that the others can no longer open, or
// refuse tokens they already seal. The kubelet updates a mounted Secret after a delay of its own, and
// a server hot-reloads it (keyring.FileSource) later still, so the operator cannot infer what a pod
// has loaded. Rather than restart every pod at each phase, it asks: each pod publishes, on its own
// Pod object, the fingerprint of the keyring it has loaded, every time it loads one:
//
//	metadata:
//	  annotations:
//	    loaded.mrtr.dev/<secret>: <fingerprint>
//
// where the key is AnnotationKey(secret) and the value is keyring.Keyring.Fingerprint, a short hash
// that reveals nothing of a key and so is safe in an annotation. The operator gates each phase on
// every pod's annotation naming the fingerprint of that phase's keyring.
//
// A Reporter does this with nothing but the standard library: MCP servers must not pull in the
// Kubernetes client libraries. It sends one JSON merge patch of the Pod per keyring, authenticated
// with the pod's service account token (read again for every request, since the kubelet rotates
// bound tokens) over TLS verified against the service account's CA. Report never blocks and Run
// retries failures with backoff in the background, so serving never waits for the API server:
// acknowledging late only delays a rotation, never a request.
//
//	r, err := ack.New(ack.Config{Secret: "weather", OnError: func(err error) { log.Warn("ack", "err", err) }})
//	if err != nil {
//		return err // misconfigured: say so at start, not at the first rotation
//	}
//	r.Follow(src) // src is the *keyring.FileSource of the mounted Secret
//	go r.Run(ctx)
//
// # RBAC
//
// The pod's ServiceAccount needs the ClusterRole mrtr-keyring-consumer, which the operator installs.
// It grants patch on pods (nothing else: a Reporter never reads its Pod), and the marker verb
// acknowledge on mrtrkeyrings.mrtr.dev, which no API request uses. RBAC cannot narrow patch to one
// pod or one field, so the ValidatingAdmissionPolicy mrtr-keyring-acknowledgements does: it admits a
// write of a loaded.mrtr.dev/ annotation only from the Pod itself (with the service account token the
// kubelet mounts, bound to that Pod), and lets a holder of the marker verb change nothing but its own
// Pod's acknowledgements. Each patch names FieldManager as its field manager, and the operator
// takes an acknowledgement as proof only when the Pod's managedFields say that manager wrote it
// through the Pod itself, after the Secret write it acknowledges. Bind the role with a RoleBinding in the workload's namespace, never a
// ClusterRoleBinding:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: RoleBinding
//	metadata: {name: weather-keyring-consumer, namespace: mcp}
//	roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mrtr-keyring-consumer}
//	subjects: [{kind: ServiceAccount, name: weather, namespace: mcp}]
//
// Until the binding exists the API server answers 403; a Reporter reports that to Config.OnError and
// keeps retrying, so granting it later needs no restart.
//
// # Environment
//
// A Reporter names its Pod from the downward API, and finds the API server and its credentials the
// way every in-cluster client does: $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, which the
// kubelet sets in every container, and the token and ca.crt of the mounted service account
// (automountServiceAccountToken must not be false). The container needs:
//
//	env:
//	  - name: POD_NAME
//	    valueFrom: {fieldRef: {fieldPath: metadata.name}}
//	  - name: POD_NAMESPACE
//	    valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
//
// Without $POD_NAMESPACE the namespace file of the service account is read instead. Every one of
// these can be set in Config instead, and $MRTR_SERVICE_ACCOUNT_DIR (ServiceAccountDirEnv) replaces
// the service account directory, as the conformance check of docs/consumers.md does.
package ack
