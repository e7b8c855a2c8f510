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

package keyring

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// awaitTimeout only bounds a wait for something that must happen; no test passes by waiting for it.
const awaitTimeout = 20 * time.Second

// secretVolume reproduces the kubelet's AtomicWriter (kubernetes pkg/volume/util/atomic_writer.go)
// for a Secret with the key keyring.json (write) or several keys (writeFiles):
//
//	<dir>/keyring.json -> ..data/keyring.json
//	<dir>/..data       -> ..2026_07_01_10_00_00.123456789
//	<dir>/..2026_07_01_10_00_00.123456789/keyring.json
type secretVolume struct {
	t   testing.TB
	dir string
}

func newSecretVolume(t testing.TB, data []byte) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.write(data)
	return v
}

func (v *secretVolume) path() string { return filepath.Join(v.dir, SecretDataKey) }

// write projects data as keyring.json the way AtomicWriter.Write does, step by step.
func (v *secretVolume) write(data []byte) {
	v.t.Helper()
	v.writeFiles(map[string][]byte{SecretDataKey: data})
}

// writeFiles projects files (data key: content) the way AtomicWriter.Write does, step by step.
func (v *secretVolume) writeFiles(files map[string][]byte) {
	v.t.Helper()
	check := func(err error) {
		v.t.Helper()
		if err != nil {
			v.t.Fatalf("secret volume: %v", err)
		}
	}
	dataDir := filepath.Join(v.dir, "..data")
	// Find the current timestamped directory through the ..data symlink.
	oldTS, err := os.Readlink(dataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		check(err)
	}
	// Create a new timestamped directory and write the payload into it.
	tsDir, err := os.MkdirTemp(v.dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	check(err)
	check(os.Chmod(tsDir, 0o755))
	for key, data := range files {
		check(os.WriteFile(filepath.Join(tsDir, key), data, 0o644))
		// Create the user-visible symlink into ..data if it does not exist yet.
		visible := filepath.Join(v.dir, key)
		if _, err := os.Readlink(visible); errors.Is(err, os.ErrNotExist) {
			check(os.Symlink(filepath.Join("..data", key), visible))
		}
	}
	// Point ..data_tmp at the new directory and rename it over ..data: the atomic step.
	tmp := filepath.Join(v.dir, "..data_tmp")
	check(os.Symlink(filepath.Base(tsDir), tmp))
	check(os.Rename(tmp, dataDir))
	// Remove the previous timestamped directory.
	if oldTS != "" {
		check(os.RemoveAll(filepath.Join(v.dir, oldTS)))
	}
}

// watched is a started FileSource whose changes and errors arrive on channels.
type watched struct {
	*FileSource
	changes chan *Keyring
	errs    chan error
	stopped chan error
}

// keyringFile writes data as keyring.json in a new temporary folder and returns its path.
func keyringFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), SecretDataKey)
	writeFile(t, path, data)
	return path
}

// writeFile replaces the content of path, in place.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func startFileSource(t *testing.T, path string, opts ...FileOption) *watched {
	t.Helper()
	w := &watched{changes: make(chan *Keyring, 64), errs: make(chan error, 64), stopped: make(chan error, 1)}
	opts = append([]FileOption{WithErrorHandler(func(err error) {
		select {
		case w.errs <- err:
		default: // a test that does not read errors must not block the source
		}
	})}, opts...)
	s, err := NewFileSource(path, opts...)
	if err != nil {
		t.Fatalf("NewFileSource: %v", err)
	}
	s.OnChange(func(r *Keyring) { w.changes <- r })
	w.FileSource = s
	ctx, cancel := context.WithCancel(context.Background())
	go func() { w.stopped <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-w.stopped; err != nil {
			t.Errorf("Start returned %v", err)
		}
	})
	select {
	case <-s.watching:
	case <-time.After(awaitTimeout):
		t.Fatal("Start did not set up its watch")
	}
	return w
}

// awaitChange waits for the source to put want in service.
func (w *watched) awaitChange(t *testing.T, want *Keyring) {
	t.Helper()
	for {
		select {
		case got := <-w.changes:
			if got.Equal(want) {
				if !w.Keyring().Equal(want) {
					t.Fatalf("OnChange saw %v but Keyring() is %v", got, w.Keyring())
				}
				return
			}
			// An intermediate state (an in-place write seen half done would be an error, not a
			// change; a change to another keyring is a bug).
			t.Fatalf("changed to %v, want %v", got, want)
		case <-time.After(awaitTimeout):
			t.Fatalf("no change to %v; serving %v, last error %v", want, w.Keyring(), w.LastError())
		}
	}
}

