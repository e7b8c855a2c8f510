//! rmcp's rs2 codec over the keyring, against the real rmcp: its known-answer vector, the vectors
//! that pkg/token also runs (pkg/token/testdata/rs2/vectors.json, and MRTR_RS2_VECTORS when set),
//! and a rotation through reloads.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mrtr_keyring::{Rs2Codec, Rs2Error, parse};
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde_json::Value;

const KAT: &str = "rs2.cm90YXRpb24ta2V5LTIwMjYtMDg.AAABi8_mx5BzdGVwPTI.twv2acu7lKXqebyrmit-JrHHZm-BkKlBQEMMtL3lHk8";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn vector_files() -> Vec<PathBuf> {
    let mut files = vec![
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../pkg/token/testdata/rs2/vectors.json"),
    ];
    if let Some(p) = std::env::var_os("MRTR_RS2_VECTORS").filter(|p| !p.is_empty()) {
        files.push(PathBuf::from(p));
    }
    files
}

fn b(v: &Value, field: &str) -> Vec<u8> {
    STANDARD.decode(v[field].as_str().unwrap()).unwrap()
}

fn one_key(v: &Value) -> RequestStateCodec {
    let kid = v["kid"].as_str().unwrap();
    RequestStateCodec::new_with_keyring(kid, [(kid, b(v, "key_b64"))]).unwrap()
}

/// rmcp's own known answer: rmcp verifies its tag (it answers Expired, which it checks only after
/// the tag), and a bit flipped anywhere fails the tag.
#[test]
fn rmcp_known_answer() {
    let key = b"0123456789abcdef0123456789abcdef";
    let codec = RequestStateCodec::new_with_keyring(
        "rotation-key-2026-08",
        [("rotation-key-2026-08", key)],
    )
    .unwrap();
    let ad = b"user:alice|request:weather";
    assert!(matches!(
        codec.open_with(KAT, ad),
        Err(RequestStateError::Expired)
    ));
    assert!(matches!(
        codec.open_with(KAT, b"user:bob|request:weather"),
        Err(RequestStateError::IntegrityCheckFailed)
    ));
    let mut flipped = KAT.to_owned().into_bytes();
    let n = flipped.len();
    flipped[n - 2] = if flipped[n - 2] == b'A' { b'B' } else { b'A' };
    assert!(
        codec
            .open_with(std::str::from_utf8(&flipped).unwrap(), ad)
            .is_err()
    );
}

/// Every vector through the real rmcp: without expiry rmcp seals exactly the token; with one,
/// rmcp authenticates it (Expired once past, the payload before); every tampered case fails.
#[test]
fn vectors_through_rmcp() {
    for path in vector_files() {
        let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let vectors = file["vectors"].as_array().unwrap();
        let tampered = file["tampered"].as_array().unwrap();
        assert!(!vectors.is_empty() && !tampered.is_empty(), "{path:?}");
        for v in vectors {
            let id = v["id"].as_str().unwrap();
            let (token, ad, payload) = (
                v["token"].as_str().unwrap(),
                b(v, "ad_b64"),
                b(v, "payload_b64"),
            );
            let codec = one_key(v);
            match v["ttl_ms"].as_i64() {
                None => {
                    assert_eq!(
                        codec.seal_with(&payload, &SealOptions::new().associated_data(&ad)),
                        token,
                        "{id}"
                    );
                    assert_eq!(codec.open_with(token, &ad).unwrap(), payload, "{id}");
                }
                Some(ttl) => {
                    let expiry = v["now_ms"].as_i64().unwrap() + ttl;
                    match codec.open_with(token, &ad) {
                        Ok(got) => assert!(now_ms() <= expiry && got == payload, "{id}"),
                        Err(RequestStateError::Expired) => assert!(now_ms() > expiry, "{id}"),
                        Err(e) => panic!("{id}: {e:?}"),
                    }
                    // Sealed now with the same TTL: the same kid, and rmcp opens it.
                    let again = codec.seal_with(
                        &payload,
                        &SealOptions::new()
                            .associated_data(&ad)
                            .ttl(Duration::from_millis(ttl as u64)),
                    );
                    assert_eq!(again.split('.').nth(1), token.split('.').nth(1), "{id}");
                    assert_eq!(codec.open_with(&again, &ad).unwrap(), payload, "{id}");
                }
            }
        }
        for v in tampered {
            let id = v["id"].as_str().unwrap();
            let opened = one_key(v).open_with(v["token"].as_str().unwrap(), &b(v, "ad_b64"));
            // A case that fails only by its time opens in rmcp until that time has passed.
            let by_time = id == "expired";
            assert!(opened.is_err() || by_time, "{id}: rmcp opened it");
        }
    }
}

