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