// awaitError waits for a reported error that contains want.
func (w *watched) awaitError(t *testing.T, want string) error {
	t.Helper()
	for {
		select {
		case err := <-w.errs:
			if strings.Contains(err.Error(), want) {
				return err
			}
		case <-time.After(awaitTimeout):
			t.Fatalf("no error containing %q; last error %v", want, w.LastError())
		}
	}
}

func TestFileSourceFollowsKubeletSwaps(t *testing.T) {
	first, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	// A resync interval far beyond the test's length: every change must come from the watch.
	w := startFileSource(t, v.path(), WithDebounce(10*time.Millisecond), WithResyncInterval(time.Hour))
	if !w.Keyring().Equal(first) {
		t.Fatalf("initial keyring %v, want %v", w.Keyring(), first)
	}
	// The rotation's own sequence: accept, seal with new, remove; then once more.
	steps := [][]string{{"a", "b"}, {"b", "a"}, {"b"}, {"b", "c"}, {"c", "b"}, {"c"}}
	for i, ids := range steps {
		want, data := testKeyring(t, ids...)
		v.write(data)
		w.awaitChange(t, want)
		if got := w.Stats().Changes; got != uint64(i+1) {
			t.Errorf("after swap %d: Stats().Changes = %d, want %d", i+1, got, i+1)
		}
	}
	if err := w.LastError(); err != nil {
		t.Errorf("LastError = %v after valid updates", err)
	}
	// The helper really swapped directories: one timestamped directory is left.
	ts, _ := filepath.Glob(filepath.Join(v.dir, "..20*"))
	if len(ts) != 1 {
		t.Errorf("timestamped directories left: %v, want one", ts)
	}
}

