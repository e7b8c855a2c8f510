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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// Defaults of a FileSource.
const (
	// DefaultDebounce is how long a FileSource waits after the last file-system event before it
	// re-reads. The kubelet replaces a Secret volume in one atomic rename, but that rename comes
	// with a burst of events (new directory, ..data_tmp, ..data, removal of the old directory);
	// this is long enough to see the burst as one change and short enough not to matter.
	DefaultDebounce = 100 * time.Millisecond
	// DefaultResyncInterval is how often a FileSource re-reads the file even without an event: the
	// safety net for a watch that missed an event, overflowed or could not be set up.
	DefaultResyncInterval = 10 * time.Second
)

// A reload reads the file until two reads in a row return the same bytes (see FileSource), pausing
// settleFirstWait before the second read and twice as long before each next one, up to
// settleMaxWait, for settleReads reads at most: 355 ms of pauses in all, ample for a ..data swap or
// a small rewrite to finish, and short enough to keep a reload quick.
const (
	settleFirstWait = 5 * time.Millisecond
	settleMaxWait   = 100 * time.Millisecond
	settleReads     = 8
)

// FileSource is a Source that follows a keyring.json file, typically the key of a mounted Secret
// volume, so a workload picks up a rotated keyring without a restart.
//
// It reads the file once in NewFileSource and fails if that keyring is not valid. Start then keeps
// it current: it watches the file's directory (the kubelet replaces a Secret volume by swapping a
// ..data symlink, which a watch on the file itself would not survive), waits for a burst of events
// to settle, and re-reads periodically in case an event was missed. A new keyring is parsed and
// validated in full before it replaces the old one, so Keyring always returns a valid keyring; an
// invalid or unreadable file is reported (LastError, Stats, WithErrorHandler) and the last good
// keyring stays in service until a valid one appears.
//
// A reload accepts the file only once two reads in a row, at least 5 ms apart, return the same
// bytes. A read that finds no file, or other bytes than the read before, is retried after a pause
// that doubles up to 100 ms; after 8 reads (355 ms of pauses) the reload fails with the last read's
// error or with one saying the file kept changing, and the next event or resync tries again. So:
//
//   - Replacing the file atomically is always safe: the kubelet's ..data swap of a Secret volume, or
//     a new file renamed over the old one. Every read sees a whole file, and a read that races the
//     swap and finds no file (the old timestamped directory was just removed) is retried, not
//     reported.
//   - Rewriting the file in place is safe only if no intermediate state lasts 5 ms or more. A read
//     sees whatever has been written so far, and a writer that does not truncate first can leave,
//     for a moment, the start of the new document followed by the end of the old one: a valid
//     keyring of keys from both. Two reads that both fall within one such moment cannot tell it
//     from a finished file and put it in service. A short document written in one call, as
//     os.WriteFile does, is in practice safe; a writer that can stall between two writes (a slow or
//     network file system, a stopped or starved process) is not: rename a new file instead.
//   - A subPath mount is not followed at all: the kubelet never updates those.
//
// The token-ttl file beside keyring.json (TokenTTLDataKey), if there is one, is read with it, as part
// of every read: in a Secret volume both come from the one timestamped directory that ..data names,
// and a read during which ..data moved is retried, so a keyring never goes into service with another
// snapshot's token-ttl. Each file is read with a size limit (MaxDocumentBytes, and a few bytes for
// token-ttl).
//
// A FileSource is safe for concurrent use; Keyring never blocks.
//
// Printed, logged or encoded as JSON, a FileSource shows its path, the ids and fingerprint of the
// keyring in service and its counters (see redact.go), never key bytes or a hash of the file.
type FileSource struct {
	path     string
	dir      string
	debounce time.Duration
	resync   time.Duration
	onError  func(error)
	rec      metrics.Recorder
	read     func(path string) ([]byte, error) // readFile; tests interpose to see or stage each read
	wait     func(time.Duration)               // the pause between reads, time.Sleep; tests record it

	current atomic.Pointer[Keyring]

	// reloadMu serialises reloads, so that swaps and notifications happen in the order the file
	// was read. It guards lastSum and lastUnread.
	reloadMu sync.Mutex
	// lastSum is the SHA-256 of the bytes last read, valid or not; nil after a read error. Like a
	// Key's bytes it is held in a closure, so that a printer walking the fields of a copy shows a
	// func address: a hash of keyring.json would let whoever sees it check a guess of the keys.
	lastSum func() [sha256.Size]byte
	// lastUnread is the error text of the last reload when it could not read the snapshot, "" after
	// any reload that could: the same read error again is not reported again.
	lastUnread string

	mu        sync.Mutex // guards listeners and lastErr
	listeners []func(*Keyring)
	lastErr   error

	errMu sync.Mutex // serialises onError: the reload loop and the watch both report

	reloads, changes, failures atomic.Uint64
	started                    atomic.Bool
	watching                   chan struct{} // closed once Start has set up its watch; for tests
}

