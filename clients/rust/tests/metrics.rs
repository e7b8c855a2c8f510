// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

//! The consumer metrics of the contract: the codec counts each seal and each open by its result,
//! the watcher the keyring in service and its failed reloads, with Go's names and labels.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mrtr_keyring::metrics::{AckState, FORMAT_RS2, MeteredRs2, Metrics, OpenResult};
use mrtr_keyring::{KeyringWatcher, Rs2Codec, parse};

fn doc(keys: &[(&str, u8)]) -> String {
    let keys: Vec<String> = keys
        .iter()
        .map(|(id, b)| {
            format!(
                r#"{{"id":"{id}","secret":"{}"}}"#,
                STANDARD.encode([*b; 32])
            )
        })
        .collect();
    format!(r#"{{"keys":[{}]}}"#, keys.join(","))
}

#[test]
fn codec_counts_seals_and_opens_by_result() {
    let m = Metrics::new();
    let ours = parse(doc(&[("k1", 1)]).as_bytes()).unwrap();
    let theirs = parse(doc(&[("k9", 9)]).as_bytes()).unwrap();
    let c = MeteredRs2::new(
        Arc::new(Rs2Codec::new(&ours, Duration::from_secs(60)).unwrap()),
        Arc::clone(&m),
    );
    let foreign = Rs2Codec::new(&theirs, Duration::from_secs(60)).unwrap();
    let tok = c.seal(b"step=1", b"req-a").expect("seal");
    assert!(c.open(&tok, b"req-a").is_ok());
    let mut flipped = tok.clone();
    let last = flipped.pop().unwrap();
    flipped.push(if last == 'A' { 'B' } else { 'A' });
    for (t, ad) in [
        (foreign.seal(b"x", b"req-a").expect("seal"), &b"req-a"[..]),
        (flipped, b"req-a"),
        (tok.clone(), b"req-b"),
        ("not a token".to_owned(), b"req-a"),
        ("a".repeat(70 << 10), b"req-a"),
    ] {
        assert!(c.open(&t, ad).is_err());
    }
    assert_eq!(m.sealed(FORMAT_RS2), 1);
    let got: Vec<u64> = OpenResult::ALL
        .iter()
        .map(|r| m.opened(FORMAT_RS2, *r))
        .collect();
    // ok, expired, unknown_key, bad_mac (a flipped tag, another request's ad), binding_mismatch,
    // malformed, too_large
    assert_eq!(got, vec![1, 0, 1, 2, 0, 1, 1]);
    let text = m.exposition();
    assert!(
        text.contains(
            "mrtr_consumer_tokens_opened_total{format=\"rs2\",result=\"unknown_key\"} 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("mrtr_consumer_tokens_sealed_total{format=\"rs2\"} 1\n"),
        "{text}"
    );
}

#[test]
fn follows_the_watcher_and_counts_each_failed_reload_once() {
    let dir = std::env::temp_dir().join(format!("mrtr-metrics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let write = |d: &str| std::fs::write(dir.join("keyring.json"), d).unwrap();
    write(&doc(&[("a", 1)]));
    let w = KeyringWatcher::new(&dir).unwrap();
    let m = Metrics::new();
    m.follow(&w);
    assert_eq!(m.fingerprint(), w.keyring().fingerprint());
    write(r#"{"keys":[]}"#);
    assert!(!w.reload());
    assert!(!w.reload());
    assert_eq!(
        m.reload_failures(),
        1,
        "the same invalid snapshot counts once"
    );
    write(&doc(&[("b", 2), ("a", 1)]));
    assert!(w.reload());
    assert_eq!(m.fingerprint(), w.keyring().fingerprint());
    let text = m.exposition();
    assert!(
        text.contains(&format!(
            "mrtr_consumer_keyring_info{{fingerprint=\"{}\"}} 1\n",
            m.fingerprint()
        )),
        "{text}"
    );
    assert!(
        text.contains("mrtr_consumer_reload_failures_total 1\n"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ack_state_is_one_series_at_one() {
    let m = Metrics::new();
    assert!(!m.exposition().contains("mrtr_consumer_ack_state{"));
    m.ack_state_changed(AckState::Pending);
    m.ack_state_changed(AckState::Acknowledged);
    let text = m.exposition();
    assert!(
        text.contains("mrtr_consumer_ack_state{state=\"acknowledged\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("mrtr_consumer_ack_state{state=\"pending\"} 0\n"),
        "{text}"
    );
}
