//! `llm_judge` criteria end to end, through the real driver: a replayed model node judged
//! by replayed judge calls (median of samples against the threshold, a retry after a low
//! score, the judges' spend in the node's usage, the judge routed at its own tier), and
//! the refusals before any token (no cassette entry, no model at the judge tier, a
//! graph-level judge).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, events, record_node};

use serde_json::{Value, json};
use weft_engine::record::record_of;
use weft_engine::{EngineError, FinalStatus, RunEvent, RunOptions, run_document};
use weft_store::Store;

fn project(cassette: &Value) -> (tempfile::TempDir, RunOptions) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.json"), cassette.to_string()).unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        cassette: Some(dir.path().join("c.json")),
        ..RunOptions::default()
    };
    (dir, options)
}

fn models() -> Value {
    json!([
        {"tier": "standard", "model": "writer-1", "provider": "acme"},
        {"tier": "advanced", "model": "judge-1", "provider": "acme"}
    ])
}

/// One recorded attempt that emits `outputs` for 10 + 5 tokens.
fn emits(outputs: Value) -> Value {
    json!({"turns": [{"tool_calls": [{"name": "emit_output", "arguments": outputs}],
        "usage": {"input_tokens": 10, "output_tokens": 5}}]})
}

fn score(s: f64) -> Value {
    json!({"turns": [{"tool_calls": [{"name": "emit_output",
        "arguments": {"score": s, "reasoning": format!("scored {s}")}}],
        "usage": {"input_tokens": 100, "output_tokens": 1}}]})
}

fn doc(criterion: Value, retries: u32) -> Value {
    json!({"id": "j", "entrypoints": ["write"], "nodes": {"write": {
        "description": "write the notes",
        "outputs": {"notes": {"type": "string", "description": "n"}},
        "success": {"criteria": [criterion]},
        "failure": {"retry": {"max_attempts": retries, "backoff": "none"}}
    }}})
}