// FileSourceStats counts what a FileSource did since it was created. All counters only grow.
type FileSourceStats struct {
	// Reloads counts attempts to read the file after the first one.
	Reloads uint64
	// Changes counts reloads that put a different keyring in service.
	Changes uint64
	// Errors counts reloads that failed (unreadable or invalid file) and watch failures. A file that
	// stays invalid is counted once, not on every re-read, and so is one that stays unreadable for
	// the same reason (the same error); another reason, or the same after a readable snapshot, counts
	// again.
	Errors uint64
}

// FileOption configures a FileSource.
type FileOption func(*FileSource)

// WithDebounce sets how long to wait after the last file-system event before re-reading; every event
// restarts the wait. Zero re-reads on every event. The default is DefaultDebounce.
func WithDebounce(d time.Duration) FileOption { return func(s *FileSource) { s.debounce = d } }

// WithResyncInterval sets how often the file is re-read even without an event. It must be positive.
// The default is DefaultResyncInterval.
func WithResyncInterval(d time.Duration) FileOption { return func(s *FileSource) { s.resync = d } }

// WithErrorHandler sets a function called with every reload or watch failure, for logs and metrics.
// The error names the file and the bad entry, never key material. A file caught changing (missing
// during a ..data swap, or different from one read to the next) is not a failure unless it is still
// so after the retries (see FileSource). It is called on the goroutine that reloads and must not call
// Reload.
func WithErrorHandler(f func(error)) FileOption { return func(s *FileSource) { s.onError = f } }

// WithMetrics sets the Recorder told of every keyring put in service (the first one, read by
// NewFileSource, too) by its fingerprint, and of every failed reload (counted as the Errors of
// Stats are, watch failures aside). The default records nothing.
func WithMetrics(r metrics.Recorder) FileOption {
	return func(s *FileSource) { s.rec = metrics.OrNop(r) }
}

// NewFileSource reads and validates the keyring at path, following symlinks, reading until two reads
// agree as Reload does. It fails if the file cannot be read or is not a valid keyring: a workload
// should not start without keys. Call Start to follow changes.
func NewFileSource(path string, opts ...FileOption) (*FileSource, error) {
	s := &FileSource{
		path:     path,
		dir:      filepath.Dir(path),
		debounce: DefaultDebounce,
		resync:   DefaultResyncInterval,
		watching: make(chan struct{}),
		read:     readFile,
		wait:     time.Sleep,
		rec:      metrics.Nop{},
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("keyring: file source %s: nil FileOption", path)
		}
		o(s)
	}
	if s.debounce < 0 {
		return nil, fmt.Errorf("keyring: file source %s: debounce %v is negative", path, s.debounce)
	}
	if s.resync <= 0 {
		return nil, fmt.Errorf("keyring: file source %s: resync interval %v must be positive", path, s.resync)
	}
	data, err := s.readFiles()
	if err != nil {
		return nil, err
	}
	r, err := s.parseFiles(data)
	if err != nil {
		return nil, err
	}
	s.lastSum = contentSum(data)
	s.current.Store(r)
	s.rec.KeyringInService(r.Fingerprint())
	return s, nil
}

// readFiles reads keyring.json and token-ttl from one snapshot (see readSnapshot), settled (see
// readSettled).
func (s *FileSource) readFiles() ([]byte, error) { return s.readSettled() }

// parseFiles builds the keyring from what readFiles returned.
func (s *FileSource) parseFiles(content []byte) (*Keyring, error) {
	return parseSnapshot(s.path, content)
}

// Keyring returns the keyring in service. It never blocks and never returns nil, except for a nil
// source (a nil *FileSource stored in a Source), so that a codec given one refuses it as a
// configuration error instead of crashing.
func (s *FileSource) Keyring() *Keyring {
	if s == nil {
		return nil
	}
	return s.current.Load()
}

// Path is the file the source reads.
func (s *FileSource) Path() string { return s.path }

