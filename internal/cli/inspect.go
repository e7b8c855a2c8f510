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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	mrtrv1alpha1 "github.com/mrtr-dev/mrtr-operator/api/v1alpha1"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
	"github.com/mrtr-dev/mrtr-operator/pkg/token"
)

// inspectOptions are the flags of inspect: a keyring file, and the request the token came back
// with, which the codecs bind.
type inspectOptions struct {
	keyringFile                  string
	mrtrKeyring                  string // the MRTRKeyring whose status maps a python-sdk kid to its key
	method, params, principal    string
	protocolVersion, server      string
	associatedData               string // rs2's bound data
	ttl, anonymousTTL, clockSkew time.Duration
}

// requestFlags are the flags that only mean something with --keyring.
var requestFlags = []string{"method", "params", "principal", "protocol-version", "server", "associated-data", "ttl", "anonymous-ttl", "clock-skew"}

// errRejected is inspect's failure when the token does not open; its report says why.
var errRejected = errors.New("the token does not open")

// newInspectCommand reads a request-state token offline: what its text says without keys, and,
// given the keyring and the request, which of the codec's checks rejects it, or that it opens. It
// prints neither key bytes nor the token's state, nor anything of a Sealed token it did not decrypt.
func newInspectCommand(e *env) *cobra.Command {
	o := inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect TOKEN",
		Short: "Read an MRTR request-state token offline and say whether, and why not, it opens",
		Long: "inspect reads a request-state token without cluster access: its codec (pkg/token's Signed,\n" +
			"Snodo's HMAC format; RS2, rmcp's rs2; or Sealed, AES-256-GCM; or the python-sdk's, which only that SDK opens), format\n" +
			"version, key id and, where the text shows them (Signed, rs2), its times. Given the keyring file (the Secret's keyring.json) and the request the token\n" +
			"came back with, it runs the codec's checks and names the one that rejects the token, or says that\n" +
			"it opens. An rs2 token binds no request but the associated data its server chose: give it with\n" +
			"--associated-data. TOKEN - reads the token from standard input. It never prints key bytes or the state.\n\n" +
			"A python-sdk token (v1., mcp's built-in codec) carries no key id but a kid derived from the key:\n" +
			"with --mrtrkeyring NAME inspect reads that keyring's status.keys[].pythonKid (the namespace of -n)\n" +
			"and names the key, or with --keyring it derives each key's kid itself. It does not open the token.",
		Example: "  kubectl mrtr inspect \"$TOKEN\"\n" +
			"  kubectl get secret payments -n mcp -o jsonpath='{.data.keyring\\.json}' | base64 -d > keyring.json\n" +
			"  kubectl mrtr inspect - --keyring keyring.json --method tools/call --params \"$PARAMS\" \\\n" +
			"      --principal '\"user:ada\"' --server https://payments.example.com/mcp --protocol-version 2025-06-18 <token.txt\n" +
			"  kubectl mrtr inspect \"$PYTHON_TOKEN\" --mrtrkeyring weather -n mcp",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok := args[0]
			if tok == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), token.MaxSealedTokenBytes+1))
				if err != nil {
					return fmt.Errorf("read the token from standard input: %w", err)
				}
				tok = string(b)
			}
			tok = strings.TrimSpace(tok)
			if o.mrtrKeyring != "" {
				info, err := pythonSDKFormat.Inspect(tok)
				if err != nil {
					return errors.New("--mrtrkeyring names the key of a python-sdk token (v1.); this is not one: give --keyring to check it")
				}
				return o.runPython(cmd.Context(), e, tok, info)
			}
			if o.keyringFile == "" {
				for _, f := range requestFlags {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s needs --keyring: without the keys nothing can be checked", f)
					}
				}
			}
			return o.run(e.streams.Out, tok, e.now())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.keyringFile, "keyring", "", "the keyring file (the Secret's keyring.json) to check the token with")
	f.StringVar(&o.mrtrKeyring, "mrtrkeyring", "", "python-sdk tokens: the MRTRKeyring whose status names the key of the token's kid")
	f.StringVar(&o.method, "method", "", "the request's JSON-RPC method, e.g. tools/call (required with --keyring)")
	f.StringVar(&o.params, "params", "", "the request's params object as JSON (default: none, bound as {})")
	f.StringVar(&o.principal, "principal", "null", "the authenticated caller as JSON, e.g. '\"user:ada\"'; null is anonymous")
	f.StringVar(&o.protocolVersion, "protocol-version", "", "the request's MCP protocol version (Sealed binds it)")
	f.StringVar(&o.server, "server", "", "the server identity Sealed binds, its NewSealed argument (required for Sealed)")
	f.StringVar(&o.associatedData, "associated-data", "", "rs2: the associated data the server bound, as text (default: none)")
	f.DurationVar(&o.ttl, "ttl", token.DefaultSealedTTL, "the opener's token TTL")
	f.DurationVar(&o.anonymousTTL, "anonymous-ttl", 0, "Sealed: the opener's TTL of anonymous tokens (default 60s, or --ttl if shorter)")
	f.DurationVar(&o.clockSkew, "clock-skew", token.DefaultSealedClockSkew, "Sealed: how far ahead of now an issue time may be; rs2: how far beyond --ttl an expiry may be")
	return cmd
}

