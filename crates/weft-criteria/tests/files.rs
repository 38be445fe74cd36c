//! `file_exists` against real files: literal paths, globs, sizes, and every way out of the
//! workspace (absolute paths, `..`, symlinked files and directories).

mod common;

use common::Fixture;
use serde_json::json;
use weft_criteria::Outcome;

#[test]
fn literal_paths_and_sizes() {
    let f = Fixture::new();
    f.write("out/report.md", "hello");
    let r = f.one(json!({"kind": "file_exists", "path": "out/report.md"}));
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.evidence.matched_file.as_deref(), Some("out/report.md"));
    let r = f.one(json!({"kind": "file_exists", "path": "./out/report.md", "min_bytes": 5}));
    assert_eq!(r.outcome, Outcome::Passed);
    let r = f.one(json!({"kind": "file_exists", "path": "out/report.md", "min_bytes": 6}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.evidence.summary.contains("fewer than 6"),
        "{}",
        r.evidence.summary
    );
    let r = f.one(json!({"kind": "file_exists", "path": "out/missing.md"}));
    assert_eq!(r.outcome, Outcome::Failed);
    // A directory is not a regular file.
    let r = f.one(json!({"kind": "file_exists", "path": "out"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.evidence.summary.contains("not a regular file"));
}

#[test]
fn globs_respect_separators() {
    let f = Fixture::new();
    f.write("src/sub/b.rs", "fn b() {}");
    f.write("src/notes.txt", "x");
    let r = f.one(json!({"kind": "file_exists", "path": "src/*.rs"}));
    assert_eq!(r.outcome, Outcome::Failed, "`*` must not cross '/'");
    let r = f.one(json!({"kind": "file_exists", "path": "src/**/*.rs"}));
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.evidence.matched_file.as_deref(), Some("src/sub/b.rs"));
    let r = f.one(json!({"kind": "file_exists", "path": "**/*.{txt,md}"}));
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.evidence.matched_file.as_deref(), Some("src/notes.txt"));
    // Size applies to each match; a larger one later still passes.
    f.write("src/big.txt", "0123456789");
    let r = f.one(json!({"kind": "file_exists", "path": "src/*.txt", "min_bytes": 10}));
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.evidence.matched_file.as_deref(), Some("src/big.txt"));
    let r = f.one(json!({"kind": "file_exists", "path": "src/[", "min_bytes": 1}));
    assert_eq!(r.outcome, Outcome::Error, "invalid glob");
}

#[test]
fn absolute_and_parent_paths_are_refused() {
    let f = Fixture::new();
    f.write("a/b.txt", "x");
    for path in [
        "/etc/passwd",
        "../x",
        "a/../a/b.txt",
        "a/*/../b.txt",
        "/tmp/*",
    ] {
        let r = f.one(json!({"kind": "file_exists", "path": path}));
        assert_eq!(r.outcome, Outcome::Error, "{path}");
    }
}

#[test]
fn symlink_escapes_are_refused() {
    let f = Fixture::new();
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), f.root().join("link.txt"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), f.root().join("outdir")).unwrap();

    let r = f.one(json!({"kind": "file_exists", "path": "link.txt"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.evidence.rejected[0].contains("outside the workspace"),
        "{:?}",
        r.evidence
    );
    let r = f.one(json!({"kind": "file_exists", "path": "*.txt"}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.evidence.summary.contains("refused"),
        "{}",
        r.evidence.summary
    );
    let r = f.one(json!({"kind": "file_exists", "path": "outdir/secret.txt"}));
    assert_eq!(r.outcome, Outcome::Failed);
    // The walk does not descend into symlinked directories.
    let r = f.one(json!({"kind": "file_exists", "path": "**/secret.txt"}));
    assert_eq!(r.outcome, Outcome::Failed);

    // A symlink that stays inside is fine.
    f.write("real.txt", "ok");
    std::os::unix::fs::symlink(f.root().join("real.txt"), f.root().join("alias.txt")).unwrap();
    let r = f.one(json!({"kind": "file_exists", "path": "alias.txt"}));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn walks_are_bounded() {
    let mut f = Fixture::new();
    for i in 0..20 {
        f.write(&format!("d/f{i}"), "");
    }
    f.limits.max_walk_entries = 10;
    let r = f.one(json!({"kind": "file_exists", "path": "**/nothing"}));
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.evidence.summary.contains("more than 10"));
}
