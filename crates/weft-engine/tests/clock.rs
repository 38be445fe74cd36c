//! Time under the run's clock (`weft_engine::clock`): retries' pauses, an attempt's time
//! limit and a gate's deadline, each driven by a `TestClock` moved by hand — the run sees
//! minutes or hours pass and nothing sleeps on the wall clock (were anything to wait on
//! real time, these tests would take that long).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test failure with a message"
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{events, resume_with, state};
use serde_json::{Value, json};
use weft_engine::agent::{
    Agent, AgentFuture, AgentRegistry, AgentRequest, AgentResult, Model, Tier,
};
use weft_engine::clock::{Clock, TestClock};
use weft_engine::{
    EngineError, FinalStatus, LeaseOptions, RunEvent, RunOptions, RunReport, run_document,
};
use weft_store::RunStore;

const T0: i64 = 1_700_000_000_000;

/// The run's pauses here are at most an hour; the lease's renewal (every 10 s of the run's
/// clock by default) is set a day apart so that a test moving time to each pause is not
/// also moving it through renewals (`lease.rs` tests renewal).
const HORIZON: Duration = Duration::from_secs(3600);

fn options(dir: &std::path::Path, clock: &TestClock) -> RunOptions {
    RunOptions {
        project_dir: dir.to_path_buf(),
        clock: Some(Arc::new(clock.clone())),
        lease: LeaseOptions {
            ttl: Duration::from_secs(2 * 86_400),
            renew_every: Duration::from_secs(86_400),
            holder: None,
        },
        ..RunOptions::default()
    }
}

/// Runs `doc` and moves `clock` to each pause's end as the run asks for one, until the run
/// is over; returns the report and the deadlines it moved to.
async fn drive(
    doc: &Value,
    store: &dyn RunStore,
    options: RunOptions,
    clock: &TestClock,
) -> (Result<RunReport, EngineError>, Vec<i64>) {
    let run = run_document(doc, store, &options);
    tokio::pin!(run);
    let mut moved = Vec::new();
    loop {
        tokio::select! {
            report = &mut run => return (report, moved),
            at = clock.advance_to_next_within(HORIZON) => moved.push(at),
        }
    }
}

fn started_at(store: &dyn RunStore, run_id: &str, node: &str) -> Vec<i64> {
    store
        .read(run_id, 1, 10_000)
        .unwrap()
        .iter()
        .filter(|r| r.kind == "node_started" && r.payload["node"] == node)
        .map(|r| r.recorded_at_ms)
        .collect()
}

#[tokio::test]
async fn retries_pause_on_the_run_clock() {
    let clock = TestClock::at(T0);
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::EphemeralStore::new();
    let doc = json!({"entrypoints": ["a"], "nodes": {"a": {
        "description": "fails", "x-weft-exec": {"run": "exit 3"},
        "failure": {"retry": {"max_attempts": 4, "backoff": "exponential",
            "initial_delay_seconds": 60, "max_delay_seconds": 600, "jitter": false}}}}});
    let (report, moved) = drive(&doc, &store, options(dir.path(), &clock), &clock).await;
    let report = report.unwrap();
    assert_eq!(report.nodes[0].attempts, 4);
    assert_eq!(state(&report, "a"), "failed");
    // Pauses of 1, 2 and 4 minutes, each ended by the test clock.
    let minute = 60_000;
    let retries = [T0 + minute, T0 + 3 * minute, T0 + 7 * minute];
    assert_eq!(moved, retries);
    assert_eq!(clock.now_ms(), T0 + 7 * minute);
    // Each attempt's `node_started` carries the run clock's time: a retry's is logged as
    // its pause begins, when the attempt before it failed.
    assert_eq!(
        started_at(&store, &report.run_id, "a"),
        [T0, T0, retries[0], retries[1]]
    );
    let logged: Vec<u64> = events(&store, &report.run_id)
        .into_iter()
        .filter_map(|e| match e {
            RunEvent::NodeStarted { delay_ms, .. } => delay_ms,
            _ => None,
        })
        .collect();
    assert_eq!(logged, [60_000, 120_000, 240_000]);
}