func TestFileSourceStartCatchesUpWithChangesBeforeTheWatch(t *testing.T) {
	_, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	s, err := NewFileSource(v.path(), WithResyncInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	next, data := testKeyring(t, "b", "a")
	v.write(data) // no watch yet: no event will ever tell of this
	changed := make(chan *Keyring, 1)
	s.OnChange(func(r *Keyring) { changed <- r })
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	select {
	case r := <-changed:
		if !r.Equal(next) {
			t.Fatalf("changed to %v, want %v", r, next)
		}
	case <-time.After(awaitTimeout):
		t.Fatalf("Start did not pick up the change made before it; serving %v", s.Keyring())
	}
}

func TestFileSourceFollowsRegularFile(t *testing.T) {
	first, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	w := startFileSource(t, path, WithDebounce(10*time.Millisecond), WithResyncInterval(time.Hour))
	if !w.Keyring().Equal(first) {
		t.Fatalf("initial keyring %v, want %v", w.Keyring(), first)
	}

	// Rewritten in place: truncate and write, same inode.
	second, data := testKeyring(t, "b", "a")
	writeFile(t, path, data)
	w.awaitChange(t, second)

	// Replaced by rename, the way most config tools write.
	third, data := testKeyring(t, "c")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	w.awaitChange(t, third)
}

func TestFileSourceKeepsLastGoodKeyring(t *testing.T) {
	good, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	w := startFileSource(t, v.path(), WithDebounce(10*time.Millisecond), WithResyncInterval(time.Hour))

	secret := b64('S', 32)
	v.write([]byte(`{"keys":[{"id":"a","secret":"` + secret + `"},{"id":"a","secret":"` + secret + `"}]}`))
	err := w.awaitError(t, `keys[1] (id "a"): id already used by keys[0]`)
	if !strings.Contains(err.Error(), v.path()) {
		t.Errorf("error %q does not name the file", err)
	}
	if strings.Contains(err.Error(), secret[:12]) {
		t.Errorf("error %q shows the secret", err)
	}
	if !w.Keyring().Equal(good) {
		t.Errorf("after an invalid update: serving %v, want the last good %v", w.Keyring(), good)
	}
	if got := w.LastError(); got == nil || got.Error() != err.Error() {
		t.Errorf("LastError = %v, want %v", got, err)
	}
	if w.Stats().Errors == 0 {
		t.Error("Stats().Errors is 0 after an invalid update")
	}

	// Re-reading the same invalid file neither reports nor counts it again.
	errorsBefore := w.Stats().Errors
	if again := w.Reload(); again == nil || again.Error() != err.Error() {
		t.Errorf("Reload of the unchanged invalid file = %v, want %v", again, err)
	}
	if got := w.Stats().Errors; got != errorsBefore {
		t.Errorf("Stats().Errors went from %d to %d on an unchanged file", errorsBefore, got)
	}

	// An empty file, as a half-done write might leave, is just another invalid update.
	v.write(nil)
	_ = w.awaitError(t, "document is empty") // waiting for it is the assertion
	if !w.Keyring().Equal(good) {
		t.Errorf("after an empty update: serving %v, want %v", w.Keyring(), good)
	}

	// The next valid keyring is put in service and clears the error.
	next, data := testKeyring(t, "b", "a")
	v.write(data)
	w.awaitChange(t, next)
	if err := w.LastError(); err != nil {
		t.Errorf("LastError = %v after a valid update", err)
	}
}

func TestFileSourceRecoversWhenItsDirectoryIsReplaced(t *testing.T) {
	_, data := testKeyring(t, "a")
	dir := filepath.Join(t.TempDir(), "mount")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, SecretDataKey)
	writeFile(t, path, data)
	w := startFileSource(t, path, WithDebounce(10*time.Millisecond), WithResyncInterval(20*time.Millisecond))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_ = w.awaitError(t, "no such file or directory") // waiting for it is the assertion

	next, data := testKeyring(t, "b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, data)
	w.awaitChange(t, next)
}

// TestFileSourceConcurrentReads is for -race: readers call Keyring while the file is swapped.
func TestFileSourceConcurrentReads(t *testing.T) {
	_, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	w := startFileSource(t, v.path(), WithDebounce(0), WithResyncInterval(time.Hour))

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := w.Keyring()
				if r == nil || r.Len() == 0 || r.Primary().Len() < MinSecretBytes {
					t.Errorf("Keyring() returned an invalid keyring %v", r)
					return
				}
			}
		})
	}
	for i := range 10 {
		want, data := testKeyring(t, "k"+string(rune('a'+i)), "a")
		v.write(data)
		w.awaitChange(t, want)
		if err := w.Reload(); err != nil { // a manual reload racing the watch's is harmless
			t.Errorf("Reload: %v", err)
		}
	}
	close(stop)
	readers.Wait()
}

func TestFileSourceSkipsIdenticalKeyring(t *testing.T) {
	r, data := testKeyring(t, "a", "b")
	path := keyringFile(t, data)
	s, err := NewFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	notified := 0
	s.OnChange(func(*Keyring) { notified++ })

	for _, content := range [][]byte{
		data, // the same bytes
		append([]byte("\n  "), append(data, '\n')...), // the same keyring, other bytes
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	if notified != 0 || s.Stats().Changes != 0 {
		t.Errorf("an identical keyring notified %d listeners and counted %d changes", notified, s.Stats().Changes)
	}
	if s.Keyring() == nil || !s.Keyring().Equal(r) {
		t.Errorf("serving %v, want %v", s.Keyring(), r)
	}
	if got := s.Stats().Reloads; got != 2 {
		t.Errorf("Stats().Reloads = %d, want 2", got)
	}
}

func TestNewFileSourceFailsFast(t *testing.T) {
	dir := t.TempDir()
	_, data := testKeyring(t, "a")
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"keys":[{"id":"a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path string
		opts []FileOption
		want string
	}{
		"a missing file":           {filepath.Join(dir, "missing.json"), nil, "no such file"},
		"an invalid keyring":       {bad, nil, `keys[0] (id "a"): missing field "secret"`},
		"a negative debounce":      {good, []FileOption{WithDebounce(-time.Second)}, "debounce"},
		"a zero resync interval":   {good, []FileOption{WithResyncInterval(0)}, "resync interval"},
		"a negative resync period": {good, []FileOption{WithResyncInterval(-time.Second)}, "resync interval"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := NewFileSource(tc.path, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewFileSource = %v, %v; want an error containing %q", s, err, tc.want)
			}
		})
	}
}

func TestFileSourceStartTwice(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	w := startFileSource(t, path)
	if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("second Start = %v, want an error", err)
	}
	if w.NeedLeaderElection() {
		t.Error("NeedLeaderElection = true: followers would never reload")
	}
}

