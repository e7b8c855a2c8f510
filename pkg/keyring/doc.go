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

// Package keyring is the shared keyring that every replica of an MCP server seals and opens MRTR
// request state with: an ordered list of 1 to 8 keys where the first one seals and every one opens.
// The mrtr-operator rotates it in a Secret of type mrtr.dev/keyring whose data key keyring.json
// holds
//
//	{"keys":[{"id":"<id>","secret":"<standard base64 of the key bytes>"}, ...]}
//
// and whose data key token-ttl (TokenTTLDataKey) holds the longest lifetime of the tokens the
// servers may seal, in whole seconds: the tokenTTL the rotation waits out before it drops a key. A
// FileSource reads it beside keyring.json (Keyring.MaxTokenTTL), and the token codecs refuse to seal
// longer tokens. It is a file of its own so that keyring.json stays what older readers parse, and
// it is optional: without it nothing is declared and nothing is checked. The format is versioned by
// addition: a later operator may add data keys; a reader ignores those it does not know.
//
// # Getting the keyring into a workload
//
// Mount the Secret as a volume (the whole volume, not a subPath) and follow it with a FileSource,
// so that a rotation reaches the server without a restart:
//
//	src, err := keyring.NewFileSource("/etc/mrtr/keyring.json") // fails fast: no keys, no start
//	if err != nil {
//		return err
//	}
//	go src.Start(ctx) // or mgr.Add(src) in a controller-runtime manager: every replica runs it
//	sealer, err := token.NewSealed(src, server, opts...) // reads src.Keyring() per call
//
// or read it once from the MRTR_KEYRING environment variable (the operator restarts the pods
// instead):
//
//	r, err := keyring.FromEnv()
//	src := keyring.Static(r)
//
// A FileSource watches the file's directory, because the kubelet updates a Secret volume by
// swapping a ..data symlink; it waits for a burst of events to settle (WithDebounce), re-reads
// every 10 s anyway (WithResyncInterval), and puts a new keyring in service only once two reads in
// a row returned it and it parsed and validated in full; keyring.json and token-ttl come from one
// snapshot of the volume. A read that races the kubelet's swap and
// finds no file is retried, not reported. Outside Kubernetes, replace the file by renaming a new one
// over it: a rewrite in place can pass through a valid mix of old and new keys (see FileSource). If
// an update is invalid it keeps serving the last good keyring and reports the error (LastError,
// Stats, WithErrorHandler). OnChange tells when a different keyring is in service.
//
// # Keyrings are valid and immutable
//
// The only ways to get a Keyring (New, Parse, a Source) validate it: ids are 1 to 32 characters of
// A-Za-z0-9_-, unique within the keyring; secrets are at least 32 bytes. Parse is strict about the
// document too: unknown or duplicate fields, null, wrong types, non-canonical base64 and trailing
// data are errors that name the entry (keys[1] (id "b")), never its secret.
//
// # Key bytes stay out of output
//
// Key bytes leave the package only through Key.Secret (a copy, for the token codecs) and Marshal
// (for the Secret). Every other way of showing a Key or a Keyring prints ids, lengths and the
// Fingerprint: String, GoString and Format for every fmt verb, MarshalJSON, MarshalLog
// (logr.Marshaler) and LogValue (slog.LogValuer). The Fingerprint is a short hash of the ids and
// bytes, safe in logs, status and annotations; the operator puts it in the pod-template annotation
// mrtr.dev/keyring-hash. A FileSource shows the same, with its path and counters, and never a hash
// of the file.
package keyring
