//! `external` success criteria through the real driver: a registered checker decides the
//! node with its evidence and its params; an unregistered name fails closed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::sync::Arc;

use common::{events, state};
use serde_json::{Map, Value, json};
use weft_criteria::{CheckFuture, ExternalVerdict};
use weft_engine::checkers::{Checker, CheckerRegistry};
use weft_engine::{RunEvent, RunOptions, run_document};

/// Passes when the params say `{"want": "ok"}`.
struct WantsOk;

impl Checker for WantsOk {
    fn check<'a>(&'a self, params: &'a Map<String, Value>) -> CheckFuture<'a> {
        Box::pin(async move {
            let passed = params.get("want") == Some(&json!("ok"));
            ExternalVerdict {
                passed,
                detail: format!("want = {}", params.get("want").unwrap_or(&Value::Null)),
            }
        })
    }
}

fn doc(check: &str, want: &str) -> Value {
    json!({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "t/checkers", "title": "T",
        "objective": "External criteria.", "entrypoints": ["a"],
        "nodes": {"a": {"title": "A", "description": "A step.",
            "x-weft-exec": {"run": "true"},
            "success": {"criteria": [{"id": "ext", "kind": "external",
                "description": "The outside world agrees.", "check": check,
                "params": {"want": want}}]}}}
    })
}

async fn run(doc: &Value, checkers: &Arc<CheckerRegistry>) -> (String, String, Value) {
    let store = weft_store::EphemeralStore::new();
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        checkers: Arc::clone(checkers),
        ..RunOptions::default()
    };
    let report = run_document(doc, &store, &options).await.unwrap();
    let verdict = events(&store, &report.run_id)
        .into_iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished { verdict, .. } => verdict,
            _ => None,
        })
        .unwrap();
    (
        state(&report, "a").to_string(),
        report.status.as_str().to_string(),
        verdict,
    )
}

#[tokio::test]
async fn a_registered_checker_decides_and_an_unknown_one_fails_closed() {
    let mut registry = CheckerRegistry::default();
    registry.register("wants_ok", Arc::new(WantsOk));
    let registry = Arc::new(registry);

    let (node, status, verdict) = run(&doc("wants_ok", "ok"), &registry).await;
    assert_eq!((node.as_str(), status.as_str()), ("succeeded", "succeeded"));
    assert_eq!(verdict["results"][0]["outcome"], "passed", "{verdict}");

    let (node, _, verdict) = run(&doc("wants_ok", "no"), &registry).await;
    assert_eq!(node, "failed");
    assert_eq!(verdict["results"][0]["outcome"], "failed", "{verdict}");
    assert_eq!(
        verdict["results"][0]["evidence"]["detail"], "want = \"no\"",
        "the checker's evidence is recorded: {verdict}"
    );

    let (node, _, verdict) = run(&doc("nobody", "ok"), &registry).await;
    assert_eq!(node, "failed", "an unknown checker never passes");
    assert_eq!(verdict["results"][0]["outcome"], "error", "{verdict}");
    assert!(verdict.to_string().contains("fails closed"), "{verdict}");
}
