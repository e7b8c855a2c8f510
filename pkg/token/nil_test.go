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

package token

import (
	"encoding/json"
	"testing"

	"github.com/mrtr-dev/mrtr-operator/pkg/keyring"
)

// A nil argument is the server's mistake: a *ConfigError, never a panic.
func TestNilArgumentsAreConfigErrors(t *testing.T) {
	src := keyring.Static(testRing(t, testKey("a", 1, 32)))
	var nilFileSource *keyring.FileSource
	for name, f := range map[string]func() error{
		"NewSigned(nil)":                      func() error { _, err := NewSigned(nil); return err },
		"NewSigned(Static(nil))":              func() error { _, err := NewSigned(keyring.Static(nil)); return err },
		"NewSigned(a nil *FileSource)":        func() error { _, err := NewSigned(nilFileSource); return err },
		"NewSigned(src, nil option)":          func() error { _, err := NewSigned(src, nil); return err },
		"NewSigned(src, SignedClock(nil))":    func() error { _, err := NewSigned(src, SignedClock(nil)); return err },
		"NewSignedSecret(nil)":                func() error { _, err := NewSignedSecret(nil); return err },
		"NewSealed(nil)":                      func() error { _, err := NewSealed(nil, "s"); return err },
		"NewSealed(src, nil option)":          func() error { _, err := NewSealed(src, "s", nil); return err },
		"NewSealed(src, SealedClock(nil))":    func() error { _, err := NewSealed(src, "s", SealedClock(nil)); return err },
		"Sealed over Static(nil), Seal":       func() error { return sealWith(keyring.Static(nil)) },
		"Sealed over a nil *FileSource, Seal": func() error { return sealWith(nilFileSource) },
		"Seal with nil params and principal": func() error {
			s, err := NewSealed(src, "s")
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Seal(Binding{Method: "m"}, json.RawMessage(`1`))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := f(); !IsConfigError(err) {
				t.Errorf("%v, want a *ConfigError", err)
			}
		})
	}
}

func sealWith(src keyring.Source) error {
	s, err := NewSealed(src, "s")
	if err != nil {
		return err
	}
	_, err = s.Seal(testBinding(), json.RawMessage(testState))
	return err
}