/// A model agent that never answers.
struct Silent;

impl Agent for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    fn models(&self) -> Vec<Model> {
        vec![Model {
            tier: Tier::Standard,
            model: "m".into(),
            provider: "local".into(),
            context_tokens: None,
        }]
    }
    fn run<'a>(&'a self, _request: &'a AgentRequest) -> AgentFuture<'a> {
        Box::pin(async {
            std::future::pending::<()>().await;
            AgentResult::default()
        })
    }
}

#[tokio::test]
async fn an_attempt_times_out_on_the_run_clock() {
    let clock = TestClock::at(T0);
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::EphemeralStore::new();
    let mut agents = AgentRegistry::with_defaults(None);
    agents.register(Arc::new(Silent));
    agents.set_model_agent("silent");
    let doc = json!({"entrypoints": ["m"], "nodes": {"m": {
        "description": "summarise", "instructions": "Summarise",
        "outputs": {"summary": {"type": "string", "description": "s"}},
        "constraints": {"max_wall_clock_seconds": 900},
        "failure": {"retry": {"max_attempts": 2, "retry_on": ["timeout"], "backoff": "fixed",
            "initial_delay_seconds": 5, "jitter": false}}}}});
    let mut opts = options(dir.path(), &clock);
    opts.agents = Some(Arc::new(agents));
    let (report, moved) = drive(&doc, &store, opts, &clock).await;
    let report = report.unwrap();
    assert_eq!(state(&report, "m"), "failed");
    assert_eq!(report.nodes[0].attempts, 2);
    // 15 minutes for the first attempt, the 5 s pause, 15 minutes for the second.
    let limit = 900_000;
    assert_eq!(
        moved,
        [T0 + limit, T0 + limit + 5_000, T0 + 2 * limit + 5_000]
    );
    let error = report.nodes[0].error.clone().unwrap_or_default();
    assert!(error.contains("timed out after 900s"), "{error}");
}

fn gate_doc(timeout_seconds: u32) -> Value {
    json!({"entrypoints": ["g"], "nodes": {
        "g": {"type": "gate", "description": "a person decides",
            "gate": {"mode": "approve", "timeout_seconds": timeout_seconds, "on_timeout": "approve"}},
        "after": {"description": "after", "depends_on": ["g"], "x-weft-exec": {"run": "true"}}}})
}

#[tokio::test]
async fn a_gate_expires_when_the_run_clock_reaches_its_deadline() {
    let clock = TestClock::at(T0);
    let dir = tempfile::tempdir().unwrap();
    let store = weft_store::EphemeralStore::new();
    let hour = 3_600_000;
    let report = run_document(&gate_doc(3600), &store, &options(dir.path(), &clock))
        .await
        .unwrap();
    assert_eq!(report.status, FinalStatus::AwaitingHuman);
    // Half an hour later the gate still waits: nothing is decided.
    clock.advance(Duration::from_secs(1800));
    let waiting = resume_with(&store, &report.run_id, options(dir.path(), &clock)).await;
    assert_eq!(waiting.status, FinalStatus::AwaitingHuman);
    assert!(
        !events(&store, &report.run_id)
            .iter()
            .any(|e| matches!(e, RunEvent::HumanTimeout { .. }))
    );
    // At the deadline it is approved by its `on_timeout`, logged at that time.
    clock.set(T0 + hour);
    let done = resume_with(&store, &report.run_id, options(dir.path(), &clock)).await;
    assert_eq!(done.status, FinalStatus::Succeeded, "{done:#?}");
    use weft_store::EventLog;
    let timeout = store
        .read(&report.run_id, 1, 1000)
        .unwrap()
        .into_iter()
        .find(|r| r.kind == "human_timeout")
        .unwrap();
    assert_eq!(timeout.payload["action"], "approve");
    assert_eq!(timeout.recorded_at_ms, T0 + hour);
}
