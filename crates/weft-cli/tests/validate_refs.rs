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

/// The shipped examples (the repository's copy of the AGS examples).
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
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

    // Without the child the parent is still valid AGS, and weft says it will not run it:
    // a coded refusal at the ref, not a silent pass and not an error.
    std::fs::remove_file(dir.path().join("link-audit.agraph.yaml")).unwrap();
    std::fs::write(
        dir.path().join("parent.agraph.yaml"),
        std::fs::read_to_string(examples().join("docs-site-refresh.agraph.yaml")).unwrap(),
    )
    .unwrap();
    let out = weft_in(dir.path())
        .args(["validate", "parent.agraph.yaml"])
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("refusal[WF102]: `./link-audit.agraph.yaml` cannot be read"),
        "{text}"
    );
    assert!(
        text.contains("--> parent.agraph.yaml:306:9 (/nodes/link_audit/subgraph/ref/uri)"),
        "{text}"
    );
    assert!(
        text.contains(
            "WARN parent.agraph.yaml (0 errors, 0 warnings, 1 advice, 1 refusal): valid AGS, but weft will not run it (WF102)"
        ),
        "{text}"
    );
}

/// A graph whose subgraph node references `uri`, after an exec node that would leave a mark.
fn with_ref(uri: &str) -> String {
    format!(
        r#"ags_version: "1.0"
kind: AgenticGraph
id: t/remote
title: Remote child
objective: Run a child graph that lives elsewhere, after a first step.
constraints: {{max_cost_usd: 1}}
entrypoints: [first]
nodes:
  first:
    title: First
    description: Leave a mark in the working directory so a test sees whether anything ran.
    x-weft-exec: {{run: "touch ran.txt && echo '{{}}'"}}
  child:
    type: subgraph
    title: Child
    description: Run the child graph named by the reference once the first step is done.
    depends_on: [first]
    subgraph:
      ref: {{uri: "{uri}", integrity: "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}
"#
    )
}

#[test]
fn a_remote_ref_is_valid_ags_that_weft_refuses_with_a_coded_finding() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("remote.agraph.yaml"),
        with_ref("https://example.org/child.agraph.yaml"),
    )
    .unwrap();

    let out = weft_in(dir.path())
        .args(["validate", "--json", "remote.agraph.yaml"])
        .assert()
        .code(0);
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let doc = &json["documents"][0];
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["valid"], true, "{doc}");
    assert_eq!(doc["runnable"], false, "{doc}");
    assert!(doc.get("references").is_none(), "{doc}");
    let refused: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "WF101")
        .collect();
    assert_eq!(refused.len(), 1, "{doc}");
    let f = refused[0];
    assert_eq!(f["severity"], "refusal");
    assert_eq!(f["pointer"], "/nodes/child/subgraph/ref/uri");
    assert_eq!(f["line"], 19);
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("is not a local file"),
        "{f}"
    );
    assert!(f["help"].as_str().is_some_and(|h| !h.is_empty()), "{f}");
    // No error finding anywhere: the spec's verdict is "valid".
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["severity"] != "error"),
        "{doc}"
    );

    // Text says both facts; --strict fails on the refusal like on a warning.
    let out = weft_in(dir.path())
        .args(["validate", "remote.agraph.yaml"])
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(
            "refusal[WF101]: `https://example.org/child.agraph.yaml` is not a local file"
        ),
        "{text}"
    );
    assert!(
        text.contains("valid AGS, but weft will not run it (WF101)"),
        "{text}"
    );
    let out = weft_in(dir.path())
        .args(["validate", "--strict", "--json", "remote.agraph.yaml"])
        .assert()
        .code(2);
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(json["documents"][0]["ok"], false);
    assert_eq!(json["documents"][0]["valid"], true);

    // The plan's note names the refusal and why.
    let out = weft_in(dir.path())
        .args(["plan", "remote.agraph.yaml"])
        .assert()
        .code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(
            "note: weft would refuse to run this document:\n    WF101 /nodes/child/subgraph/ref/uri: `https://example.org/child.agraph.yaml` is not a local file"
        ),
        "{text}"
    );
}

#[test]
fn weft_run_refuses_a_remote_ref_with_its_code_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("remote.agraph.yaml"),
        with_ref("https://example.org/child.agraph.yaml"),
    )
    .unwrap();
    let out = weft_in(dir.path())
        .args(["run", "remote.agraph.yaml"])
        .assert()
        .code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("this engine cannot run the document"), "{err}");
    assert!(
        err.contains("remote.agraph.yaml:19:")
            && err.contains("WF101: `https://example.org/child.agraph.yaml` is not a local file"),
        "{err}"
    );
    assert!(
        !dir.path().join("ran.txt").exists(),
        "the first node ran before the refusal"
    );

    // A missing local child: WF102, also before anything runs; the dry run says the same.
    std::fs::write(
        dir.path().join("missing.agraph.yaml"),
        with_ref("./missing-child.agraph.yaml"),
    )
    .unwrap();
    let out = weft_in(dir.path())
        .args(["run", "missing.agraph.yaml"])
        .assert()
        .code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("WF102: `./missing-child.agraph.yaml` cannot be read"),
        "{err}"
    );
    assert!(!dir.path().join("ran.txt").exists());
    let out = weft_in(dir.path())
        .args(["run", "--dry-run", "remote.agraph.yaml"])
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("dry run: the run would be refused:"),
        "{text}"
    );
    assert!(text.contains("WF101"), "{text}");
}
