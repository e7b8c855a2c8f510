//! The consumer contract's shared vectors (testdata/consumers at the repository's root, made by the
//! Go library): every valid keyring parses to the same keys and fingerprint, every invalid one is
//! refused as a whole, naming the same entry and, but for JSON syntax, with Go's message; a token
//! sealed for one request and opened for another counts what Go counts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mrtr_keyring::Rs2Codec;
use mrtr_keyring::metrics::{FORMAT_RS2, MeteredRs2, Metrics, OpenResult};
use rmcp::model::{RequestStateCodec, RequestStateError};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(name: &str) -> Value {
    let path = root().join("testdata/consumers").join(name);
    serde_json::from_slice(&std::fs::read(&path).expect("the shared vectors")).expect("JSON")
}

fn data(v: &Value) -> Vec<u8> {
    let mut b = STANDARD.decode(v["data"].as_str().unwrap_or("")).unwrap();
    if let Some(n) = v.get("padTo").and_then(Value::as_u64) {
        b.resize(n as usize, b' ');
    }
    b
}

#[test]
fn valid_keyrings_parse_as_go_does() {
    let v = load("keyrings.json");
    let valid = v["valid"].as_array().unwrap();
    assert!(!valid.is_empty());
    for case in valid {
        let name = case["name"].as_str().unwrap();
        let ring = mrtr_keyring::parse(&data(case)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            ring.fingerprint(),
            case["fingerprint"].as_str().unwrap(),
            "{name}"
        );
        let want = case["keys"].as_array().unwrap();
        assert_eq!(ring.keys().len(), want.len(), "{name}");
        for (k, w) in ring.keys().iter().zip(want) {
            assert_eq!(k.id(), w["id"].as_str().unwrap(), "{name}");
            assert_eq!(
                STANDARD.encode(k.secret()),
                w["secret"].as_str().unwrap(),
                "{name}"
            );
        }
    }
}

#[test]
fn invalid_keyrings_are_refused_as_go_does() {
    let v = load("keyrings.json");
    let invalid = v["invalid"].as_array().unwrap();
    assert!(!invalid.is_empty());
    for case in invalid {
        let name = case["name"].as_str().unwrap();
        let err = match mrtr_keyring::parse(&data(case)) {
            Ok(_) => panic!("{name}: parsed"),
            Err(e) => e,
        };
        let rule = case["rule"].as_str().unwrap();
        let want = case["error"].as_str().unwrap();
        if rule == "json" {
            // serde_json's syntax errors are not Go's words; the rule and the entry are.
            assert!(
                err.to_string().starts_with("keyring.json: "),
                "{name}: {err}"
            );
            if want.contains("after the keyring object") || want.contains("document is empty") {
                assert_eq!(err.to_string(), want, "{name}");
            }
        } else {
            assert_eq!(err.to_string(), want, "{name}");
        }
        if let Some(i) = case.get("entry").and_then(Value::as_u64) {
            assert_eq!(err.index(), Some(i as usize), "{name}: {err}");
        }
        // No part of a secret in the message.
        if let Ok(text) = std::str::from_utf8(&data(case)) {
            for secret in text.split('"').filter(|s| s.len() >= 16) {
                assert!(!err.to_string().contains(secret), "{name}: {err}");
            }
        }
    }
}

#[test]
fn token_ttl_as_go_reads_it() {
    let v = load("token-ttl.json");
    for case in v["valid"].as_array().unwrap() {
        let got = mrtr_keyring::parse_token_ttl(&data(case));
        assert_eq!(got.ok(), case["seconds"].as_u64(), "{case}");
    }
    for case in v["invalid"].as_array().unwrap() {
        let err = mrtr_keyring::parse_token_ttl(&data(case)).expect_err("refused");
        assert_eq!(err.to_string(), case["error"].as_str().unwrap(), "{case}");
    }
}

/// bindings.json: a token sealed for one request and opened for another. rs2's tag covers the
/// associated data, so a token of another binding counts `bad_mac`, never `binding_mismatch`.
#[test]
fn bindings_count_as_go_says() {
    let v = load("bindings.json");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    let ring = mrtr_keyring::parse(&data(&v["keyring"])).unwrap();
    let ttl = Duration::from_secs(v["ttlSeconds"].as_u64().unwrap());
    let state = v["state"].as_str().unwrap().as_bytes();
    let rmcp = RequestStateCodec::new_with_keyring(
        ring.primary().id(),
        ring.keys().iter().map(|k| (k.id(), k.secret())),
    )
    .unwrap();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let seal_ad = case["seal"]["rs2Ad"].as_str().unwrap().as_bytes();
        let open_ad = case["open"]["rs2Ad"].as_str().unwrap().as_bytes();
        let want = case["results"][FORMAT_RS2].as_str().unwrap();
        assert_ne!(want, "binding_mismatch", "{name}");

        // Sealed and opened now by the crate's codec: the file's result, once.
        let m = Metrics::new();
        let c = MeteredRs2::new(Arc::new(Rs2Codec::new(&ring, ttl).unwrap()), Arc::clone(&m));
        let tok = c.seal(state, seal_ad).unwrap();
        assert_eq!(c.open(&tok, open_ad).is_ok(), want == "ok", "{name}");
        for r in OpenResult::ALL {
            let n = u64::from(r.as_str() == want);
            assert_eq!(m.opened(FORMAT_RS2, r), n, "{name}: {}", r.as_str());
        }

        // Go's token, opened by rmcp itself long after the file's clock: rmcp checks the tag before
        // the expiry, so the same binding verifies (and is expired) and any other fails the tag.
        let go = case["tokens"][FORMAT_RS2].as_str().unwrap();
        let err = rmcp.open_with(go, open_ad).unwrap_err();
        if want == "ok" {
            assert!(matches!(err, RequestStateError::Expired), "{name}: {err:?}");
        } else {
            assert!(
                matches!(err, RequestStateError::IntegrityCheckFailed),
                "{name}: {err:?}"
            );
        }
    }
}

/// rejections.json: every rs2 case whose result holds at any clock from the file's on (rmcp reads
/// the system clock, so the cases that need the file's own clock, "opens" among them, are Go's and
/// TypeScript's) counts the file's result once, the precedence of two results included.
#[test]
fn rejections_count_as_go_says() {
    let v = load("rejections.json");
    let mut ran = 0;
    for case in v["cases"].as_array().unwrap() {
        if case["format"] != FORMAT_RS2 || case["anyLaterTime"] != true {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let want = case["result"].as_str().unwrap();
        let ring = mrtr_keyring::parse(&data(&case["keyring"])).unwrap();
        let ttl = Duration::from_secs(case["ttlSeconds"].as_u64().unwrap());
        let mut token = case["token"].as_str().unwrap().to_owned();
        if let Some(n) = case.get("tokenPadTo").and_then(Value::as_u64) {
            while token.len() < n as usize {
                token.push('A');
            }
        }
        let ad = v[case["openedFor"].as_str().unwrap()]["rs2Ad"]
            .as_str()
            .unwrap()
            .as_bytes();
        let m = Metrics::new();
        let c = MeteredRs2::new(Arc::new(Rs2Codec::new(&ring, ttl).unwrap()), Arc::clone(&m));
        assert_eq!(c.open(&token, ad).is_ok(), want == "ok", "{name}");
        for r in OpenResult::ALL {
            let n = u64::from(r.as_str() == want);
            assert_eq!(m.opened(FORMAT_RS2, r), n, "{name}: {}", r.as_str());
        }
        ran += 1;
    }
    assert!(ran >= 10, "{ran} rs2 cases ran");
}