fn judged(extra: Value) -> Value {
    let mut c = json!({"id": "clear", "kind": "llm_judge", "description": "the notes are clear",
        "rubric": "Are the notes clear?", "inputs": ["outputs.notes"], "samples": 3,
        "judge_intelligence": {"tier": "advanced"}});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

fn verdict_of(log: &[RunEvent]) -> Value {
    log.iter()
        .rev()
        .find_map(|e| match e {
            RunEvent::NodeFinished { verdict, .. } => verdict.clone(),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_node_passes_on_the_median_of_its_judges_and_pays_for_them() {
    let (_dir, options) = project(&json!({"format": "weft-cassette/1", "models": models(),
    "nodes": {
        "write": {"attempts": [emits(json!({"notes": "v1.2: three fixes"}))]},
        "write/judge/clear": {"attempts": [score(0.9), score(0.6), score(0.85)]}
    }}));
    let store = Store::open_in_memory().unwrap();
    let d = doc(judged(json!({})), 1);
    let report = run_document(&d, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let log = events(&store, &report.run_id);
    let v = verdict_of(&log);
    let evidence = &v["results"][0]["evidence"];
    assert_eq!(v["results"][0]["outcome"], "passed");
    assert_eq!(evidence["scores"], json!([0.9, 0.6, 0.85]));
    // Routed at its own tier, not the writer's model.
    assert_eq!(
        evidence["judged_by"],
        json!(["acme/judge-1", "acme/judge-1", "acme/judge-1"])
    );
    assert_eq!(evidence["detail"], "scored 0.85");
    // The node's usage is its own turn plus three judgements.
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (310, 8)
    );
    let record = record_of(&store, &report.run_id).unwrap();
    assert_valid(&record);
    assert_eq!(record_node(&record, "write")["status"], "succeeded");
}

#[tokio::test]
async fn a_low_score_fails_the_attempt_and_the_retry_is_judged_again() {
    let (_dir, options) = project(&json!({"format": "weft-cassette/1", "models": models(),
    "nodes": {
        "write": {"attempts": [emits(json!({"notes": "stuff"})),
                               emits(json!({"notes": "v1.2: three fixes"}))]},
        // Calls (attempt − 1) × samples + sample: attempt 1 is calls 1–2, attempt 2 is 3–4.
        "write/judge/clear": {"attempts": [score(0.2), score(0.4), score(0.9), score(0.8)]}
    }}));
    let store = Store::open_in_memory().unwrap();
    let d = doc(judged(json!({"samples": 2})), 2);
    let report = run_document(&d, &store, &options).await.unwrap();
    assert_eq!(report.status, FinalStatus::Succeeded, "{report:#?}");
    let log = events(&store, &report.run_id);
    let started: Vec<u32> = log
        .iter()
        .filter_map(|e| match e {
            RunEvent::NodeStarted { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(started, [1, 2]);
    assert_eq!(
        verdict_of(&log)["results"][0]["evidence"]["scores"],
        json!([0.9, 0.8])
    );
}

#[tokio::test]
async fn a_failing_judge_fails_closed_and_the_run_fails() {
    let (_dir, options) = project(&json!({"format": "weft-cassette/1", "models": models(),
    "nodes": {
        "write": {"attempts": [emits(json!({"notes": "x"}))]},
        "write/judge/clear": {"attempts": [score(0.9),
            {"turns": [{"error": {"class": "transient", "message": "overloaded"}}]}]}
    }}));
    let store = Store::open_in_memory().unwrap();
    let report = run_document(&doc(judged(json!({"samples": 2})), 1), &store, &options)
        .await
        .unwrap();
    // The only node failed: with the default `isolate`, the run ends `partial`.
    assert_eq!(report.status, FinalStatus::Partial);
    assert_eq!(report.nodes[0].state, "failed");
    let v = verdict_of(&events(&store, &report.run_id));
    assert_eq!(v["results"][0]["outcome"], "error");
    let summary = v["results"][0]["evidence"]["summary"].as_str().unwrap();
    assert!(summary.contains("sample 2 of 2 failed"), "{summary}");
}

#[tokio::test]
async fn judges_are_checked_before_any_token() {
    let store = Store::open_in_memory().unwrap();
    // No recorded judgements for the criterion.
    let (_d1, options) = project(&json!({"format": "weft-cassette/1", "models": models(),
        "nodes": {"write": {"attempts": [emits(json!({"notes": "x"}))]}}}));
    let err = run_document(&doc(judged(json!({})), 1), &store, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Refused(r) if r.iter().any(|m| m.contains("write/judge/clear"))),
        "{err}"
    );
    // No model at the judge's tier.
    let (_d2, options) = project(&json!({"format": "weft-cassette/1", "models": models(),
        "nodes": {"write": {"attempts": [emits(json!({"notes": "x"}))]},
                  "write/judge/clear": {"attempts": [score(1.0)]}}}));
    let frontier = judged(json!({"judge_intelligence": {"tier": "frontier"}}));
    let err = run_document(&doc(frontier, 1), &store, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::Refused(r) if r.iter().any(|m| m.contains("judge of `clear`") && m.contains("RT011"))),
        "{err}"
    );
    // A graph-level judge has no node to account its spend to.
    let mut graph = doc(
        json!({"id": "ok", "kind": "expression", "expr": "true",
        "description": "d"}),
        1,
    );
    graph["success"] = json!({"criteria": [{"id": "g", "kind": "llm_judge",
        "rubric": "good?", "description": "d"}]});
    let err = run_document(&graph, &store, &options).await.unwrap_err();
    assert!(
        matches!(&err, EngineError::Refused(r) if r.iter().any(|m| m.contains("graph success criterion `g`"))),
        "{err}"
    );
    assert!(
        weft_store::RunTable::list_runs(&store, None, 10)
            .unwrap()
            .is_empty()
    );
}