// inspection is one run of inspect: the options, the token's format, and the writer with the clock.
type inspection struct {
	*inspectOptions
	format tokenFormat
	d      *textWriter
}

// errNotChecked is inspect's failure when --keyring is given for a token that pkg/token does not
// open (another SDK's): its text was read, nothing was checked.
var errNotChecked = errors.New("the token was not checked: kubectl mrtr inspect opens pkg/token's formats only")

func (o *inspectOptions) run(out io.Writer, tok string, now time.Time) error {
	var ring *keyring.Keyring
	if o.keyringFile != "" {
		var err error
		if ring, err = keyring.LoadFile(o.keyringFile); err != nil {
			return err // it names the file and the entry, never key bytes
		}
	}
	in := inspection{inspectOptions: o, format: formatOf(tok, ring), d: &textWriter{out: out, now: now}}
	info, err := in.format.Inspect(tok)
	if ring == nil || in.format.open == nil {
		fields := append(in.header(info, len(tok)), in.keyringLine(ring)...)
		fields = append(fields, "Key id", in.keyIDLine(info, ring))
		switch {
		case err != nil:
			in.d.fields(append(fields, "Result", rejection(err))...)
			return errors.Join(in.d.err, errRejected)
		case ring != nil && in.format.keyIn != nil:
			// What inspect can tell of such a token with keys: which key it names. A key the
			// keyring does not have is one the SDK refuses the token for.
			if _, ok := in.format.keyIn(info.KeyID, ring); !ok {
				in.d.fields(append(fields, "Result", "rejected: the "+in.format.Name+" refuses a token of a key the keyring does not hold "+
					"(a key removed since, or another keyring's)")...)
				return errors.Join(in.d.err, errRejected)
			}
			in.d.fields(append(fields, "Result", "not opened: the "+in.format.Name+" opens its own tokens; inspect names its key")...)
			return in.d.err
		case ring != nil:
			in.d.fields(append(fields, "Result", "not checked: the "+in.format.Name+" opens its own tokens")...)
			return errors.Join(in.d.err, errNotChecked)
		}
		in.d.fields(append(fields,
			"Issued at", in.timeLine(info, info.Issued, false),
			"Expires at", in.timeLine(info, info.Expires, true))...)
		return in.d.err
	}

	var explain explainFunc
	if explain, err = in.format.open(o, ring, now); err != nil {
		return err
	}
	var b token.Binding
	if !in.format.boundData {
		if b, err = o.binding(); err != nil {
			return err
		}
	}
	info, err = explain(b, tok)
	if token.IsConfigError(err) {
		return flagError(err)
	}
	fields := append(in.header(info, len(tok)), in.keyringLine(ring)...)
	fields = append(fields,
		"Key id", in.keyIDLine(info, ring),
		"Issued at", in.timeLine(info, info.Issued, false),
		"Expires at", in.timeLine(info, info.Expires, true),
		"Request", in.requestLine(),
	)
	if err != nil {
		in.d.fields(append(fields, "Result", rejection(err)+hint(err))...)
		return errors.Join(in.d.err, errRejected)
	}
	in.d.fields(append(fields, "Result", "opens: authentic, current and bound to this request")...)
	return in.d.err
}