// TestSchedule checks the debounce and the periodic re-read with fake time (testing/synctest);
// no file system is involved.
func TestSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay, interval = 100 * time.Millisecond, 10 * time.Second
		ctx, cancel := context.WithCancel(t.Context())
		kicks := make(chan struct{})
		fired := make(chan bool, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			schedule(ctx, kicks, delay, interval, func(periodic bool) { fired <- periodic })
		}()
		start := time.Now() // fake: the bubble's clock
		at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
		expect := func(when string, want ...bool) {
			t.Helper()
			synctest.Wait() // schedule has handled everything due by now
			var got []bool
			for len(fired) > 0 {
				got = append(got, <-fired)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: fired %v, want %v", when, got, want)
			}
		}

		// A burst: each kick restarts the wait, so nothing fires until delay after the last one.
		for _, d := range []time.Duration{0, 99 * time.Millisecond, 198 * time.Millisecond} {
			at(d)
			kicks <- struct{}{}
		}
		at(297 * time.Millisecond)
		expect("during the burst")
		at(298 * time.Millisecond)
		expect("delay after the last kick", false)
		at(5 * time.Second)
		expect("once the burst has settled")

		// The periodic re-read fires on its own, and a pending debounce neither delays it nor is lost.
		at(interval - 50*time.Millisecond)
		kicks <- struct{}{}
		at(interval)
		expect("at the interval", true)
		at(interval + 50*time.Millisecond)
		expect("delay after the kick before the interval", false)
		at(2 * interval)
		expect("at the second interval", true)

		cancel()
		<-done
	})
}

// showsBytes reports the first encoding of b found in out: raw, hex, base64 or the decimal and Go
// spellings fmt uses for a byte slice or array. Nine bytes are plenty to recognise random bytes.
func showsBytes(out string, b []byte) (string, bool) {
	p := b[:9]
	dec := make([]string, len(p))
	for i, c := range p {
		dec[i] = strconv.Itoa(int(c))
	}
	forms := map[string]string{
		"raw":            string(p),
		"hex":            hex.EncodeToString(p),
		"HEX":            strings.ToUpper(hex.EncodeToString(p)),
		"base64":         base64.StdEncoding.EncodeToString(b)[:12],
		"base64url":      base64.RawURLEncoding.EncodeToString(b)[:12],
		"decimal bytes":  strings.Join(dec, " "),
		"decimal commas": strings.Join(dec, ","),
		"go bytes":       strings.TrimSuffix(fmt.Sprintf("%#v", p[:4])[len("[]byte{"):], "}"),
	}
	for name, f := range forms {
		if strings.Contains(out, f) {
			return name, true
		}
	}
	return "", false
}

