//! The Rust crate's conformance consumer (docs/consumers.md, "Conformance"): mrtr-keyring's
//! KeyringWatcher, AckReporter and Rs2Codec behind the check's probe protocol. It uses only what
//! the crate exports, as a server would:
//!
//! ```sh
//! cargo build --manifest-path clients/rust/Cargo.toml -p mrtr-conformance-consumer
//! go run ./test/conformance -lost-answer -- clients/rust/target/debug/mrtr-conformance-consumer
//! ```
//!
//! It follows `$MRTR_KEYRING_DIR`, acknowledges every keyring it puts in service, prints
//! `loaded <fingerprint> <token-ttl|none>` for each one before it is acknowledged, answers
//! `serving?` on stdin with `serving <fingerprint> <token-ttl|none>` and `seal?` with
//! `sealed <token>` (an rs2 token bound to the check's associated data), and writes every error to
//! stderr, one line each. A server does the same with its codec where the probe is.
#![forbid(unsafe_code)]

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mrtr_keyring::{AckConfig, AckReporter, Keyring, KeyringWatcher, Rs2Codec};

/// The lifetime of the tokens it seals: no longer than the token-ttl of any keyring the check
/// mounts (the codec refuses to seal longer than the keyring in service declares).
const TTL: Duration = Duration::from_secs(60);
/// The associated data of the probe's tokens (the check's ProbeRS2AD). A server binds the
/// principal and the request there.
const PROBE_AD: &[u8] = b"mrtr-conformance";
/// How often the watcher reads the volume: the check waits 15 s at most for a reaction.
const POLL: Duration = Duration::from_millis(100);

fn say(word: &str, ring: &Keyring) {
    let ttl = ring
        .token_ttl()
        .map_or_else(|| "none".to_owned(), |s| s.to_string());
    println!("{word} {} {ttl}", ring.fingerprint());
}

fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().replace('\n', " ")
}

fn main() -> ExitCode {
    let dir = std::env::var_os("MRTR_KEYRING_DIR").unwrap_or_default();
    let watcher = match KeyringWatcher::new(&dir) {
        Ok(w) => Arc::new(w),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::FAILURE;
        }
    };
    let codec = match Rs2Codec::new(&watcher.keyring(), TTL) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::FAILURE;
        }
    };
    let mut ack = AckConfig::new(std::env::var("MRTR_SECRET_NAME").unwrap_or_default());
    ack.on_error = Some(Box::new(|e| eprintln!("{}", one_line(e))));
    let reporter = match AckReporter::new(ack) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::FAILURE;
        }
    };
    // Listeners run in the order they were added: the codec first, so that a "seal?" after
    // "loaded" seals with that keyring, then "loaded", before the reporter hears of it.
    let c = Arc::clone(&codec);
    watcher.on_change(move |ring| {
        if let Err(e) = c.reload(ring) {
            eprintln!("{}", one_line(&e));
        }
    });
    watcher.on_change(|ring| say("loaded", ring));
    watcher.on_error(|e| eprintln!("{}", one_line(e)));
    say("loaded", &watcher.keyring());
    reporter.follow(&watcher);
    reporter.start();
    watcher.start(POLL);

    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.as_str() {
            "serving?" => say("serving", &watcher.keyring()),
            "seal?" => match codec.seal(br#"{"probe":true}"#, PROBE_AD) {
                Ok(tok) => println!("sealed {tok}"),
                Err(e) => eprintln!("{}", one_line(&e)),
            },
            _ => {}
        }
    }
    // stdin closed: the check is done with the probe; serve (acknowledge) until it stops us.
    loop {
        std::thread::park();
    }
}
