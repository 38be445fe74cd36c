//! Repository hygiene that review alone would miss: every Rust file opens with a `//!`
//! module doc, every crate is described in docs/ARCHITECTURE.md, and no test is skipped
//! with an ignore attribute (a skipped test hides a missing part).

#![allow(
    clippy::unwrap_used,
    reason = "a panic here is a test failure with a message"
)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("fuzz/fuzz_targets"), &mut files);
    files.sort();
    files
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let missing: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| !std::fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a //! header: {missing:#?}"
    );
}

#[test]
fn every_crate_is_in_the_architecture_document() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            doc.contains(&format!("`crates/{name}`")),
            "docs/ARCHITECTURE.md has no entry for crates/{name}"
        );
    }
}

#[test]
fn no_test_is_skipped() {
    let marker = ["#[", "ignore"].concat();
    let skipped: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| std::fs::read_to_string(p).unwrap().contains(&marker))
        .map(|p| p.display().to_string())
        .collect();
    assert!(skipped.is_empty(), "skipped tests: {skipped:#?}");
}