// TestFileSourceOutputShowsNoKeyMaterial: a FileSource printed, logged or encoded shows its path, the
// ids and fingerprint of the keyring in service and its counters, never the SHA-256 of the file it
// read (which it keeps, to skip unchanged files) nor key bytes.
func TestFileSourceOutputShowsNoKeyMaterial(t *testing.T) {
	first, data := testKeyring(t, "a", "b")
	path := keyringFile(t, data)
	s, err := NewFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	firstSum := sha256.Sum256(data)
	next, data := testKeyring(t, "c", "a")
	writeFile(t, path, data)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	nextSum := sha256.Sum256(data)
	secret := map[string][]byte{"the first file's SHA-256": firstSum[:], "the file's SHA-256": nextSum[:]}
	for name, r := range map[string]*Keyring{"first": first, "next": next} {
		for _, k := range r.Keys() {
			secret["the secret of key "+k.ID()+" of the "+name+" keyring"] = k.Secret()
		}
	}
	for _, out := range []string{fmt.Sprint(nextSum), fmt.Sprintf("%x", nextSum), base64.StdEncoding.EncodeToString(nextSum[:])} {
		if _, shown := showsBytes(out, nextSum[:]); !shown { // the detector itself must work
			t.Fatalf("leak detector does not see the hash in %s", out)
		}
	}

	type holder struct {
		S *FileSource
		s *FileSource
	}
	h := holder{S: s, s: s}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T", "%10.3v"} {
		outputs["source "+verb] = fmt.Sprintf(verb, s)
		outputs["struct "+verb] = fmt.Sprintf(verb, h)
		outputs["&struct "+verb] = fmt.Sprintf(verb, &h)
		// fmt walks the fields of a copy, bypassing the methods: what a dump by reflection shows.
		outputs["copy "+verb] = fmt.Sprintf(verb, reflect.ValueOf(s).Elem())
	}
	outputs["String"] = s.String()
	outputs["GoString"] = s.GoString()
	outputs["error wrap"] = fmt.Errorf("source %v: %w", s, errors.New("x")).Error()
	structuredOutputs(t, outputs, map[string]any{"source": s, "struct": h}, fmt.Errorf("reload of %v", s), "source", s, "holder", h)

	for name, out := range outputs {
		for what, b := range secret {
			if form, shown := showsBytes(out, b); shown {
				t.Errorf("%s shows %s (%s): %s", name, what, form, out)
			}
		}
	}
	// What they do show is useful: the path, and the ids and fingerprint of the keyring in service.
	for _, name := range []string{"source %v", "source %+v", "source %#v", "json source", "slog text", "slog json", "logr funcr"} {
		out := outputs[name]
		for _, want := range []string{path, next.Fingerprint()} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not show %q: %s", name, want, out)
			}
		}
	}
	want := `{"path":"` + path + `","keyring":{"ids":["c","a"],"fingerprint":"` + next.Fingerprint() +
		`"},"reloads":1,"changes":1,"errors":0}`
	if got := outputs["json source"]; got != want {
		t.Errorf("json source = %s\nwant %s", got, want)
	}
	if got := fmt.Sprint((*FileSource)(nil)); got != "FileSource(nil)" {
		t.Errorf("a nil source prints as %q", got)
	}
}

// pauses records the retry waits of a FileSource instead of sleeping them.
type pauses struct {
	mu sync.Mutex
	d  []time.Duration
}

func (p *pauses) wait(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.d = append(p.d, d)
}

func (p *pauses) total() (sum time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.d {
		sum += d
	}
	return sum
}

// quietSource is a FileSource on path whose retries do not sleep and whose reported errors are
// kept, with a count of the reads of read (readFile by default; set it after construction).
type quietSource struct {
	*FileSource
	pauses   pauses
	reads    int
	read     func(path string) ([]byte, error)
	reported []error
}

func newQuietSource(t *testing.T, path string) *quietSource {
	t.Helper()
	q := &quietSource{read: readFile}
	s, err := NewFileSource(path, WithErrorHandler(func(err error) { q.reported = append(q.reported, err) }))
	if err != nil {
		t.Fatal(err)
	}
	s.wait = q.pauses.wait
	s.read = func(path string) ([]byte, error) {
		q.reads++
		return q.read(path)
	}
	q.FileSource = s
	return q
}

// TestFileSourceWaitsForAFileThatReappears: a read that finds no file, as one racing a ..data swap
// can, is retried with a growing pause, and a file that is back in time is not an error.
func TestFileSourceWaitsForAFileThatReappears(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	s := newQuietSource(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	next, data := testKeyring(t, "b")
	const appearsOn = 4
	s.read = func(path string) ([]byte, error) {
		if s.reads == appearsOn {
			writeFile(t, path, data)
		}
		return readFile(path)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload = %v, want nil once the file is back", err)
	}
	if len(s.reported) != 0 || s.Stats().Errors != 0 || s.LastError() != nil {
		t.Errorf("a file missing for %d reads was reported: %v (Errors %d, LastError %v)",
			appearsOn-1, s.reported, s.Stats().Errors, s.LastError())
	}
	if !s.Keyring().Equal(next) {
		t.Errorf("serving %v, want %v", s.Keyring(), next)
	}
	// Three reads find nothing, the fourth finds the file, the fifth confirms it.
	ms := time.Millisecond
	if want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms}; s.reads != appearsOn+1 || !slices.Equal(s.pauses.d, want) {
		t.Errorf("%d reads with pauses %v, want %d reads with pauses %v", s.reads, s.pauses.d, appearsOn+1, want)
	}
}

