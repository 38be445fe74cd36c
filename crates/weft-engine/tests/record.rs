//! The run record built from the stored log: it validates against the AGS run-record schema
//! (draft 2020-12, formats checked), says what the example pipeline did, keeps `redact: true`
//! outputs out, reports RT042 and the graph's success verdict, and is the same whenever it is built from the same log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{assert_valid, record_node};
use serde_json::{Value, json};
use weft_engine::record::{build_record, read_log, record_of, record_text_of};
use weft_engine::{EngineError, RunOptions, replay_run, run_document};
use weft_store::{RunTable, Store};

async fn run(doc: &Value) -> (Store, String, tempfile::TempDir) {
    let store = Store::open_in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..RunOptions::default()
    };
    let report = run_document(doc, &store, &options).await.unwrap();
    (store, report.run_id, dir)
}

fn edge<'a>(record: &'a Value, from: &str, to: &str) -> &'a Value {
    record["edges_taken"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["from"] == from && e["to"] == to)
        .unwrap()
}

fn example() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/exec-pipeline.agraph.yaml");
    weft_engine::load_document(&path).unwrap()
}

#[tokio::test]
async fn the_example_pipeline_record_validates_and_tells_the_run() {
    let doc = example();
    let (store, run_id, _dir) = run(&doc).await;
    let r = record_of(&store, &run_id).unwrap();
    assert_valid(&r);
    assert_eq!(r["kind"], "AgenticGraphRun");
    assert_eq!(r["run_id"], run_id.as_str());
    assert_eq!(r["graph_id"], "examples/exec-pipeline");
    assert_eq!(r["graph_digest"], weft_ags::digest::graph_digest(&doc));
    assert_eq!(r["status"], "succeeded");
    assert_eq!(r["harness"]["name"], "weft");
    assert_eq!(r["params"], json!({"channel": "stable"}));
    assert_eq!(r["outputs"]["channel"], "stable");
    assert!(r.get("finished_at").is_some());
    let states: Vec<(&str, &str)> = r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node_id"].as_str().unwrap(),
                n["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("prepare", "succeeded"),
            ("build", "succeeded"),
            ("smoke_test", "failed"),
            ("notify_failure", "succeeded"),
            ("publish", "succeeded"),
            ("rollback", "skipped"),
        ]
    );
    let prepare = record_node(&r, "prepare");
    assert_eq!(prepare["outputs"]["version"], "1.2.3");
    assert_eq!(
        record_node(&r, "build")["inputs"],
        json!({"version": "1.2.3"})
    );
    let success = &prepare["attempts"][0]["success"];
    assert_eq!(success["passed"], true);
    assert_eq!(success["results"][0]["id"], "shell_works");
    assert!(success["results"][0]["evidence"].as_str().is_some());
    let smoke = record_node(&r, "smoke_test");
    assert_eq!(smoke["attempts"][0]["status"], "failed");
    assert!(
        smoke["attempts"][0]["error"]
            .as_str()
            .unwrap()
            .contains("exit")
    );
    assert!(
        record_node(&r, "rollback")["skip_reason"]
            .as_str()
            .is_some()
    );
    let absorbed = edge(&r, "smoke_test", "notify_failure");
    assert_eq!(
        (&absorbed["kind"], &absorbed["active"]),
        (&json!("on_failure"), &json!(true))
    );
    let publish = edge(&r, "build", "publish");
    assert_eq!(publish["kind"], "conditional");
    assert_eq!(
        (&publish["active"], &publish["when_result"]),
        (&json!(true), &json!(true))
    );
    let rollback = edge(&r, "build", "rollback");
    assert_eq!(
        (&rollback["active"], &rollback["when_result"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(edge(&r, "prepare", "build")["kind"], "sequence");
    assert_eq!(r["usage"]["node_executions"], 5);
    assert_eq!(r["usage"]["total_tokens"], 0);
}

/// The record file's text (`weft run` writes it streamed, never as one value) is the pretty
/// printed record, byte for byte.
#[tokio::test]
async fn the_record_text_is_the_pretty_printed_record() {
    let doc = example();
    let (store, run_id, _dir) = run(&doc).await;
    let text = record_text_of(&store, &run_id).unwrap();
    let mut written = Vec::new();
    text.write_pretty(&mut written).unwrap();
    let record = record_of(&store, &run_id).unwrap();
    assert_eq!(text.status(), Some("succeeded"));
    assert!(record["nodes"].as_array().is_some_and(|n| n.len() > 1));
    assert_eq!(
        String::from_utf8(written).unwrap(),
        serde_json::to_string_pretty(&record).unwrap()
    );
}

#[tokio::test]
async fn the_record_is_a_pure_function_of_the_log_and_agrees_with_replay() {
    let doc = example();
    let (store, run_id, _dir) = run(&doc).await;
    let row = store.get_run(&run_id).unwrap().unwrap();
    let log = read_log(&store, &run_id).unwrap();
    let first = build_record(&row, &log).unwrap();
    // A second store holding only a copy of the row and the log gives the same record.
    let copy = Store::open_in_memory().unwrap();
    copy.create_run(&weft_store::NewRun {
        id: row.id.clone(),
        graph_digest: row.graph_digest.clone(),
        created_at_ms: row.created_at_ms,
    })
    .unwrap();
    copy.set_status(&row.id, row.status, row.updated_at_ms)
        .unwrap();
    let events: Vec<_> = log
        .iter()
        .map(|e| weft_store::NewEvent::new(e.kind.clone(), e.payload.clone(), e.recorded_at_ms))
        .collect();
    weft_store::EventLog::append(&copy, &run_id, &events).unwrap();
    assert_eq!(record_of(&copy, &run_id).unwrap(), first);
    // Node states are those of the stored events replayed on a fresh scheduler.
    let replayed = replay_run(&doc, &store, &run_id).unwrap();
    for (i, n) in first["nodes"].as_array().unwrap().iter().enumerate() {
        let s = format!("{:?}", replayed.state(i)).to_lowercase();
        assert_eq!(s, n["status"].as_str().unwrap().replace('_', ""));
    }
}

#[tokio::test]
async fn redacted_outputs_stay_out_and_degraded_success_says_rt042() {
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/redact", "version": "2.0.0",
        "objective": "redaction and RT042", "entrypoints": ["secret"],
        "outputs": {
            "token": {"type": "string", "description": "t", "from": "nodes.secret.outputs.token", "redact": true}
        },
        "success": {"criteria": [
            {"id": "graph_ok", "kind": "command", "description": "d", "run": "true"}
        ]},
        "nodes": {
            "secret": {
                "description": "emits a secret",
                "x-weft-exec": {"run": "echo '{\"token\": \"s3cr3t\", \"name\": \"n\"}'"},
                "outputs": {
                    "token": {"type": "string", "description": "t", "redact": true},
                    "name": {"type": "string", "description": "n"}
                }
            },
            "flaky": {
                "description": "fails, succeeds degraded",
                "depends_on": ["secret"],
                "inputs": {
                    "name": {"type": "string", "description": "n", "from": "nodes.secret.outputs.name"},
                    "token": {"type": "string", "description": "t", "from": "nodes.secret.outputs.token", "redact": true}
                },
                "x-weft-exec": {"run": "exit 1"},
                "failure": {"retry": {"max_attempts": 2, "initial_delay_seconds": 0}, "on_exhausted": "succeed_degraded"}
            }
        }
    });
    let (store, run_id, _dir) = run(&doc).await;
    let r = record_of(&store, &run_id).unwrap();
    assert_valid(&r);
    assert!(!r.to_string().contains("s3cr3t"));
    assert_eq!(r["graph_version"], "2.0.0");
    assert_eq!(r["status"], "partial", "{r:#}");
    let secret = record_node(&r, "secret");
    assert_eq!(secret["outputs"], json!({"name": "n"}));
    assert_eq!(secret["x-weft-redacted-outputs"], json!(["token"]));
    let flaky = record_node(&r, "flaky");
    assert_eq!(flaky["inputs"], json!({"name": "n"}));
    assert_eq!(flaky["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(r["outputs"], json!({}));
    assert_eq!(r["x-weft-redacted-outputs"], json!(["token"]));
    // Redacted values never reach the log either (only the document, in `run_started`,
    // holds the command that prints it).
    let log = read_log(&store, &run_id).unwrap();
    for e in log.iter().filter(|e| e.kind != "run_started") {
        assert!(!e.payload.to_string().contains("s3cr3t"), "{}", e.payload);
    }
    assert_eq!(flaky["attempts"][0]["status"], "failed");
    assert_eq!(r["graph_success"]["passed"], true);
    assert_eq!(r["graph_success"]["results"][0]["id"], "graph_ok");
    let diag = &r["diagnostics"][0];
    assert_eq!(
        (&diag["code"], &diag["node_id"]),
        (&json!("RT042"), &json!("flaky"))
    );
}

#[test]
fn an_unknown_run_is_a_clear_error() {
    let store = Store::open_in_memory().unwrap();
    let err = record_of(&store, "nope").unwrap_err();
    assert!(matches!(err, EngineError::UnknownRun(_)), "{err}");
    assert_eq!(err.to_string(), "no run `nope` in the store");
}

#[tokio::test]
async fn expression_errors_and_missing_outputs_become_diagnostics() {
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/diag",
        "objective": "RT062 and RT033", "entrypoints": ["a", "b"],
        "policy": {"on_expression_error": "false"},
        "nodes": {
            "a": {
                "description": "misses an output",
                "x-weft-exec": {"run": "echo '{\"x\": 1}'"},
                "outputs": {
                    "x": {"type": "integer", "description": "x"},
                    "y": {"type": "integer", "description": "y"}
                }
            },
            "b": {
                "description": "a when that cannot be evaluated",
                "when": "\"text\" > 1",
                "x-weft-exec": {"run": "true"}
            }
        }
    });
    let (store, run_id, _dir) = run(&doc).await;
    let r = record_of(&store, &run_id).unwrap();
    assert_valid(&r);
    let codes: Vec<(&str, &str)> = r["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap(),
                d["node_id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(codes.contains(&("RT033", "a")), "{codes:?}");
    assert!(codes.contains(&("RT062", "b")), "{codes:?}");
    assert_eq!(record_node(&r, "b")["status"], "skipped");
    assert!(
        record_node(&r, "b")["skip_reason"]
            .as_str()
            .unwrap()
            .starts_with("when could not be evaluated")
    );
}

#[tokio::test]
async fn decisions_and_absorbed_failures_validate_in_the_record() {
    let doc = json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/ladder", "version": "1.0.0",
        "objective": "decision and fallback", "entrypoints": ["choose"],
        "nodes": {
            "choose": {"type": "decision", "description": "pick", "decision": {
                "evaluator": "expression",
                "branches": [{"label": "go", "description": "always", "when": "true"}]
            }},
            "flaky": {
                "description": "fails, then skipped by a fallback",
                "depends_on": ["choose"],
                "x-weft-exec": {"run": "exit 1"},
                "failure": {"fallback": [{"strategy": "skip"}]}
            }
        }
    });
    let (store, run_id, _dir) = run(&doc).await;
    let r = record_of(&store, &run_id).unwrap();
    assert_valid(&r);
    let choose = record_node(&r, "choose");
    assert_eq!(choose["type"], "decision");
    assert_eq!(choose["outputs"], json!({"decision": "go"}));
    let flaky = record_node(&r, "flaky");
    assert_eq!(flaky["status"], "skipped", "{r:#}");
    assert_eq!(flaky["x-weft-absorbed-by"], "fallback[0]:skip");
}