// OnChange registers f to be called with each new keyring after it is put in service: only when the
// keyring changed, not for the one in service at registration (read that with Keyring). Listeners
// run one at a time, in registration order, on the goroutine that reloads; they must return quickly
// and must not call Reload. A nil f is ignored.
func (s *FileSource) OnChange(f func(*Keyring)) {
	if f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

// LastError is the error of the most recent reload, or nil if it succeeded (or found nothing new):
// while it is not nil, the file holds something that could not be put in service and the source
// serves the last valid keyring. Watch failures are not reload errors; they go to the error handler
// and the Errors counter only, as the periodic re-read covers them.
func (s *FileSource) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Stats returns the counters.
func (s *FileSource) Stats() FileSourceStats {
	return FileSourceStats{Reloads: s.reloads.Load(), Changes: s.changes.Load(), Errors: s.failures.Load()}
}

// NeedLeaderElection returns false: every replica must follow its keyring, so as a controller-runtime
// Runnable the source runs on leaders and followers alike.
func (s *FileSource) NeedLeaderElection() bool { return false }

// Reload reads the file now and puts its keyring in service if it is valid and different. It returns
// the error of this attempt; on error the keyring in service is unchanged. It takes at least one
// pause of 5 ms, and up to about a third of a second while the file is changing (see FileSource).
// Start calls it; call it yourself to reload on a signal, for instance.
func (s *FileSource) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.reloads.Add(1)

	data, err := s.readFiles()
	if err != nil {
		s.lastSum = nil // so the same bytes are parsed again once readable
		s.setLastErr(err)
		// A snapshot that stays unreadable for the same reason is one failure, as one that stays
		// invalid is: counted per failure, not per re-read, the count does not depend on how often
		// a consumer re-reads (every consumer, in every language, counts alike).
		if msg := err.Error(); msg != s.lastUnread {
			s.lastUnread = msg
			s.rec.ReloadFailed()
			s.report(err)
		}
		return err
	}
	s.lastUnread = ""
	sum := contentSum(data)
	if s.lastSum != nil && s.lastSum() == sum() {
		// Nothing new: the periodic re-read of an unchanged file, or an event about another file.
		// A file that is still invalid keeps its error without reporting it again.
		return s.LastError()
	}
	s.lastSum = sum
	r, err := s.parseFiles(data)
	if err != nil {
		s.setLastErr(err)
		s.rec.ReloadFailed()
		s.report(err)
		return err
	}
	s.setLastErr(nil)
	if r.Equal(s.current.Load()) { // same keys, other spelling (whitespace, field order)
		return nil
	}
	s.current.Store(r)
	s.changes.Add(1)
	s.rec.KeyringInService(r.Fingerprint())
	s.mu.Lock()
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, f := range listeners {
		f(r)
	}
	return nil
}

// readSettled reads the files (readSnapshot) until two reads in a row return the same bytes, and
// returns them: one read may catch an in-place rewrite half done, and a half-written keyring can be
// valid. A read that finds no file is retried too: during a ..data swap, a read that followed the
// old ..data finds the old directory removed. Any other read error is returned at once, as waiting would not help. If the
// reads never settle, the error is the last read's (the file is still missing) or says that the
// file kept changing.
func (s *FileSource) readSettled() ([]byte, error) {
	var (
		prev     []byte // the bytes of the previous read, if it found the file
		havePrev bool
		err      error // the previous read's error
		pause    = settleFirstWait
		paused   time.Duration
	)
	for i := range settleReads {
		if i > 0 {
			s.wait(pause)
			paused += pause
			pause = min(2*pause, settleMaxWait)
		}
		data, rerr := readSnapshot(s.path, s.read)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, rerr
		}
		if rerr == nil && havePrev && bytes.Equal(data, prev) {
			return data, nil
		}
		prev, havePrev, err = data, rerr == nil, rerr
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("keyring: %s kept changing: %d reads over %v, no two in a row the same "+
		"(if it is rewritten in place, rename a new file over it instead)", s.path, settleReads, paused)
}

// contentSum hashes data into a closure (see FileSource.lastSum).
func contentSum(data []byte) func() [sha256.Size]byte {
	sum := sha256.Sum256(data)
	return func() [sha256.Size]byte { return sum }
}

// report counts err and hands it to the error handler.
func (s *FileSource) report(err error) {
	s.failures.Add(1)
	if s.onError != nil {
		s.errMu.Lock()
		defer s.errMu.Unlock()
		s.onError(err)
	}
}

func (s *FileSource) setLastErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
}

