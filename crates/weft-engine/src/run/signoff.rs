//! A person's answer to a graph-level `human` criterion (a `human` criterion in the
//! graph's own `success`, e.g. an owner's sign-off): FINALIZE waits for it instead of
//! leaving it pending (`docs/engine.md` §4b). The same holds for a fragment's own `success`
//! (a loop body, a map body, a subgraph): its instance waits, addressed like a node inside
//! it (`m[1].success/<id>`), and its container stays open until the answer (§3j).
//!
//! The wait is an ordinary `gate_waiting` (stage `graph_success`, mode `approve`, the
//! criterion's `roles`, rendered `prompt` and description) whose `node` is the
//! **sign-off key** `success/<criterion id>`: node ids never contain `/`, so the key never
//! names a node, the scheduler's replay passes over it, and `weft approve|reject RUN
//! success/<id>` decides it through the usual inbox. The answers are a fold over the root
//! scope's `human_decision` events on such keys, so a resumed run evaluates the graph's
//! `success` again with them and finishes: approve → the criterion passes, reject → it fails
//! (and the run with it). One wait per unanswered criterion, in declared order.
//!
//! A sign-off can have a deadline (the criterion's `timeout_seconds`, else the policy's
//! default). The run is suspended while it waits, so no process watches the clock: the
//! next `weft resume` after the deadline logs `human_timeout` on the key and carries out
//! `policy.on_human_timeout` — `fail` fails the criterion, `approve` passes it, `hold`
//! waits on with no deadline.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use weft_criteria::{HumanAnswer, Kind, Outcome, Severity, SuccessBlock, Verdict};

use super::Driver;
use super::criteria::CriteriaAnswers;
use crate::EngineError;
use crate::context::RunContext;
use crate::events::RunEvent;
use crate::human::Waiting;

pub use crate::wait::{KEY_PREFIX, criterion_of};

/// What the scope's log says about its sign-offs: the answers so far (a
/// person's decision, or a timeout that decided), and each unanswered criterion's latest
/// wait, whose deadline a resume carries out ([`carry_out_timeouts`]).
#[derive(Debug, Default)]
pub(super) struct Signoffs {
    pub(super) answers: CriteriaAnswers,
    /// Criterion id → the deadline and `on_timeout` of its latest logged wait, while
    /// unanswered.
    open: BTreeMap<String, (Option<i64>, String)>,
    /// Criteria whose wait timed out with `hold` (or `escalate`): they wait with no deadline.
    held: BTreeSet<String>,
}

impl Signoffs {
    fn fold(&mut self, event: &RunEvent) {
        match event {
            RunEvent::GateWaiting(w) => {
                if let Some(id) = criterion_of(&w.node) {
                    let held = self.held.contains(id);
                    let deadline = if held { None } else { w.deadline_ms };
                    self.open
                        .insert(id.to_string(), (deadline, w.on_timeout.clone()));
                }
            }
            RunEvent::HumanDecision(decision) => {
                if let Some(id) = criterion_of(&decision.node) {
                    self.answers.insert(id.to_string(), decision);
                    self.open.remove(id);
                }
            }
            RunEvent::HumanTimeout { node, action } => {
                // A person's answer that came first stands.
                if let Some(id) = criterion_of(node).filter(|id| !self.answers.0.contains_key(*id))
                {
                    self.open.remove(id);
                    let comment = Some(format!(
                        "no answer before the deadline (on_timeout: {action})"
                    ));
                    let answer = match action.as_str() {
                        "approve" => HumanAnswer::Approved {
                            reviewer: None,
                            comment,
                        },
                        "fail" => HumanAnswer::Rejected {
                            reviewer: None,
                            comment,
                        },
                        _ => {
                            self.held.insert(id.to_string());
                            return;
                        }
                    };
                    self.answers.0.insert(id.to_string(), answer);
                }
            }
            _ => {}
        }
    }
}

/// The sign-offs as the driver's own scope has them in the log: the root's, or a fragment
/// instance's (its events carry its `scope`).
pub(super) async fn signoffs(d: &Driver<'_>) -> Result<Signoffs, EngineError> {
    let own = d.scope.path.as_deref();
    let mut signoffs = Signoffs::default();
    let mut from = 1;
    loop {
        let batch = d.store.read_async(&d.run_id, from, 1000).await?;
        let Some(last) = batch.last() else { break };
        from = last.seq + 1;
        for record in batch.iter().filter(|r| {
            matches!(
                r.kind.as_str(),
                "human_decision" | "human_timeout" | "gate_waiting"
            ) && super::scope_of(r) == own
        }) {
            let event =
                RunEvent::from_record(record).map_err(|e| EngineError::Internal(e.to_string()))?;
            signoffs.fold(&event);
        }
    }
    Ok(signoffs)
}

/// Logs a `human_timeout` for each sign-off whose deadline has passed with no answer, and
/// folds it in: `fail` rejects the criterion, `approve` passes it, `hold` (and `escalate`,
/// which has no one to escalate to at graph level) keeps it waiting with no deadline.
pub(super) async fn carry_out_timeouts(
    d: &mut Driver<'_>,
    signoffs: &mut Signoffs,
) -> Result<(), EngineError> {
    let now = d.clock.now_ms();
    let due: Vec<(String, String)> = signoffs
        .open
        .iter()
        .filter(|(_, (deadline, _))| deadline.is_some_and(|t| t <= now))
        .map(|(id, (_, action))| (id.clone(), action.clone()))
        .collect();
    for (id, action) in due {
        let event = RunEvent::HumanTimeout {
            node: format!("{KEY_PREFIX}{id}"),
            action,
        };
        if d.append(&event).await? {
            signoffs.fold(&event);
        }
    }
    Ok(())
}

/// The wait for the first required `human` criterion of `verdict` still pending, when
/// the verdict waits on a person (its other criteria do not decide it already).
///
/// Its deadline is the one its first wait was given (a resume does not move it): the
/// criterion's `timeout_seconds`, else `policy.default_human_timeout_seconds`, from when
/// the run first asked; none once a `hold` timeout was logged. `on_timeout` is
/// `policy.on_human_timeout` (a criterion has no `on_timeout` of its own).
pub(super) fn wait_for(
    d: &Driver<'_>,
    block: &SuccessBlock,
    verdict: &Verdict,
    ctx: &RunContext,
    signoffs: &Signoffs,
) -> Option<Waiting> {
    if !verdict.pending_human {
        return None;
    }
    let pending = verdict.results.iter().find(|r| {
        r.kind == Kind::Human && r.severity == Severity::Required && r.outcome == Outcome::Pending
    })?;
    let criterion = block.criteria.iter().find(|c| c.id == pending.id)?;
    let (timeout_seconds, deadline_ms) = if signoffs.held.contains(&criterion.id) {
        (None, None)
    } else if let Some((deadline, _)) = signoffs.open.get(&criterion.id) {
        let seconds = criterion.timeout_seconds.or(d.human.policy.default_timeout);
        (seconds, *deadline)
    } else {
        d.effective_timeout(criterion.timeout_seconds)
    };
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
        timeout_seconds,
        deadline_ms,
        on_timeout: d.human.policy.on_timeout.clone(),
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