// TestFileSourceReportsAFileThatStaysMissing: the retries are bounded, and a file that is still
// missing after them is reported, once per reload.
func TestFileSourceReportsAFileThatStaysMissing(t *testing.T) {
	good, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	s := newQuietSource(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	err := s.Reload()
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Reload = %v, want a not-exist error naming %s", err, path)
	}
	if len(s.reported) != 1 || s.reported[0] != err || s.Stats().Errors != 1 || s.LastError() != err {
		t.Errorf("reported %v, Errors %d, LastError %v; want %v once", s.reported, s.Stats().Errors, s.LastError(), err)
	}
	if !s.Keyring().Equal(good) {
		t.Errorf("serving %v, want the last good %v", s.Keyring(), good)
	}
	if total := s.pauses.total(); s.reads < 4 || total < 100*time.Millisecond || total >= time.Second ||
		slices.Max(s.pauses.d) > 100*time.Millisecond {
		t.Errorf("%d reads with pauses %v (%v in all): want a few retries, at most 100 ms apart, well under a second in all",
			s.reads, s.pauses.d, total)
	}
}

// TestFileSourceReportsOtherReadErrorsAtOnce: only a missing file is worth waiting for.
func TestFileSourceReportsOtherReadErrorsAtOnce(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	s := newQuietSource(t, path)
	denied := fmt.Errorf("keyring: %w", &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission})
	s.read = func(string) ([]byte, error) { return nil, denied }
	if err := s.Reload(); err != denied {
		t.Fatalf("Reload = %v, want %v", err, denied)
	}
	if s.reads != 1 || len(s.pauses.d) != 0 || len(s.reported) != 1 {
		t.Errorf("%d reads, pauses %v, reported %v: want one read, no pause, reported once", s.reads, s.pauses.d, s.reported)
	}
}

// TestFileSourceRidesOutKubeletSwaps repeats the kubelet's swap of a Secret volume while Reload runs
// in a loop: a read that races the removal of the old timestamped directory finds no file, and that
// must be retried, not reported.
func TestFileSourceRidesOutKubeletSwaps(t *testing.T) {
	_, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	var mu sync.Mutex
	var reported []error
	var notFound atomic.Int64 // reads that raced a swap and found no file
	s, err := NewFileSource(v.path(), WithErrorHandler(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}), func(s *FileSource) {
		s.read = func(path string) ([]byte, error) {
			data, err := readFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				notFound.Add(1)
			}
			return data, err
		}
		// Yield instead of pausing: these swaps come every few milliseconds, a kubelet's minutes
		// apart; with real pauses the source would rightly find that the file kept changing.
		s.wait = func(time.Duration) { runtime.Gosched() }
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var reloaders sync.WaitGroup
	for range 2 {
		reloaders.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					_ = s.Reload() // failures go to the error handler
				}
			}
		})
	}
	// A read loses the race about once in a few hundred swaps: swap until two have, so that the
	// test cannot pass without the race having happened.
	const maxSwaps = 5000
	swaps := 0
	var last *Keyring
	for ; notFound.Load() < 2 && swaps < maxSwaps; swaps++ {
		last, data = testKeyring(t, fmt.Sprintf("k%d", swaps))
		before := s.Stats().Reloads
		v.write(data)
		// A kubelet swaps minutes apart: let a reload complete between two swaps. A writer that
		// outruns the readers (a loaded machine descheduling them) makes every read differ, and
		// the source would rightly report that the file kept changing.
		for s.Stats().Reloads < before+3 { // two reloaders: three starts mean one reload began and ended after the swap
			runtime.Gosched()
		}
	}
	close(done)
	reloaders.Wait()
	if notFound.Load() == 0 {
		// TestFileSourceWaitsForAFileThatReappears covers the missing file deterministically; here
		// the swaps still must not have raised an error.
		t.Logf("no read found the file missing in %d swaps: the race did not happen here", swaps)
	}
	if err := s.Reload(); err != nil {
		t.Errorf("Reload after the swaps: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 0 || s.Stats().Errors != 0 {
		t.Errorf("%d swaps, %d reloads: %d errors reported (Errors %d): %v",
			swaps, s.Stats().Reloads, len(reported), s.Stats().Errors, reported)
	}
	if !s.Keyring().Equal(last) {
		t.Errorf("serving %v after the swaps, want the last one written, %v", s.Keyring(), last)
	}
}

