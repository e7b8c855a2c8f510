package keyring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// awaitTimeout only bounds a wait for something that must happen; no test passes by waiting for it.
const awaitTimeout = 20 * time.Second

// secretVolume reproduces the kubelet's AtomicWriter (kubernetes pkg/volume/util/atomic_writer.go)
// for a Secret with the single key keyring.json:
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

// write projects data the way AtomicWriter.Write does, step by step.
func (v *secretVolume) write(data []byte) {
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
	check(os.WriteFile(filepath.Join(tsDir, SecretDataKey), data, 0o644))
	// Create the user-visible symlink into ..data if it does not exist yet.
	visible := filepath.Join(v.dir, SecretDataKey)
	if _, err := os.Readlink(visible); errors.Is(err, os.ErrNotExist) {
		check(os.Symlink(filepath.Join("..data", SecretDataKey), visible))
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
	path := filepath.Join(t.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	w := startFileSource(t, path, WithDebounce(10*time.Millisecond), WithResyncInterval(time.Hour))
	if !w.Keyring().Equal(first) {
		t.Fatalf("initial keyring %v, want %v", w.Keyring(), first)
	}

	// Rewritten in place: truncate and write, same inode.
	second, data := testKeyring(t, "b", "a")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
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
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	w := startFileSource(t, path, WithDebounce(10*time.Millisecond), WithResyncInterval(20*time.Millisecond))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_ = w.awaitError(t, "no such file or directory") // waiting for it is the assertion

	next, data := testKeyring(t, "b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
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
	path := filepath.Join(t.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
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
	path := filepath.Join(t.TempDir(), SecretDataKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
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
