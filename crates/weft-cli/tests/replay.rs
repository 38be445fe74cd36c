//! `weft run --cassette` through the real binary: the replayed release-notes example runs end
//! to end (model nodes routed and replayed, a decision by model, the exec node publishing),
//! its record carries routes and usage; a malformed cassette, a missing cassette entry and
//! an unmet tier (RT011) each refuse the run with exit 1 and a message that says why.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use serde_json::Value;
use std::path::Path;
use weft_test_support::cli::weft;

const DOC: &str = "replay-release-notes.agraph.yaml";
const CASSETTE: &str = "replay-release-notes.cassette.json";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for f in [DOC, CASSETTE] {
        std::fs::copy(examples.join(f), dir.path().join(f)).unwrap();
    }
    dir
}

#[test]
fn the_replayed_example_runs_end_to_end_and_records_routes_and_usage() {
    let dir = project();
    let out = weft(dir.path())
        .args(["run", DOC, "--cassette", CASSETTE, "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["outputs"]["change_count"], 2);
    let published = std::fs::read_to_string(dir.path().join("release/notes.json")).unwrap();
    assert!(published.contains("replayed from cassettes"), "{published}");
    let run_id = report["run_id"].as_str().unwrap();
    let out = weft(dir.path()).args(["record", run_id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    let node = |id: &str| {
        record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        node("draft_notes")["attempts"][0]["routed"]["model"],
        "mid-1"
    );
    assert_eq!(node("review")["attempts"][0]["routed"]["model"], "big-1");
    assert_eq!(node("review")["outputs"]["decision"], "publish");
    assert_eq!(node("flag_for_revision")["status"], "skipped");
    assert_eq!(record["usage"]["total_tokens"], 3120);
    assert_eq!(record["usage"]["cost_usd"], 0.0123);
    assert_eq!(report["usage"]["agent_steps"], 3);

    let text = weft(dir.path())
        .args(["run", DOC, "--cassette", CASSETTE])
        .output()
        .unwrap();
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(
        stdout.contains(
            "usage: 3120 tokens (2950 in, 170 out), 1 tool calls, 3 agent steps, $0.0123"
        ),
        "{stdout}"
    );
    assert_eq!(record["usage"]["tool_calls"], 1);
}

#[test]
fn refusals_say_why_and_exit_1() {
    let dir = project();
    // No cassette: the model nodes are refused up front.
    let out = weft(dir.path()).args(["run", DOC]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("node `draft_notes` needs a model"),
        "{stderr}"
    );
    assert!(stderr.contains("node `review` needs a model"), "{stderr}");

    // A malformed cassette: the file and the JSON path.
    let text = std::fs::read_to_string(dir.path().join(CASSETTE)).unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        text.replace("\"cost_usd\": 0.003", "\"cost_usd\": \"cheap\""),
    )
    .unwrap();
    let out = weft(dir.path())
        .args(["run", DOC, "--cassette", "bad.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "invalid cassette bad.json at $.nodes.review.attempts[0].turns[0].usage.cost_usd"
        ),
        "{stderr}"
    );

    // Only a small model: RT011 before anything runs.
    let mut small: Value = serde_json::from_str(&text).unwrap();
    small["models"] = serde_json::json!([{"tier": "minimal", "model": "small-1"}]);
    std::fs::write(dir.path().join("small.json"), small.to_string()).unwrap();
    let out = weft(dir.path())
        .args(["run", DOC, "--cassette", "small.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("node `draft_notes`: RT011"), "{stderr}");
    assert!(
        stderr.contains("node `review`: RT011: tier `advanced`"),
        "{stderr}"
    );
    assert!(!dir.path().join("release").exists());
    let runs = weft(dir.path()).args(["runs", "--json"]).output().unwrap();
    if runs.status.code() == Some(0) {
        let listed: Value = serde_json::from_slice(&runs.stdout).unwrap();
        assert_eq!(listed["runs"].as_array().unwrap().len(), 0);
    }
}

/// One fold behind every view of a run's spend: the run's own report (the driver's budget
/// totals), `weft status --json` (the run view of the log) and the run record's `usage` say
/// the same tokens, cost, tool calls and executions.
#[test]
fn status_the_run_report_and_the_record_agree_on_what_the_run_spent() {
    let dir = project();
    let out = weft(dir.path())
        .args(["run", DOC, "--cassette", CASSETTE, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = report["run_id"].as_str().unwrap();
    let json = |args: &[&str]| -> Value {
        let out = weft(dir.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let status = json(&["status", run_id, "--json"]);
    let record = json(&["record", run_id]);
    let (s, r) = (&status["usage"], &record["usage"]);
    assert!(s["total_tokens"].as_u64().unwrap() > 0, "{status}");
    for k in [
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cost_usd",
        "tool_calls",
        "node_executions",
    ] {
        assert_eq!(s[k], r[k], "{k}: status {s} record {r}");
    }
    for k in ["input_tokens", "output_tokens", "tool_calls"] {
        assert_eq!(
            report["usage"][k], s[k],
            "{k}: the run's report {}",
            report["usage"]
        );
    }
    let cost = |v: &Value| v["cost_usd"].as_f64().unwrap();
    assert!((cost(&report["usage"]) - cost(s)).abs() < 1e-9);
    // The node lines are the record's, attempts and all.
    let nodes = status["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), record["nodes"].as_array().unwrap().len());
    for n in nodes {
        let id = n["id"].as_str().unwrap();
        let in_record = record["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["node_id"] == id)
            .unwrap();
        assert_eq!(n["status"], in_record["status"], "{id}");
        assert_eq!(
            n["attempts"].as_u64().unwrap() as usize,
            in_record["attempts"].as_array().map_or(0, Vec::len),
            "{id}"
        );
    }
    // The text form says what was spent too.
    let text = weft(dir.path()).args(["status", run_id]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let tokens = format!("usage: {} tokens", s["total_tokens"]);
    assert!(text.contains(&tokens), "{text}");
}