// mixableKeyrings returns two keyrings of the same ids and key lengths, their keyring.json, and the
// offset where the second key's entry starts: the same in both documents, so that the start of the
// new document followed by the end of the old one is a valid keyring of neither.
func mixableKeyrings(t *testing.T) (old, next *Keyring, oldData, nextData []byte, cut int) {
	t.Helper()
	old, oldData = testKeyring(t, "a", "b", "c")
	next, nextData = testKeyring(t, "a", "b")
	cut = bytes.Index(nextData, []byte(`{"id":"b"`))
	if cut < 0 || cut != bytes.Index(oldData, []byte(`{"id":"b"`)) {
		t.Fatalf("key b is not at the same offset in both documents")
	}
	return old, next, oldData, nextData, cut
}

// TestFileSourceNeverServesAHalfRewrittenFile: a writer rewrites the file in place without truncating
// it first: it writes the start of the new document, then the rest, then truncates. Read between
// the first two steps the file is a valid keyring, the new first key with the old other keys, and it
// must never be put in service.
func TestFileSourceNeverServesAHalfRewrittenFile(t *testing.T) {
	old, want, oldData, newData, cut := mixableKeyrings(t)
	mixedData := append(newData[:cut:cut], oldData[cut:]...)
	mixed, err := Parse(mixedData)
	if err != nil || mixed.Equal(old) || mixed.Equal(want) {
		t.Fatalf("the half-written file should be a third valid keyring: %v, %v", mixed, err)
	}
	path := filepath.Join(t.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, oldData, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newQuietSource(t, path)
	var served []*Keyring
	s.OnChange(func(r *Keyring) { served = append(served, r) })

	f, err := os.OpenFile(path, os.O_WRONLY, 0) // no O_TRUNC
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	step := func(do func() error) {
		if err := do(); err != nil {
			t.Fatal(err)
		}
	}
	step(func() error { _, err := f.WriteAt(newData[:cut], 0); return err })
	// The writer takes its next step after each read: the reader sees every state of the file.
	rest := []func() error{
		func() error { _, err := f.WriteAt(newData[cut:], int64(cut)); return err }, // new + the old tail
		func() error { return f.Truncate(int64(len(newData))) },                     // new
	}
	s.read = func(path string) ([]byte, error) {
		data, err := readFile(path)
		if len(rest) > 0 {
			step(rest[0])
			rest = rest[1:]
		}
		return data, err
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload = %v", err)
	}
	for _, r := range served {
		if r.Equal(mixed) {
			t.Errorf("the half-written keyring %v was put in service", r)
		}
	}
	if len(served) != 1 || !s.Keyring().Equal(want) {
		t.Errorf("served %v, now %v: want %v only", served, s.Keyring(), want)
	}
	if len(s.reported) != 0 {
		t.Errorf("the states of a rewrite in progress were reported: %v", s.reported)
	}

	// NewFileSource reads the same way.
	reads := 0
	s2, err := NewFileSource(path, func(s *FileSource) {
		s.wait = func(time.Duration) {}
		s.read = func(string) ([]byte, error) {
			if reads++; reads == 1 {
				return mixedData, nil
			}
			return newData, nil
		}
	})
	if err != nil || !s2.Keyring().Equal(want) {
		t.Errorf("NewFileSource during a rewrite: %v, %v; want %v", s2, err, want)
	}
}

// TestFileSourceReportsAFileThatKeepsChanging: a file that never reads the same twice is reported,
// after a bounded number of reads, and nothing of it is put in service.
func TestFileSourceReportsAFileThatKeepsChanging(t *testing.T) {
	good, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	s := newQuietSource(t, path)
	_, one := testKeyring(t, "b")
	_, other := testKeyring(t, "c")
	s.read = func(string) ([]byte, error) {
		if s.reads%2 == 0 {
			return other, nil
		}
		return one, nil
	}
	err := s.Reload()
	if err == nil || !strings.Contains(err.Error(), "kept changing") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Reload = %v, want an error saying %s kept changing", err, path)
	}
	if !s.Keyring().Equal(good) || s.Stats().Changes != 0 {
		t.Errorf("serving %v after %d changes, want the last good %v", s.Keyring(), s.Stats().Changes, good)
	}
	if len(s.reported) != 1 || s.LastError() != err {
		t.Errorf("reported %v, LastError %v; want %v once", s.reported, s.LastError(), err)
	}
	if total := s.pauses.total(); s.reads < 4 || total >= time.Second {
		t.Errorf("%d reads with pauses %v (%v in all): want a few, well under a second in all", s.reads, s.pauses.d, total)
	}
}

