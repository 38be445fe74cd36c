//! The one failure class (`weft_core::FailureClass`) through the engine: what each producer
//! fails with is what the event log records (`class: message`, read back with
//! `FailureClass::split_logged`), what the run record reports, and what `retry_on` retries.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;
use common::{events, record_node, with_model_agent};
use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_engine::agent::AgentResult;
use weft_engine::record::record_of;
use weft_engine::{RunEvent, RunOptions, RunReport, run_document};
use weft_store::Store;

fn exec(run: &str) -> Value {
    json!({"description": "a step", "x-weft-exec": {"run": run}})
}

async fn run(doc: &Value, store: &Store, options: RunOptions) -> RunReport {
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions {
        project_dir: dir.path().to_path_buf(),
        ..options
    };
    run_document(doc, store, &options).await.unwrap()
}

/// The class of `node`'s logged `node_finished.error`.
fn finished_class(log: &[RunEvent], node: &str) -> FailureClass {
    let error = log
        .iter()
        .find_map(|e| match e {
            RunEvent::NodeFinished {
                node: n,
                error: Some(error),
                ..
            } if n == node => Some(error.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no node_finished error for {node} in {log:#?}"));
    FailureClass::split_logged(&error)
        .unwrap_or_else(|| panic!("`{error}` does not start with a failure class"))
        .0
}

/// The classes of `node`'s logged `node_started.previous_failure`, in order.
fn previous_classes(log: &[RunEvent], node: &str) -> Vec<FailureClass> {
    log.iter()
        .filter_map(|e| match e {
            RunEvent::NodeStarted {
                node: n,
                previous_failure: Some(p),
                ..
            } if n == node => Some(FailureClass::split_logged(p).unwrap().0),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_command_that_fails_is_logged_and_retried_as_a_tool_error() {
    let mut flaky = exec("echo boom >&2; exit 3");
    flaky["failure"] = json!({"retry": {"max_attempts": 2, "backoff": "none"}});
    let doc = json!({"entrypoints": ["flaky"], "nodes": {"flaky": flaky}});
    let store = Store::open_in_memory().unwrap();
    let report = run(&doc, &store, RunOptions::default()).await;
    let log = events(&store, &report.run_id);
    assert_eq!(finished_class(&log, "flaky"), FailureClass::ToolError);
    // `tool_error` is in the default `retry_on`: the second attempt says why the first failed.
    assert_eq!(previous_classes(&log, "flaky"), [FailureClass::ToolError]);
    let record = record_of(&store, &report.run_id).unwrap();
    let node = record_node(&record, "flaky");
    assert_eq!(node["attempts"].as_array().unwrap().len(), 2);
    // The record's attempt has no `tool_error` status: `failed`, the class kept in `error`.
    assert_eq!(node["attempts"][1]["status"], "failed");
}

#[tokio::test]
async fn a_command_past_its_wall_clock_is_logged_as_a_timeout_and_not_retried_by_default() {
    let mut slow = exec("sleep 5");
    slow["constraints"] = json!({"max_wall_clock_seconds": 0.3});
    slow["failure"] = json!({"retry": {"max_attempts": 2, "backoff": "none"}});
    let doc = json!({"entrypoints": ["slow"], "nodes": {"slow": slow}});
    let store = Store::open_in_memory().unwrap();
    let report = run(&doc, &store, RunOptions::default()).await;
    let log = events(&store, &report.run_id);
    assert_eq!(finished_class(&log, "slow"), FailureClass::Timeout);
    assert!(!FailureClass::Timeout.retried_by_default());
    assert!(previous_classes(&log, "slow").is_empty(), "{log:#?}");
    let record = record_of(&store, &report.run_id).unwrap();
    let attempts = record_node(&record, "slow")["attempts"].clone();
    assert_eq!(attempts.as_array().unwrap().len(), 1);
    assert_eq!(attempts[0]["status"], "timeout");
}

#[tokio::test]
async fn a_model_agents_class_is_logged_as_it_failed() {
    // Every class an agent can end an attempt with, each on its own node: the log gives
    // back exactly the class the agent returned.
    let classes: Vec<FailureClass> = FailureClass::ALL
        .into_iter()
        .filter(|c| *c != FailureClass::Blocked)
        .collect();
    let nodes: serde_json::Map<String, Value> = classes
        .iter()
        .map(|c| {
            let node = json!({"type": "task", "description": "d",
                "failure": {"retry": {"max_attempts": 2, "backoff": "none"}}});
            (c.to_string(), node)
        })
        .collect();
    let doc = json!({"entrypoints": classes.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "nodes": nodes});
    let agents = with_model_agent(|request| {
        let class: FailureClass = request.node.parse().unwrap();
        AgentResult::failed(class, format!("{class} on purpose"))
    });
    let store = Store::open_in_memory().unwrap();
    let options = RunOptions {
        agents: Some(agents),
        ..RunOptions::default()
    };
    let report = run(&doc, &store, options).await;
    let log = events(&store, &report.run_id);
    for class in classes {
        assert_eq!(finished_class(&log, class.as_str()), class);
        // Retried once exactly when AGS's default `retry_on` lists it.
        let retried = !previous_classes(&log, class.as_str()).is_empty();
        assert_eq!(retried, class.retried_by_default(), "{class}");
    }
}

#[tokio::test]
async fn retry_on_any_retries_every_class_but_blocked_and_a_list_only_what_it_names() {
    let fails = |retry_on: Value| {
        json!({"type": "task", "description": "d", "failure":
            {"retry": {"max_attempts": 2, "backoff": "none", "retry_on": retry_on}}})
    };
    let doc = json!({"entrypoints": ["any_model", "any_blocked", "listed", "unlisted"], "nodes": {
        "any_model": fails(json!(["any"])),
        "any_blocked": fails(json!(["any"])),
        "listed": fails(json!(["model_error"])),
        "unlisted": fails(json!(["timeout", "transient"])),
    }});
    let agents = with_model_agent(|request| match request.node.as_str() {
        "any_blocked" => AgentResult::failed(FailureClass::Blocked, "no sandbox"),
        _ => AgentResult::failed(FailureClass::ModelError, "HTTP 400"),
    });
    let store = Store::open_in_memory().unwrap();
    let options = RunOptions {
        agents: Some(agents),
        ..RunOptions::default()
    };
    let report = run(&doc, &store, options).await;
    let log = events(&store, &report.run_id);
    assert_eq!(
        previous_classes(&log, "any_model"),
        [FailureClass::ModelError]
    );
    assert_eq!(previous_classes(&log, "listed"), [FailureClass::ModelError]);
    assert!(previous_classes(&log, "unlisted").is_empty());
    assert!(previous_classes(&log, "any_blocked").is_empty());
    let blocked = report.nodes.iter().find(|n| n.id == "any_blocked").unwrap();
    assert_eq!(blocked.state, "blocked");
}
