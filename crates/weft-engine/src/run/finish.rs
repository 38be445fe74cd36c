//! The end of a run: the graph's outputs bound, the graph's `success` evaluated, the final
//! status decided (`docs/engine.md`), `run_finished` appended and the run's stored status
//! set, and the [`RunReport`] built.

use serde_json::{Map, Value};
use weft_ags::model::{Fields, entries_of};
use weft_core::ScopeSummary;
use weft_criteria::{CriteriaEnv, SuccessBlock};
use weft_store::RunStatus;

use super::redact::{redacted_names, split_redacted};
use super::{Driver, FinalStatus, NodeReport, RunOptions, RunReport, state_name};
use crate::EngineError;
use crate::events::RunEvent;

/// FINALIZE: bind graph outputs, graph success, final status.
pub(super) async fn finalize(
    d: &mut Driver<'_>,
    root: &Map<String, Value>,
    options: &RunOptions,
    summary: ScopeSummary,
    expression_errors_fatal: bool,
) -> Result<RunReport, EngineError> {
    let ctx = d.context();
    let mut reasons = Vec::new();
    let mut graph_outputs = Map::new();
    let mut unbound = Vec::new();
    for (name, spec) in entries_of(root, "outputs") {
        let required = spec
            .field("required")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let value = spec
            .field("from")
            .and_then(Value::as_str)
            .and_then(|src| weft_agx::parse(src).ok())
            .and_then(|e| weft_agx::eval(&e, &ctx).ok())
            .filter(|v| !v.is_null());
        match value {
            Some(v) => {
                graph_outputs.insert(name.to_string(), v);
            }
            None if required => unbound.push(name.to_string()),
            None => {}
        }
    }
    let graph_outputs = Value::Object(graph_outputs);
    let mut success_failed = false;
    let mut graph_verdict = None;
    if let Some(block) = root
        .field("success")
        .and_then(|v| SuccessBlock::from_value(v).ok())
    {
        let mut gctx = ctx.clone();
        gctx.outputs = Some(graph_outputs.clone());
        // A graph-level `human` criterion is answered by a person through a sign-off wait
        // (`signoff.rs`), the root's as a fragment instance's.
        let mut signoffs = super::signoff::signoffs(d).await?;
        super::signoff::carry_out_timeouts(d, &mut signoffs).await?;
        let human = &signoffs.answers;
        let limits = weft_criteria::Limits {
            command_wrapper: options.criteria_wrapper.clone(),
            ..crate::tool_path::criteria_limits(&options.project_dir)
        };
        let env = CriteriaEnv {
            workspace: &options.project_dir,
            outputs: &graph_outputs,
            context: &gctx,
            human,
            checkers: &*options.checkers,
            // Refused up front (`preflight.rs`): a graph-level judgement would spend with
            // no node to account it to.
            judge: &weft_criteria::NoJudge,
            limits: &limits,
        };
        let verdict = weft_criteria::evaluate(&block, &env).await;
        // A person is asked only when the answer can still decide the run: not after a halt,
        // a cancel or a fatal expression error.
        let decided = summary.halted
            || summary.cancelled
            || (expression_errors_fatal && !d.expression_errors.is_empty());
        if !decided
            && let Some(waiting) = super::signoff::wait_for(d, &block, &verdict, &gctx, &signoffs)
        {
            return d.suspend_on_signoff(waiting).await;
        }
        if !verdict.passed {
            success_failed = true;
            reasons.push("the graph's success criteria failed".into());
        }
        graph_verdict = serde_json::to_value(&verdict).ok();
    }
    let ids: Vec<String> = d.jobs.iter().map(|j| j.id.clone()).collect();
    let id_of = |i: usize| ids.get(i).cloned().unwrap_or_else(|| i.to_string());
    let mut status = FinalStatus::Succeeded;
    if summary.halted {
        status = FinalStatus::Failed;
        reasons.push("halted after an unabsorbed failure (on_node_failure: halt)".into());
    }
    if success_failed {
        status = FinalStatus::Failed;
    }
    if expression_errors_fatal && !d.expression_errors.is_empty() {
        status = FinalStatus::Failed;
        reasons.extend(
            d.expression_errors
                .iter()
                .map(|e| format!("expression error: {e}")),
        );
    }
    if summary.cancelled {
        // `weft cancel`: whatever else happened, the run was stopped on request.
        status = FinalStatus::Cancelled;
        reasons.insert(
            0,
            format!(
                "cancelled by {}",
                d.human.cancel.as_deref().unwrap_or("unknown")
            ),
        );
    }
    if status != FinalStatus::Failed && status != FinalStatus::Cancelled {
        if !summary.unabsorbed.is_empty() {
            status = FinalStatus::Partial;
            let ids: Vec<String> = summary.unabsorbed.iter().map(|&i| id_of(i)).collect();
            reasons.push(format!("unabsorbed failure of {}", ids.join(", ")));
        }
        if !unbound.is_empty() {
            status = FinalStatus::Partial;
            reasons.push(format!(
                "RT041: required graph outputs unbound: {}",
                unbound.join(", ")
            ));
        }
        if d.degraded {
            status = FinalStatus::Partial;
            reasons.push("RT042: a node succeeded degraded".into());
        }
    }
    if let Some(why) = &d.budget.stopped() {
        // A graph limit stopped new work (DIGEST §1.5): `partial` when any required graph
        // output is bound or none is declared, else `failed` (docs/semantics.md).
        reasons.push(format!("RT061: {why}"));
        let required = entries_of(root, "outputs")
            .filter(|(_, spec)| {
                spec.field("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(true)
            })
            .count();
        if required > 0 && unbound.len() >= required {
            status = FinalStatus::Failed;
        } else if status == FinalStatus::Succeeded {
            status = FinalStatus::Partial;
        }
    }
    if matches!(status, FinalStatus::Failed | FinalStatus::Cancelled) {
        // FINALIZE step 3: undo what succeeded, newest first (`compensate.rs`).
        reasons.extend(d.compensate().await?);
    }
    let (logged_outputs, redacted) = match &graph_outputs {
        Value::Object(m) => split_redacted(m, &redacted_names(root)),
        other => (other.clone(), Vec::new()),
    };
    let stored = match status {
        FinalStatus::Succeeded => RunStatus::Succeeded,
        FinalStatus::Cancelled => RunStatus::Cancelled,
        _ => RunStatus::Failed,
    };
    // With the run's status in one write (a fragment instance's end is only its scope's
    // `run_finished`; the run's status is the root's).
    let finished = run_finished(
        status,
        logged_outputs,
        redacted,
        reasons.clone(),
        graph_verdict,
    );
    d.close(&finished, stored).await?;
    let nodes = (0..d.jobs.len())
        .map(|i| NodeReport {
            id: id_of(i),
            state: state_name(d.sched.state(i)).to_string(),
            attempts: d.slots[i].attempts,
            error: d.slots[i].error.clone(),
        })
        .collect();
    Ok(RunReport {
        run_id: d.run_id.clone(),
        status,
        nodes,
        started: summary.started.iter().map(|&i| id_of(i)).collect(),
        outputs: graph_outputs,
        reasons,
        usage: d.budget.used(),
        waiting: Vec::new(),
    })
}

/// The `run_finished` of a scope: its final `status`, its loggable `outputs` (those declared
/// `redact: true` named in `redacted`), why it did not succeed, and the graph's verdict. A
/// light map item (`map_item.rs`) logs its own through this too.
pub(super) fn run_finished(
    status: FinalStatus,
    outputs: Value,
    redacted: Vec<String>,
    reasons: Vec<String>,
    graph_verdict: Option<Value>,
) -> RunEvent {
    RunEvent::RunFinished {
        status: status.as_str().to_string(),
        outputs,
        redacted,
        reasons,
        graph_verdict,
    }
}
