//! The text of `weft plan` and `weft run --dry-run` on the shipped examples: the level is
//! the engine's (3), there is no claim that weft only reads, and no note for documents weft
//! runs; two full outputs are kept as snapshots (`tests/snapshots/*.txt`; run with
//! `WEFT_UPDATE_SNAPSHOTS=1` to rewrite them after an intended change, then review the diff).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `weft ARGS` in the repository root, without colour: (exit code, stdout).
fn weft(args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn shipped_examples() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".agraph.yaml") || n.ends_with(".agraph.json"))
        .map(|n| format!("examples/{n}"))
        .collect();
    out.sort();
    assert!(out.len() >= 10, "{out:?}");
    out
}

/// What the old text said although weft runs graphs (issue 16, item 1).
const STALE: [&str; 4] = ["reader", "does not execute", "Unsupported", "note:"];

fn level_line() -> String {
    format!("; weft {} runs level 3\n", env!("CARGO_PKG_VERSION"))
}

#[test]
fn every_shipped_example_plans_for_level_three_with_no_note() {
    for example in shipped_examples() {
        let (code, text) = weft(&["plan", &example]);
        assert_eq!(code, 0, "{example}:\n{text}");
        assert!(text.contains(&level_line()), "{example}:\n{text}");
        for stale in STALE {
            assert!(!text.contains(stale), "{example}: {stale:?} in\n{text}");
        }
    }
}

#[test]
fn the_dry_run_of_runnable_examples_says_what_would_run_and_nothing_stale() {
    let runnable = [
        "examples/approval-gate.agraph.yaml",
        "examples/exec-pipeline.agraph.yaml",
        "examples/incident-triage.agraph.yaml",
        "examples/sandboxed-steps.agraph.yaml",
    ];
    for example in runnable {
        let (code, text) = weft(&["run", "--dry-run", example]);
        assert_eq!(code, 0, "{example}:\n{text}");
        assert!(text.contains("would run: "), "{example}:\n{text}");
        assert!(text.contains(&level_line()), "{example}:\n{text}");
        for stale in STALE {
            assert!(!text.contains(stale), "{example}: {stale:?} in\n{text}");
        }
    }
    let (code, text) = weft(&[
        "run",
        "--dry-run",
        "--cassette",
        "examples/replay-release-notes.cassette.json",
        "examples/replay-release-notes.agraph.yaml",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("note:"), "{text}");
}

/// Compares `text` with `tests/snapshots/NAME`, or writes it there when asked. Callers
/// write the version as `{VERSION}`, so a version bump does not change the snapshots.
fn snapshot(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("WEFT_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (WEFT_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        text,
        expected,
        "{} differs (WEFT_UPDATE_SNAPSHOTS=1 rewrites it)",
        path.display()
    );
}

#[test]
fn the_plan_of_the_library_release_reads_as_written() {
    let (code, text) = weft(&["plan", "examples/library-v1-release.agraph.yaml"]);
    assert_eq!(code, 0, "{text}");
    snapshot(
        "plan-library-v1-release.txt",
        &text.replace(env!("CARGO_PKG_VERSION"), "{VERSION}"),
    );
}

#[test]
fn the_dry_run_of_the_exec_pipeline_reads_as_written() {
    let (code, text) = weft(&["run", "--dry-run", "examples/exec-pipeline.agraph.yaml"]);
    assert_eq!(code, 0, "{text}");
    snapshot(
        "dry-run-exec-pipeline.txt",
        &text.replace(env!("CARGO_PKG_VERSION"), "{VERSION}"),
    );
}
