//! A person's answer to a graph-level `human` criterion (a `human` criterion in the
//! graph's own `success`, e.g. an owner's sign-off): FINALIZE waits for it instead of
//! leaving it pending (`docs/engine.md` §4b).
//!
//! The wait is an ordinary `gate_waiting` (stage `graph_success`, mode `approve`, the
//! criterion's `roles`, rendered `prompt` and description) whose `node` is the
//! **sign-off key** `success/<criterion id>`: node ids never contain `/`, so the key never
//! names a node, the scheduler's replay passes over it, and `weft approve|reject RUN
//! success/<id>` decides it through the usual inbox. The answers are a fold over the root
//! scope's `human_decision` events on such keys, so a resumed run evaluates the graph's
//! `success` again with them and finishes: approve → the criterion passes, reject → it fails
//! (and the run with it). One wait per unanswered criterion, in declared order.

use serde_json::{Map, Value};
use weft_criteria::{Kind, Outcome, Severity, SuccessBlock, Verdict};
use weft_store::EventLog;

use super::Driver;
use super::criteria::CriteriaAnswers;
use crate::EngineError;
use crate::context::RunContext;
use crate::events::RunEvent;
use crate::human::Waiting;

/// The prefix of a sign-off key (`success/<criterion id>`).
pub const KEY_PREFIX: &str = "success/";

/// The criterion id a sign-off key answers, if `node` is one.
pub fn criterion_of(node: &str) -> Option<&str> {
    node.strip_prefix(KEY_PREFIX)
}

/// The answers to the graph's `human` criteria in the root scope's log.
pub(super) fn answers(d: &Driver<'_>) -> Result<CriteriaAnswers, EngineError> {
    let mut answers = CriteriaAnswers::default();
    let mut from = 1;
    loop {
        let batch = d.store.read(&d.run_id, from, 1000)?;
        let Some(last) = batch.last() else { break };
        from = last.seq + 1;
        for record in batch
            .iter()
            .filter(|r| r.kind == "human_decision" && super::scope_of(r).is_none())
        {
            let event =
                RunEvent::from_record(record).map_err(|e| EngineError::Internal(e.to_string()))?;
            if let RunEvent::HumanDecision(decision) = event
                && let Some(id) = criterion_of(&decision.node)
            {
                answers.insert(id.to_string(), &decision);
            }
        }
    }
    Ok(answers)
}

/// The wait for the first required `human` criterion of `verdict` still pending, when
/// the verdict waits on a person (its other criteria do not decide it already).
pub(super) fn wait_for(
    block: &SuccessBlock,
    verdict: &Verdict,
    ctx: &RunContext,
) -> Option<Waiting> {
    if !verdict.pending_human {
        return None;
    }
    let pending = verdict.results.iter().find(|r| {
        r.kind == Kind::Human && r.severity == Severity::Required && r.outcome == Outcome::Pending
    })?;
    let criterion = block.criteria.iter().find(|c| c.id == pending.id)?;
    Some(Waiting {
        node: format!("{KEY_PREFIX}{}", criterion.id),
        stage: "graph_success".into(),
        checkpoint: Some(criterion.id.clone()),
        mode: "approve".into(),
        roles: criterion.roles.clone(),
        prompt: criterion
            .prompt
            .as_deref()
            .map(|p| super::human::render(p, ctx)),
        present: vec![Value::String(criterion.description.clone())],
        collect: Map::new(),
        editable: Vec::new(),
        // No deadline: nothing would carry out a timeout of a wait outside the scheduler.
        timeout_seconds: None,
        deadline_ms: None,
        on_timeout: "hold".into(),
        on_reject: "fail".into(),
        attempts: 0,
        error: None,
        outputs: Map::new(),
        absorbed_by: None,
        verdict: serde_json::to_value(verdict).ok(),
        redacted: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_off_key_names_its_criterion_and_never_a_node() {
        assert_eq!(criterion_of("success/owner_signoff"), Some("owner_signoff"));
        assert_eq!(criterion_of("owner_signoff"), None);
    }
}
