//! The watcher reports each failure once: a snapshot that stays invalid is not reported again at
//! every poll, another invalid one is, and one after a good snapshot is again.

use std::sync::{Arc, Mutex};

use mrtr_keyring::KeyringWatcher;

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
