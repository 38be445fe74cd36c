//! After the retries: the failure ladder. The `failure.fallback[]` steps in order (`skip`,
//! `degrade_outputs`, `relax_criteria`, `alternate_node`), then `timeout_action`,
//! `on_exhausted` and escalation turn a node's final attempt into its outcome ([`Finish`]),
//! ready for the driver to log.

use std::sync::Arc;

use serde_json::{Map, Value};
use weft_core::FailureClass;

use super::job::Job;
use super::job::Work;
use super::node::{Attempt, AttemptEnv, attempt, check_success};
use super::{Driver, eval_condition};
use crate::agent::Usage;
use crate::context::RunContext;
use crate::events::NodeOutcome;

/// How a node ended, before it is logged.
pub(super) struct Finish {
    pub(super) outcome: NodeOutcome,
    pub(super) outputs: Map<String, Value>,
    pub(super) verdict: Option<Value>,
    pub(super) attempts: u32,
    pub(super) error: Option<String>,
    pub(super) absorbed_by: Option<String>,
    /// The failure `absorbed_by` absorbed (`class: message`).
    pub(super) absorbed_failure: Option<String>,
    /// The ladder escalates to a human: the driver opens an `on_escalation` wait instead
    /// of settling (`human.rs`).
    pub(super) escalate: bool,
    /// Warnings of the last attempt (`RT022`).
    pub(super) warnings: Vec<String>,
}

impl Finish {
    /// A node that never started an attempt: `blocked` (it cannot be routed), else
    /// `cancelled` (a graph budget stopped new work; the error is `budget_exceeded`).
    pub(super) fn not_started(blocked: bool, reason: String) -> Finish {
        let (outcome, class) = if blocked {
            (NodeOutcome::Blocked, FailureClass::PermissionDenied)
        } else {
            (NodeOutcome::Cancelled, FailureClass::BudgetExceeded)
        };
        let error = format!("{class}: {reason}");
        Finish {
            outcome,
            outputs: Map::new(),
            verdict: None,
            attempts: 0,
            error: Some(error),
            absorbed_by: None,
            absorbed_failure: None,
            warnings: Vec::new(),
            escalate: false,
        }
    }
}

/// A final attempt after the fallback rungs.
pub(super) struct Attempted {
    pub(super) attempt: Attempt,
    absorbed_by: Option<String>,
    /// The failure the rung absorbed (`class: message`).
    absorbed_failure: Option<String>,
    /// The `human_takeover` step reached (its index): a person supplies the outputs.
    pub(super) takeover: Option<usize>,
    /// What the rungs themselves spent (a fallback's judge, every alternate node tried):
    /// billed to the node's last attempt, once.
    pub(super) spent: Usage,
}