// Start follows the file until ctx is done, then returns nil. It returns an error only if no
// watcher can be created at all (the inotify limits of the node, for instance), or if it was
// already started. Start with the signature of controller-runtime's Runnable, so
// mgr.Add(source) runs it.
func (s *FileSource) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("keyring: file source " + s.path + ": already started")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("keyring: watch %s: %w", s.dir, err)
	}
	// Close fails only if the watcher is already closed; on the way out there is nothing to act on.
	defer func() { _ = w.Close() }()
	s.ensureWatch(w)
	// Whatever changed between NewFileSource and the watch being in place raised no event: read
	// once now rather than wait for the first resync.
	_ = s.Reload()
	close(s.watching)

	// Every event in the directory is a reason to re-read: the visible file is usually a symlink,
	// and the events of a kubelet update are about ..data and timestamped directories, never about
	// the file itself. Re-reading is cheap and a content hash drops what did not change.
	kicks := make(chan struct{}, 1)
	kick := func() {
		select {
		case kicks <- struct{}{}:
		default: // a kick is already pending; the debounce coalesces them anyway
		}
	}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name == s.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
					s.ensureWatch(w) // the directory itself went away: the watch is gone
				}
				kick()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflow means events were lost: report it and re-read to be safe.
				s.report(fmt.Errorf("keyring: watch %s: %w", s.dir, err))
				kick()
			}
		}
	}()

	schedule(ctx, kicks, s.debounce, s.resync, func(periodic bool) {
		if periodic {
			s.ensureWatch(w)
		}
		_ = s.Reload() // failures are reported by Reload itself
	})
	<-pumped
	return nil
}

// ensureWatch (re-)adds the watch on the directory if it is not in place, which happens after the
// directory was removed, or if adding it failed before. A failure is reported; the periodic re-read
// keeps the source current meanwhile and retries.
func (s *FileSource) ensureWatch(w *fsnotify.Watcher) {
	if slices.Contains(w.WatchList(), s.dir) {
		return
	}
	if err := w.Add(s.dir); err != nil {
		s.report(fmt.Errorf("keyring: watch %s: %w", s.dir, err))
	}
}

// schedule calls fire(false) once kicks have been quiet for delay (every kick restarts the wait, a
// trailing debounce) and fire(true) every interval, until ctx is done. It is the time-dependent part
// of Start, kept free of I/O so it can be tested with fake time.
func schedule(ctx context.Context, kicks <-chan struct{}, delay, interval time.Duration, fire func(periodic bool)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	settle := time.NewTimer(delay)
	settle.Stop() // armed by the first kick; since Go 1.23 Stop and Reset leave no stale tick behind
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kicks:
			settle.Reset(delay)
		case <-settle.C:
			fire(false)
		case <-ticker.C:
			fire(true)
		}
	}
}

// A FileSource is shown the way a Keyring is (see redact.go): every printer, logger and encoder
// gets the path, the ids and fingerprint of the keyring in service and the counters, and nothing
// else, so none falls through to fmt's reflection on the fields.

// fileSourceView is what structured output sees of a FileSource.
type fileSourceView struct {
	Path    string      `json:"path"`
	Keyring keyringView `json:"keyring"`
	Reloads uint64      `json:"reloads"`
	Changes uint64      `json:"changes"`
	Errors  uint64      `json:"errors"`
}

func (s *FileSource) view() fileSourceView {
	st := s.Stats()
	v := fileSourceView{Path: s.path, Reloads: st.Reloads, Changes: st.Changes, Errors: st.Errors}
	if r := s.Keyring(); r != nil { // nil only in a FileSource not made by NewFileSource
		v.Keyring = r.view()
	}
	return v
}

// String prints the path, the keyring in service (ids and fingerprint) and the counters. A nil
// source prints as FileSource(nil).
func (s *FileSource) String() string {
	if s == nil {
		return "FileSource(nil)"
	}
	st := s.Stats()
	return fmt.Sprintf("FileSource{path: %q, keyring: %v, reloads: %d, changes: %d, errors: %d}",
		s.path, s.Keyring(), st.Reloads, st.Changes, st.Errors)
}

// GoString keeps %#v as safe as %v.
func (s *FileSource) GoString() string { return s.String() }

// Format writes String for every verb; %q quotes it.
func (s *FileSource) Format(f fmt.State, verb rune) { writeRedacted(f, verb, s.String()) }

// MarshalJSON encodes {"path":...,"keyring":{"ids":[...],"fingerprint":...},"reloads":...,
// "changes":...,"errors":...}, or null for a nil source.
func (s *FileSource) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return json.Marshal(s.view())
}

// MarshalLog implements logr.Marshaler: what MarshalJSON encodes.
func (s *FileSource) MarshalLog() any {
	if s == nil {
		return nil
	}
	return s.view()
}

// LogValue implements slog.LogValuer: a group of path, keyring (ids and fingerprint), reloads,
// changes and errors.
func (s *FileSource) LogValue() slog.Value {
	if s == nil {
		return slog.StringValue("FileSource(nil)")
	}
	st := s.Stats()
	return slog.GroupValue(slog.String("path", s.path), slog.Attr{Key: "keyring", Value: s.Keyring().LogValue()},
		slog.Uint64("reloads", st.Reloads), slog.Uint64("changes", st.Changes), slog.Uint64("errors", st.Errors))
}
