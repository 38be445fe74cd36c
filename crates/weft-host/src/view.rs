//! The view of a run for the shells: the engine's typed fold of its log
//! (`weft_engine::view`, re-exported here: it lives in the engine because the run record is
//! built there and shares it) and the status report `weft status` prints.

use serde::Serialize;
use serde_json::Value;
use weft_engine::EngineError;
use weft_engine::human::Waiting;
use weft_engine::record::rfc3339_ms;
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

/// The status of stored run `run_id` now, all of it from its run view (the typed fold of
/// its log): the run's and each node's state (root scope, then every fragment instance's
/// nodes by address), attempts, refused tool calls, what it spent, its open waits; and,
/// from the store's row, whether it is suspended.
pub fn status_report(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Result<StatusReport, EngineError> {
    let run = store
        .get_run(run_id)?
        .ok_or_else(|| EngineError::UnknownRun(run_id.to_string()))?;
    let view = run_view(store, run_id)?;
    Ok(StatusReport::of_view(&view, run.status))
}

impl StatusReport {
    /// The report of `view`, the store's row saying `row`.
    pub fn of_view(view: &RunView, row: weft_store::RunStatus) -> StatusReport {
        let nodes = view
            .nodes()
            .iter()
            .map(|n| StatusNode {
                id: n.address(),
                status: n.state.as_str().to_string(),
                attempts: n.attempts.len(),
                refused_calls: usize::try_from(n.refused_calls).ok().filter(|k| *k > 0),
            })
            .collect();
        StatusReport {
            run_id: view.run_id.clone(),
            status: view.status_given(row),
            started_at: view.started_ms.map(rfc3339_ms).unwrap_or_default(),
            finished_at: view.finished_ms.map(rfc3339_ms),
            nodes,
            usage: weft_engine::record::usage_of(view),
            waiting: view.open_waits(),
            suspended: row == weft_store::RunStatus::Suspended,
        }
    }
}
