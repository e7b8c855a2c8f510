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

package token

import (
	"strings"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// Format is a token format whose text this package reads: its name (Info.Codec), whether a text
// is written in it, and what the text says without keys. Inspect, and kubectl mrtr inspect, loop
// over Formats; a new format is one more entry, not one more branch.
type Format struct {
	// Name is the format's name, which Info.Codec and RejectError.Codec carry.
	Name string
	// Is reports whether tok is written in this format, by its shape alone (nothing is decoded).
	Is func(tok string) bool
	// Inspect reads what tok says without keys, as Inspect does once Is said yes.
	Inspect func(tok string) (Info, error)
}

// CodecPythonSDK names the tokens of the python-sdk's built-in codec (PyPI mcp,
// mcp.server.request_state): keyring.PythonTokenPrefix ("v1.") and the base64url of a kid derived
// from the key (keyring.Key.PythonKid), a nonce and the AES-256-GCM ciphertext. This package does
// not open them, only the python-sdk does; Inspect reads their kid.
const CodecPythonSDK = "python-sdk"

// Formats are the formats Inspect reads, in the order it tries them. The python-sdk's comes before
// Sealed: "v1" is a valid key id, so its text also has a Sealed token's shape, and taken for one it
// would name a key v1 that no keyring of the operator holds. (A Sealed token of a key named v1 reads
// as the python-sdk's without keys; the Sealed codec, which has them, opens it all the same.)
func Formats() []Format {
	return []Format{
		{Name: CodecSigned, Is: IsSigned, Inspect: inspectSigned},
		{Name: CodecRS2, Is: IsRS2, Inspect: inspectRS2},
		{Name: CodecPythonSDK, Is: isPythonSDK, Inspect: inspectPythonSDK},
		{Name: CodecSealed, Is: IsSealed, Inspect: inspectSealed},
	}
}

// IsSigned reports whether tok has the Signed codec's shape: "mrtr1." or "mrtr2." and more than one
// '.'. (A Sealed token has exactly one, so a Sealed key id "mrtr2" does not make its token Signed.)
func IsSigned(tok string) bool {
	return (strings.HasPrefix(tok, "mrtr1.") || strings.HasPrefix(tok, "mrtr2.")) && strings.Count(tok, ".") > 1
}

// IsSealed reports whether tok has the Sealed codec's shape: a valid key id, a '.', and a body
// without one. A python-sdk token has that shape too (see Formats).
func IsSealed(tok string) bool {
	kid, body, ok := strings.Cut(tok, ".")
	return ok && keyring.ValidID(kid) && !strings.Contains(body, ".")
}

// isPythonSDK: keyring.PythonTokenPrefix and one segment after it.
func isPythonSDK(tok string) bool {
	body, ok := strings.CutPrefix(tok, keyring.PythonTokenPrefix)
	return ok && !strings.Contains(body, ".")
}

// inspectPythonSDK reads a python-sdk token's kid (keyring.PythonTokenKid); its times are in the
// ciphertext.
func inspectPythonSDK(tok string) (Info, error) {
	info := Info{Codec: CodecPythonSDK, Version: 1}
	if len(tok) > MaxSealedTokenBytes { // the same layout as a Sealed token's, and as bounded
		return info, &RejectError{Codec: CodecPythonSDK, Check: CheckSize}
	}
	kid, ok := keyring.PythonTokenKid(tok)
	if !ok {
		return info, &RejectError{Codec: CodecPythonSDK, Check: CheckFormat}
	}
	info.KeyID = kid
	return info, nil
}
