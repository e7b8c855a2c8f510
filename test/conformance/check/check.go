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

// Package check is the keyring consumer conformance check of docs/consumers.md: it runs a consumer
// in any language against a Secret volume it drives the way the kubelet does and a fake Kubernetes
// API server, and checks what the consumer loads and acknowledges. go run ./test/conformance is its
// command.
package check

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/ack"
	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// The environment a consumer under test is given (docs/consumers.md, "Conformance").
const (
	EnvKeyringDir = "MRTR_KEYRING_DIR" // the mounted Secret volume: keyring.json and token-ttl
	EnvSecretName = "MRTR_SECRET_NAME" // the Secret's name, for the annotation key
	SecretName    = "weather-keyring"  // what the check sets it to
	PodName       = "conformance-0"    // $POD_NAME
	PodNamespace  = "mrtr-conformance" // $POD_NAMESPACE
)

// Names of the checks, in the order they are reported.
const (
	CheckStarts               = "starts"
	CheckAcknowledgesFirst    = "acknowledges-first"
	CheckAcknowledgesRotation = "acknowledges-rotation"
	CheckReadsOneSnapshot     = "reads-one-snapshot"
	CheckSettlesAfterBurst    = "settles-after-burst"
	CheckRereadsToken         = "rereads-token"
	CheckReportsBadKeyring    = "reports-bad-keyring"
	CheckKeepsLastGood        = "keeps-last-good-keyring"
	CheckReportsBadTokenTTL   = "reports-bad-token-ttl"
	CheckKeepsLastGoodTTL     = "keeps-last-good-on-bad-token-ttl"
	CheckRecovers             = "recovers"
	CheckRefusesVectors       = "refuses-invalid-vectors"
	CheckSealsWithPrimary     = "seals-with-primary"
	CheckSealsWithinTTL       = "seals-within-token-ttl"
	CheckRetries409           = "retries-after-409"
	CheckRetries403           = "retries-after-403"
	CheckRetries500           = "retries-after-500"
	CheckRetriesTimeout       = "retries-after-timeout"
	CheckAcksAfterRetries     = "acknowledges-after-retries"
	CheckResendsLostAnswer    = "resends-after-lost-answer"
	CheckVerifiesTLS          = "verifies-tls"
	CheckRefusesRedirects     = "refuses-redirects"
	CheckNoProxy              = "no-proxy"
	CheckRequestFormat        = "request-format"
	CheckNoTornRead           = "no-torn-read"
	CheckAcksOnlyGood         = "acks-only-good-keyrings"
	CheckNoSecretInOutput     = "no-secret-in-output"
	CheckReportsMetrics       = "reports-metrics"
	CheckKeepsRunning         = "keeps-running"
)

// Options say what to check and how.
type Options struct {
	// Command is the consumer: a program and its arguments. Required.
	Command []string
	// LostAnswer adds the check resends-after-lost-answer.
	LostAnswer bool
	// Metrics adds the check reports-metrics: the consumer answers "metrics?" and "open? <token>"
	// (docs/consumers.md, "Metrics").
	Metrics bool
	// Timeout bounds each wait for the consumer to react: default 15s.
	Timeout time.Duration
	// Hold is how long the fake API server holds a request it will not answer before it drops the
	// connection: default 2s.
	Hold time.Duration
	// Out receives one line per check as it is decided; nil discards them.
	Out io.Writer
	// Echo receives the consumer's output, line by line; nil discards it.
	Echo io.Writer
	// Vectors is the file of the shared keyring vectors whose invalid documents
	// refuses-invalid-vectors mounts: default testdata/consumers/keyrings.json of this repository.
	Vectors string
}

// Result is the outcome of one check.
type Result struct {
	Name   string
	Pass   bool
	Detail string
}

// Report is the outcome of a run.
type Report struct{ Results []Result }

// Passed is the number of checks that passed.
func (r Report) Passed() int {
	n := 0
	for _, c := range r.Results {
		if c.Pass {
			n++
		}
	}
	return n
}

// Failed names the checks that failed.
func (r Report) Failed() []string {
	var out []string
	for _, c := range r.Results {
		if !c.Pass {
			out = append(out, c.Name)
		}
	}
	return out
}

// Get returns the result of the named check.
func (r Report) Get(name string) (Result, bool) {
	for _, c := range r.Results {
		if c.Name == name {
			return c, true
		}
	}
	return Result{}, false
}

