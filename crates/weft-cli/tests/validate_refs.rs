//! `weft validate` follows local `subgraph.ref`s: the shipped parent and child pass, and a
//! broken pin is an error of the parent, positioned at the ref, in text and in `--json`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ags/examples")
}

fn weft_in(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("weft").unwrap();
    cmd.current_dir(dir);
    cmd
}

#[test]
fn the_shipped_parent_and_child_validate_together() {
    weft_in(&examples())
        .args(["validate", "--strict", "docs-site-refresh.agraph.yaml"])
        .assert()
        .code(0);
}

#[test]
fn a_wrong_expected_id_fails_the_parent_at_the_ref() {
    let dir = tempfile::tempdir().unwrap();
    let parent = std::fs::read_to_string(examples().join("docs-site-refresh.agraph.yaml"))
        .unwrap()
        .replace(
            "expected_id: examples/link-audit",
            "expected_id: examples/other",
        );
    std::fs::write(dir.path().join("parent.agraph.yaml"), parent).unwrap();
    std::fs::copy(
        examples().join("link-audit.agraph.yaml"),
        dir.path().join("link-audit.agraph.yaml"),
    )
    .unwrap();

    let out = weft_in(dir.path())
        .args(["validate", "parent.agraph.yaml"])
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("error[RT052]: `./link-audit.agraph.yaml` has id `examples/link-audit`, expected `examples/other`"), "{text}");
    assert!(
        text.contains("--> parent.agraph.yaml:307:9 (/nodes/link_audit/subgraph/ref/expected_id)"),
        "{text}"
    );
    assert!(text.contains("FAIL parent.agraph.yaml (1 error"), "{text}");

    let out = weft_in(dir.path())
        .args(["validate", "--json", "parent.agraph.yaml"])
        .assert()
        .code(1);
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let doc = &json["documents"][0];
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["references"][0]["code"], "RT052");
    assert_eq!(doc["references"][0]["line"], 307);

    // Without the child the parent cannot be checked: an error, not a silent pass.
    std::fs::remove_file(dir.path().join("link-audit.agraph.yaml")).unwrap();
    let out = weft_in(dir.path())
        .args(["validate", "parent.agraph.yaml"])
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("cannot be read"), "{text}");
}
