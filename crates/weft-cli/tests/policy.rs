//! The run policies through the real binary: `policy.record_run` writes (or not) the run
//! record when a run ends; `policy.resume: resume_failed` reopens a finished run to run its
//! failed node again; `policy.resume: restart` starts a failed run over as a new run and
//! cancels the old one; `policy.checkpointing: none` still leaves a resumable log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::Path;

fn weft(dir: &Path, args: &[&str]) -> (i32, Value) {
    let out = Command::cargo_bin("weft")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (out.status.code().unwrap(), json)
}

/// `flaky` fails until the file `.fixed` exists; `after` depends on it.
fn doc(policy: Value) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/policy", "title": "Policy",
        "objective": "Exercise the run policies.",
        "policy": policy,
        "entrypoints": ["flaky"],
        "nodes": {
            "flaky": {"title": "Flaky", "description": "Fails until fixed.",
                "x-weft-exec": {"run": "test -f .fixed"}},
            "after": {"title": "After", "description": "Runs after flaky.", "depends_on": ["flaky"],
                "x-weft-exec": {"run": "echo done"}}
        }
    })
}

fn project(policy: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.agraph.json"),
        serde_json::to_string_pretty(&doc(policy)).unwrap(),
    )
    .unwrap();
    dir
}

fn node<'a>(record: &'a Value, id: &str) -> &'a Value {
    record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == id)
        .unwrap()
}

#[test]
fn record_run_writes_the_record_when_the_run_ends_unless_false() {
    let dir = project(json!({}));
    std::fs::write(dir.path().join(".fixed"), "").unwrap();
    let (code, report) = weft(dir.path(), &["run", "g.agraph.json", "--json"]);
    assert_eq!(code, 0, "{report}");
    let run_id = report["run_id"].as_str().unwrap();
    let path = dir.path().join(format!(".weft/records/{run_id}.json"));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (_, printed) = weft(dir.path(), &["record", run_id]);
    assert_eq!(written, printed, "the file is what `weft record` prints");

    let quiet = project(json!({"record_run": false, "checkpointing": "none"}));
    std::fs::write(quiet.path().join(".fixed"), "").unwrap();
    let (code, report) = weft(quiet.path(), &["run", "g.agraph.json", "--json"]);
    assert_eq!(code, 0, "{report}");
    assert!(!quiet.path().join(".weft/records").exists());
    // The log is still the truth: the record can be built on demand.
    let (code, record) = weft(
        quiet.path(),
        &["record", report["run_id"].as_str().unwrap()],
    );
    assert_eq!((code, &record["status"]), (0, &json!("succeeded")));
}

#[test]
fn resume_failed_reopens_a_finished_run_and_runs_the_failed_node_again() {
    let dir = project(json!({"resume": "resume_failed"}));
    let (code, report) = weft(dir.path(), &["run", "g.agraph.json", "--json"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["status"], "partial");
    let run_id = report["run_id"].as_str().unwrap().to_string();

    std::fs::write(dir.path().join(".fixed"), "").unwrap();
    let (code, resumed) = weft(dir.path(), &["resume", &run_id, "--json"]);
    assert_eq!(code, 0, "{resumed}");
    assert_eq!(resumed["resumed"], true);
    assert_eq!(resumed["status"], "succeeded");

    let (_, record) = weft(dir.path(), &["record", &run_id]);
    assert_eq!(record["status"], "succeeded");
    assert_eq!(
        node(&record, "flaky")["attempts"].as_array().unwrap().len(),
        2
    );
    assert_eq!(node(&record, "after")["status"], "succeeded");
    // Resuming again changes nothing: the run has succeeded.
    let (code, again) = weft(dir.path(), &["resume", &run_id, "--json"]);
    assert_eq!((code, &again["resumed"]), (0, &json!(false)));
}

#[test]
fn without_resume_failed_a_finished_run_is_left_alone() {
    let dir = project(json!({}));
    let (_, report) = weft(dir.path(), &["run", "g.agraph.json", "--json"]);
    let run_id = report["run_id"].as_str().unwrap().to_string();
    std::fs::write(dir.path().join(".fixed"), "").unwrap();
    let (code, resumed) = weft(dir.path(), &["resume", &run_id, "--json"]);
    assert_eq!(code, 1, "{resumed}");
    assert_eq!(resumed["resumed"], false);
    assert_eq!(resumed["status"], "partial");
}

#[test]
fn restart_starts_a_failed_run_over_and_cancels_the_old_one() {
    let dir = project(json!({"resume": "restart"}));
    let (_, report) = weft(dir.path(), &["run", "g.agraph.json", "--json"]);
    assert_eq!(report["status"], "partial");
    let old = report["run_id"].as_str().unwrap().to_string();

    std::fs::write(dir.path().join(".fixed"), "").unwrap();
    let (code, resumed) = weft(dir.path(), &["resume", &old, "--json"]);
    assert_eq!(code, 0, "{resumed}");
    assert_eq!(resumed["restarted_from"], old.as_str());
    let new = resumed["run_id"].as_str().unwrap();
    assert_ne!(new, old);
    assert_eq!(resumed["status"], "succeeded");

    // The new run ran everything from the start; the old run is over.
    let (_, record) = weft(dir.path(), &["record", new]);
    assert_eq!(
        node(&record, "flaky")["attempts"].as_array().unwrap().len(),
        1
    );
    let (_, old_record) = weft(dir.path(), &["record", &old]);
    assert_eq!(
        old_record["status"], "partial",
        "a finished run keeps its end"
    );
}
