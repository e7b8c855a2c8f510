//! mrtr-keyring: the mrtr-operator consumer contract (docs/consumers.md) for Rust MCP servers: the
//! mounted keyring parsed as strictly as the Go library's `keyring.Parse`, and rmcp's `rs2`
//! request-state codec over it, swapped on every reload, a watcher of the mounted directory, and the
//! acknowledgement of every keyring put in service on the pod's own Pod object.
#![forbid(unsafe_code)]

pub mod ack;
pub mod keyring;
pub mod metrics;
pub mod rs2;
pub mod watch;

pub use ack::{AckConfig, AckError, AckReporter, annotation_key};
pub use keyring::{Key, Keyring, KeyringError, parse, parse_token_ttl};
pub use rs2::{Rs2Codec, Rs2Error};
pub use watch::{KeyringWatcher, LoadError, load_dir};
