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

// Package metrics is what a consumer of the keyring reports about its work: the tokens it seals,
// the tokens it opens and why it rejects them, the keyring in service, its failed reloads and the
// state of its acknowledgement. It names these events and declares the Recorder that receives them,
// and depends on nothing, so that the library (pkg/) keeps no dependency: an adapter of its own
// module (pkg/metrics/prommetrics) records them as Prometheus metrics, and any other Recorder may
// too.
//
// The contract (docs/consumers.md, "Metrics") gives the metric names and labels that every consumer,
// in every language, exposes:
//
//	mrtr_consumer_tokens_sealed_total{format}
//	mrtr_consumer_tokens_opened_total{format, result}
//	mrtr_consumer_keyring_info{fingerprint}
//	mrtr_consumer_reload_failures_total
//	mrtr_consumer_ack_state{state}
//
// The codecs of pkg/token report to a Recorder given by their Metrics option
// (token.SignedMetrics, token.SealedMetrics, token.RS2Metrics), a keyring.FileSource to the one of
// keyring.WithMetrics, and an ack.Reporter to Config.Metrics. None of them passes key bytes: the
// fingerprint names a keyring and reveals nothing of its keys.
package metrics

// The metric names of the contract, for adapters and for tests that read an exposition.
const (
	TokensSealedTotal   = "mrtr_consumer_tokens_sealed_total"
	TokensOpenedTotal   = "mrtr_consumer_tokens_opened_total"
	KeyringInfo         = "mrtr_consumer_keyring_info"
	ReloadFailuresTotal = "mrtr_consumer_reload_failures_total"
	AckStateGauge       = "mrtr_consumer_ack_state"
)

// The label names of the contract.
const (
	LabelFormat      = "format"
	LabelResult      = "result"
	LabelFingerprint = "fingerprint"
	LabelState       = "state"
)

// Result is how an open of a token ended: the value of the result label.
type Result string

// The results. Every rejection is exactly one of them; a codec that cannot tell two apart reports
// the one its check names (see each constant).
const (
	// OK: the token opened.
	OK Result = "ok"
	// Expired: the token is authentic but outside its lifetime: expired, issued in the future
	// (beyond the clock skew), or living longer than the opener's TTL allows.
	Expired Result = "expired"
	// UnknownKey: no key of the keyring in service has the token's key id. During a rotation this is
	// the one rejection that says a replica does not hold the keyring its peers seal with.
	UnknownKey Result = "unknown_key"
	// BadMAC: the MAC or authentication tag does not verify: the token was altered, sealed with
	// another key of that id, or, for the formats whose tag covers the binding (rs2's associated
	// data, Sealed's method and server), sealed for another binding.
	BadMAC Result = "bad_mac"
	// BindingMismatch: an authentic token sealed for another request or principal, checked after
	// the MAC (Signed, Sealed's params and principal), or params no token can be sealed for.
	// python-sdk checks its request binding, audience and principal in its own boundary, after the
	// codec opened the token: Python counts it with mrtr_keyring.mcp.meter_boundary around that
	// boundary (docs/consumers.md). rs2, whose tag covers the binding, never reports it: BadMAC.
	BindingMismatch Result = "binding_mismatch"
	// Malformed: the text is not laid out as the format writes it, or its authentic payload is not.
	Malformed Result = "malformed"
	// TooLarge: the token is longer than the codec reads; nothing else of it was looked at.
	TooLarge Result = "too_large"
)

// Results are all the results, OK first: an adapter creates every series of a format at 0 with
// them, so that the first rejection is an increase that rate() and increase() see.
func Results() []Result {
	return []Result{OK, Expired, UnknownKey, BadMAC, BindingMismatch, Malformed, TooLarge}
}

// AckState is the state of the acknowledgement: the value of the state label.
type AckState string

// The acknowledgement states.
const (
	// AckPending: a keyring is in service that the API server has not yet accepted, and no attempt
	// to acknowledge it has failed yet.
	AckPending AckState = "pending"
	// AckAcknowledged: the API server accepted the keyring in service.
	AckAcknowledged AckState = "acknowledged"
	// AckRetrying: the last attempt failed, and the reporter is backing off to try again.
	AckRetrying AckState = "retrying"
)

// AckStates are all the acknowledgement states: an adapter exposes one series for each, 1 for the
// current state and 0 for the others.
func AckStates() []AckState { return []AckState{AckPending, AckAcknowledged, AckRetrying} }

// Recorder receives what a consumer does. Its methods are called on the serving path (every seal
// and open), so they must be safe for concurrent use, return quickly and never block.
type Recorder interface {
	// TokenSealed records one token sealed in format (a codec name: token.CodecSigned,
	// token.CodecSealed, token.CodecRS2, or token.CodecPythonSDK in Python).
	TokenSealed(format string)
	// TokenOpened records one open of a token in format, and how it ended.
	TokenOpened(format string, result Result)
	// KeyringInService records the fingerprint of the keyring put in service (the first one too).
	KeyringInService(fingerprint string)
	// ReloadFailed records one reload that kept the last good keyring because the snapshot could
	// not be read or was invalid.
	ReloadFailed()
	// AckStateChanged records the acknowledgement's new state.
	AckStateChanged(state AckState)
}

// Nop is a Recorder that records nothing: the default wherever none is given.
type Nop struct{}

// TokenSealed does nothing.
func (Nop) TokenSealed(string) {}

// TokenOpened does nothing.
func (Nop) TokenOpened(string, Result) {}

// KeyringInService does nothing.
func (Nop) KeyringInService(string) {}

// ReloadFailed does nothing.
func (Nop) ReloadFailed() {}

// AckStateChanged does nothing.
func (Nop) AckStateChanged(AckState) {}

// OrNop returns r, or Nop when r is nil: a nil Recorder records nothing rather than crash.
func OrNop(r Recorder) Recorder {
	if r == nil {
		return Nop{}
	}
	return r
}