// The token-ttl file beside keyring.json (the Secret's second data key) is the longest token
// lifetime its owner declared: read with the keyring, followed when it alone changes, optional, and
// an invalid one is a reload error that keeps the last good keyring.
func TestFileSourceReadsTheDeclaredTokenTTL(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	ttlPath := filepath.Join(filepath.Dir(path), TokenTTLDataKey)
	writeFile(t, ttlPath, []byte("300"))
	s, err := NewFileSource(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Keyring().MaxTokenTTL(); got != 5*time.Minute {
		t.Fatalf("MaxTokenTTL = %v, want 5m", got)
	}
	changed := 0
	s.OnChange(func(*Keyring) { changed++ })
	writeFile(t, ttlPath, []byte("900\n"))
	if err := s.Reload(); err != nil || s.Keyring().MaxTokenTTL() != 15*time.Minute || changed != 1 {
		t.Fatalf("after token-ttl 900: %v, MaxTokenTTL %v, %d changes", err, s.Keyring().MaxTokenTTL(), changed)
	}
	for _, bad := range []string{"0", "901", "5m", "-1", "0300", ""} {
		writeFile(t, ttlPath, []byte(bad))
		if err := s.Reload(); err == nil || !strings.Contains(err.Error(), TokenTTLDataKey) {
			t.Errorf("token-ttl %q: Reload = %v, want an error naming %s", bad, err, TokenTTLDataKey)
		}
		if s.Keyring().MaxTokenTTL() != 15*time.Minute {
			t.Errorf("token-ttl %q replaced the keyring in service", bad)
		}
	}
	if err := os.Remove(ttlPath); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil || s.Keyring().MaxTokenTTL() != 0 {
		t.Fatalf("without token-ttl: %v, MaxTokenTTL %v; want none declared", err, s.Keyring().MaxTokenTTL())
	}
}

// The kubelet swaps keyring.json and token-ttl together. A reload reads both from the snapshot that
// ..data names and checks that ..data still names it afterwards: a swap between the two reads (here
// staged right after the second read of keyring.json, which agrees with the first) is read again, so
// the old keys never go into service with the new ceiling.
func TestFileSourceReadsBothFilesFromOneSnapshot(t *testing.T) {
	oldRing, oldData := testKeyring(t, "old")
	newRing, newData := testKeyring(t, "new")
	v := newSecretVolume(t, nil)
	v.writeFiles(map[string][]byte{SecretDataKey: oldData, TokenTTLDataKey: []byte("900")})
	s := newQuietSource(t, v.path())
	if !s.Keyring().Equal(oldRing.WithMaxTokenTTL(15 * time.Minute)) {
		t.Fatalf("first read: %v, %v", s.Keyring(), s.Keyring().MaxTokenTTL())
	}
	var served []*Keyring
	s.OnChange(func(r *Keyring) { served = append(served, r) })
	reads := 0
	s.read = func(path string) ([]byte, error) {
		data, err := readFile(path)
		if reads++; reads == 2 { // keyring.json settled, token-ttl not read yet
			v.writeFiles(map[string][]byte{SecretDataKey: newData, TokenTTLDataKey: []byte("60")})
		}
		return data, err
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if len(served) != 1 || !served[0].Equal(newRing.WithMaxTokenTTL(time.Minute)) {
		t.Fatalf("served %v, want only the new keyring with its 1m ceiling", served)
	}
	if len(s.reported) != 0 {
		t.Errorf("the swap was reported: %v", s.reported)
	}
	// LoadFile reads the same way.
	r, err := LoadFile(v.path())
	if err != nil || !r.Equal(newRing.WithMaxTokenTTL(time.Minute)) {
		t.Fatalf("LoadFile = %v, %v", r, err)
	}
}

// token-ttl is read with a bound: a huge file is refused as invalid, not read whole.
func TestFileSourceBoundsTokenTTL(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	writeFile(t, filepath.Join(filepath.Dir(path), TokenTTLDataKey), []byte("300"+strings.Repeat(" ", 1<<20)))
	if _, err := NewFileSource(path); err == nil || !strings.Contains(err.Error(), TokenTTLDataKey) {
		t.Fatalf("NewFileSource with a 1 MiB token-ttl: %v, want an error naming it", err)
	}
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), TokenTTLDataKey) {
		t.Fatalf("LoadFile with a 1 MiB token-ttl: %v, want an error naming it", err)
	}
}
