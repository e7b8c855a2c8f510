//! Writes the `rs2` interop vectors that pkg/token (Go) and this crate's tests read: tokens sealed
//! by the real rmcp crate (the version Cargo.lock pins), each checked with rmcp's own `open_with`
//! before it is written. It runs only when asked, so no test rewrites the committed file:
//!
//! ```sh
//! cargo run --example rs2-vectors -- ../../pkg/token/testdata/rs2/vectors.json
//! ```
//!
//! rmcp seals at its own clock (`seal_with` reads the wall clock; `seal_at` is private), so a
//! vector's `now_ms` is the instant rmcp read: for a token with a TTL it is the token's expiry less
//! the TTL, exactly. rmcp's own known-answer vector (from its tests, at 1 700 000 000 000 ms) cannot
//! be sealed again here; it is written as rmcp's tests state it and checked with rmcp's `open_with`,
//! which answers `Expired` for it: rmcp checks expiry only after the tag verified.
//!
//! The file: `vectors` (sealing at `now_ms` gives `token`; opening at `now_ms` gives the payload)
//! and `tampered` (opening at `now_ms` fails), both with `id`, `kid`, `key_b64`, `ad_b64`,
//! `payload_b64`, `now_ms`, `ttl_ms` (null: no expiry) and `token`. For a tampered case `kid` and
//! `key_b64` are the opener's one key, `ad_b64` what it opens with.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::Serialize;
use sha2::Sha256;

#[derive(Serialize, Clone)]
struct Case {
    id: String,
    kid: String,
    key_b64: String,
    ad_b64: String,
    payload_b64: String,
    now_ms: i64,
    ttl_ms: Option<i64>,
    token: String,
}

#[derive(Serialize)]
struct File {
    schema: &'static str,
    generator: &'static str,
    vectors: Vec<Case>,
    tampered: Vec<Case>,
}

const KAT_KID: &str = "rotation-key-2026-08";
const KAT_KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const KAT_AD: &[u8] = b"user:alice|request:weather";
const KAT_NOW_MS: i64 = 1_700_000_000_000;
const KAT_TOKEN: &str = "rs2.cm90YXRpb24ta2V5LTIwMjYtMDg.AAABi8_mx5BzdGVwPTI.twv2acu7lKXqebyrmit-JrHHZm-BkKlBQEMMtL3lHk8";

/// A fixed key of n bytes, so that regenerating changes only the times and what follows from them.
fn key(seed: u8, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

fn codec(kid: &str, key: &[u8]) -> RequestStateCodec {
    RequestStateCodec::new_with_keyring(kid, [(kid, key)]).expect("a valid one-key keyring")
}

fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    i64::try_from(d.as_millis()).expect("a clock before the year 292 million")
}

/// The expiry rmcp wrote into a token it sealed: the body's first 8 bytes.
fn expiry_of(token: &str) -> i64 {
    let body = URL_SAFE_NO_PAD
        .decode(token.split('.').nth(2).expect("an rs2 token"))
        .expect("rmcp's base64url");
    i64::from_be_bytes(body[..8].try_into().expect("an 8-byte expiry"))
}

/// Seals with rmcp at its clock and checks that rmcp opens the token again.
fn seal(id: &str, kid: &str, key: &[u8], ad: &[u8], payload: &[u8], ttl_ms: Option<i64>) -> Case {
    let c = codec(kid, key);
    let mut opts = SealOptions::new().associated_data(ad);
    if let Some(ms) = ttl_ms {
        opts = opts.ttl(Duration::from_millis(ms as u64));
    }
    let before = now_ms();
    let token = c.seal_with(payload, &opts);
    let now = match ttl_ms {
        Some(ms) => expiry_of(&token) - ms,
        None => before, // no expiry: the token is the same at any instant
    };
    assert_eq!(
        c.open_with(&token, ad).expect("rmcp opens its own token"),
        payload,
        "{id}"
    );
    Case {
        id: id.into(),
        kid: kid.into(),
        key_b64: STANDARD.encode(key),
        ad_b64: STANDARD.encode(ad),
        payload_b64: STANDARD.encode(payload),
        now_ms: now,
        ttl_ms,
        token,
    }
}

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

