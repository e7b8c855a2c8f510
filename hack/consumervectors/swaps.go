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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// swapsFile is swaps.json.
type swapsFile struct {
	Comment   []string   `json:"comment"`
	Sequences []sequence `json:"sequences"`
}

type sequence struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Setup builds the directory before the consumer starts; Start is what it must serve then.
	Setup []op  `json:"setup"`
	Start state `json:"start"`
	Steps []op  `json:"steps"`
}

// The ops of a sequence.
const (
	opMkdir     = "mkdir"
	opWrite     = "write"
	opSymlink   = "symlink"
	opRename    = "rename"
	opRemove    = "remove"
	opRemoveAll = "removeAll"
)

// refused is what throughLinks says of files a reader would refuse.
const refused = "refused"

// op is one file-system operation in the mounted directory; paths are relative to it.
type op struct {
	Op     string `json:"op"` // mkdir, write, symlink, rename, remove, removeAll
	Path   string `json:"path"`
	Target string `json:"target,omitempty"` // symlink: what the link says
	To     string `json:"to,omitempty"`     // rename: the new name
	Data   []byte `json:"data,omitempty"`   // write: the bytes (standard base64)
	Text   string `json:"text,omitempty"`   // write: the same bytes as text
	// Expect is what a consumer that re-reads the directory right after this op must serve.
	Expect *state `json:"expect,omitempty"`
}

// state is what a consumer serves.
type state struct {
	// Refused: only in Start, the directory holds no valid snapshot and the consumer must not start.
	Refused bool `json:"refused,omitempty"`
	// Fingerprint and Keys (ids in order) of the keyring in service; TokenTTLSeconds what it declares,
	// null for nothing.
	Fingerprint     string   `json:"fingerprint,omitempty"`
	Keys            []string `json:"keys,omitempty"`
	TokenTTLSeconds *int64   `json:"tokenTTLSeconds"`
	// Rejected: the directory as it stands now is not a valid snapshot. The consumer keeps serving
	// the keyring above (its last good one) and says what is wrong; Error is Go's message.
	Rejected bool   `json:"rejected"`
	Error    string `json:"error,omitempty"`
	// Acknowledge: the fingerprint in service changed at this step; the consumer must acknowledge it.
	Acknowledge bool `json:"acknowledge"`
	// TornRead, when set, is what a reader that reads <dir>/keyring.json and <dir>/token-ttl through
	// their own links (not through the directory ..data names) would take from the directory right
	// now, where that differs from the above: the torn read a consumer must not make.
	TornRead string `json:"tornRead,omitempty"`
}

var swapsComment = []string{
	"Made by `go run ./hack/consumervectors`: every expectation is what pkg/keyring's FileSource served",
	"after reloading a real directory at that point. Do not edit. See docs/consumers.md.",
	"Each sequence: run `setup` in an empty directory, start the consumer on <dir>/keyring.json (expect",
	"`start`), then run each step and re-read the directory: the consumer must then serve `expect`.",
	"Ops (paths relative to the directory): mkdir; write (create the file with `data`, standard base64);",
	"symlink (create `path` as a symbolic link whose text is `target`); rename (`path` to `to`, atomically",
	"replacing it); remove (one file or link); removeAll (a directory and everything in it).",
	"The kubelet sequences follow its atomic writer: write a new timestamped directory, point ..data_tmp",
	"at it, rename ..data_tmp over ..data (the one atomic switch), create the user-visible links to",
	"..data/<file>, remove the links of files gone from the Secret, remove the old timestamped directory.",
	"expect.rejected: the directory does not hold a valid snapshot right now; keep serving the keyring",
	"given (the last good one) and report `error`. expect.acknowledge: the fingerprint in service changed.",
	"expect.tornRead, when set: what a reader that opens <dir>/keyring.json and <dir>/token-ttl by their own",
	"names takes at that moment (\"<fingerprint> ttl=<seconds|none>\", or \"refused\"), which differs from what",
	"it must serve: read both files from the directory ..data names, and check ..data did not move meanwhile.",
}

// dir is the placeholder for the temporary directory in error messages.
const dir = "$MRTR_KEYRING_DIR"

// kubelet writes a Secret volume the way the kubelet's atomic writer does.
type kubelet struct {
	n       int      // timestamped directories made so far
	ts      string   // the current one
	visible []string // the user-visible links
	// linksFirst creates the user-visible links before the ..data switch, as older kubelets did.
	linksFirst bool
}

