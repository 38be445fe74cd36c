//! `--dry-run`: every check a run makes before it writes anything (the preflight: nodes
//! this engine can run, params bound, the root scope adapted, the scheduling options), with
//! no store, no run and no command.

use serde::Serialize;
use serde_json::Value;
use weft_core::FailurePolicy;

use super::RunOptions;
use super::preflight::preflight;
use crate::EngineError;

/// What a run of the document would start with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DryRun {
    pub graph_digest: String,
    /// The params as the run would bind them (defaults applied).
    pub params: Value,
    pub max_parallel: usize,
    /// `halt`, `isolate` or `continue`.
    pub on_node_failure: &'static str,
    /// What the run would log as `run_started.warnings` (e.g. a worst case over
    /// `max_node_executions`).
    pub warnings: Vec<String>,
}

/// Checks `doc` as [`super::run_document`] would, and stops there. A document this engine
/// would refuse is an `Err` with every reason ([`EngineError::Refused`], `Params`, …).
pub fn dry_run(doc: &Value, options: &RunOptions) -> Result<DryRun, EngineError> {
    let root = doc
        .as_object()
        .ok_or_else(|| EngineError::Refused(vec!["the document is not an object".into()]))?;
    // The same agents a run would use: a model node without a cassette entry, or a tier
    // no model serves (RT011), is refused here too.
    let agents = options.registry()?;
    let plan = preflight(root, options, &agents, &Default::default())?;
    Ok(DryRun {
        graph_digest: weft_ags::digest::graph_digest(doc),
        params: plan.params,
        max_parallel: plan.sched_options.max_parallel,
        on_node_failure: match plan.sched_options.on_node_failure {
            FailurePolicy::Halt => "halt",
            FailurePolicy::Isolate => "isolate",
            FailurePolicy::Continue => "continue",
        },
        warnings: plan.warnings,
    })
}
