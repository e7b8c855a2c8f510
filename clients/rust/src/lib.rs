//! mrtr-keyring: the mrtr-operator consumer contract (docs/consumers.md) for Rust MCP servers: the
//! mounted keyring parsed as strictly as the Go library's `keyring.Parse`, and rmcp's `rs2`
//! request-state codec over it, swapped on every reload, and a watcher of the mounted directory.
#![forbid(unsafe_code)]

pub mod keyring;
pub mod rs2;
pub mod watch;

pub use keyring::{Key, Keyring, KeyringError, parse, parse_token_ttl};
pub use rs2::{Rs2Codec, Rs2Error};
pub use watch::{KeyringWatcher, LoadError, load_dir};
