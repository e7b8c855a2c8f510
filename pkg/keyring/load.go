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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// ErrEnvUnset is returned by FromEnv when MRTR_KEYRING is not set at all, so that a workload can
// fall back to another source. A variable that is set but empty or invalid is a plain error.
var ErrEnvUnset = errors.New("keyring: environment variable " + EnvVar + " is not set")

// FromEnv parses the keyring.json text in the MRTR_KEYRING environment variable. A keyring from the
// environment only changes when the pod restarts; wrap it with Static to use it as a Source.
func FromEnv() (*Keyring, error) {
	v, ok := os.LookupEnv(EnvVar)
	if !ok {
		return nil, ErrEnvUnset
	}
	r, err := Parse([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("keyring: $%s: %w", EnvVar, err)
	}
	return r, nil
}

// LoadFile reads and parses a keyring.json file once, following symlinks (a mounted Secret's file is
// one), with the token-ttl file beside it if there is one (Keyring.MaxTokenTTL), both from one
// snapshot of a Secret volume as NewFileSource reads them. Use NewFileSource to keep following the
// files as they change.
func LoadFile(path string) (*Keyring, error) {
	var (
		content []byte
		err     error
	)
	// A read that races a kubelet swap finds the old snapshot gone: the new one is in place by then.
	for range 3 {
		if content, err = readSnapshot(path, readFile); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return parseSnapshot(path, content)
}

// The kubelet's atomic writer lays a Secret volume out as
//
//	<dir>/keyring.json -> ..data/keyring.json
//	<dir>/token-ttl    -> ..data/token-ttl
//	<dir>/..data       -> ..2026_07_01_10_00_00.123456789
//
// and updates it by writing a new timestamped directory, swapping ..data over to it in one rename
// and only then removing the old directory: a timestamped directory never changes while ..data
// names it.

// dataLink is the symlink of the atomic writer that names the current snapshot.
const dataLink = "..data"

// maxTokenTTLFileBytes bounds a read of token-ttl: "900\n" is the longest valid content, and a
// longer file is refused by ParseTokenTTL without being read whole.
const maxTokenTTLFileBytes = 16

// readSnapshot reads the keyring file at path with read and, if it is there, the token-ttl file
// beside it, and returns them as one content (see snapshotContent). If the file is a symlink and its
// directory has the atomic writer's ..data link, both are read from the directory that link names,
// and the link is read again afterwards: if it changed, a swap happened between the reads and the
// result is an fs.ErrNotExist error, to retry. So the two files always come from one
// snapshot: never the old keyring with the new token-ttl. Each read is bounded (MaxDocumentBytes+1,
// maxTokenTTLFileBytes+1 bytes).
func readSnapshot(path string, read func(string) ([]byte, error)) ([]byte, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	snap, link := dir, filepath.Join(dir, dataLink)
	target, linkErr := "", fs.ErrNotExist
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 { // not a plain file
		target, linkErr = os.Readlink(link)
	}
	if linkErr == nil {
		snap = target
		if !filepath.IsAbs(target) {
			snap = filepath.Join(dir, target)
		}
	}
	data, err := read(filepath.Join(snap, name))
	if err != nil {
		return nil, err
	}
	ttl, err := readLimited(filepath.Join(snap, TokenTTLDataKey), maxTokenTTLFileBytes+1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if linkErr == nil {
		if again, err := os.Readlink(link); err != nil || again != target {
			return nil, fmt.Errorf("keyring: %s changed while it was read: %w", link, fs.ErrNotExist)
		}
	}
	if err != nil { // no token-ttl in this snapshot
		return slices.Concat(data, []byte{0}), nil
	}
	return slices.Concat(data, ttl, []byte{byte(len(ttl)), 1}), nil
}

// snapshotContent splits what readSnapshot returned: keyring.json's bytes, then, if there is a
// token-ttl file, its bytes (at most maxTokenTTLFileBytes+1) and their length as one byte, and last
// a byte saying whether there is one. Read from the end, so that any bytes of keyring.json, a NUL
// included, stay keyring.json's.
func snapshotContent(content []byte) (data, ttl []byte, hasTTL bool) {
	end := len(content) - 1
	if content[end] == 0 {
		return content[:end], nil, false
	}
	n := int(content[end-1])
	return content[:end-1-n], content[end-1-n : end-1], true
}

// parseSnapshot builds the keyring from what readSnapshot returned for path.
func parseSnapshot(path string, content []byte) (*Keyring, error) {
	data, ttl, hasTTL := snapshotContent(content)
	r, err := parseFile(path, data)
	if err != nil || !hasTTL {
		return r, err
	}
	d, err := ParseTokenTTL(ttl)
	if err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", filepath.Join(filepath.Dir(path), TokenTTLDataKey), err)
	}
	return r.WithMaxTokenTTL(d), nil
}

// parseFile parses data, read from path, naming the file in the error.
func parseFile(path string, data []byte) (*Keyring, error) {
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", path, err)
	}
	return r, nil
}

// readFile reads at most MaxDocumentBytes+1 bytes, enough for Parse to report an oversized file
// without reading all of it.
func readFile(path string) ([]byte, error) { return readLimited(path, MaxDocumentBytes+1) }

// readLimited reads at most limit bytes of the file at path.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: a failed Close loses nothing
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("keyring: read %s: %w", path, err)
	}
	return data, nil
}