// snapshot is one content of the Secret.
type snapshot struct {
	keys        []keyring.Key // a valid snapshot's keys, in order
	keyringJSON []byte
	ttl         string // "" for no token-ttl file
	fingerprint string // "" for an invalid keyring
}

func (s snapshot) files() map[string][]byte {
	f := map[string][]byte{keyring.SecretDataKey: s.keyringJSON}
	if s.ttl != "" {
		f[keyring.TokenTTLDataKey] = []byte(s.ttl)
	}
	return f
}

// ttlWord is how the probe protocol writes a token-ttl.
func (s snapshot) ttlWord() string {
	if s.ttl == "" {
		return "none"
	}
	return strings.TrimSuffix(s.ttl, "\n")
}

type run struct {
	opts    Options
	rec     *recorder
	traps   *traps
	api     *apiServer
	foreign *foreignServer
	proxy   *proxyServer
	tmpDir  string // the consumer's $TMPDIR, scanned for leaks
	seals   []sealOutcome
	vol     *Volume
	saDir   string
	c       *consumer
	report  Report
	secrets [][]byte
	// secretNames name secrets[i] in a leak's report, never its bytes.
	secretNames []string
	good        []snapshot // every valid snapshot written
}

// Run runs the check once. The error is for a check that could not run (a temporary directory, a
// port); everything the consumer does wrong is in the Report.
func Run(opts Options) (Report, error) {
	if len(opts.Command) == 0 {
		return Report{}, fmt.Errorf("conformance: no consumer command")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.Hold == 0 {
		opts.Hold = 2 * time.Second
	}
	root, err := os.MkdirTemp("", "mrtr-conformance-")
	if err != nil {
		return Report{}, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	r := &run{opts: opts, rec: newRecorder(), vol: NewVolume(filepath.Join(root, "keyring")), saDir: filepath.Join(root, "serviceaccount"),
		tmpDir: filepath.Join(root, "tmp")}
	r.traps = &traps{rec: r.rec}
	for _, d := range []string{r.vol.dir, r.saDir, r.tmpDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return Report{}, err
		}
	}
	token := randomToken()
	r.traps.addToken(token)
	if r.api, err = newAPIServer(r.rec, r.traps, PodNamespace, PodName, SecretName, token, opts.Hold); err != nil {
		return Report{}, err
	}
	defer r.api.close()
	if r.foreign, err = newForeignServer(r.traps, r.api.foreign); err != nil {
		return Report{}, err
	}
	defer r.foreign.close()
	r.api.redirTo = r.foreign.addr()
	if r.proxy, err = newProxyServer(r.traps, r.api, r.api.cert); err != nil {
		return Report{}, err
	}
	defer r.proxy.close()
	if err := r.writeServiceAccount(token); err != nil {
		return Report{}, err
	}
	if err := os.WriteFile(filepath.Join(r.saDir, "ca.crt"), r.api.caPEM, 0o644); err != nil {
		return Report{}, err
	}
	if err := os.WriteFile(filepath.Join(r.saDir, "namespace"), []byte(PodNamespace), 0o644); err != nil {
		return Report{}, err
	}
	if err := r.scenario(); err != nil {
		return r.report, err
	}
	return r.report, nil
}

// writeServiceAccount replaces the token file in one rename, as the kubelet's projected volume does.
func (r *run) writeServiceAccount(token string) error {
	tmp := filepath.Join(r.saDir, ".token.tmp")
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.saDir, "token"))
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "conformance." + base64.RawURLEncoding.EncodeToString(b)
}

func (r *run) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, k := range append([]string{EnvKeyringDir, EnvSecretName, "POD_NAME", "POD_NAMESPACE", "KUBERNETES_SERVICE_HOST",
			"KUBERNETES_SERVICE_PORT", ack.ServiceAccountDirEnv, keyring.EnvVar, "NO_PROXY", "no_proxy", "TMPDIR"}, proxyVars...) {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	})
	return append(append(env,
		EnvKeyringDir+"="+r.vol.dir,
		EnvSecretName+"="+SecretName,
		"POD_NAME="+PodName,
		"POD_NAMESPACE="+PodNamespace,
		"KUBERNETES_SERVICE_HOST=127.0.0.1",
		"KUBERNETES_SERVICE_PORT="+r.api.port(),
		ack.ServiceAccountDirEnv+"="+r.saDir,
		"TMPDIR="+r.tmpDir,
	), r.proxyEnv()...)
}