// write returns the ops that replace the volume's content by files (name to bytes; a nil value
// leaves the name out).
func (k *kubelet) write(files map[string][]byte) []op {
	k.n++
	ts := fmt.Sprintf("..2026_12_03_05_%02d_%02d.%09d", k.n/60, k.n%60, 100000000+k.n*7919)
	var names []string
	for name, data := range files {
		if data != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	ops := []op{{Op: opMkdir, Path: ts}}
	for _, name := range names {
		ops = append(ops, writeOp(ts+"/"+name, files[name]))
	}
	var links, gone []op
	for _, name := range names {
		if !slices.Contains(k.visible, name) {
			links = append(links, op{Op: opSymlink, Path: name, Target: "..data/" + name})
		}
	}
	for _, name := range k.visible {
		if !slices.Contains(names, name) {
			gone = append(gone, op{Op: opRemove, Path: name})
		}
	}
	swap := []op{{Op: opSymlink, Path: "..data_tmp", Target: ts}, {Op: opRename, Path: "..data_tmp", To: "..data"}}
	if k.linksFirst {
		ops = append(append(ops, links...), swap...)
	} else {
		ops = append(append(ops, swap...), links...)
	}
	ops = append(ops, gone...)
	if k.ts != "" {
		ops = append(ops, op{Op: opRemoveAll, Path: k.ts})
	}
	k.ts, k.visible = ts, names
	return ops
}

func writeOp(path string, data []byte) op {
	o := op{Op: opWrite, Path: path, Data: data}
	o.Text = newFile(data, 0).Text
	return o
}

// snapshot is the content of one Secret: keyring.json and token-ttl, nil for absent.
func snapshot(keyringJSON string, ttl string) map[string][]byte {
	files := map[string][]byte{keyring.SecretDataKey: []byte(keyringJSON)}
	if ttl != "" {
		files[keyring.TokenTTLDataKey] = []byte(ttl)
	}
	return files
}

// volumeSequence is a sequence of Secret contents written the kubelet's way: the first before the
// consumer starts, each next one a step.
type volumeSequence struct {
	name, description string
	linksFirst        bool
	contents          []map[string][]byte
}

func swapVectors() (*swapsFile, error) {
	a, b, c := secret(11, 32), secret(12, 32), secret(13, 32)
	A, BA, B := doc("a", a), doc("b", b, "a", a), doc("b", b)
	AB := doc("a", a, "b", b)
	bad := doc("a", a, "b", b, "a", c) // id "a" twice: keys[2]
	pretty := "{\n  \"keys\": [\n    {\"secret\": \"" + b64(a) + "\", \"id\": \"a\"}\n  ]\n}\n"
	future := snapshot(BA, "300")
	future["future-key"] = []byte("anything")
	ttlOnly := map[string][]byte{keyring.TokenTTLDataKey: []byte("300")}

	seqs := []volumeSequence{
		{"a rotation's phases",
			"The first mount, then the three Secret writes of one rotation: the new key added behind the sealing one, " +
				"then sealing, then the old one dropped. Each changes the fingerprint.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(AB, "300"), snapshot(BA, "300"), snapshot(B, "300")}},
		{"token-ttl added",
			"The Secret gains token-ttl with the same keys: the new snapshot holds token-ttl before its user-visible link exists. " +
				"A consumer reading through ..data sees it at the switch; the fingerprint does not change, so there is nothing new to acknowledge.",
			false, []map[string][]byte{snapshot(A, ""), snapshot(A, "300"), snapshot(BA, "300")}},
		{"token-ttl added, links before the switch",
			"As \"token-ttl added\", with the user-visible links created before the ..data switch (older kubelets): " +
				"the token-ttl link dangles until the switch.",
			true, []map[string][]byte{snapshot(A, ""), snapshot(A, "300"), snapshot(BA, "300")}},
		{"token-ttl changes alone", "Same keys, another token-ttl: same fingerprint, the new ttl applies.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(A, "600\n"), snapshot(A, "60")}},
		{"token-ttl removed",
			"The Secret loses token-ttl: from the switch on nothing is declared (its user-visible link dangles until it is removed).",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(A, "")}},
		{"a bad keyring arrives",
			"An invalid keyring.json (an id twice) arrives: keep serving the last good keyring and report the error; the next good one is served.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(bad, "300"), snapshot(BA, "300")}},
		{"a bad token-ttl arrives with a good keyring",
			"A snapshot whose keyring.json is valid but whose token-ttl is not is refused as a whole: " +
				"the last good keyring and its token-ttl stay in service.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(BA, "0"), snapshot(BA, "300")}},
		{"keyring.json leaves the Secret", "A snapshot without keyring.json: keep serving the last good keyring and report it.",
			false, []map[string][]byte{snapshot(A, "300"), ttlOnly, snapshot(BA, "300")}},
		{"the same keys spelled otherwise",
			"keyring.json changes bytes but not keys (whitespace, field order): same fingerprint, nothing to acknowledge.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(pretty, "300")}},
		{"back to an earlier keyring",
			"A rotation rolled back: the fingerprint returns to one acknowledged before, and must be acknowledged again.",
			false, []map[string][]byte{snapshot(A, "300"), snapshot(BA, "300"), snapshot(A, "300")}},
		{"other data keys are ignored", "The Secret gains a data key this version does not know: it is ignored.",
			false, []map[string][]byte{snapshot(A, "300"), future}},
		{"starts with a bad keyring",
			"The first mount holds an invalid keyring: the consumer must refuse to start (it has no last good keyring to serve).",
			false, []map[string][]byte{snapshot(bad, "300")}},
		{"starts with a bad token-ttl",
			"The first mount holds a valid keyring and an invalid token-ttl: the consumer must refuse to start.",
			false, []map[string][]byte{snapshot(A, "3600")}},
	}

	out := &swapsFile{Comment: swapsComment}
	for _, s := range seqs {
		k := &kubelet{linksFirst: s.linksFirst}
		setup := k.write(s.contents[0])
		var steps []op
		for _, files := range s.contents[1:] {
			steps = append(steps, k.write(files)...)
		}
		seq, err := run(s.name, s.description, setup, steps)
		if err != nil {
			return nil, fmt.Errorf("sequence %q: %w", s.name, err)
		}
		out.Sequences = append(out.Sequences, seq)
	}

	// Outside Kubernetes: no ..data, a plain file replaced by a new file renamed over it.
	var steps []op
	for _, next := range []string{BA, bad, doc("c", c)} {
		steps = append(steps, writeOp("keyring.json.tmp", []byte(next)), op{Op: opRename, Path: "keyring.json.tmp", To: keyring.SecretDataKey})
	}
	seq, err := run("outside Kubernetes: plain files renamed over",
		"No ..data: keyring.json is a plain file, replaced by writing a new file and renaming it over the old one.",
		[]op{writeOp(keyring.SecretDataKey, []byte(A)), writeOp(keyring.TokenTTLDataKey, []byte("300"))}, steps)
	if err != nil {
		return nil, fmt.Errorf("plain files: %w", err)
	}
	out.Sequences = append(out.Sequences, seq)
	return out, nil
}

// run plays a sequence in a temporary directory and records what a FileSource serves at the start
// and after each step.
func run(name, description string, setup, steps []op) (sequence, error) {
	tmp, err := os.MkdirTemp("", "consumervectors-")
	if err != nil {
		return sequence{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, o := range setup {
		if err := apply(tmp, o); err != nil {
			return sequence{}, err
		}
	}
	seq := sequence{Name: name, Description: description, Setup: setup, Steps: []op{}}
	src, err := keyring.NewFileSource(filepath.Join(tmp, keyring.SecretDataKey))
	if err != nil {
		seq.Start = state{Refused: true, Error: clean(err, tmp)}
		if len(steps) > 0 {
			return sequence{}, fmt.Errorf("refused start, yet steps follow")
		}
		return seq, nil
	}
	seq.Start = served(src.Keyring())
	seq.Start.Acknowledge = true
	last := src.Keyring().Fingerprint()
	for _, o := range steps {
		if err := apply(tmp, o); err != nil {
			return sequence{}, err
		}
		rerr := src.Reload()
		st := served(src.Keyring())
		if rerr != nil {
			st.Rejected, st.Error = true, clean(rerr, tmp)
		}
		st.Acknowledge = st.Fingerprint != last
		last = st.Fingerprint
		if !st.Rejected {
			if naive := throughLinks(tmp); naive != describeState(st) {
				st.TornRead = naive
			}
		}
		o.Expect = &st
		seq.Steps = append(seq.Steps, o)
	}
	return seq, nil
}

func served(r *keyring.Keyring) state {
	st := state{Fingerprint: r.Fingerprint(), Keys: r.IDs()}
	if d := r.MaxTokenTTL(); d > 0 {
		s := int64(d / time.Second)
		st.TokenTTLSeconds = &s
	}
	return st
}

// clean replaces the temporary directory in an error by the placeholder.
func clean(err error, tmp string) string { return strings.ReplaceAll(err.Error(), tmp, dir) }

// apply performs o in the directory root.
func apply(root string, o op) error {
	p := filepath.Join(root, o.Path)
	var err error
	switch o.Op {
	case opMkdir:
		err = os.Mkdir(p, 0o755)
	case opWrite:
		err = os.WriteFile(p, o.Data, 0o644)
	case opSymlink:
		err = os.Symlink(o.Target, p)
	case opRename:
		err = os.Rename(p, filepath.Join(root, o.To))
	case opRemove:
		err = os.Remove(p)
	case opRemoveAll:
		err = os.RemoveAll(p)
	default:
		err = fmt.Errorf("unknown op %q", o.Op)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.Op, o.Path, err)
	}
	return nil
}

// throughLinks is what a reader that opens <dir>/keyring.json and <dir>/token-ttl by their own
// names takes from the directory: "<fingerprint> ttl=<seconds|none>", or "refused" when it would
// refuse the files as they stand.
func throughLinks(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, keyring.SecretDataKey))
	if err != nil {
		return refused
	}
	r, err := keyring.Parse(data)
	if err != nil {
		return refused
	}
	st := served(r)
	if b, err := os.ReadFile(filepath.Join(dir, keyring.TokenTTLDataKey)); err == nil {
		d, err := keyring.ParseTokenTTL(b)
		if err != nil {
			return refused
		}
		s := int64(d / time.Second)
		st.TokenTTLSeconds = &s
	}
	return describeState(st)
}

func describeState(st state) string {
	ttl := "none"
	if st.TokenTTLSeconds != nil {
		ttl = fmt.Sprint(*st.TokenTTLSeconds)
	}
	return st.Fingerprint + " ttl=" + ttl
}
