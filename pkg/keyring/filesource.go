package keyring

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
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
// A FileSource follows a whole Secret volume or a plain file replaced or rewritten in place. It
// cannot follow a subPath mount: the kubelet never updates those.
//
// A FileSource is safe for concurrent use; Keyring never blocks.
type FileSource struct {
	path     string
	dir      string
	debounce time.Duration
	resync   time.Duration
	onError  func(error)

	current atomic.Pointer[Keyring]

	// reloadMu serialises reloads, so that swaps and notifications happen in the order the file
	// was read. It guards lastSum.
	reloadMu sync.Mutex
	lastSum  [sha256.Size]byte // of the bytes last read, valid or not; zero after a read error

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
	// stays invalid is counted once, not on every re-read; one that stays unreadable, on every one.
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
// The error names the file and the bad entry, never key material. It is called on the goroutine that
// reloads and must not call Reload.
func WithErrorHandler(f func(error)) FileOption { return func(s *FileSource) { s.onError = f } }

// NewFileSource reads and validates the keyring at path, following symlinks. It fails if the file
// cannot be read or is not a valid keyring: a workload should not start without keys. Call Start to
// follow changes.
func NewFileSource(path string, opts ...FileOption) (*FileSource, error) {
	s := &FileSource{
		path:     path,
		dir:      filepath.Dir(path),
		debounce: DefaultDebounce,
		resync:   DefaultResyncInterval,
		watching: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.debounce < 0 {
		return nil, fmt.Errorf("keyring: file source %s: debounce %v is negative", path, s.debounce)
	}
	if s.resync <= 0 {
		return nil, fmt.Errorf("keyring: file source %s: resync interval %v must be positive", path, s.resync)
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	r, err := parseFile(path, data)
	if err != nil {
		return nil, err
	}
	s.lastSum = sha256.Sum256(data)
	s.current.Store(r)
	return s, nil
}

// Keyring returns the keyring in service. It never blocks and never returns nil.
func (s *FileSource) Keyring() *Keyring { return s.current.Load() }

// Path is the file the source reads.
func (s *FileSource) Path() string { return s.path }

// OnChange registers f to be called with each new keyring after it is put in service: only when the
// keyring changed, not for the one in service at registration (read that with Keyring). Listeners
// run one at a time, in registration order, on the goroutine that reloads; they must return quickly
// and must not call Reload.
func (s *FileSource) OnChange(f func(*Keyring)) {
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
// the error of this attempt; on error the keyring in service is unchanged. Start calls it; call it
// yourself to reload on a signal, for instance.
func (s *FileSource) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.reloads.Add(1)

	data, err := readFile(s.path)
	if err != nil {
		s.lastSum = [sha256.Size]byte{} // so the same bytes are parsed again once readable
		s.setLastErr(err)
		s.report(err)
		return err
	}
	sum := sha256.Sum256(data)
	if sum == s.lastSum {
		// Nothing new: the periodic re-read of an unchanged file, or an event about another file.
		// A file that is still invalid keeps its error without reporting it again.
		return s.LastError()
	}
	s.lastSum = sum
	r, err := parseFile(s.path, data)
	if err != nil {
		s.setLastErr(err)
		s.report(err)
		return err
	}
	s.setLastErr(nil)
	if r.Equal(s.current.Load()) { // same keys, other spelling (whitespace, field order)
		return nil
	}
	s.current.Store(r)
	s.changes.Add(1)
	s.mu.Lock()
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, f := range listeners {
		f(r)
	}
	return nil
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
