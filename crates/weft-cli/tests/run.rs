//! `weft run` and `weft events` through the real binary: the example pipeline runs end to
//! end, exit codes (0 succeeded, 1 failed / partial / refused), the event log as JSON lines,
//! the same start order on two sequential runs, and `weft record` / `status` / `runs` on
//! the stored runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn weft(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("weft").unwrap();
    c.current_dir(dir);
    c
}

fn pipeline(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/exec-pipeline.agraph.yaml");
    let dst = dir.join("exec-pipeline.agraph.yaml");
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn run_json(dir: &Path, extra: &[&str]) -> (Value, i32) {
    let out = weft(dir)
        .args(["run", "exec-pipeline.agraph.yaml", "--json"])
        .args(extra)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    (report, out.status.code().unwrap())
}

#[test]
fn the_example_pipeline_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path());
    let out = weft(dir.path())
        .args(["run", "exec-pipeline.agraph.yaml", "--max-parallel", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("run_id: run-"), "{stdout}");
    assert!(
        stdout.contains("smoke_test") && stdout.contains("failed"),
        "{stdout}"
    );
    assert!(stdout.contains("\nstatus: succeeded\n"), "{stdout}");
    // The last line says where the run record was written (`policy.record_run`).
    let record = stdout.trim_end().lines().last().unwrap();
    assert!(record.starts_with("record: .weft/records/run-"), "{stdout}");
    assert!(dir.path().join(".weft/weft.db").is_file());
    assert!(dir.path().join("out/build.json").is_file());
}

#[test]
fn events_prints_the_log_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path());
    let (report, code) = run_json(dir.path(), &["--db", "runs.db"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["status"], "succeeded");
    let run_id = report["run_id"].as_str().unwrap();
    let out = weft(dir.path())
        .args(["events", run_id, "--db", "runs.db"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[0]["payload"]["params"]["channel"], "stable");
    assert_eq!(kinds.iter().filter(|k| **k == "node_finished").count(), 5);
    // An unknown run is an error.
    weft(dir.path())
        .args(["events", "nope", "--db", "runs.db"])
        .assert()
        .code(1);
}

#[test]
fn sequential_runs_start_nodes_in_the_same_order() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path());
    let (a, _) = run_json(dir.path(), &["--max-parallel", "1"]);
    let (b, _) = run_json(
        dir.path(),
        &["--max-parallel", "1", "--param", "channel=beta"],
    );
    assert_eq!(a["started"], b["started"]);
    assert_ne!(a["run_id"], b["run_id"]);
    assert_eq!(b["outputs"]["channel"], "beta");
}

#[test]
fn refused_and_partial_runs_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/model
title: Needs a model
objective: Summarise the changelog.
entrypoints: [a]
nodes:
  a:
    title: A
    description: Summarise the changelog into release notes, one bullet per merged change.
"#;
    std::fs::write(dir.path().join("model.agraph.yaml"), doc).unwrap();
    let out = weft(dir.path())
        .args(["run", "model.agraph.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("node `a` needs a model"), "{stderr}");
    assert!(stderr.contains("--cassette"), "{stderr}");

    let partial = doc.replace(
        "one bullet per merged change.\n",
        "one bullet per merged change.\n    x-weft-exec:\n      run: \"exit 4\"\n",
    );
    std::fs::write(dir.path().join("fails.agraph.yaml"), partial).unwrap();
    let out = weft(dir.path())
        .args(["run", "fails.agraph.yaml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("status: partial"), "{stdout}");

    // A document with errors is refused before anything runs.
    std::fs::write(dir.path().join("bad.agraph.yaml"), "kind: AgenticGraph\n").unwrap();
    weft(dir.path())
        .args(["run", "bad.agraph.yaml"])
        .assert()
        .code(1);
}

fn stdout_json(dir: &Path, args: &[&str]) -> Value {
    let out = weft(dir).args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn record_prints_a_schema_valid_run_record() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path());
    let (report, _) = run_json(dir.path(), &["--db", "runs.db"]);
    let run_id = report["run_id"].as_str().unwrap();
    let record = stdout_json(dir.path(), &["record", run_id, "--db", "runs.db"]);
    let schema: Value = serde_json::from_str(include_str!(
        "../../weft-ags/schema/agentic-graph-run-1.0.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&record)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(record["run_id"], run_id);
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["nodes"].as_array().unwrap().len(), 6);

    let out = weft(dir.path())
        .args(["record", "nope", "--db", "runs.db"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no run `nope`"), "{stderr}");
    weft(dir.path())
        .args(["record", "x", "--db", "missing.db"])
        .assert()
        .code(1);
    assert!(!dir.path().join("missing.db").exists());
}

#[test]
fn status_and_runs_report_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path());
    let (a, _) = run_json(dir.path(), &["--db", "runs.db"]);
    let (b, _) = run_json(dir.path(), &["--db", "runs.db", "--param", "channel=beta"]);
    let id = a["run_id"].as_str().unwrap();
    let status = stdout_json(dir.path(), &["status", id, "--db", "runs.db", "--json"]);
    assert_eq!(status["run_id"], id);
    assert_eq!(status["status"], "succeeded");
    let smoke = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "smoke_test")
        .unwrap();
    assert_eq!(
        (&smoke["status"], &smoke["attempts"]),
        (&"failed".into(), &1.into())
    );
    let text = weft(dir.path())
        .args(["status", id, "--db", "runs.db"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.trim_end().ends_with("status: succeeded"), "{text}");
    weft(dir.path())
        .args(["status", "nope", "--db", "runs.db", "--json"])
        .assert()
        .code(1);

    let runs = stdout_json(dir.path(), &["runs", "--db", "runs.db", "--json"]);
    let runs = runs["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id, b["run_id"].as_str().unwrap()]);
    for r in runs {
        assert_eq!(r["status"], "succeeded");
        assert!(r["graph_digest"].as_str().unwrap().starts_with("sha256-"));
        assert!(r["created_at"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn a_notify_gate_runs_and_a_blocking_gate_waits() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"ags_version: "1.0"
kind: AgenticGraph
id: t/gate
title: Gate
objective: Tell someone, then go on.
entrypoints: [tell]
nodes:
  tell:
    type: gate
    title: Tell
    description: Tell the team the build is done.
    gate: {mode: notify, prompt: done}
  after:
    title: After
    description: Runs after the notification.
    depends_on: [tell]
    x-weft-exec: {run: "echo ok"}
"#;
    std::fs::write(dir.path().join("notify.agraph.yaml"), doc).unwrap();
    let out = weft(dir.path())
        .args(["run", "notify.agraph.yaml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("status: succeeded"), "{stdout}");

    // A blocking gate waits on a person: exit 3 (tests/human.rs has the rest).
    let approve = doc.replace("mode: notify", "mode: approve");
    std::fs::write(dir.path().join("approve.agraph.yaml"), approve).unwrap();
    let out = weft(dir.path())
        .args(["run", "approve.agraph.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("waiting on a person"), "{stdout}");
}