/// The token with its part i (0 is "rs2") replaced.
fn with_part(token: &str, i: usize, part: &str) -> String {
    let mut parts: Vec<&str> = token.split('.').collect();
    parts[i] = part;
    parts.join(".")
}

/// The token with the character at index i of part p replaced by another of the alphabet.
fn flip(token: &str, p: usize, i: usize) -> String {
    let part = token.split('.').nth(p).expect("a part");
    let mut b = part.as_bytes().to_vec();
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    with_part(token, p, std::str::from_utf8(&b).expect("ASCII"))
}

/// An rs2 token of any kid bytes and body with a correct tag, for cases rmcp's API cannot seal
/// (a body shorter than the expiry, a kid that is not UTF-8). Checked below through rmcp.
fn raw_rs2(kid: &[u8], key: &[u8], ad: &[u8], body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("any key length");
    mac.update(b"rmcp/mrtr/request-state/v2");
    mac.update(&(kid.len() as u64).to_be_bytes());
    mac.update(kid);
    mac.update(&(ad.len() as u64).to_be_bytes());
    mac.update(ad);
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    format!("rs2.{}.{}.{}", b64(kid), b64(body), b64(&tag))
}

fn tampered(base: &Case, id: &str, token: String) -> Case {
    Case {
        id: id.into(),
        token,
        ..base.clone()
    }
}