// proxyVars name a proxy in the conventions of curl, Go, Python, Node and Rust: the check sets
// every one to its proxy, which the consumer must not use.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

func (r *run) proxyEnv() []string {
	env := make([]string, 0, len(proxyVars))
	for _, k := range proxyVars {
		env = append(env, k+"="+r.proxy.url())
	}
	return env
}

func (r *run) result(name string, pass bool, format string, args ...any) {
	res := Result{Name: name, Pass: pass, Detail: fmt.Sprintf(format, args...)}
	r.report.Results = append(r.report.Results, res)
	if r.opts.Out != nil {
		word := "PASS"
		if !pass {
			word = "FAIL"
		}
		_, _ = fmt.Fprintf(r.opts.Out, "%s %s: %s\n", word, name, res.Detail)
	}
}

// key returns a new random key, remembered for the no-secret-in-output check.
func (r *run) key(id string) keyring.Key {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	r.secrets = append(r.secrets, b)
	r.secretNames = append(r.secretNames, "key "+id)
	return keyring.NewKey(id, b)
}

// good returns a valid snapshot of keys with the token-ttl ttl ("" for none).
func (r *run) goodSnapshot(ttl string, keys ...keyring.Key) snapshot {
	kr, err := keyring.New(keys...)
	if err != nil {
		panic(err) // the check's own keys are valid
	}
	data, _ := keyring.Marshal(kr)
	s := snapshot{keys: keys, keyringJSON: data, ttl: ttl, fingerprint: kr.Fingerprint()}
	return s
}

// write puts s in the volume.
func (r *run) write(s snapshot, afterSwitch func()) error {
	if s.fingerprint != "" {
		r.good = append(r.good, s)
	}
	return r.vol.Write(s.files(), afterSwitch)
}

// loadedAfter reports whether the consumer printed loaded for fp (and ttl, unless "") after mark.
func (r *run) loadedAfter(mark int, fp, ttl string) bool {
	_, loaded, _, _, _ := r.c.snapshot()
	for _, p := range loaded {
		if p.at > mark && p.fingerprint == fp && (ttl == "" || p.ttl == ttl) {
			return true
		}
	}
	return false
}

// awaitAck waits for the Pod's annotation to be fp.
func (r *run) awaitAck(fp string, timeout time.Duration) bool {
	return r.rec.await(timeout, func() bool { return r.api.annotation() == fp })
}

// probeServing asks the consumer what it serves and returns its answer.
func (r *run) probeServing() (probe, bool) {
	mark := r.rec.now()
	r.c.ask("serving?")
	var got probe
	ok := r.rec.await(r.opts.Timeout, func() bool {
		_, _, serving, _, _ := r.c.snapshot()
		for _, p := range serving {
			if p.at > mark {
				got = p
				return true
			}
		}
		return false
	})
	return got, ok
}

// stderrAfter waits for a line on stderr after mark that contains want.
func (r *run) stderrAfter(mark int, want string) (string, bool) {
	var got string
	ok := r.rec.await(r.opts.Timeout, func() bool {
		lines, _, _, _, _ := r.c.snapshot()
		for _, l := range lines {
			if l.at > mark && l.stream == "stderr" && strings.Contains(l.text, want) {
				got = l.text
				return true
			}
		}
		return false
	})
	return got, ok
}

