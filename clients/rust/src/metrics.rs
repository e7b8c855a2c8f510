// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

//! The consumer metrics of the contract (docs/consumers.md, "Metrics"), with no dependency: the
//! names and labels are Go's, Python's and TypeScript's, so that one alert covers every consumer.
//! Share one [`Metrics`] (an `Arc`) between the watcher ([`Metrics::follow`]), the codec
//! ([`MeteredRs2`]) and the acknowledgement reporter ([`Metrics::ack_state_changed`]), and serve
//! [`Metrics::exposition`] on `GET /metrics` with [`CONTENT_TYPE`]. No label carries key bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crate::rs2::{Rs2Codec, Rs2Error};
use crate::watch::KeyringWatcher;
use rmcp::model::RequestStateError;

/// Request-state tokens sealed, by format.
pub const TOKENS_SEALED_TOTAL: &str = "mrtr_consumer_tokens_sealed_total";
/// Request-state tokens opened, by format and result.
pub const TOKENS_OPENED_TOTAL: &str = "mrtr_consumer_tokens_opened_total";
/// The keyring in service, by fingerprint.
pub const KEYRING_INFO: &str = "mrtr_consumer_keyring_info";
/// Reloads that kept the last good keyring.
pub const RELOAD_FAILURES_TOTAL: &str = "mrtr_consumer_reload_failures_total";
/// The acknowledgement's state.
pub const ACK_STATE: &str = "mrtr_consumer_ack_state";
/// The media type of [`Metrics::exposition`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The rs2 format's name in the `format` label, as `kubectl mrtr inspect` names it.
pub const FORMAT_RS2: &str = "rs2";
/// How an open ended: the `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpenResult {
    /// The token opened.
    Ok,
    /// Authentic but outside its lifetime, or living longer than the TTL allows.
    Expired,
    /// No key of the keyring in service has the token's key id.
    UnknownKey,
    /// The tag does not verify: altered, another key, or other associated data (the binding).
    BadMac,
    /// Authentic but sealed for another request (rs2's tag covers the binding: never reported).
    BindingMismatch,
    /// Not laid out as rs2 writes it.
    Malformed,
    /// Longer than [`crate::rs2::MAX_RS2_TOKEN_BYTES`].
    TooLarge,
}

impl OpenResult {
    /// Every result, in the order the exposition lists them.
    pub const ALL: [OpenResult; 7] = [
        OpenResult::Ok,
        OpenResult::Expired,
        OpenResult::UnknownKey,
        OpenResult::BadMac,
        OpenResult::BindingMismatch,
        OpenResult::Malformed,
        OpenResult::TooLarge,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenResult::Ok => "ok",
            OpenResult::Expired => "expired",
            OpenResult::UnknownKey => "unknown_key",
            OpenResult::BadMac => "bad_mac",
            OpenResult::BindingMismatch => "binding_mismatch",
            OpenResult::Malformed => "malformed",
            OpenResult::TooLarge => "too_large",
        }
    }

    /// The result of an [`Rs2Codec::open`].
    pub fn of(r: &Result<Vec<u8>, Rs2Error>) -> Self {
        match r {
            Ok(_) => OpenResult::Ok,
            Err(Rs2Error::Lifetime) => OpenResult::Expired,
            Err(Rs2Error::TooLarge) => OpenResult::TooLarge,
            Err(Rs2Error::Rejected(e)) => match e {
                RequestStateError::Expired => OpenResult::Expired,
                RequestStateError::UnknownKeyId => OpenResult::UnknownKey,
                RequestStateError::IntegrityCheckFailed => OpenResult::BadMac,
                _ => OpenResult::Malformed,
            },
            Err(_) => OpenResult::Malformed,
        }
    }
}

/// The acknowledgement's state: the `state` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckState {
    /// A keyring is in service that the API server has not accepted yet; no attempt failed.
    Pending,
    /// The API server accepted the keyring in service.
    Acknowledged,
    /// The last attempt failed; the reporter backs off and tries again.
    Retrying,
}

