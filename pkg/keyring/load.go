package keyring

import (
	"errors"
	"fmt"
	"io"
	"os"
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
// one). Use NewFileSource to keep following the file as it changes.
func LoadFile(path string) (*Keyring, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parseFile(path, data)
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
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: a failed Close loses nothing
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("keyring: read %s: %w", path, err)
	}
	return data, nil
}