// scenario runs the checks in order. Each stage leaves the consumer serving and acknowledging the
// keyring it returns, which the next stage starts from.
func (r *run) scenario() error {
	k1 := r.key("k1")
	s1 := r.goodSnapshot("300", k1)
	if err := r.write(s1, nil); err != nil {
		return err
	}
	var err error
	if r.c, err = startConsumer(r.rec, r.opts.Command, r.env(), r.opts.Echo); err != nil {
		return err
	}
	defer r.c.stop(5 * time.Second)

	ok := r.rec.await(r.opts.Timeout, func() bool { return r.loadedAfter(0, s1.fingerprint, "300") })
	r.result(CheckStarts, ok, "prints \"loaded %s 300\" for the keyring it starts with", s1.fingerprint)
	ok = r.awaitAck(s1.fingerprint, r.opts.Timeout)
	r.result(CheckAcknowledgesFirst, ok, "the Pod's annotation %s is %q, want %s",
		ack.AnnotationKey(SecretName), r.api.annotation(), s1.fingerprint)
	r.sealProbe("at start", s1)

	last, lastKey, err := r.swaps(k1)
	if err != nil {
		return err
	}
	r.sealProbe("after the rotations", last)
	if last, lastKey, err = r.badSnapshots(last, lastKey); err != nil {
		return err
	}
	if err := r.invalidVectors(last); err != nil {
		return err
	}
	r.sealProbe("after the invalid vectors", last)
	r.sealResults()
	if _, lastKey, err = r.retries(lastKey); err != nil {
		return err
	}
	if _, lastKey, err = r.impostor(lastKey); err != nil {
		return err
	}
	if last, lastKey, err = r.redirects(lastKey); err != nil {
		return err
	}
	if r.opts.LostAnswer {
		r.lostAnswer(lastKey, last)
	}
	if r.opts.Metrics {
		r.reportsMetrics()
	}
	r.final()
	return nil
}