impl AckState {
    /// Every state, in the order the exposition lists them.
    pub const ALL: [AckState; 3] = [
        AckState::Pending,
        AckState::Acknowledged,
        AckState::Retrying,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AckState::Pending => "pending",
            AckState::Acknowledged => "acknowledged",
            AckState::Retrying => "retrying",
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    sealed: BTreeMap<String, u64>,
    opened: BTreeMap<String, [u64; 7]>,
    fingerprint: String,
    reload_failures: u64,
    ack: Option<AckState>,
}

/// The metrics of one process, in memory. Safe to share between threads.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

fn index(r: OpenResult) -> usize {
    OpenResult::ALL.iter().position(|x| *x == r).unwrap_or(0)
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // A panic while the lock was held leaves counters, not invariants: go on with them.
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    /// Every series of a format at 0 from its first use: the first rejection is an increase.
    /// Allocates the format's name only on its first use, not on every count.
    fn format(i: &mut Inner, format: &str) {
        if !i.sealed.contains_key(format) {
            i.sealed.insert(format.to_owned(), 0);
        }
        if !i.opened.contains_key(format) {
            i.opened.insert(format.to_owned(), [0; 7]);
        }
    }

    /// Counts one sealed token of `format`.
    pub fn token_sealed(&self, format: &str) {
        self.with(|i| {
            Self::format(i, format);
            if let Some(n) = i.sealed.get_mut(format) {
                *n += 1;
            }
        });
    }

    /// Counts one open of a token of `format` that ended with `result`.
    pub fn token_opened(&self, format: &str, result: OpenResult) {
        self.with(|i| {
            Self::format(i, format);
            if let Some(c) = i.opened.get_mut(format) {
                c[index(result)] += 1;
            }
        });
    }

    /// The keyring put in service, by its fingerprint.
    pub fn keyring_in_service(&self, fingerprint: &str) {
        self.with(|i| i.fingerprint = fingerprint.to_owned());
    }

    /// Counts one reload that kept the last good keyring.
    pub fn reload_failed(&self) {
        self.with(|i| i.reload_failures += 1);
    }

    /// The acknowledgement's new state.
    pub fn ack_state_changed(&self, state: AckState) {
        self.with(|i| i.ack = Some(state));
    }

    /// Opens of `format` that ended with `result`.
    pub fn opened(&self, format: &str, result: OpenResult) -> u64 {
        self.with(|i| i.opened.get(format).map_or(0, |c| c[index(result)]))
    }

    /// Tokens sealed in `format`.
    pub fn sealed(&self, format: &str) -> u64 {
        self.with(|i| i.sealed.get(format).copied().unwrap_or(0))
    }

    /// The fingerprint of the keyring in service, "" before the first.
    pub fn fingerprint(&self) -> String {
        self.with(|i| i.fingerprint.clone())
    }

    /// Failed reloads.
    pub fn reload_failures(&self) -> u64 {
        self.with(|i| i.reload_failures)
    }

    /// Reports `watcher`'s keyring now and every keyring it puts in service, and counts its failed
    /// reloads (once per distinct error, so an unchanged invalid snapshot counts once).
    pub fn follow(self: &Arc<Self>, watcher: &KeyringWatcher) {
        let me = Arc::clone(self);
        watcher.on_change(move |r| me.keyring_in_service(r.fingerprint()));
        let me = Arc::clone(self);
        watcher.on_error(move |_| me.reload_failed());
        self.keyring_in_service(watcher.keyring().fingerprint());
    }

    /// Every metric in the Prometheus text format, as Go's `metrics.Text` writes it.
    pub fn exposition(&self) -> String {
        self.with(|i| {
            let mut o = String::new();
            let _ = writeln!(
                o,
                "# HELP {TOKENS_SEALED_TOTAL} Request-state tokens sealed, by format."
            );
            let _ = writeln!(o, "# TYPE {TOKENS_SEALED_TOTAL} counter");
            for (f, n) in &i.sealed {
                let _ = writeln!(o, "{TOKENS_SEALED_TOTAL}{{format=\"{f}\"}} {n}");
            }
            let _ = writeln!(
                o,
                "# HELP {TOKENS_OPENED_TOTAL} Request-state tokens opened, by format and result."
            );
            let _ = writeln!(o, "# TYPE {TOKENS_OPENED_TOTAL} counter");
            for (f, c) in &i.opened {
                for r in OpenResult::ALL {
                    let _ = writeln!(
                        o,
                        "{TOKENS_OPENED_TOTAL}{{format=\"{f}\",result=\"{}\"}} {}",
                        r.as_str(),
                        c[index(r)]
                    );
                }
            }
            let _ = writeln!(
                o,
                "# HELP {KEYRING_INFO} The keyring in service, by fingerprint."
            );
            let _ = writeln!(o, "# TYPE {KEYRING_INFO} gauge");
            if !i.fingerprint.is_empty() {
                let _ = writeln!(o, "{KEYRING_INFO}{{fingerprint=\"{}\"}} 1", i.fingerprint);
            }
            let _ = writeln!(
                o,
                "# HELP {RELOAD_FAILURES_TOTAL} Reloads that kept the last good keyring."
            );
            let _ = writeln!(o, "# TYPE {RELOAD_FAILURES_TOTAL} counter");
            let _ = writeln!(o, "{RELOAD_FAILURES_TOTAL} {}", i.reload_failures);
            let _ = writeln!(
                o,
                "# HELP {ACK_STATE} The acknowledgement's state: 1 for the current one."
            );
            let _ = writeln!(o, "# TYPE {ACK_STATE} gauge");
            if let Some(a) = i.ack {
                for s in AckState::ALL {
                    let _ = writeln!(
                        o,
                        "{ACK_STATE}{{state=\"{}\"}} {}",
                        s.as_str(),
                        u8::from(s == a)
                    );
                }
            }
            o
        })
    }
}

/// An [`Rs2Codec`] that counts its seals and opens in [`Metrics`].
#[derive(Debug, Clone)]
pub struct MeteredRs2 {
    codec: Arc<Rs2Codec>,
    metrics: Arc<Metrics>,
}

impl MeteredRs2 {
    /// Counts the seals and opens of `codec` in `metrics`.
    pub fn new(codec: Arc<Rs2Codec>, metrics: Arc<Metrics>) -> Self {
        Self { codec, metrics }
    }

    /// The codec.
    pub fn codec(&self) -> &Arc<Rs2Codec> {
        &self.codec
    }

    /// [`Rs2Codec::seal`], counted when it seals (a refusal seals nothing).
    pub fn seal(&self, payload: &[u8], ad: &[u8]) -> Result<String, Rs2Error> {
        let t = self.codec.seal(payload, ad)?;
        self.metrics.token_sealed(FORMAT_RS2);
        Ok(t)
    }

    /// [`Rs2Codec::open`], counted by its result.
    pub fn open(&self, token: &str, ad: &[u8]) -> Result<Vec<u8>, Rs2Error> {
        let r = self.codec.open(token, ad);
        self.metrics.token_opened(FORMAT_RS2, OpenResult::of(&r));
        r
    }
}
