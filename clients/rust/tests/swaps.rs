//! The shared swap sequences (testdata/consumers/swaps.json, what Go's FileSource served): a real
//! directory changed op by op as the kubelet (or a careless writer) changes it, and after each op
//! the keyring the watcher serves, whether it refused the directory, whether an ack is due.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mrtr_keyring::KeyringWatcher;
use serde_json::Value;

fn apply(dir: &Path, op: &Value) {
    let p = dir.join(op["path"].as_str().unwrap());
    match op["op"].as_str().unwrap() {
        "mkdir" => std::fs::create_dir(&p).unwrap(),
        "write" => std::fs::write(
            &p,
            STANDARD.decode(op["data"].as_str().unwrap_or("")).unwrap(),
        )
        .unwrap(),
        "symlink" => std::os::unix::fs::symlink(op["target"].as_str().unwrap(), &p).unwrap(),
        "rename" => std::fs::rename(&p, dir.join(op["to"].as_str().unwrap())).unwrap(),
        "remove" => std::fs::remove_file(&p).unwrap(),
        "removeAll" => std::fs::remove_dir_all(&p).unwrap(),
        other => panic!("unknown op {other}"),
    }
}

fn check(dir: &Path, name: &str, at: &str, w: &KeyringWatcher, ack: bool, want: &Value) {
    let ring = w.keyring();
    assert_eq!(
        ring.fingerprint(),
        want["fingerprint"].as_str().unwrap(),
        "{name} {at}"
    );
    let ids: Vec<&str> = ring.keys().iter().map(|k| k.id()).collect();
    let want_ids: Vec<&str> = want["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids, want_ids, "{name} {at}");
    assert_eq!(
        ring.token_ttl(),
        want["tokenTTLSeconds"].as_u64(),
        "{name} {at}"
    );
    assert_eq!(
        w.last_error().is_some(),
        want["rejected"].as_bool().unwrap(),
        "{name} {at}: {:?}",
        w.last_error()
    );
    assert_eq!(ack, want["acknowledge"].as_bool().unwrap(), "{name} {at}");
    // A refused document in Go's words; I/O errors are the OS's, in each language's own words.
    if let (Some(err), Some(want)) = (w.last_error(), want["error"].as_str())
        && (want.contains(": keyring.json: ") || want.contains(": token-ttl is "))
    {
        assert_eq!(
            err,
            want.replace("$MRTR_KEYRING_DIR", dir.to_str().unwrap()),
            "{name} {at}"
        );
    }
}

#[test]
fn swap_sequences() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/consumers/swaps.json");
    let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let seqs = file["sequences"].as_array().unwrap();
    assert!(!seqs.is_empty());
    for (n, seq) in seqs.iter().enumerate() {
        let name = seq["name"].as_str().unwrap();
        let dir =
            std::env::temp_dir().join(format!("mrtr-keyring-swaps-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for op in seq["setup"].as_array().unwrap() {
            apply(&dir, op);
        }
        if seq["start"]["refused"].as_bool() == Some(true) {
            // No last good keyring: the server must not start, and says why in Go's words.
            let err = KeyringWatcher::new(&dir).expect_err(name).to_string();
            let want = seq["start"]["error"]
                .as_str()
                .unwrap()
                .replace("$MRTR_KEYRING_DIR", dir.to_str().unwrap());
            assert_eq!(err, want, "{name}");
            std::fs::remove_dir_all(&dir).unwrap();
            continue;
        }
        let w = KeyringWatcher::new(&dir).unwrap_or_else(|e| panic!("{name}: start: {e}"));
        check(&dir, name, "start", &w, true, &seq["start"]);
        for (i, step) in seq["steps"].as_array().unwrap().iter().enumerate() {
            apply(&dir, step);
            let ack = w.reload();
            check(
                &dir,
                name,
                &format!("step {i} ({})", step["op"]),
                &w,
                ack,
                &step["expect"],
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The polling thread puts a kubelet-style swap in service and tells the listeners (an rs2 codec's
/// reload), without a restart.
#[test]
fn started_watcher_follows_a_swap() {
    let dir = std::env::temp_dir().join(format!("mrtr-keyring-poll-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let write = |ts: &str, ids: &[&str]| {
        std::fs::create_dir(dir.join(ts)).unwrap();
        let keys: Vec<String> = ids
            .iter()
            .map(|id| {
                format!(
                    r#"{{"id":"{id}","secret":"{}"}}"#,
                    STANDARD.encode([id.as_bytes()[0]; 32])
                )
            })
            .collect();
        std::fs::write(
            dir.join(ts).join("keyring.json"),
            format!(r#"{{"keys":[{}]}}"#, keys.join(",")),
        )
        .unwrap();
        std::os::unix::fs::symlink(ts, dir.join("..data_tmp")).unwrap();
        std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    };
    write("..1", &["a"]);
    std::os::unix::fs::symlink("..data/keyring.json", dir.join("keyring.json")).unwrap();
    let w = std::sync::Arc::new(KeyringWatcher::new(&dir).unwrap());
    let codec = std::sync::Arc::new(
        mrtr_keyring::Rs2Codec::new(&w.keyring(), std::time::Duration::from_secs(60)).unwrap(),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let c = codec.clone();
    w.on_change(move |ring| {
        c.reload(ring).unwrap();
        let _ = tx.send(ring.fingerprint().to_owned());
    });
    let thread = w.start(std::time::Duration::from_millis(20));
    write("..2", &["b", "a"]);
    let fp = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the watcher reloads");
    assert_eq!(fp, w.keyring().fingerprint());
    assert_eq!(codec.fingerprint(), fp);
    assert!(
        codec.seal(b"s", b"").unwrap().starts_with("rs2.Yg."),
        "keys[0], b, seals"
    );
    w.stop();
    thread.thread().unpark();
    thread.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
