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

// Source gives the keyring to use right now. Implementations must be safe for concurrent use and
// cheap enough to call on every seal and open; the returned keyring is immutable and may be kept.
// Modelled on golang.org/x/oauth2's TokenSource.
type Source interface {
	Keyring() *Keyring
}

// StaticSource is a Source that always returns the same keyring.
type StaticSource struct{ r *Keyring }

// Static returns a Source for a fixed keyring. Static(nil) is a source without a keyring, which the
// codecs refuse as a configuration error (token.ConfigError) when they are made or used.
func Static(r *Keyring) StaticSource { return StaticSource{r: r} }

// Keyring returns the fixed keyring.
func (s StaticSource) Keyring() *Keyring { return s.r }
