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

package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// vectorsFile is testdata/consumers/keyrings.json of the repository this file was built from.
func vectorsFile() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", "consumers", "keyrings.json")
}

// invalidVector is one document of keyrings.json's "invalid" list.
type invalidVector struct {
	Name  string `json:"name"`
	Data  []byte `json:"data"` // standard base64 in the file
	PadTo int    `json:"padTo"`
	Entry *int   `json:"entry"`
}

// invalidVectors mounts every invalid document of the shared vectors, in turn, with the last good
// snapshot's token-ttl: after each the consumer must say on stderr what is wrong (naming keys[i]
// where the vector names an entry) and still serve good.
func (r *run) invalidVectors(good snapshot) error {
	path := r.opts.Vectors
	if path == "" {
		path = vectorsFile()
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("conformance: the shared vectors: %w", err)
	}
	var doc struct{ Invalid []invalidVector }
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("conformance: %s: %w", path, err)
	}
	var failed []string
	var prev []byte
	n := 0
	for _, v := range doc.Invalid {
		data := v.Data
		if v.PadTo > len(data) {
			data = append(bytes.Clone(data), bytes.Repeat([]byte{' '}, v.PadTo-len(data))...)
		}
		if bytes.Equal(data, prev) {
			continue // the same bytes again need not be reported again
		}
		prev = data
		n++
		mark := r.rec.now()
		if err := r.write(snapshot{keyringJSON: data, ttl: good.ttl}, nil); err != nil {
			return err
		}
		want := ""
		if v.Entry != nil {
			want = fmt.Sprintf("keys[%d]", *v.Entry)
		}
		line, said := r.stderrAfter(mark, want)
		p, answered := r.probeServing()
		switch {
		case !said && want != "":
			failed = append(failed, fmt.Sprintf("%s: no line on stderr names %s", v.Name, want))
		case !said:
			failed = append(failed, fmt.Sprintf("%s: nothing said on stderr", v.Name))
		case !answered || p.fingerprint != good.fingerprint || p.ttl != good.ttlWord():
			failed = append(failed, fmt.Sprintf("%s: serving %q %q, want %s %s (said %q)", v.Name, p.fingerprint, p.ttl,
				good.fingerprint, good.ttlWord(), line))
		}
		if len(failed) > 0 {
			break // one is enough to fail, and each further one would wait out the timeout
		}
	}
	r.result(CheckRefusesVectors, n > 0 && len(failed) == 0,
		"%d invalid documents of %s mounted in turn (the first failure ends them), %d not reported on stderr "+
			"(naming keys[i] where the vector says) or not refused for the last good keyring%s",
		n, filepath.Base(path), len(failed), firstOf(failed))
	// Back to the good snapshot, so that the next stage starts from it.
	mark := r.rec.now()
	if err := r.write(good, nil); err != nil {
		return err
	}
	r.rec.await(r.opts.Timeout, func() bool { return r.loadedAfter(mark, good.fingerprint, "") })
	return nil
}

// impostor: the API server's own address presents a certificate of a foreign CA, for the names
// the consumer dials, while a new keyring waits to be acknowledged. A consumer that verifies the
// server against ca.crt refuses the handshake and sends nothing; once the real certificate is back
// it acknowledges.
func (r *run) impostor(prev keyring.Key) (snapshot, keyring.Key, error) {
	t := r.opts.Timeout
	k := r.key("k-tls")
	s := r.goodSnapshot("90", k, prev)
	before := r.api.handshakes.Load()
	r.api.setImpostor(true)
	if err := r.write(s, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	// Until the consumer has either sent a request over the impostor's connection (and been
	// answered 503) or failed a handshake and tried again: either way it has decided.
	tried := r.rec.await(t, func() bool {
		return r.api.handshakes.Load() > before+1 || len(r.traps.sightings(trapImpostor)) > 0
	})
	r.api.setImpostor(false)
	acked := r.awaitAck(s.fingerprint, 3*t)
	var leaked []string
	for _, sg := range r.traps.sightings(trapImpostor) {
		if sg.token {
			leaked = append(leaked, sg.method+" "+sg.target)
		}
	}
	r.result(CheckVerifiesTLS, tried && acked && len(leaked) == 0,
		"with a certificate from a foreign CA at the API server's address: %d handshakes (want at least 2 when it verifies), %d requests "+
			"with the token sent over them (want 0)%s; then acknowledges %s (annotation %q)",
		r.api.handshakes.Load()-before, len(leaked), firstOf(leaked), s.fingerprint, r.api.annotation())
	return s, k, nil
}

// redirects: the API server answers acknowledgements with 307s, to the foreign listener and to
// another path of its own. The contract's client follows no redirect: it takes each for a failure,
// retries, and acknowledges when the API server answers 200.
func (r *run) redirects(prev keyring.Key) (snapshot, keyring.Key, error) {
	r.api.plan(faultNone, faultRedirForeign, faultRedirSelf, faultRedirForeign, faultRedirSelf)
	k := r.key("k-redirect")
	s := r.goodSnapshot("90", k, prev)
	if err := r.write(s, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	acked := r.awaitAck(s.fingerprint, 3*r.opts.Timeout)
	var followed []string
	for _, sg := range r.traps.sightings(trapForeign, trapRedirect) {
		if sg.token {
			followed = append(followed, sg.trap+": "+sg.method+" "+sg.target)
		}
	}
	r.result(CheckRefusesRedirects, acked && len(followed) == 0,
		"after 307s to a listener of a foreign CA and to another path: %d requests with the token went there%s; "+
			"acknowledges %s (annotation %q)", len(followed), firstOf(followed), s.fingerprint, r.api.annotation())
	return s, k, nil
}

// leaks scans what the consumer wrote, its output and the files under its $TMPDIR, for the keys
// and the tokens, and describes each find without its bytes.
func (r *run) leaks() []string {
	secrets := append([][]byte(nil), r.secrets...)
	names := append([]string(nil), r.secretNames...)
	r.traps.mu.Lock()
	for i, tok := range r.traps.tokens {
		// The random part of the token: the fixed "conformance." in front of it is in ordinary output.
		secrets = append(secrets, []byte(strings.TrimPrefix(tok, "conformance.")))
		names = append(names, fmt.Sprintf("service account token %d", i+1))
	}
	r.traps.mu.Unlock()
	sc := newLeakScanner(secrets)
	var out []string
	report := func(where string, text []byte) {
		for _, l := range sc.scan(text) {
			out = append(out, fmt.Sprintf("%s: %s (%s)", where, names[l.secret], l.view))
		}
	}
	raw, _ := r.c.output()
	for _, stream := range []string{streamStdout, "stderr"} {
		report(stream, raw[stream])
	}
	budget := int64(64 << 20)
	_ = filepath.WalkDir(r.tmpDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		// Executables are a toolchain's (go run builds under $TMPDIR), not the consumer's writing.
		if err != nil || info.Mode()&0o111 != 0 || info.Size() > budget {
			return nil
		}
		budget -= info.Size()
		if b, err := os.ReadFile(path); err == nil {
			rel, _ := filepath.Rel(r.tmpDir, path)
			report("$TMPDIR/"+rel, b)
		}
		return nil
	})
	return out
}