impl Driver<'_> {
    /// The fallback rungs of the ladder, in order, after the retries are exhausted: the
    /// first step whose `when` holds and that absorbs the failure wins (`docs/engine.md`).
    pub(super) async fn fallbacks(&mut self, node: usize, a: Attempt) -> Attempted {
        let job = Arc::clone(&self.jobs[node]);
        let mut rungs_spent = Usage::default();
        let Some((class, msg)) = a.failure.clone() else {
            return Attempted {
                attempt: a,
                absorbed_by: None,
                absorbed_failure: None,
                takeover: None,
                spent: rungs_spent,
            };
        };
        if class == FailureClass::Blocked {
            return Attempted {
                attempt: a,
                absorbed_by: None,
                absorbed_failure: None,
                takeover: None,
                spent: rungs_spent,
            };
        }
        let mut ctx = self.context();
        ctx.inputs = self.slots[node].inputs.clone();
        ctx.outputs = Some(Value::Object(a.outputs.clone()));
        for (i, step) in job.fallback.iter().enumerate() {
            if let Some(when) = &step.when {
                let (value, error) = eval_condition(when, &ctx);
                if let Some(e) = error {
                    // Logged with the node as RT062; fatal to the run under `fail`.
                    self.slots[node]
                        .expression_notes
                        .push(format!("{}fallback[{i}] when: {e}", super::RT062));
                }
                if !value {
                    continue;
                }
            }
            let rung = format!("fallback[{i}]:{}", step.strategy);
            let absorbed = match step.strategy.as_str() {
                "skip" => Some(Attempt {
                    failure: Some((class, msg.clone())),
                    skipped: true,
                    ..Attempt::default()
                }),
                "degrade_outputs" if class == FailureClass::OutputMissing => {
                    let mut degraded = (*job).clone();
                    for (name, required) in &mut degraded.outputs {
                        if !step.names.contains(name) {
                            *required = false;
                        }
                    }
                    let missing = degraded
                        .outputs
                        .iter()
                        .any(|(n, r)| *r && a.outputs.get(n).is_none_or(Value::is_null));
                    if missing {
                        None
                    } else {
                        let mut c = ctx.clone();
                        c.outputs = None;
                        let judge = self.judge_for(node);
                        let mut r = check_success(&degraded, a.outputs.clone(), c, &judge).await;
                        r.usage = judge.spent();
                        Some(r)
                    }
                }
                "relax_criteria" if class == FailureClass::CriteriaFailed => {
                    let mut relaxed = (*job).clone();
                    if let Some(block) = &mut relaxed.success {
                        for c in &mut block.criteria {
                            if step.names.contains(&c.id) {
                                c.severity = weft_criteria::Severity::Advisory;
                            }
                        }
                    }
                    let mut c = ctx.clone();
                    c.outputs = None;
                    let judge = self.judge_for(node);
                    let mut r = check_success(&relaxed, a.outputs.clone(), c, &judge).await;
                    r.usage = judge.spent();
                    Some(r)
                }
                "human_takeover" => {
                    return Attempted {
                        attempt: a,
                        absorbed_by: None,
                        absorbed_failure: None,
                        takeover: Some(i),
                        spent: rungs_spent,
                    };
                }
                "alternate_node" => {
                    let mut visited = vec![job.id.clone()];
                    self.alternate(
                        &job,
                        step.node.as_deref(),
                        &mut visited,
                        &ctx,
                        &mut rungs_spent,
                    )
                    .await
                }
                _ => None,
            };
            // A judge's second look bills its own spend (the alternates billed theirs).
            if step.strategy != "alternate_node"
                && let Some(r) = &absorbed
            {
                rungs_spent.add(&r.usage);
            }
            if let Some(result) = absorbed.filter(|r| r.failure.is_none() || r.skipped) {
                return Attempted {
                    attempt: result,
                    absorbed_by: Some(rung),
                    absorbed_failure: Some(format!("{class}: {msg}")),
                    takeover: None,
                    spent: rungs_spent,
                };
            }
        }
        Attempted {
            attempt: a,
            absorbed_by: None,
            absorbed_failure: None,
            takeover: None,
            spent: rungs_spent,
        }
    }

    /// Runs `target`'s command in place of `job` (with `job`'s inputs) and adopts its
    /// outputs by name; a failed alternate follows its own `alternate_node` steps, never
    /// revisiting a node (`visited` guards A→B→A).
    async fn alternate(
        &self,
        job: &Job,
        target: Option<&str>,
        visited: &mut Vec<String>,
        ctx: &RunContext,
        spent: &mut Usage,
    ) -> Option<Attempt> {
        let mut next = target.map(str::to_string);
        while let Some(id) = next.take() {
            if visited.contains(&id) {
                return None;
            }
            visited.push(id.clone());
            let alt = self.jobs.iter().find(|j| j.id == id)?;
            let mut c = ctx.clone();
            c.outputs = None;
            let index = self.jobs.iter().position(|j| j.id == id)?;
            let env = self.alternate_env(index);
            let result = attempt(Arc::clone(alt), None, c, env).await;
            // Spent whether it delivers or not.
            spent.add(&result.usage);
            if result.failure.is_none() {
                let outputs: Map<String, Value> = if job.outputs.is_empty() {
                    result.outputs
                } else {
                    result
                        .outputs
                        .into_iter()
                        .filter(|(k, _)| job.outputs.iter().any(|(n, _)| n == k))
                        .collect()
                };
                if let Some((missing, _)) = job
                    .outputs
                    .iter()
                    .find(|(n, r)| *r && outputs.get(n).is_none_or(Value::is_null))
                {
                    return Some(Attempt {
                        failure: Some((
                            FailureClass::OutputMissing,
                            format!("alternate `{id}` did not produce `{missing}`"),
                        )),
                        ..Attempt::default()
                    });
                }
                return Some(Attempt {
                    outputs,
                    verdict: result.verdict,
                    usage: result.usage,
                    ..Attempt::default()
                });
            }
            next = alt
                .fallback
                .iter()
                .find(|s| s.strategy == "alternate_node")
                .and_then(|s| s.node.clone());
        }
        None
    }

    /// The judge of a fallback's second look at `success`: the final attempt's number, and
    /// what the node has left.
    fn judge_for(&self, node: usize) -> super::judge::ModelJudge {
        let job = &self.jobs[node];
        let limits = self
            .budget
            .limits_for(node, &job.limits, self.clock.now_ms());
        let last = self.slots.get(node).map_or(1, |s| s.attempts).max(1);
        super::judge::ModelJudge::new(
            job,
            Arc::clone(&self.agents),
            Arc::clone(&self.clock),
            last,
            limits,
        )
    }

    /// The environment of an `alternate_node` run: attempt 1 of the alternate, routed and
    /// limited as its own (not counted against `max_node_executions`, see
    /// `docs/semantics.md`). A compensation runs with the same.
    pub(super) fn compensation_env(&self, index: usize) -> AttemptEnv {
        self.alternate_env(index)
    }

    fn alternate_env(&self, index: usize) -> AttemptEnv {
        let alt = &self.jobs[index];
        let route = match alt.work {
            Work::Model => self
                .agents
                .model_agent()
                .and_then(|a| crate::agent::route::route(&a.models(), &alt.tier, 1).ok()),
            _ => None,
        };
        AttemptEnv {
            agents: Arc::clone(&self.agents),
            number: 1,
            route,
            limits: self
                .budget
                .limits_for(index, &alt.limits, self.clock.now_ms()),
            clock: Arc::clone(&self.clock),
            scope: self.scope.path.clone(),
            approvals: Vec::new(),
            journal: Some(self.journal.fresh()),
            scratch: None,
            keep_out: Vec::new(),
        }
    }

    /// Turns a final attempt into the node's outcome (`timeout_action`, `on_exhausted`).
    pub(super) fn finish(&mut self, node: usize, attempts: u32, a: Attempted) -> Finish {
        let job = &self.jobs[node];
        let Attempted {
            attempt: a,
            mut absorbed_by,
            mut absorbed_failure,
            ..
        } = a;
        // Escalation to anyone but a person is refused before the run (`preflight.rs`).
        let to_human = matches!(job.escalation_to.as_deref(), Some("human") | None);
        let mut escalated = false;
        let (outcome, error) = match a.failure {
            None => (NodeOutcome::Succeeded, None),
            Some((FailureClass::Blocked, msg)) => (NodeOutcome::Blocked, Some(msg)),
            Some((class, msg)) if a.skipped => {
                (NodeOutcome::Skipped, Some(format!("{class}: {msg}")))
            }
            Some((class, msg)) => {
                let msg = format!("{class}: {msg}");
                let timeout = class == FailureClass::Timeout;
                let action = if timeout && job.timeout_action != "retry" {
                    match job.timeout_action.as_str() {
                        "partial" => "succeed_degraded",
                        "escalate" => "escalate",
                        _ => job.on_exhausted.as_str(),
                    }
                } else {
                    job.on_exhausted.as_str()
                };
                if timeout && matches!(job.timeout_action.as_str(), "partial" | "escalate") {
                    absorbed_by = Some(format!("timeout_action:{}", job.timeout_action));
                    absorbed_failure = Some(msg.clone());
                }
                match action {
                    "skip" => (NodeOutcome::Skipped, Some(msg)),
                    "succeed_degraded" => {
                        self.degraded = true;
                        (NodeOutcome::Succeeded, Some(msg))
                    }
                    "escalate" => {
                        escalated = to_human;
                        (NodeOutcome::Failed, Some(msg))
                    }
                    _ => (NodeOutcome::Failed, Some(msg)),
                }
            }
        };
        Finish {
            outcome,
            outputs: a.outputs,
            verdict: a.verdict,
            attempts,
            error,
            absorbed_by,
            absorbed_failure,
            warnings: a.warnings,
            escalate: escalated,
        }
    }
}