fn main() {
    let out = std::env::args().nth(1);
    let mut vectors = Vec::new();

    // rmcp's known answer, as its tests state it: rmcp verifies the tag (Expired comes after it).
    let kat = Case {
        id: "rmcp-known-answer".into(),
        kid: KAT_KID.into(),
        key_b64: STANDARD.encode(KAT_KEY),
        ad_b64: STANDARD.encode(KAT_AD),
        payload_b64: STANDARD.encode(b"step=2"),
        now_ms: KAT_NOW_MS,
        ttl_ms: Some(90_000),
        token: KAT_TOKEN.into(),
    };
    match codec(KAT_KID, KAT_KEY).open_with(KAT_TOKEN, KAT_AD) {
        Err(RequestStateError::Expired) => {}
        other => {
            panic!("rmcp's known answer: {other:?}, want Expired (authentic, past its expiry)")
        }
    }
    vectors.push(kat.clone());

    let k32 = key(1, 32);
    let ad = b"user:alice|tools/call|sha256:0f1e2d";
    vectors.push(seal(
        "rmcp-known-answer-now",
        KAT_KID,
        KAT_KEY,
        KAT_AD,
        b"step=2",
        Some(90_000),
    ));
    let basic = seal(
        "basic",
        "mrtr-2026-01-a1b2",
        &k32,
        ad,
        br#"{"step":1,"asked":["city"]}"#,
        Some(300_000),
    );
    vectors.push(basic.clone());
    vectors.push(seal("empty-payload", "k1", &k32, ad, b"", Some(60_000)));
    vectors.push(seal("empty-ad", "k1", &k32, b"", b"state", Some(60_000)));
    vectors.push(seal(
        "empty-ad-and-payload",
        "k1",
        &k32,
        b"",
        b"",
        Some(60_000),
    ));
    vectors.push(seal("no-expiry", "k1", &k32, ad, b"state", None));
    vectors.push(seal("no-expiry-empty", "k1", &k32, b"", b"", None));
    vectors.push(seal(
        "ttl-milliseconds",
        "k1",
        &k32,
        ad,
        b"state",
        Some(90_500),
    ));
    vectors.push(seal("ttl-15m", "k1", &k32, ad, b"state", Some(900_000)));
    let long_kid: String = "k".to_string() + &"0123456789abcdef-".repeat(15)[..254];
    vectors.push(seal(
        "long-kid-255-bytes",
        &long_kid,
        &k32,
        ad,
        b"state",
        Some(60_000),
    ));
    vectors.push(seal("one-byte-kid", "a", &k32, ad, b"state", Some(60_000)));
    vectors.push(seal(
        "kid-unusual-chars",
        "kid/with.dots+slash=eq ключ ✓",
        &k32,
        ad,
        b"state",
        Some(60_000),
    ));
    let binary: Vec<u8> = (0..=255u8).collect();
    vectors.push(seal(
        "binary-payload",
        "k1",
        &k32,
        &binary,
        &binary,
        Some(60_000),
    ));
    vectors.push(seal(
        "large-payload",
        "k1",
        &k32,
        ad,
        &vec![b'x'; 4096],
        Some(60_000),
    ));
    vectors.push(seal(
        "key-64-bytes",
        "k64",
        &key(2, 64),
        ad,
        b"state",
        Some(60_000),
    ));
    vectors.push(seal(
        "key-33-bytes",
        "k33",
        &key(3, 33),
        ad,
        b"state",
        Some(60_000),
    ));

    let mut bad = Vec::new();
    let t = &basic.token;
    let expiry = expiry_of(t);
    bad.push(Case {
        id: "expired".into(),
        now_ms: expiry + 1,
        ..basic.clone()
    });
    bad.push(Case {
        id: "rmcp-known-answer-expired".into(),
        now_ms: KAT_NOW_MS + 90_001,
        ..kat.clone()
    });
    // Expired at rmcp's own clock too: sealed with a 1 ms TTL, opened after it passed.
    let short = seal("expired-short-ttl", "k1", &k32, ad, b"state", Some(1));
    while now_ms() <= expiry_of(&short.token) + 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    bad.push(Case {
        now_ms: expiry_of(&short.token) + 1,
        ..short
    });
    bad.push(Case {
        id: "wrong-ad".into(),
        ad_b64: STANDARD.encode(b"user:bob|tools/call|sha256:0f1e2d"),
        ..basic.clone()
    });
    bad.push(Case {
        id: "ad-dropped".into(),
        ad_b64: String::new(),
        ..basic.clone()
    });
    bad.push(Case {
        id: "wrong-key".into(),
        key_b64: STANDARD.encode(key(9, 32)),
        ..basic.clone()
    });
    bad.push(Case {
        id: "unknown-kid".into(),
        kid: "mrtr-2026-01-other".into(),
        ..basic.clone()
    });
    bad.push(tampered(
        &basic,
        "kid-swapped",
        with_part(t, 1, &b64(b"mrtr-2026-01-other")),
    ));
    bad.push(tampered(&basic, "kid-flipped", flip(t, 1, 2)));
    bad.push(tampered(&basic, "expiry-flipped", flip(t, 2, 3)));
    bad.push(tampered(&basic, "payload-flipped", flip(t, 2, 14)));
    bad.push(tampered(&basic, "tag-flipped", flip(t, 3, 0)));
    bad.push(tampered(&basic, "tag-last-char-flipped", flip(t, 3, 42)));
    bad.push(tampered(
        &basic,
        "tag-zero",
        with_part(t, 3, &b64(&[0u8; 32])),
    ));
    let mut longer = URL_SAFE_NO_PAD
        .decode(t.split('.').nth(2).unwrap())
        .unwrap();
    longer[..8].copy_from_slice(&(expiry + 3_600_000).to_be_bytes());
    bad.push(tampered(
        &basic,
        "expiry-extended",
        with_part(t, 2, &b64(&longer)),
    ));
    bad.push(tampered(&basic, "version-rs1", with_part(t, 0, "rs1")));
    bad.push(tampered(&basic, "version-rs3", with_part(t, 0, "rs3")));
    bad.push(tampered(
        &basic,
        "version-uppercase",
        with_part(t, 0, "RS2"),
    ));
    bad.push(tampered(
        &basic,
        "tag-truncated-char",
        t[..t.len() - 1].into(),
    ));
    let tag = t.split('.').nth(3).unwrap();
    let tag16 = b64(&URL_SAFE_NO_PAD.decode(tag).unwrap()[..16]);
    bad.push(tampered(
        &basic,
        "tag-truncated-16-bytes",
        with_part(t, 3, &tag16),
    ));
    bad.push(tampered(
        &basic,
        "tag-missing",
        t[..t.rfind('.').unwrap()].into(),
    ));
    bad.push(tampered(&basic, "tag-empty", with_part(t, 3, "")));
    bad.push(tampered(&basic, "body-empty", with_part(t, 2, "")));
    bad.push(tampered(&basic, "kid-empty", with_part(t, 1, "")));
    bad.push(tampered(&basic, "prefix-only", "rs2.".into()));
    bad.push(tampered(&basic, "version-only", "rs2".into()));
    bad.push(tampered(&basic, "empty", String::new()));
    bad.push(tampered(&basic, "extra-part", format!("{t}.AAAA")));
    bad.push(tampered(&basic, "extra-empty-part", format!("{t}.")));
    bad.push(tampered(&basic, "leading-dot", format!(".{t}")));
    bad.push(tampered(&basic, "trailing-newline", format!("{t}\n")));
    bad.push(tampered(&basic, "leading-space", format!(" {t}")));
    bad.push(tampered(&basic, "tag-padded", format!("{t}=")));
    bad.push(tampered(
        &basic,
        "kid-padded",
        with_part(t, 1, &format!("{}=", t.split('.').nth(1).unwrap())),
    ));
    bad.push(tampered(
        &basic,
        "body-padded",
        with_part(t, 2, &format!("{}==", t.split('.').nth(2).unwrap())),
    ));
    bad.push(tampered(
        &basic,
        "body-bad-char",
        with_part(t, 2, "AAAA!AAA"),
    ));
    // The binary payload's bytes 0xf8..0xff always spell '-' and '_' in base64url.
    let bin = vectors
        .iter()
        .find(|c| c.id == "binary-payload")
        .expect("the binary vector")
        .clone();
    let std_alphabet: String = bin
        .token
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    assert_ne!(std_alphabet, bin.token);
    bad.push(tampered(&bin, "standard-base64-alphabet", std_alphabet));
    // A last character whose unused low bits are set: the same bytes, spelt another way.
    let last = tag.as_bytes()[tag.len() - 1];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let pos = alphabet.iter().position(|&c| c == last).unwrap();
    let sloppy = format!(
        "{}{}",
        &tag[..tag.len() - 1],
        alphabet[(pos & !3) | 1] as char
    );
    bad.push(tampered(
        &basic,
        "tag-trailing-bits",
        with_part(t, 3, &sloppy),
    ));
    bad.push(tampered(
        &basic,
        "kid-255-plus-1-bytes",
        with_part(t, 1, &b64(&[b'k'; 256])),
    ));
    bad.push(tampered(
        &basic,
        "kid-invalid-utf8",
        raw_rs2(&[0xff], &k32, ad, &{
            let mut b = expiry.to_be_bytes().to_vec();
            b.extend_from_slice(b"state");
            b
        }),
    ));
    // Authentic (the tag verifies) but shorter than the 8-byte expiry: rmcp answers malformed.
    bad.push(tampered(
        &basic,
        "body-shorter-than-expiry",
        raw_rs2(basic.kid.as_bytes(), &k32, ad, b"short"),
    ));
    bad.push(tampered(&basic, "rs1-of-same-key", {
        #[allow(deprecated)] // rs1 is the legacy format rs2 must never be confused with
        let rs1 = RequestStateCodec::new_unchecked(k32.clone());
        rs1.seal_with(
            br#"{"step":1,"asked":["city"]}"#,
            &SealOptions::new()
                .associated_data(ad)
                .ttl(Duration::from_secs(300)),
        )
    }));

    // Every tampered case fails in rmcp too. (The expired ones fail by time: checked at rmcp's
    // clock only where the token has expired by it.)
    for c in &bad {
        let key = STANDARD.decode(&c.key_b64).unwrap();
        let ad = STANDARD.decode(&c.ad_b64).unwrap();
        let opened = codec(&c.kid, &key).open_with(&c.token, &ad);
        let by_time_only = c.id == "expired";
        if by_time_only {
            assert!(opened.is_ok(), "{}: {opened:?}", c.id);
        } else {
            assert!(opened.is_err(), "{}: rmcp opened it", c.id);
        }
        if c.id == "body-shorter-than-expiry" {
            assert!(
                matches!(opened, Err(RequestStateError::MalformedFormat)),
                "{opened:?}"
            );
        }
    }

    let file = File {
        schema: "rmcp-rs2-vectors/1",
        generator: "clients/rust/examples/rs2_vectors.rs, rmcp 3.11.0",
        vectors,
        tampered: bad,
    };
    let json = serde_json::to_string_pretty(&file).expect("JSON") + "\n";
    match out {
        Some(path) => std::fs::write(&path, json).expect("write the vectors"),
        None => print!("{json}"),
    }
}