// swaps: a rotation's swap, the torn moment, a burst of swaps, and the token replaced.
func (r *run) swaps(k1 keyring.Key) (snapshot, keyring.Key, error) {
	t := r.opts.Timeout
	// A ..data swap: a rotation's new keyring, and token-ttl leaves the Secret.
	k2 := r.key("k2")
	s2 := r.goodSnapshot("", k2, k1)
	mark := r.rec.now()
	if err := r.write(s2, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	ok := r.rec.await(t, func() bool { return r.loadedAfter(mark, s2.fingerprint, "") }) && r.awaitAck(s2.fingerprint, t)
	r.result(CheckAcknowledgesRotation, ok, "after a ..data swap loads and acknowledges %s (annotation %q)",
		s2.fingerprint, r.api.annotation())

	// token-ttl comes back with new keys. Right after the ..data switch, ..data/token-ttl exists but
	// the user-visible link token-ttl does not yet: hold that state until the consumer loads the new
	// keyring. A consumer that reads through ..data sees 120; one that reads <dir>/token-ttl sees none.
	k3 := r.key("k3")
	s3 := r.goodSnapshot("120", k3, k2)
	mark = r.rec.now()
	hold := func() { r.rec.await(t, func() bool { return r.loadedAfter(mark, s3.fingerprint, "") }) }
	if err := r.write(s3, hold); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	first := ""
	_, loaded, _, _, _ := r.c.snapshot()
	for _, p := range loaded {
		if p.at > mark && p.fingerprint == s3.fingerprint {
			first = p.ttl
			break
		}
	}
	r.result(CheckReadsOneSnapshot, first == "120", "the keyring %s first loaded with token-ttl %q, want 120 "+
		"(keyring.json and token-ttl from the one directory ..data names)", s3.fingerprint, first)

	// A burst of swaps between two snapshots that differ in keys and token-ttl; the last one stays.
	k4, k5 := r.key("k4"), r.key("k5")
	s4, s5 := r.goodSnapshot("60", k4, k3), r.goodSnapshot("90\n", k5, k4)
	for i := range 10 {
		s := s4
		if i%2 == 1 {
			s = s5
		}
		if err := r.write(s, nil); err != nil {
			return snapshot{}, keyring.Key{}, err
		}
	}
	ok = r.rec.await(t, func() bool {
		_, loaded, _, _, _ := r.c.snapshot()
		return len(loaded) > 0 && loaded[len(loaded)-1].fingerprint == s5.fingerprint && loaded[len(loaded)-1].ttl == "90"
	}) && r.awaitAck(s5.fingerprint, t)
	r.result(CheckSettlesAfterBurst, ok, "after 10 swaps in a row, serves and acknowledges the last: %s with token-ttl 90 (annotation %q)",
		s5.fingerprint, r.api.annotation())

	// The kubelet rotates the service account token; the old one stops working.
	newToken := randomToken()
	r.traps.addToken(newToken)
	if err := r.writeServiceAccount(newToken); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	r.api.setToken(newToken)
	k6 := r.key("k6")
	s6 := r.goodSnapshot("90", k6, k5)
	if err := r.write(s6, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	ok = r.awaitAck(s6.fingerprint, t)
	r.result(CheckRereadsToken, ok, "after the token file changed, acknowledges %s with the new token (annotation %q)",
		s6.fingerprint, r.api.annotation())
	return s6, k6, nil
}

// badSnapshots: a bad keyring, then a good keyring with a bad token-ttl, then a good snapshot.
func (r *run) badSnapshots(good snapshot, k6 keyring.Key) (snapshot, keyring.Key, error) {
	// keys[1] has a field the schema does not allow; a lenient JSON reader accepts it.
	k7 := r.key("k7")
	bad := []byte(fmt.Sprintf(`{"keys":[{"id":"k7","secret":%q},{"id":"k6","secret":%q,"kid":"x"}]}`,
		base64.StdEncoding.EncodeToString(k7.Secret()), base64.StdEncoding.EncodeToString(k6.Secret())))
	mark := r.rec.now()
	if err := r.write(snapshot{keyringJSON: bad, ttl: "90"}, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	got, ok := r.stderrAfter(mark, "keys[1]")
	r.result(CheckReportsBadKeyring, ok, "says on stderr what is wrong, naming keys[1]: %q", got)
	p, ok := r.probeServing()
	r.result(CheckKeepsLastGood, ok && p.fingerprint == good.fingerprint && p.ttl == "90",
		"answers serving? with %q %q, want %s 90 (its last good keyring)", p.fingerprint, p.ttl, good.fingerprint)

	// A good keyring with a bad token-ttl: the snapshot is refused as a whole.
	s7 := r.goodSnapshot("90", k7, k6)
	mark = r.rec.now()
	if err := r.write(snapshot{keyringJSON: s7.keyringJSON, ttl: "0"}, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	got, ok = r.stderrAfter(mark, "token-ttl")
	r.result(CheckReportsBadTokenTTL, ok, "says on stderr what is wrong, naming token-ttl: %q", got)
	p, ok = r.probeServing()
	r.result(CheckKeepsLastGoodTTL, ok && p.fingerprint == good.fingerprint && p.ttl == "90",
		"answers serving? with %q %q, want %s 90 (keyring.json valid, token-ttl 0: the snapshot is refused)",
		p.fingerprint, p.ttl, good.fingerprint)
	r.sealProbe("after a refused snapshot", good)

	mark = r.rec.now()
	if err := r.write(s7, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	ok = r.rec.await(r.opts.Timeout, func() bool { return r.loadedAfter(mark, s7.fingerprint, "90") }) &&
		r.awaitAck(s7.fingerprint, r.opts.Timeout)
	r.result(CheckRecovers, ok, "loads and acknowledges the next good keyring %s (annotation %q)", s7.fingerprint, r.api.annotation())
	return s7, k7, nil
}

// retryChecks name the check of each refused answer.
var retryChecks = map[fault]string{
	fault409: CheckRetries409, fault403: CheckRetries403, fault500: CheckRetries500, faultHang: CheckRetriesTimeout,
}

// retries: refused and failed acknowledgements, a conflict, a forbidden, an internal error, no answer.
func (r *run) retries(k7 keyring.Key) (snapshot, keyring.Key, error) {
	faults := []fault{fault409, fault403, fault500, faultHang}
	r.api.plan(faultNone, faults...)
	k8 := r.key("k8")
	s8 := r.goodSnapshot("90", k8, k7)
	mark := r.rec.now()
	if err := r.write(s8, nil); err != nil {
		return snapshot{}, keyring.Key{}, err
	}
	// Each retry comes after a backoff that doubles: allow for it on top of the usual wait.
	acked := r.awaitAck(s8.fingerprint, 3*r.opts.Timeout+r.opts.Hold)
	var answers []string
	for _, q := range r.api.allRequests() {
		if q.at > mark && q.fingerprint == s8.fingerprint {
			answers = append(answers, q.answer)
		}
	}
	for i, f := range faults {
		idx := slices.Index(answers, f.String())
		r.result(retryChecks[f], idx >= i && idx < len(answers)-1, "sends %s again after the answer %s (answers, in order: %s)",
			s8.fingerprint, f, runs(answers))
	}
	r.result(CheckAcksAfterRetries, acked, "acknowledges %s once the API server answers again (annotation %q)",
		s8.fingerprint, r.api.annotation())
	return s8, k8, nil
}

// lostAnswer: the API server applies an acknowledgement and the answer is lost; then the keyring
// returns to the one acknowledged before. The Pod says the newer one, so the consumer must send
// the older one again, though it was the last it saw accepted.
func (r *run) lostAnswer(k8 keyring.Key, s8 snapshot) {
	t := r.opts.Timeout
	r.api.plan(fault500, faultLostAnswer)
	k9 := r.key("k9")
	s9 := r.goodSnapshot("90", k9, k8)
	if err := r.write(s9, nil); err != nil {
		r.result(CheckResendsLostAnswer, false, "could not write the volume: %v", err)
		return
	}
	applied := r.awaitAck(s9.fingerprint, t)
	mark := r.rec.now()
	back := snapshot{keys: s8.keys, keyringJSON: s8.keyringJSON, ttl: s8.ttl, fingerprint: s8.fingerprint}
	if err := r.write(back, nil); err != nil {
		r.result(CheckResendsLostAnswer, false, "could not write the volume: %v", err)
		return
	}
	reloaded := r.rec.await(t, func() bool { return r.loadedAfter(mark, s8.fingerprint, "") })
	r.api.plan(faultNone)
	ok := applied && reloaded && r.awaitAck(s8.fingerprint, 2*t)
	r.result(CheckResendsLostAnswer, ok,
		"after the answer to %s was lost (applied: %v) and %s came back (loaded: %v), the annotation is %q, want %s",
		s9.fingerprint, applied, s8.fingerprint, reloaded, r.api.annotation(), s8.fingerprint)
}

// final decides the checks over the whole run.
func (r *run) final() {
	lines, loaded, _, exited, exitErr := r.c.snapshot()
	requests := r.api.allRequests()

	var bad []string
	for _, q := range requests {
		if q.problem != "" {
			bad = append(bad, q.problem)
		}
	}
	r.result(CheckRequestFormat, len(requests) > 0 && len(bad) == 0, "%d requests, %d not a well-formed acknowledgement%s",
		len(requests), len(bad), firstOf(bad))

	pairs := map[string]bool{}
	goodFP := map[string]bool{}
	for _, s := range r.good {
		pairs[s.fingerprint+" "+s.ttlWord()] = true
		goodFP[s.fingerprint] = true
	}
	var torn []string
	loadedFP := map[string]bool{}
	for _, p := range loaded {
		loadedFP[p.fingerprint] = true
		if !pairs[p.fingerprint+" "+p.ttl] {
			torn = append(torn, p.fingerprint+" "+p.ttl)
		}
	}
	r.result(CheckNoTornRead, len(loaded) > 0 && len(torn) == 0,
		"%d keyrings loaded, %d not a snapshot's keyring.json with its own token-ttl%s", len(loaded), len(torn), firstOf(torn))

	var wrong []string
	for _, q := range requests {
		if q.problem == "" && (!goodFP[q.fingerprint] || !loadedFP[q.fingerprint]) {
			wrong = append(wrong, q.fingerprint)
		}
	}
	r.result(CheckAcksOnlyGood, len(wrong) == 0,
		"%d acknowledgements of a fingerprint that is no valid snapshot's or that the consumer never said it loaded%s",
		len(wrong), firstOf(wrong))

	sightings := r.traps.sightings(trapProxy)
	through := make([]string, 0, len(sightings))
	for _, sg := range sightings {
		through = append(through, fmt.Sprintf("%s %s (token: %v)", sg.method, sg.target, sg.token))
	}
	r.result(CheckNoProxy, len(through) == 0, "with $HTTPS_PROXY, $https_proxy, $HTTP_PROXY, $http_proxy and $ALL_PROXY set, "+
		"%d requests went to the proxy%s", len(through), firstOf(through))

	found := r.leaks()
	r.result(CheckNoSecretInOutput, len(found) == 0, "%d lines of output and the files under $TMPDIR, %d with key or token material "+
		"(raw, escaped, decimal, hex or base64 at any offset)%s", len(lines), len(found), firstOf(found))
	r.result(CheckKeepsRunning, !exited, "the consumer is still running (exited: %v %v)", exited, exitErr)
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(" (first: %q)", s[0])
}

// runs writes a list of answers with repeats counted: [401x12 409 200].
func runs(s []string) string {
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%sx%d", s[i], j-i))
		} else {
			parts = append(parts, s[i])
		}
		i = j
	}
	return "[" + strings.Join(parts, " ") + "]"
}
