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
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-dev/mrtr-operator/pkg/metrics"
)

// A FileSource tells its Recorder of the keyring it starts with, of each keyring it puts in
// service, and of each reload it refuses: once per invalid snapshot, as Stats counts them.
func TestFileSourceRecordsMetrics(t *testing.T) {
	first, data := testKeyring(t, "a")
	v := newSecretVolume(t, data)
	rec := &metrics.Text{}
	s, err := NewFileSource(v.path(), WithMetrics(rec), WithResyncInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Fingerprint(); got != first.Fingerprint() {
		t.Fatalf("fingerprint at start = %q, want %q", got, first.Fingerprint())
	}

	v.write([]byte(`{"keys":[]}`))
	if err := s.Reload(); err == nil {
		t.Fatal("Reload of an empty keyring succeeded")
	}
	if err := s.Reload(); err == nil {
		t.Fatal("Reload of the same empty keyring succeeded")
	}
	if got := rec.ReloadFailures(); got != 1 {
		t.Errorf("reload failures = %d after one invalid snapshot read twice, want 1", got)
	}
	if got := rec.Fingerprint(); got != first.Fingerprint() {
		t.Errorf("fingerprint after a refused reload = %q, want the last good %q", got, first.Fingerprint())
	}

	next, data := testKeyring(t, "b", "a")
	v.write(data)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := rec.Fingerprint(); got != next.Fingerprint() {
		t.Errorf("fingerprint after a rotation = %q, want %q", got, next.Fingerprint())
	}
	if got := rec.ReloadFailures(); got != 1 {
		t.Errorf("reload failures = %d after a good reload, want still 1", got)
	}
}

// A snapshot that stays unreadable for one reason is one failure, as one that stays invalid is: the
// count does not grow at every re-read (every consumer counts alike, whatever its poll interval).
// Another reason counts again, and so does the same one after a readable snapshot.
func TestFileSourceCountsAnUnreadableSnapshotOnce(t *testing.T) {
	_, data := testKeyring(t, "a")
	path := keyringFile(t, data)
	rec := &metrics.Text{}
	s, err := NewFileSource(path, WithMetrics(rec), WithResyncInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var reported []error
	s.onError = func(err error) { reported = append(reported, err) }
	denied := fmt.Errorf("keyring: %w", &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission})
	failing := func(string) ([]byte, error) { return nil, denied }
	s.read = failing
	for range 3 {
		if err := s.Reload(); err != denied {
			t.Fatalf("Reload = %v, want %v", err, denied)
		}
	}
	if got := rec.ReloadFailures(); got != 1 || len(reported) != 1 || s.Stats().Errors != 1 || s.LastError() != denied {
		t.Errorf("one unreadable snapshot read 3 times: %d failures counted, %d reported, Errors %d, LastError %v; want 1, 1, 1, %v",
			got, len(reported), s.Stats().Errors, s.LastError(), denied)
	}
	broken := fmt.Errorf("keyring: %w", &fs.PathError{Op: "read", Path: path, Err: syscall.EIO})
	s.read = func(string) ([]byte, error) { return nil, broken }
	_ = s.Reload()
	if got := rec.ReloadFailures(); got != 2 {
		t.Errorf("another read error: %d failures counted, want 2", got)
	}
	s.read = readFile
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	s.read = failing
	_ = s.Reload()
	if got := rec.ReloadFailures(); got != 3 || len(reported) != 3 {
		t.Errorf("the first read error again after a readable snapshot: %d counted, %d reported; want 3, 3", got, len(reported))
	}
}
