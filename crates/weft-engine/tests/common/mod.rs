//! Helpers the engine's integration tests share: the stored log as events, a run record
//! checked against the AGS run-record schema, lookups into reports and records, commands
//! as python one-liners, and a person's decisions and the resume that carries them out.
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a helper is a test failure with a message"
)]

use serde_json::Value;
use weft_engine::human::{DecisionRequest, Verb};
use weft_engine::{ResumeOptions, RunEvent, RunOptions, RunReport, resume_run};
use weft_store::RunStore;

/// A python one-liner over the stdin inputs `i` that prints its result.
pub fn py(expr: &str) -> String {
    format!("python3 -c 'import json,sys; i=json.load(sys.stdin); print(json.dumps({expr}))'")
}

/// Ann's decision on the wait `node` (a node id, an address, a sign-off key), with `values`.
pub fn request(node: &str, verb: Verb, values: Value) -> DecisionRequest {
    DecisionRequest {
        node: node.into(),
        verb,
        values: values.as_object().cloned().unwrap_or_default(),
        actor: "ann".into(),
        role: None,
        note: Some("looks right".into()),
    }
}

/// Resumes `run_id` with `run` and gives the report it ends with (or suspends with).
pub async fn resume_with(store: &dyn RunStore, run_id: &str, run: RunOptions) -> RunReport {
    let opts = ResumeOptions {
        run,
        ..ResumeOptions::default()
    };
    resume_run(store, run_id, None, &opts)
        .await
        .unwrap()
        .report
        .unwrap()
}

const SCHEMA: &str = include_str!("../../../weft-ags/schema/agentic-graph-run-1.0.schema.json");

/// Fails with every violation when `record` does not validate against the AGS run-record
/// schema (draft 2020-12, formats asserted).
pub fn assert_valid(record: &Value) {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{record:#}");
}

/// The run's stored log, decoded.
pub fn events(store: &dyn RunStore, run_id: &str) -> Vec<RunEvent> {
    store
        .read(run_id, 1, 100_000)
        .unwrap()
        .iter()
        .map(|r| RunEvent::from_record(r).unwrap())
        .collect()
}

/// A node's final state in a run report.
pub fn state<'a>(r: &'a RunReport, id: &str) -> &'a str {
    &r.nodes.iter().find(|n| n.id == id).unwrap().state
}

/// A node of a run record.
pub fn record_node<'a>(record: &'a Value, id: &str) -> &'a Value {
    record["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_id"] == id)
        .unwrap()
}

/// An in-process model agent serving the `standard` tier: `answer` decides each attempt.
pub struct FnAgent<F>(pub F);

impl<F> weft_engine::agent::Agent for FnAgent<F>
where
    F: Fn(&weft_engine::agent::AgentRequest) -> weft_engine::agent::AgentResult + Send + Sync,
{
    fn name(&self) -> &str {
        "in-process"
    }
    fn models(&self) -> Vec<weft_engine::agent::Model> {
        vec![weft_engine::agent::Model {
            tier: weft_engine::agent::Tier::Standard,
            model: "in-process-1".into(),
            provider: "local".into(),
            context_tokens: None,
        }]
    }
    fn run<'a>(
        &'a self,
        request: &'a weft_engine::agent::AgentRequest,
    ) -> weft_engine::agent::AgentFuture<'a> {
        let result = (self.0)(request);
        Box::pin(async move { result })
    }
}

/// The default agents (`exec`, `replay`) with `answer` as the model agent.
pub fn with_model_agent(
    answer: impl Fn(&weft_engine::agent::AgentRequest) -> weft_engine::agent::AgentResult
    + Send
    + Sync
    + 'static,
) -> std::sync::Arc<weft_engine::agent::AgentRegistry> {
    let mut registry = weft_engine::agent::AgentRegistry::with_defaults(None);
    registry.register(std::sync::Arc::new(FnAgent(answer)));
    registry.set_model_agent("in-process");
    std::sync::Arc::new(registry)
}

/// Opens the store at `db` (as another process would) once an event of `run_id`'s log
/// satisfies `pred`; fails after 30 s.
pub fn wait_for(
    db: &std::path::Path,
    run_id: &str,
    pred: impl Fn(&RunEvent) -> bool,
) -> weft_store::Store {
    use weft_store::EventLog;
    let store = weft_store::Store::open(db).unwrap();
    for _ in 0..1200 {
        if let Ok(records) = store.read(run_id, 1, usize::MAX)
            && records
                .iter()
                .any(|r| RunEvent::from_record(r).is_ok_and(|e| pred(&e)))
        {
            return store;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the event never came");
}
