//! The consumer contract's shared vectors (testdata/consumers at the repository's root, made by the
//! Go library): every valid keyring parses to the same keys and fingerprint, every invalid one is
//! refused as a whole, naming the same entry and, but for JSON syntax, with Go's message.

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
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
