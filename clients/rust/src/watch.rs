//! The mounted Secret volume: one consistent snapshot of keyring.json and token-ttl (read through
//! the directory `..data` names, and only if `..data` did not move meanwhile), and a watcher that
//! keeps the last good keyring when a snapshot is not valid.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::keyring::{
    Keyring, KeyringError, MAX_DOCUMENT_BYTES, SECRET_DATA_KEY, TOKEN_TTL_DATA_KEY, parse,
    parse_token_ttl,
};

/// The kubelet's link to the current timestamped directory of a Secret volume.
pub const DATA_LINK: &str = "..data";

/// How many reads in a row may differ before a snapshot is refused as never settling.
const SETTLE_READS: usize = 5;
const MAX_TOKEN_TTL_FILE_BYTES: u64 = 64;

/// Why a snapshot could not be put in service. The message names the file, never key bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file could not be read.
    #[error("keyring: {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A file is not valid.
    #[error("keyring: {path}: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: KeyringError,
    },
    /// The volume kept changing while it was read.
    #[error("keyring: {0}: kept changing: {SETTLE_READS} reads in a row differed")]
    Unsettled(PathBuf),
}

#[derive(PartialEq, Eq)]
struct Snapshot {
    data: Vec<u8>,
    ttl: Option<Vec<u8>>,
}

fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    fs::File::open(path)?.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

/// One read of the snapshot: both files from the directory `..data` names (when keyring.json is a
/// link), and None when `..data` moved meanwhile.
fn read_once(path: &Path) -> Result<Option<Snapshot>, LoadError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default();
    let link = dir.join(DATA_LINK);
    let is_link = fs::symlink_metadata(path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    let target = if is_link {
        fs::read_link(&link).ok()
    } else {
        None
    };
    let snap = match &target {
        Some(t) => dir.join(t),
        None => dir.to_path_buf(),
    };
    let file = snap.join(name);
    let data =
        read_limited(&file, MAX_DOCUMENT_BYTES as u64 + 1).map_err(|source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let ttl_path = snap.join(TOKEN_TTL_DATA_KEY);
    let ttl = match read_limited(&ttl_path, MAX_TOKEN_TTL_FILE_BYTES + 1) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(LoadError::Io {
                path: dir.join(TOKEN_TTL_DATA_KEY),
                source,
            });
        }
    };
    if target.is_some() && fs::read_link(&link).ok() != target {
        return Ok(None);
    }
    Ok(Some(Snapshot { data, ttl }))
}

/// Reads until two reads in a row agree: a writer that is not the kubelet (no `..data`) may be
/// caught between two writes.
fn read_settled(path: &Path) -> Result<Snapshot, LoadError> {
    let mut previous: Option<Snapshot> = None;
    let mut wait = Duration::from_millis(1);
    for i in 0..SETTLE_READS {
        if i > 0 {
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(50));
        }
        let Some(current) = read_once(path)? else {
            previous = None;
            continue;
        };
        if previous.as_ref() == Some(&current) {
            return Ok(current);
        }
        previous = Some(current);
    }
    Err(LoadError::Unsettled(path.to_path_buf()))
}

fn parse_snapshot(path: &Path, snap: &Snapshot) -> Result<Keyring, LoadError> {
    let ring = parse(&snap.data).map_err(|source| LoadError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    let Some(ttl) = &snap.ttl else {
        return Ok(ring);
    };
    let ttl = parse_token_ttl(ttl).map_err(|source| LoadError::Invalid {
        path: path.with_file_name(TOKEN_TTL_DATA_KEY),
        source,
    })?;
    Ok(ring.with_token_ttl(Some(ttl)))
}

/// Reads and validates the keyring of a mounted directory (its keyring.json and token-ttl, one
/// snapshot): what a server does at start, refusing to start on error.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Keyring, LoadError> {
    let path = dir.as_ref().join(SECRET_DATA_KEY);
    parse_snapshot(&path, &read_settled(&path)?)
}

/// A callback of `on_change`.
type Listener = Box<dyn Fn(&Keyring) + Send>;
/// A callback of `on_error`.
type ErrorListener = Box<dyn Fn(&LoadError) + Send>;

/// What failed last, to report one failure once: the snapshot that did not parse, or the text of
/// the error that kept a snapshot from being read.
#[derive(PartialEq, Eq)]
enum Failure {
    Invalid(Snapshot),
    Unread(String),
}

