//! The consumer contract's conformance check (test/conformance at the repository's root, a Go
//! program) run against this consumer, with -lost-answer: every check must pass.
//! MRTR_CONFORMANCE_ROOT names another checkout that holds the check.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn passes_every_check_the_lost_answer_included() {
    let root = std::env::var_os("MRTR_CONFORMANCE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../.."));
    let out = Command::new("go")
        .args(["run", "./test/conformance", "-lost-answer", "--"])
        .arg(env!("CARGO_BIN_EXE_mrtr-conformance-consumer"))
        .current_dir(&root)
        .output()
        .unwrap_or_else(|e| panic!("go run ./test/conformance in {}: {e}", root.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the conformance check failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.ends_with(" passed, 0 failed")),
        "{stdout}"
    );
    assert!(!stdout.lines().any(|l| l.starts_with("FAIL")), "{stdout}");
}
