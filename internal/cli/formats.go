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

// tokenFormat is a format of request-state token that inspect reads: pkg/token's reading of its
// text (name, shape, what the text says without keys), what a keyring given changes of that, and,
// when pkg/token implements the codec, how to check a token with the keys. inspect loops over
// tokenFormats; a new format is one more entry.
type tokenFormat struct {
	// Format is pkg/token's: Name (as Info.Codec and RejectError.Codec carry it), Is and Inspect.
	token.Format
	// sniff reports whether tok is written in this format; ring is the keyring given, nil without.
	// The first format of tokenFormats that says yes reads the token. Nil: Format.Is.
	sniff func(tok string, ring *keyring.Keyring) bool
	// describe is the Codec line of what Inspect read.
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
	// hints override checkHints for this format's checks.
	hints map[token.Check]string
	// boundData: the codec binds opaque associated data (--associated-data), not a request, so
	// --method and the other request flags mean nothing to it.
	boundData bool
	// zeroIssued and zeroExpires are the time lines of a token whose text has no such time,
	// when the format says why ("-" when empty).
	zeroIssued, zeroExpires string
}

// explainFunc runs a codec's checks on a token for a request (the codecs' Explain).
type explainFunc func(token.Binding, string) (token.Info, error)

// tokenFormats are the formats inspect reads, in the order it tries them: pkg/token's (see
// token.Formats: the python-sdk's comes before Sealed, whose shape its "v1." prefix also has).
var tokenFormats = []tokenFormat{signedFormat, rs2Format, pythonSDKFormat, sealedFormat}

// formatOf is the format that reads tok: the first whose sniff says yes, else noFormat (which
// says that no format reads the text, and does not pretend to be one).
func formatOf(tok string, ring *keyring.Keyring) tokenFormat {
	for _, f := range tokenFormats {
		if f.sniff != nil && f.sniff(tok, ring) || f.sniff == nil && f.Is(tok) {
			return f
		}
	}
	return noFormat
}

// formatNamed is the format of name, and whether there is one.
func formatNamed(name string) (tokenFormat, bool) {
	for _, f := range tokenFormats {
		if f.Name == name {
			return f, true
		}
	}
	return tokenFormat{}, false
}

// codec is pkg/token's Format of name, one of token.Formats.
func codec(name string) token.Format {
	for _, f := range token.Formats() {
		if f.Name == name {
			return f
		}
	}
	panic("pkg/token reads no format " + name)
}

// noFormat is what inspect reads of a text that has no format's shape: token.Inspect's rejection.
var noFormat = tokenFormat{
	Format: token.Format{Name: "no format", Inspect: token.Inspect},
	describe: func(token.Info) string {
		return "none: the text has the shape of no token format (Signed: mrtr1. or mrtr2.; rs2: rs2. and three parts; python-sdk: v1.; Sealed: a key id and '.')"
	},
}

// sameID: the format's key ids are the keyring's own.
func sameID(kid string, ring *keyring.Keyring) (string, bool) {
	_, ok := ring.Lookup(kid)
	return kid, ok
}

// signedFormat is pkg/token's Signed codec, Snodo's HMAC format: "mrtr1." or "mrtr2." and more than
// one '.'.
var signedFormat = tokenFormat{
	Format: codec(token.CodecSigned),
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

// rs2Format is pkg/token's RS2 codec, rmcp's keyed request-state format: "rs2." and the base64url
// of the kid, the expiry and payload, and the tag. Its body is signed, not encrypted: inspect reads
// the expiry without keys (and never prints the payload). It binds associated data that the server
// chose, not a request.
var rs2Format = tokenFormat{
	Format: codec(token.CodecRS2),
	describe: func(info token.Info) string {
		return fmt.Sprintf("rs2 (HMAC-SHA256, rmcp's RequestStateCodec with a keyring), format version %d", info.Version)
	},
	open: func(o *inspectOptions, ring *keyring.Keyring, now time.Time) (explainFunc, error) {
		c, err := token.NewRS2(keyring.Static(ring), token.RS2TTL(o.ttl), token.RS2ClockSkew(o.clockSkew),
			token.RS2Clock(func() time.Time { return now }))
		if err != nil {
			return nil, flagError(err)
		}
		ad := []byte(o.associatedData)
		return func(_ token.Binding, tok string) (token.Info, error) { return c.Explain(tok, ad) }, nil
	},
	keyIn: sameID,
	hints: map[token.Check]string{
		token.CheckMAC:      "; check --associated-data (the bytes the server bound), or the keyring's key of that id is not the one that sealed it",
		token.CheckLifetime: "; the keyring's consumers seal every token with an expiry within --ttl (and --clock-skew)",
	},
	boundData:   true,
	zeroIssued:  "none: an rs2 token carries no issue time",
	zeroExpires: "none: the token never expires",
}

// sealedFormat is pkg/token's Sealed codec: "<key id>." and the base64url of the mrtr-sealed-v1
// layout.
var sealedFormat = tokenFormat{
	Format: codec(token.CodecSealed),
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

// pythonSDKFormat reads the python-sdk's tokens (token.CodecPythonSDK), which only the python-sdk
// opens. The kid is no key id of the keyring but names one of its keys all the same
// (keyring.Key.PythonKid, status.keys[].pythonKid). A Sealed token sealed with a key named "v1" has
// the same text: given a keyring that holds a key v1, inspect reads the token as Sealed.
var pythonSDKFormat = tokenFormat{
	Format: codec(token.CodecPythonSDK),
	sniff: func(tok string, ring *keyring.Keyring) bool {
		if !codec(token.CodecPythonSDK).Is(tok) {
			return false
		}
		if ring == nil {
			return true
		}
		_, v1 := ring.Lookup(strings.TrimSuffix(keyring.PythonTokenPrefix, "."))
		return !v1
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
