//! Human-in-the-loop and cancel through the real binary: `weft run` of a blocking gate
//! exits 3 and prints the commands that decide it; `weft approve|reject|provide` record
//! decisions (or refuse them, exit 1); `weft resume` applies them; `weft status` shows what
//! waits; `weft cancel` stops a suspended run, a live one (its driver in another process)
//! and a run whose process was killed (exit 4, then `weft resume` completes it).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use weft_test_support::cli::{call, weft};

const GATE: &str = r#"
ags_version: "1.0"
kind: AgenticGraph
id: t/approval
title: Approval
objective: Ship after a person approves.
entrypoints: [review]
params:
  who: {type: string, description: who ships, default: ops}
nodes:
  review:
    type: gate
    title: Review
    description: A person approves the release.
    gate:
      mode: approve
      prompt: "Ship it, ${{ params.who }}?"
      roles: [lead, owner]
      on_reject: route
  ship:
    title: Ship
    description: Ships, or not.
    depends_on: [review]
    inputs:
      d: {type: string, description: the decision, from: nodes.review.decision}
    outputs:
      label: {type: string, description: what the node saw}
    x-weft-exec: {run: "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"d\"])'"}
"#;

fn run_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("run_id: "))
        .unwrap()
        .to_string()
}

#[test]
fn a_waiting_gate_is_decided_by_weft_approve_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.yaml"), GATE).unwrap();
    let out = call(d, &["run", "g.agraph.yaml"]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let id = run_id(&out.stdout);
    assert!(
        out.stdout.contains("status: awaiting_human"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("prompt: Ship it, ops?"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("weft approve {id} review --role lead")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("then: weft resume {id}")));

    let status = call(d, &["status", &id]);
    assert!(
        status.stdout.contains("status: awaiting_human"),
        "{}",
        status.stdout
    );
    assert!(
        status.stdout.contains("review (gate, approve"),
        "{}",
        status.stdout
    );
    let json: Value = serde_json::from_str(&call(d, &["status", &id, "--json"]).stdout).unwrap();
    assert_eq!(json["status"], "awaiting_human");
    assert_eq!(json["waiting"][0]["node"], "review");

    // Refusals: a node that does not wait, a role not listed, values on an approval.
    let out = call(d, &["approve", &id, "ship"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("is not waiting on a person"),
        "{}",
        out.stderr
    );
    let out = call(d, &["approve", &id, "review", "--role", "intern"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("role `intern`"), "{}", out.stderr);
    let out = call(d, &["approve", &id, "review", "--set", "x=1"]);
    assert_eq!(out.code, 1);

    let out = call(
        d,
        &[
            "approve", &id, "review", "--as", "ann", "--role", "lead", "--note", "go",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("recorded the approval of `review` by ann")
    );
    assert!(out.stdout.contains(&format!("weft resume {id}")));
    // Decided but not resumed: the status says what applies the decision.
    let status = call(d, &["status", &id]);
    assert!(
        status.stdout.contains(&format!(
            "the decisions it waited for are recorded; `weft resume {id}`"
        )),
        "{}",
        status.stdout
    );
    let json: Value = serde_json::from_str(&call(d, &["status", &id, "--json"]).stdout).unwrap();
    assert_eq!(json["suspended"], true);
    let out = call(d, &["resume", &id]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("status: succeeded"));
    let record: Value = serde_json::from_str(&call(d, &["record", &id]).stdout).unwrap();
    let review = &record["nodes"][0];
    assert_eq!(review["human_events"][0]["actor"], "ann");
    assert_eq!(review["human_events"][0]["note"], "go");
    assert_eq!(review["human_events"][0]["x-weft-role"], "lead");
    assert_eq!(record["nodes"][1]["outputs"]["label"], "approved");

    // A rejection routes (on_reject: route), identity from $USER.
    let out = call(d, &["run", "g.agraph.yaml", "--json"]);
    assert_eq!(out.code, 3);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "awaiting_human");
    let id = report["run_id"].as_str().unwrap().to_string();
    let out = weft(d)
        .env("USER", "carol")
        .args(["reject", &id, "review"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(call(d, &["resume", &id]).code, 0);
    let record: Value = serde_json::from_str(&call(d, &["record", &id]).stdout).unwrap();
    assert_eq!(record["nodes"][0]["human_events"][0]["actor"], "carol");
    assert_eq!(record["nodes"][1]["outputs"]["label"], "rejected");
}

#[test]
fn provide_checks_values_against_collect() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let doc = GATE.replace("mode: approve", "mode: input").replace(
        "on_reject: route",
        "collect:\n        count: {type: integer, description: how many}",
    );
    std::fs::write(d.join("g.agraph.yaml"), doc).unwrap();
    let out = call(d, &["run", "g.agraph.yaml", "--db", "x.db"]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let id = run_id(&out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "weft provide {id} review --set count=JSON --role lead --db x.db"
        )),
        "{}",
        out.stdout
    );
    let out = call(
        d,
        &[
            "provide",
            &id,
            "review",
            "--set",
            "count=many",
            "--db",
            "x.db",
        ],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("`count` must be of type integer"),
        "{}",
        out.stderr
    );
    let out = call(d, &["approve", &id, "review", "--db", "x.db"]);
    assert_eq!(out.code, 1);
    let out = call(
        d,
        &["provide", &id, "review", "--set", "count=3", "--db", "x.db"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = call(d, &["resume", &id, "--db", "x.db"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value =
        serde_json::from_str(&call(d, &["record", &id, "--db", "x.db"]).stdout).unwrap();
    assert_eq!(record["nodes"][0]["outputs"]["count"], 3);
    assert_eq!(record["nodes"][0]["human_events"][0]["outcome"], "provided");
}

#[test]
fn cancel_finishes_a_suspended_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("g.agraph.yaml"), GATE).unwrap();
    let id = run_id(&call(d, &["run", "g.agraph.yaml"]).stdout);
    let out = call(d, &["cancel", &id, "--as", "bob"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("cancel requested by bob"));
    assert!(out.stdout.contains("status: cancelled"));
    let status = call(d, &["status", &id]);
    assert!(
        status.stdout.contains("status: cancelled"),
        "{}",
        status.stdout
    );
    let out = call(d, &["cancel", &id]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("already finished"), "{}", out.stderr);
    let out = call(d, &["approve", &id, "review"]);
    assert_eq!(out.code, 1);
}

const SLOW: &str = r#"{
  "ags_version": "1.0", "kind": "AgenticGraph", "id": "slow", "version": "1.0.0",
  "title": "slow", "objective": "cancel", "description": "one slow step", "entrypoints": ["a"],
  "nodes": {
    "a": {"title": "a", "description": "a", "x-weft-exec": {"run": "sleep 30; touch late"}},
    "b": {"title": "b", "description": "b", "depends_on": ["a"], "x-weft-exec": {"run": "echo b"}}
  }
}"#;

/// Starts `weft run slow.json` in the background and waits until `a` has started.
fn start_slow(d: &Path, db: &str) -> (std::process::Child, String) {
    std::fs::write(d.join("slow.json"), SLOW).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("weft"))
        .current_dir(d)
        .args(["run", "slow.json", "--db", db, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..400 {
        std::thread::sleep(Duration::from_millis(25));
        if !d.join(db).exists() {
            continue;
        }
        let runs: Value = serde_json::from_str(&call(d, &["runs", "--db", db, "--json"]).stdout)
            .unwrap_or(Value::Null);
        let Some(id) = runs["runs"][0]["run_id"].as_str() else {
            continue;
        };
        let events = call(d, &["events", id, "--db", db]).stdout;
        if events.contains("\"node_started\"") {
            return (child, id.to_string());
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    panic!("the slow run never started its node");
}

#[test]
fn cancel_stops_a_live_run_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (child, id) = start_slow(d, "live.db");
    let out = call(d, &["cancel", &id, "--db", "live.db", "--wait", "20"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("status: cancelled"), "{}", out.stdout);
    let run = child.wait_with_output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["status"], "cancelled");
    assert_eq!(report["nodes"][0]["state"], "cancelled");
    assert_eq!(report["nodes"][1]["state"], "cancelled");
    assert!(!d.join("late").exists(), "the node's process was killed");
}

#[test]
fn cancel_of_a_killed_run_says_resume_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut child, id) = start_slow(d, "dead.db");
    child.kill().unwrap(); // SIGKILL: the row still says running
    child.wait().unwrap();
    let out = call(d, &["cancel", &id, "--db", "dead.db", "--wait", "0.3"]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("`weft resume {id}` completes the cancellation")),
        "{}",
        out.stdout
    );
    // The resume honours the pending cancel: nothing runs again (no --retry-uncertain
    // needed), everything settles cancelled.
    let out = call(d, &["resume", &id, "--db", "dead.db"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("status: cancelled"), "{}", out.stdout);
    let record: Value =
        serde_json::from_str(&call(d, &["record", &id, "--db", "dead.db"]).stdout).unwrap();
    assert_eq!(record["status"], "cancelled");
    assert_eq!(record["nodes"][0]["status"], "cancelled");
}

#[test]
fn the_approval_example_routes_a_rejection_to_discard() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/approval-gate.agraph.yaml");
    std::fs::copy(src, d.join("approval.agraph.yaml")).unwrap();
    let out = call(d, &["run", "approval.agraph.yaml"]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("prompt: Release 1.2.3? The notes are in out/notes.md.")
    );
    assert!(d.join("out/notes.md").exists());
    let id = run_id(&out.stdout);
    let out = call(
        d,
        &[
            "reject",
            &id,
            "approve_release",
            "--role",
            "release-lead",
            "--note",
            "not yet",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = call(d, &["resume", &id]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value = serde_json::from_str(&call(d, &["record", &id]).stdout).unwrap();
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["outputs"]["discarded"], "discarded");
    assert!(record["outputs"].get("published").is_none());
    assert!(!d.join("out/notes.md").exists(), "discard ran");
}
