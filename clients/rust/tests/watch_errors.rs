//! The watcher reports each failure once: a snapshot that stays invalid is not reported again at
//! every poll, another invalid one is, and one after a good snapshot is again.

use std::sync::{Arc, Mutex};

use mrtr_keyring::KeyringWatcher;
use mrtr_keyring::metrics::Metrics;

const GOOD: &str =
    r#"{"keys":[{"id":"a","secret":"sUrVA6lxKrdK56/X/4SjuAurQsMDYtH6OoCiATVaa34="}]}"#;
const BAD_ENTRY: &str = r#"{"keys":[{"id":"a","secret":"sUrVA6lxKrdK56/X/4SjuAurQsMDYtH6OoCiATVaa34="},{"id":"b","kid":"x"}]}"#;

#[test]
fn reports_each_failure_once() {
    let dir = std::env::temp_dir().join(format!("mrtr-watch-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keyring.json");
    std::fs::write(&file, GOOD).unwrap();
    let w = KeyringWatcher::new(&dir).unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = Arc::clone(&seen);
    w.on_error(move |e| s.lock().unwrap().push(e.to_string()));

    std::fs::write(&file, BAD_ENTRY).unwrap();
    assert!(!w.reload());
    assert!(!w.reload());
    assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
    assert!(seen.lock().unwrap()[0].contains("keys[1]"));

    std::fs::write(&file, GOOD).unwrap();
    std::fs::write(dir.join("token-ttl"), "0").unwrap();
    assert!(!w.reload());
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert!(seen.lock().unwrap()[1].contains("token-ttl"));

    std::fs::remove_file(dir.join("token-ttl")).unwrap();
    std::fs::write(&file, GOOD).unwrap();
    w.reload();
    assert!(w.last_error().is_none());
    std::fs::write(&file, BAD_ENTRY).unwrap();
    assert!(!w.reload());
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "an error after a good snapshot is reported again"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot that stays unreadable for one reason is one failure (one report, one count of
/// `mrtr_consumer_reload_failures_total`), not one per poll, as in every consumer; another reason
/// counts again, and so does the same one after a readable snapshot.
#[test]
fn counts_an_unreadable_snapshot_once() {
    let dir = std::env::temp_dir().join(format!("mrtr-watch-unreadable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keyring.json");
    std::fs::write(&file, GOOD).unwrap();
    let w = KeyringWatcher::new(&dir).unwrap();
    let m = Metrics::new();
    m.follow(&w);
    let unreadable = |dir_not_loop: bool| {
        if file.is_dir() {
            std::fs::remove_dir(&file).unwrap();
        } else {
            std::fs::remove_file(&file).unwrap();
        }
        if dir_not_loop {
            std::fs::create_dir(&file).unwrap(); // reading it fails: it is a directory
        } else {
            std::os::unix::fs::symlink("keyring.json", &file).unwrap(); // a link to itself
        }
    };

    unreadable(true);
    for _ in 0..3 {
        assert!(!w.reload());
    }
    assert_eq!(m.reload_failures(), 1);
    assert!(w.last_error().is_some());
    unreadable(false);
    assert!(!w.reload());
    assert_eq!(m.reload_failures(), 2, "another reason counts again");
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, GOOD).unwrap();
    w.reload();
    assert!(w.last_error().is_none());
    unreadable(true);
    assert!(!w.reload());
    assert_eq!(
        m.reload_failures(),
        3,
        "the same reason after a readable snapshot counts again"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
