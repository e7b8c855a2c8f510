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

package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// tokenFormat is a format of request-state token that inspect reads: its name, how its text is
// recognised, what the text says without keys and, when pkg/token implements it, how to check it
// with the keys. inspect loops over tokenFormats; a new format is one more entry.
type tokenFormat struct {
	// name is the format's name, which Info.Codec and RejectError.Codec carry.
	name string
	// sniff reports whether tok is written in this format; ring is the keyring given, nil without.
	// The first format of tokenFormats that says yes reads the token.
	sniff func(tok string, ring *keyring.Keyring) bool
	// inspect reads what the text says without keys.
	inspect func(tok string) (token.Info, error)
	// describe is the Codec line of what inspect read.
	describe func(info token.Info) string
	// open is the codec's Explain over ring with the flags' options; nil for a format that only
	// its own SDK opens (inspect then reads its text only, and says so).
	open func(o *inspectOptions, ring *keyring.Keyring, now time.Time) (explainFunc, error)
	// keyIn names the key of ring that a token of key id kid names; nil when the format's key ids
	// are not the keyring's (inspect then shows the id as it is).
	keyIn func(kid string, ring *keyring.Keyring) (id string, ok bool)
	// noKeyID is the Key id line of a token whose text names no key ("-" when nil).
	noKeyID func(info token.Info) string
	// encryptedTimes: the token's times are in its ciphertext, so only a key reads them.
	encryptedTimes bool
	// bindsServer: the codec binds the protocol version and the server identity too.
	bindsServer bool
	// bindingHint names the flags to check when the binding check fails.
	bindingHint string
}

// explainFunc runs a codec's checks on a token for a request (the codecs' Explain).
type explainFunc func(token.Binding, string) (token.Info, error)

// tokenFormats are the formats inspect reads, in the order it tries them. The python-sdk's comes
// before Sealed: its "v1." prefix is also a valid key id, so the text of one reads as the other.
var tokenFormats = []tokenFormat{signedFormat, pythonSDKFormat, sealedFormat}

// formatOf is the format that reads tok: the first whose sniff says yes, Sealed otherwise (which
// then says what is wrong with the text).
func formatOf(tok string, ring *keyring.Keyring) tokenFormat {
	for _, f := range tokenFormats {
		if f.sniff(tok, ring) {
			return f
		}
	}
	return sealedFormat
}

// formatNamed is the format of name, and whether there is one.
func formatNamed(name string) (tokenFormat, bool) {
	for _, f := range tokenFormats {
		if f.name == name {
			return f, true
		}
	}
	return tokenFormat{}, false
}

// sameID: the format's key ids are the keyring's own.
func sameID(kid string, ring *keyring.Keyring) (string, bool) {
	_, ok := ring.Lookup(kid)
	return kid, ok
}

// signedFormat is pkg/token's Signed codec, Snodo's HMAC format: "mrtr1." or "mrtr2." and more than
// one '.'.
var signedFormat = tokenFormat{
	name: token.CodecSigned,
	sniff: func(tok string, _ *keyring.Keyring) bool {
		return (strings.HasPrefix(tok, "mrtr1.") || strings.HasPrefix(tok, "mrtr2.")) && strings.Count(tok, ".") > 1
	},
	inspect: token.Inspect,
	describe: func(info token.Info) string {
		return fmt.Sprintf("Signed (HMAC-SHA256, Snodo's wire format), format version %d (mrtr%d)", info.Version, info.Version)
	},
	open: func(o *inspectOptions, ring *keyring.Keyring, now time.Time) (explainFunc, error) {
		c, err := token.NewSigned(keyring.Static(ring), token.SignedTTL(o.ttl), token.SignedClock(func() time.Time { return now }))
		if err != nil {
			return nil, flagError(err)
		}
		return c.Explain, nil
	},
	keyIn: sameID,
	noKeyID: func(info token.Info) string {
		if info.Version == 1 {
			return "none (mrtr1: any key of the keyring may have sealed it)"
		}
		return "-"
	},
	bindingHint: "; check --method, --params and --principal",
}

// sealedFormat is pkg/token's Sealed codec: "<key id>." and the base64url of the mrtr-sealed-v1
// layout.
var sealedFormat = tokenFormat{
	name: token.CodecSealed,
	sniff: func(tok string, _ *keyring.Keyring) bool {
		kid, _, ok := strings.Cut(tok, ".")
		return ok && keyring.ValidID(kid)
	},
	inspect: token.Inspect,
	describe: func(info token.Info) string {
		return fmt.Sprintf("Sealed (AES-256-GCM), format version %d (mrtr-sealed-v%d)", info.Version, info.Version)
	},
	open: func(o *inspectOptions, ring *keyring.Keyring, now time.Time) (explainFunc, error) {
		if o.server == "" {
			return nil, errors.New("--server is required for a Sealed token: the codec binds the server identity (NewSealed's argument)")
		}
		opts := []token.SealedOption{token.SealedTTL(o.ttl), token.SealedClockSkew(o.clockSkew), token.SealedClock(func() time.Time { return now })}
		if o.anonymousTTL != 0 {
			opts = append(opts, token.SealedAnonymousTTL(o.anonymousTTL))
		}
		c, err := token.NewSealed(keyring.Static(ring), o.server, opts...)
		if err != nil {
			return nil, flagError(err)
		}
		return c.Explain, nil
	},
	keyIn:          sameID,
	encryptedTimes: true,
	bindsServer:    true,
	bindingHint:    "; check --params",
}

// pythonSDKFormat reads the python-sdk's tokens (PyPI mcp 2.3.0, mcp.server.request_state: "v1."
// and the base64url of a 4-byte kid derived from the key, a nonce and the AES-256-GCM ciphertext),
// which only the python-sdk opens: keyring.PythonTokenKid reads them. The kid is no key id of the
// keyring but names one of its keys all the same (keyring.Key.PythonKid, status.keys[].pythonKid).
// A Sealed token sealed with a key named "v1" has the same text: given a keyring that holds a key
// v1, inspect reads the token as Sealed.
var pythonSDKFormat = tokenFormat{
	name: "python-sdk",
	sniff: func(tok string, ring *keyring.Keyring) bool {
		body, ok := strings.CutPrefix(tok, keyring.PythonTokenPrefix)
		if !ok || strings.Contains(body, ".") {
			return false
		}
		if ring != nil {
			if _, ok := ring.Lookup(strings.TrimSuffix(keyring.PythonTokenPrefix, ".")); ok {
				return false
			}
		}
		return true
	},
	inspect: func(tok string) (token.Info, error) {
		info := token.Info{Codec: "python-sdk", Version: 1}
		if len(tok) > token.MaxSealedTokenBytes {
			return info, &token.RejectError{Codec: info.Codec, Check: token.CheckSize}
		}
		kid, ok := keyring.PythonTokenKid(tok)
		if !ok {
			return info, &token.RejectError{Codec: info.Codec, Check: token.CheckFormat}
		}
		info.KeyID = kid
		return info, nil
	},
	describe: func(info token.Info) string {
		return fmt.Sprintf("python-sdk (mcp.server.request_state, AES-256-GCM), format version %d (v1.), which only the python-sdk opens; "+
			"a Sealed token of a key named v1 reads the same (give a --keyring that holds v1 to read it as one)", info.Version)
	},
	keyIn: func(kid string, ring *keyring.Keyring) (string, bool) {
		for _, k := range ring.Keys() {
			if k.PythonKid() == kid {
				return k.ID(), true
			}
		}
		return "", false
	},
	encryptedTimes: true,
}
