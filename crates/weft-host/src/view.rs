//! The view of a run for the shells: the engine's typed fold of its log
//! (`weft_engine::view`, re-exported here: it lives in the engine because the run record is
//! built there and shares it) and the status report `weft status` prints.

use serde::Serialize;
use serde_json::Value;
use weft_engine::EngineError;
use weft_engine::human::Waiting;
pub use weft_engine::view::{
    AttemptView, CriteriaView, NodeState, NodeView, RunView, SpendLedger, WaitView,
};

/// The view of stored run `run_id`, folded from its whole log.
pub fn run_view(store: &dyn weft_store::RunStore, run_id: &str) -> Result<RunView, EngineError> {
    let records = weft_engine::record::read_log(store, run_id)?;
    Ok(RunView::of_records(run_id, &records))
}

/// What `weft status` reports (`--json` prints it as is; `docs/cli.md`).
#[derive(Clone, Debug, Serialize)]
pub struct StatusReport {
    pub run_id: String,
    /// The record's status (`running`, `awaiting_human`, `succeeded`, `partial`, …).
    pub status: String,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub nodes: Vec<StatusNode>,
    /// What the run spent, every scope, as the run view folds it: the record's `usage`
    /// members but the wall clock (`input_tokens`, `output_tokens`, `total_tokens`,
    /// `cost_usd`, `tool_calls`, `node_executions`).
    pub usage: Value,
    /// The waits on a person open now (root scope and instances).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiting>,
    /// No driver runs it and `weft resume` continues it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub suspended: bool,
}

/// One node line of [`StatusReport`].
#[derive(Clone, Debug, Serialize)]
pub struct StatusNode {
    /// The node's id, or its address inside an instance (`m[1].d`).
    pub id: String,
    pub status: String,
    pub attempts: usize,
    /// Tool calls the policy refused or held (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_calls: Option<usize>,
}

impl StatusReport {
    /// Suspended with nothing waiting while the record says `running`: the decisions the
    /// run waited for are recorded, and only a resume applies them.
    pub fn decided(&self) -> bool {
        self.suspended && self.waiting.is_empty() && self.status == "running"
    }
}

/// The status of stored run `run_id` now: node states from its record (the scheduler's
/// replay of the log), what it spent from its run view, its open waits and whether it is
/// suspended.
pub fn status_report(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Result<StatusReport, EngineError> {
    let run = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    let records = weft_engine::record::read_log(store, run_id)?;
    let record = weft_engine::record::build_record(&run, &records)?;
    let view = RunView::of_records(run_id, &records);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let nodes = record
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|n| StatusNode {
            // Inside a loop, map or subgraph: the node's address.
            id: n
                .get("scope_path")
                .map_or_else(|| text(n, "node_id"), |_| text(n, "scope_path")),
            status: text(n, "status"),
            attempts: n
                .get("attempts")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
            refused_calls: n
                .get("x-weft-refused_calls")
                .and_then(Value::as_array)
                .map(Vec::len)
                .filter(|k| *k > 0),
        })
        .collect();
    // What waits on a person right now (open waits of the log).
    let waiting = weft_engine::human::waits_of(store, run_id)
        .map(|ws| {
            ws.into_iter()
                .filter(|w| w.is_open())
                .map(|w| w.waiting)
                .collect()
        })
        .unwrap_or_default();
    Ok(StatusReport {
        run_id: run_id.to_string(),
        status: text(&record, "status"),
        started_at: text(&record, "started_at"),
        finished_at: record
            .get("finished_at")
            .and_then(Value::as_str)
            .map(str::to_string),
        nodes,
        usage: weft_engine::record::usage_of(&view),
        waiting,
        suspended: run.status == weft_store::RunStatus::Suspended,
    })
}
