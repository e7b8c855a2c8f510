//! rmcp's `rs2` request-state codec over the mounted keyring: the keyring's key ids are the kids,
//! keys\[0\] seals, every key opens the tokens that name it, and a reload swaps the codec in place
//! (no restart), so that a replica follows every phase of a rotation. The same format, byte for
//! byte, as pkg/token's RS2 codec: Go and Rust replicas share one keyring behind one Service.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};

use crate::keyring::{Keyring, MAX_TOKEN_TTL_SECONDS};

/// The lifetime of the tokens sealed unless the keyring declares a shorter one: 5 minutes, as the
/// Go codecs'.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// How much longer than the TTL a token may have left by this replica's clock: 30 s, as Go's
/// default clock skew. rs2 carries no issue time; this bounds a replica whose clock runs ahead.
pub const CLOCK_SKEW: Duration = Duration::from_secs(30);

/// The longest token [`Rs2Codec::open`] reads: Go's `token.MaxRS2TokenBytes`.
pub const MAX_RS2_TOKEN_BYTES: usize = 64 << 10;

/// Why a codec could not be made, or a token did not open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Rs2Error {
    /// The TTL asked for is not 1 s to 15 min in whole seconds.
    #[error("rs2 TTL is {0:?}: it must be whole seconds from 1s to 15m")]
    InvalidTtl(Duration),
    /// rmcp refused the keyring (it cannot for a keyring that `parse` accepted).
    #[error("rmcp refused the keyring: {0}")]
    Keyring(#[source] RequestStateError),
    /// rmcp rejected the token: tampered, unknown key, other associated data, expired, malformed.
    #[error("invalid or expired request state")]
    Rejected(#[source] RequestStateError),
    /// The token is longer than [`MAX_RS2_TOKEN_BYTES`]: refused unread, as Go's codec refuses
    /// it, so that no hostile input costs more than a length check.
    #[error("invalid or expired request state")]
    TooLarge,
    /// The token is authentic but has no expiry, or expires later than the TTL (and clock skew)
    /// from now: no consumer of the keyring seals such a token.
    #[error("invalid or expired request state")]
    Lifetime,
    /// The codec's TTL is longer than the token-ttl the keyring in service declares: nothing is
    /// sealed (Go's token.RS2 refuses the same, pkg/token/testdata/rs2/token-ttl.json).
    #[error(
        "rs2 TTL is {ttl:?}, longer than the {declared:?} the keyring declares (its token-ttl, the MRTRKeyring's tokenTTL): tokens would outlive the rotation's wait; lower it, or raise spec.tokenTTL"
    )]
    BeyondTokenTtl {
        /// The codec's TTL.
        ttl: Duration,
        /// The keyring's token-ttl.
        declared: Duration,
    },
}

struct Current {
    codec: RequestStateCodec,
    fingerprint: String,
    declared: Option<Duration>,
}

/// The rs2 codec of the current keyring. Cheap to share (`Arc`); `reload` swaps it atomically and a
/// seal or open in flight finishes with the keyring it started with.
pub struct Rs2Codec {
    ttl: Duration,
    current: ArcSwap<Current>,
}

impl std::fmt::Debug for Rs2Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.current.load();
        f.debug_struct("Rs2Codec")
            .field("fingerprint", &c.fingerprint)
            .field("ttl", &self.ttl)
            .field("declared", &c.declared)
            .field("keys", &"<redacted>")
            .finish()
    }
}

impl Rs2Codec {
    /// A codec over `ring` whose tokens live `ttl` (whole seconds, 1 s to 15 min). Under a keyring
    /// that declares a shorter token-ttl, `seal` refuses (as Go's token.RS2 does) rather than seal
    /// for less than the server promises its clients: a token never outlives the operator's wait,
    /// and the mismatch is an error that names what to change, not a lifetime silently cut.
    pub fn new(ring: &Keyring, ttl: Duration) -> Result<Self, Rs2Error> {
        if ttl < Duration::from_secs(1)
            || ttl > Duration::from_secs(MAX_TOKEN_TTL_SECONDS)
            || ttl.subsec_nanos() != 0
        {
            return Err(Rs2Error::InvalidTtl(ttl));
        }
        let current = Self::build(ring)?;
        Ok(Self {
            ttl,
            current: ArcSwap::from_pointee(current),
        })
    }

    fn build(ring: &Keyring) -> Result<Current, Rs2Error> {
        let keys = ring.keys().iter().map(|k| (k.id(), k.secret()));
        let codec = RequestStateCodec::new_with_keyring(ring.primary().id(), keys)
            .map_err(Rs2Error::Keyring)?;
        Ok(Current {
            codec,
            fingerprint: ring.fingerprint().to_owned(),
            declared: ring.token_ttl().map(Duration::from_secs),
        })
    }

    /// Swaps in the codec of a new keyring (a watcher's reload). On error the current one stays.
    pub fn reload(&self, ring: &Keyring) -> Result<(), Rs2Error> {
        let next = Self::build(ring)?;
        self.current.store(Arc::new(next));
        Ok(())
    }

    /// The fingerprint of the keyring in service.
    pub fn fingerprint(&self) -> String {
        self.current.load().fingerprint.clone()
    }

    /// The lifetime of the tokens it seals.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The token-ttl the keyring in service declares, if any.
    pub fn declared_token_ttl(&self) -> Option<Duration> {
        self.current.load().declared
    }

    /// Seals `payload` bound to `ad` (bind the principal and the request: a token then opens for
    /// that request only) with keys\[0\], expiring the TTL from now. Refused when the TTL is
    /// longer than the token-ttl the keyring in service declares.
    pub fn seal(&self, payload: &[u8], ad: &[u8]) -> Result<String, Rs2Error> {
        let c = self.current.load();
        if let Some(declared) = c.declared.filter(|d| *d < self.ttl) {
            return Err(Rs2Error::BeyondTokenTtl {
                ttl: self.ttl,
                declared,
            });
        }
        Ok(c.codec.seal_with(
            payload,
            &SealOptions::new().associated_data(ad).ttl(self.ttl),
        ))
    }

    /// Opens a token that a key of the current keyring sealed for `ad`, if it has not expired and
    /// does not outlive the TTL. Answer every error to the client as one and the same.
    pub fn open(&self, token: &str, ad: &[u8]) -> Result<Vec<u8>, Rs2Error> {
        if token.len() > MAX_RS2_TOKEN_BYTES {
            return Err(Rs2Error::TooLarge);
        }
        let c = self.current.load();
        let payload = c.codec.open_with(token, ad).map_err(Rs2Error::Rejected)?;
        // Authentic now, so its body's expiry is the sealer's: rmcp opens a token without expiry,
        // or of any lifetime; a keyring's consumer must not, the operator drops keys on time.
        let expiry = token
            .split('.')
            .nth(2)
            .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
            .and_then(|b| {
                b.get(..8)
                    .map(|e| i64::from_be_bytes(e.try_into().unwrap_or([0; 8])))
            })
            .unwrap_or(0);
        let limit = now_ms().saturating_add((self.ttl + CLOCK_SKEW).as_millis() as i64);
        if expiry == 0 || expiry > limit {
            return Err(Rs2Error::Lifetime);
        }
        Ok(payload)
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
