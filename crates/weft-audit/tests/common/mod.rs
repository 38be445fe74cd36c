//! Helpers the integration tests share: a 100-entry chain on disk and line surgery.
#![allow(dead_code, reason = "each test binary uses a different subset")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::{Path, PathBuf};
use weft_audit::{AuditError, AuditWriter, Entry, Receipt, VerifyReport};

pub struct Log {
    pub _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub receipts: Vec<Receipt>,
}

pub fn entry(i: u64) -> Entry {
    Entry::criterion_verdict("run-1", 1_000 + i, &format!("n{i}"), "tests-pass", true)
}

/// A chain of `n` entries written through `AuditWriter`.
pub fn build(n: u64) -> Log {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut w = AuditWriter::open(&path).unwrap();
    let receipts = (1..=n).map(|i| w.append(&entry(i)).unwrap()).collect();
    w.sync().unwrap();
    Log {
        _dir: dir,
        path,
        receipts,
    }
}

/// The file's lines, each with its newline.
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_owned)
        .collect()
}

pub fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.concat()).unwrap();
}

pub fn verify_file(path: &Path, anchor: Option<&str>) -> Result<VerifyReport, AuditError> {
    let file = std::fs::File::open(path).unwrap();
    weft_audit::verify(std::io::BufReader::new(file), anchor)
}