fn ring(json: &str) -> mrtr_keyring::Keyring {
    parse(json.as_bytes()).unwrap()
}

const A: &str = r#"{"id":"key-a","secret":"oaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaE="}"#;
const B: &str = r#"{"id":"key-b","secret":"srKysrKysrKysrKysrKysrKysrKysrKysrKysrKysrI="}"#;

fn keys(entries: &[&str]) -> mrtr_keyring::Keyring {
    ring(&format!(r#"{{"keys":[{}]}}"#, entries.join(",")))
}

/// The four phases of a rotation, each a reload of the same codec: keys[0] seals, every key
/// opens by kid, a dropped key's tokens no longer open. No codec is rebuilt by the caller.
#[test]
fn rotation_by_reload() {
    let ad = b"user:ada|tools/call|digest";
    let codec = Rs2Codec::new(&keys(&[A]), Duration::from_secs(60)).unwrap();
    let tok_a = codec.seal(b"a", ad).unwrap();
    assert!(tok_a.starts_with("rs2.a2V5LWE."), "{tok_a}"); // key-a

    codec.reload(&keys(&[A, B])).unwrap(); // b pre-staged: a still seals
    assert!(codec.seal(b"x", ad).unwrap().starts_with("rs2.a2V5LWE."));
    codec.reload(&keys(&[B, A])).unwrap(); // b promoted
    let tok_b = codec.seal(b"b", ad).unwrap();
    assert!(tok_b.starts_with("rs2.a2V5LWI."), "{tok_b}"); // key-b
    assert_eq!(codec.open(&tok_a, ad).unwrap(), b"a");
    assert_eq!(codec.open(&tok_b, ad).unwrap(), b"b");
    assert!(matches!(
        codec.open(&tok_b, b"other"),
        Err(Rs2Error::Rejected(RequestStateError::IntegrityCheckFailed))
    ));

    codec.reload(&keys(&[B])).unwrap(); // a dropped
    assert!(matches!(
        codec.open(&tok_a, ad),
        Err(Rs2Error::Rejected(RequestStateError::UnknownKeyId))
    ));
    assert_eq!(codec.open(&tok_b, ad).unwrap(), b"b");
    assert_eq!(codec.fingerprint(), keys(&[B]).fingerprint());
    assert!(!format!("{codec:?}").contains("oaGh"));
}

/// A token never outlives token-ttl: under a keyring that declares a shorter one, the codec
/// refuses to seal (never a shorter lifetime in its place), and on open a token without expiry, or
/// of a longer lifetime, is refused though rmcp would open it.
#[test]
fn lifetime_never_beyond_token_ttl() {
    assert!(matches!(
        Rs2Codec::new(&keys(&[A]), Duration::from_secs(901)),
        Err(Rs2Error::InvalidTtl(_))
    ));
    assert!(matches!(
        Rs2Codec::new(&keys(&[A]), Duration::from_millis(1500)),
        Err(Rs2Error::InvalidTtl(_))
    ));
    let codec = Rs2Codec::new(&keys(&[A]), Duration::from_secs(600)).unwrap();
    codec.reload(&keys(&[A]).with_token_ttl(Some(120))).unwrap();
    assert_eq!(codec.ttl(), Duration::from_secs(600));
    assert_eq!(codec.declared_token_ttl(), Some(Duration::from_secs(120)));
    let err = codec.seal(b"s", b"").unwrap_err();
    assert!(matches!(err, Rs2Error::BeyondTokenTtl { .. }), "{err}");
    assert!(err.to_string().contains("tokenTTL"), "{err}");
    codec.reload(&keys(&[A])).unwrap();
    let tok = codec.seal(b"s", b"").unwrap();
    let body = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(tok.split('.').nth(2).unwrap())
        .unwrap();
    let expiry = i64::from_be_bytes(body[..8].try_into().unwrap());
    assert!(
        expiry - now_ms() <= 600_000 && expiry - now_ms() > 580_000,
        "{}",
        expiry - now_ms()
    );

    let secret = STANDARD
        .decode("oaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaGhoaE=")
        .unwrap();
    let raw = RequestStateCodec::new_with_keyring("key-a", [("key-a", secret)]).unwrap();
    let forever = raw.seal_with(b"s", &SealOptions::new());
    assert!(raw.open(&forever).is_ok());
    assert!(matches!(codec.open(&forever, b""), Err(Rs2Error::Lifetime)));
    let long = raw.seal_with(b"s", &SealOptions::new().ttl(Duration::from_secs(3600)));
    assert!(matches!(codec.open(&long, b""), Err(Rs2Error::Lifetime)));
    let ok = raw.seal_with(b"s", &SealOptions::new().ttl(Duration::from_secs(600)));
    assert_eq!(codec.open(&ok, b"").unwrap(), b"s");
}

/// Concurrent seals and opens while another thread reloads: every token sealed opens (both keys
/// stay in the keyring throughout, as during a rotation's overlap).
#[test]
fn reload_under_load() {
    let codec =
        std::sync::Arc::new(Rs2Codec::new(&keys(&[A, B]), Duration::from_secs(60)).unwrap());
    let reloader = {
        let codec = codec.clone();
        std::thread::spawn(move || {
            for i in 0..200 {
                let order: &[&str] = if i % 2 == 0 { &[B, A] } else { &[A, B] };
                codec.reload(&keys(order)).unwrap();
            }
        })
    };
    for i in 0..2000u32 {
        let tok = codec.seal(&i.to_be_bytes(), b"ad").unwrap();
        assert_eq!(codec.open(&tok, b"ad").unwrap(), i.to_be_bytes());
    }
    reloader.join().unwrap();
}

/// pkg/token/testdata/rs2/token-ttl.json, which Go's token.RS2 runs too: a TTL within the
/// keyring's token-ttl seals tokens that live exactly the TTL (rmcp reads the clock itself, so the
/// expiry is checked between the clock before and after the seal); a longer one is refused, naming
/// the tokenTTL to change.
#[test]
fn declared_ttl_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../pkg/token/testdata/rs2/token-ttl.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let ttl = c["ttl_s"].as_u64().unwrap();
        let ring = keys(&[A]).with_token_ttl(c["token_ttl_s"].as_u64());
        let codec = Rs2Codec::new(&ring, Duration::from_secs(ttl)).unwrap();
        let before = now_ms();
        let sealed = codec.seal(b"state", b"ad");
        let after = now_ms();
        if !c["seals"].as_bool().unwrap() {
            let err = sealed.expect_err(name);
            assert!(err.to_string().contains("tokenTTL"), "{name}: {err}");
            continue;
        }
        let tok = sealed.unwrap_or_else(|e| panic!("{name}: {e}"));
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(tok.split('.').nth(2).unwrap())
            .unwrap();
        let lives = i64::from_be_bytes(body[..8].try_into().unwrap()) - ttl as i64 * 1000;
        assert!(
            before <= lives && lives <= after,
            "{name}: sealed at {lives}, not within [{before}, {after}]"
        );
        assert_eq!(codec.open(&tok, b"ad").unwrap(), b"state", "{name}");
    }
}

#[test]
fn refuses_an_oversized_token_unread() {
    // The codec itself, metered or not: a token over Go's token.MaxRS2TokenBytes is never parsed.
    let c = Rs2Codec::new(&keys(&[A]), Duration::from_secs(60)).unwrap();
    let over = "a".repeat(mrtr_keyring::rs2::MAX_RS2_TOKEN_BYTES + 1);
    assert!(matches!(c.open(&over, b"ad"), Err(Rs2Error::TooLarge)));
    let at = "a".repeat(mrtr_keyring::rs2::MAX_RS2_TOKEN_BYTES);
    assert!(matches!(c.open(&at, b"ad"), Err(Rs2Error::Rejected(_))));
}