// header is what the token's text says of its format, and its size.
func (in inspection) header(info token.Info, size int) []string {
	return []string{"Codec", in.format.describe(info), "Size", fmt.Sprintf("%d bytes", size)}
}

// keyringLine names the keyring given, if any.
func (in inspection) keyringLine(ring *keyring.Keyring) []string {
	if ring == nil {
		return nil
	}
	return []string{"Keyring", fmt.Sprintf("%s: keys %s; fingerprint %s", in.keyringFile, strings.Join(ring.IDs(), ", "), ring.Fingerprint())}
}

// timeLine shows a token's time and how far to trust it: a Sealed token's times are encrypted until
// a key authenticates it; a Signed token's are readable, but unverified until a key verifies it.
func (in inspection) timeLine(info token.Info, t time.Time, expiry bool) string {
	if t.IsZero() {
		switch {
		case !expiry && in.format.zeroIssued != "":
			return in.format.zeroIssued
		case expiry && in.format.zeroExpires != "":
			return in.format.zeroExpires
		case !in.format.encryptedTimes:
			return "-"
		case in.format.open == nil:
			return "encrypted: only the " + in.format.Name + " reads it"
		case in.keyringFile == "":
			return "encrypted: give --keyring and the request's --method, --server and --protocol-version to read it"
		}
		return "encrypted: no key of the keyring opened the token for this request"
	}
	s := stamp(t, in.d.now)
	if expiry && t.After(in.d.now) {
		s += ", not expired"
	} else if expiry {
		s += ", expired"
	}
	if !info.Verified {
		s += ", unverified (no key verified the token)"
	}
	return s
}

// binding is the request of the flags.
func (o *inspectOptions) binding() (token.Binding, error) {
	if o.method == "" {
		return token.Binding{}, errors.New("--method is required with --keyring: the codecs bind the request's method")
	}
	b := token.Binding{Method: o.method, Principal: json.RawMessage(o.principal), ProtocolVersion: o.protocolVersion}
	if o.params != "" {
		b.Params = json.RawMessage(o.params)
	}
	return b, nil
}

// requestLine names what the token was checked against: what the codec binds.
func (in inspection) requestLine() string {
	if in.format.boundData {
		return fmt.Sprintf("associated data %d bytes", len(in.associatedData))
	}
	params := "none"
	if in.params != "" {
		params = fmt.Sprintf("%d bytes", len(in.params))
	}
	s := fmt.Sprintf("method %s, principal %s, params %s", in.method, in.principal, params)
	if in.format.bindsServer {
		s += fmt.Sprintf(", protocol version %q, server %s", in.protocolVersion, in.server)
	}
	return s
}

// keyIDLine names the token's key id and, given the keyring, where it is in it.
func (in inspection) keyIDLine(info token.Info, ring *keyring.Keyring) string {
	switch {
	case info.KeyID == "" && in.format.noKeyID != nil:
		return in.format.noKeyID(info)
	case info.KeyID == "":
		return "-"
	case ring == nil:
		return info.KeyID
	case in.format.keyIn == nil:
		return info.KeyID + " (the " + in.format.Name + "'s own key id, not matched against the keyring's)"
	}
	id, ok := in.format.keyIn(info.KeyID, ring)
	if !ok {
		return info.KeyID + ", not in the keyring"
	}
	for i, k := range ring.IDs() {
		if k == id {
			s := fmt.Sprintf("%s, key %d of %d in the keyring", info.KeyID, i+1, ring.Len())
			if id != info.KeyID {
				s = fmt.Sprintf("%s, key %s (%d of %d) in the keyring", info.KeyID, id, i+1, ring.Len())
			}
			if i == 0 {
				s += " (the primary)"
			}
			return s
		}
	}
	return info.KeyID + ", not in the keyring"
}