/// The last reload's failure and its error's text (`last_error`), kept together so that they can
/// never tell different stories.
struct LastFailure {
    what: Failure,
    error: String,
}

/// The keyring in service for a mounted directory: `reload` reads a new snapshot and puts it in
/// service only when it is valid, else keeps the last good one and remembers the error. `start`
/// polls the directory on a thread of its own.
pub struct KeyringWatcher {
    path: PathBuf,
    current: ArcSwap<Keyring>,
    last_failure: Mutex<Option<LastFailure>>,
    listeners: Mutex<Vec<Listener>>,
    error_listeners: Mutex<Vec<ErrorListener>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for KeyringWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyringWatcher")
            .field("path", &self.path)
            .field("fingerprint", &self.current.load().fingerprint())
            .finish()
    }
}

impl KeyringWatcher {
    /// Loads the directory's keyring: an error here is a server that must not start.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, LoadError> {
        let ring = load_dir(dir.as_ref())?;
        Ok(Self {
            path: dir.as_ref().join(SECRET_DATA_KEY),
            current: ArcSwap::from_pointee(ring),
            last_failure: Mutex::new(None),
            listeners: Mutex::new(Vec::new()),
            error_listeners: Mutex::new(Vec::new()),
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The keyring in service.
    pub fn keyring(&self) -> Arc<Keyring> {
        self.current.load_full()
    }

    /// The error of the last reload, None when it put its snapshot in service.
    pub fn last_error(&self) -> Option<String> {
        self.last_failure
            .lock()
            .map(|last| last.as_ref().map(|f| f.error.clone()))
            .unwrap_or(None)
    }

    /// Calls `f` with every keyring put in service after this (an `Rs2Codec::reload`, an
    /// acknowledgement).
    pub fn on_change(&self, f: impl Fn(&Keyring) + Send + 'static) {
        if let Ok(mut l) = self.listeners.lock() {
            l.push(Box::new(f));
        }
    }

    /// Calls `f` once with each failure to put a snapshot in service (log it, count it): a
    /// snapshot that stays invalid is reported once, not at every poll. The error names the file
    /// and the entry, never key bytes.
    pub fn on_error(&self, f: impl Fn(&LoadError) + Send + 'static) {
        if let Ok(mut l) = self.error_listeners.lock() {
            l.push(Box::new(f));
        }
    }

    fn failed(&self, e: &LoadError, failure: Failure) {
        let new = match self.last_failure.lock() {
            Ok(mut last) => {
                let new = last.as_ref().is_none_or(|l| l.what != failure);
                *last = Some(LastFailure {
                    what: failure,
                    error: e.to_string(),
                });
                new
            }
            Err(_) => false,
        };
        if new && let Ok(l) = self.error_listeners.lock() {
            l.iter().for_each(|f| f(e));
        }
    }

    /// Reads the directory again. True when a keyring of another fingerprint (or token-ttl) went in
    /// service: its acknowledgement is due.
    pub fn reload(&self) -> bool {
        let snap = match read_settled(&self.path) {
            Ok(snap) => snap,
            Err(e) => {
                self.failed(&e, Failure::Unread(e.to_string()));
                return false;
            }
        };
        let ring = match parse_snapshot(&self.path, &snap) {
            Ok(ring) => ring,
            Err(e) => {
                self.failed(&e, Failure::Invalid(snap));
                return false;
            }
        };
        if let Ok(mut last) = self.last_failure.lock() {
            *last = None;
        }
        if *self.current.load_full() == ring {
            return false;
        }
        let fingerprint_changed = self.current.load().fingerprint() != ring.fingerprint();
        self.current.store(Arc::new(ring));
        let ring = self.current.load_full();
        if let Ok(l) = self.listeners.lock() {
            l.iter().for_each(|f| f(&ring));
        }
        fingerprint_changed
    }

    /// Polls the directory every `interval` on a thread of its own until `stop`. The kubelet
    /// updates a volume about once a minute at most, so a poll of a second or so costs nothing.
    pub fn start(self: &Arc<Self>, interval: Duration) -> std::thread::JoinHandle<()> {
        let me = Arc::clone(self);
        std::thread::spawn(move || {
            while !me.stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(interval);
                if !me.stop.load(Ordering::Relaxed) {
                    me.reload();
                }
            }
        })
    }

    /// Ends the polling thread after its current wait.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