// rejection says which check rejected the token: "Sealed token rejected by the expired check: ...".
func rejection(err error) string { return strings.TrimPrefix(err.Error(), "token: ") }

// checkHints say which flags to look at when a check that compares the token with the request fails.
var checkHints = map[token.Check]string{
	token.CheckAuthTag:     "; check --method, --protocol-version and --server (a Sealed token binds them), or the keyring",
	token.CheckMAC:         "; the keyring's key of that id is not the one that sealed it",
	token.CheckPrincipal:   "; check --principal",
	token.CheckLifetime:    "; check --ttl (and --anonymous-ttl for a null principal)",
	token.CheckNotYetValid: "; check the clocks (and --clock-skew)",
	token.CheckParams:      "; check --params",
}

// hint points at the flags to check for err's check, if any.
func hint(err error) string {
	var re *token.RejectError
	if !errors.As(err, &re) {
		return ""
	}
	f, ok := formatNamed(re.Codec)
	if ok && re.Check == token.CheckBinding {
		return f.bindingHint
	}
	if h, ok := f.hints[re.Check]; ok {
		return h
	}
	return checkHints[re.Check]
}

// flagTTL is the flag of every codec's TTL option.
const flagTTL = "--ttl"

// flagError names the flag behind a codec's *ConfigError.
func flagError(err error) error {
	var ce *token.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	flag := map[string]string{
		"SealedTTL": flagTTL, "SignedTTL": flagTTL, "RS2TTL": flagTTL, "SealedAnonymousTTL": "--anonymous-ttl",
		"SealedClockSkew": "--clock-skew", "RS2ClockSkew": "--clock-skew", "server": "--server", "Binding.Method": "--method",
		"Binding.Principal": "--principal",
	}[ce.Field]
	if flag == "" {
		return err
	}
	return fmt.Errorf("%s %s", flag, ce.Reason)
}

// runPython names the key of a python-sdk token from its kid through the MRTRKeyring's status
// (--mrtrkeyring): the keyring file's keys are the token format's (pythonSDKFormat.keyIn). It opens
// nothing: the kid is the one part of the token that is not encrypted. A kid that no key has fails
// with errRejected, as the SDK would refuse the token ("unknown key").
func (o *inspectOptions) runPython(ctx context.Context, e *env, tok string, info token.Info) error {
	d := &textWriter{out: e.streams.Out, now: e.now()}
	kid := info.KeyID
	fields := []string{"Codec", pythonSDKFormat.describe(info), "Size", fmt.Sprintf("%d bytes", len(tok)), "Kid", kid}
	c, err := e.kube()
	if err != nil {
		return err
	}
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	kr := &mrtrv1alpha1.MRTRKeyring{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.mrtrKeyring}, kr); err != nil {
		return fmt.Errorf("get MRTRKeyring %s/%s: %w", ns, o.mrtrKeyring, err)
	}
	keys, where := kr.Status.Keys, fmt.Sprintf("MRTRKeyring %s/%s", ns, o.mrtrKeyring)
	for i, k := range keys {
		if k.PythonKid != kid {
			continue
		}
		line := fmt.Sprintf("%s, key %d of %d in %s", k.ID, i+1, len(keys), where)
		if k.Role != "" {
			line += fmt.Sprintf(" (%s)", k.Role)
		}
		d.fields(append(fields, "Key id", line, "Result", "not opened: inspect names a python-sdk token's key only")...)
		return d.err
	}
	d.fields(append(fields, "Key id", fmt.Sprintf("none of the %d keys in %s has this kid", len(keys), where),
		"Result", "rejected: python-sdk refuses a token of an unknown key (a key removed since, or another keyring's)")...)
	return errors.Join(d.err, errRejected)
}
