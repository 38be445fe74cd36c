//! Resolving waits on people (`docs/engine.md` §3b–§3e): each turn of the driver loop takes
//! one step of human work — actions of inbox events absorbed on an append, a logged decision
//! or timeout to carry out, or a deadline that passed (logged as `human_timeout` first) —
//! and turns it into the node's outcome, or lets a task go on past its checkpoint.

use serde_json::{Map, Value, json};
use weft_core::FailureClass;
use weft_core::{Action, NodeState};

use super::Driver;
use super::fallback::Finish;
use super::human::{Resolution, Step};
use super::node::Attempt;
use crate::EngineError;
use crate::events::{NodeOutcome, RunEvent};
use crate::human::{Decision, timeout_resumes};

impl Driver<'_> {
    /// One step of human work, if there is any: actions of absorbed inbox events, a logged
    /// resolution to carry out, or a deadline that passed (logged as `human_timeout`).
    pub(super) async fn human_step(&mut self) -> Result<Option<Step>, EngineError> {
        if !self.human.actions.is_empty() {
            return Ok(Some(Step::Actions(self.human.actions.drain(..).collect())));
        }
        if let Some((node, res)) = self.human.resolved.pop_front() {
            return self.resolve(node, res).await.map(Some);
        }
        let now = self.clock.now_ms();
        let due = self.human.waits.iter().find_map(|(&i, (w, held))| {
            (!held && w.deadline_ms.is_some_and(|d| d <= now))
                .then(|| (i, w.node.clone(), w.on_timeout.clone()))
        });
        let Some((node, id, action)) = due else {
            return Ok(None);
        };
        let mut actions = self
            .record(&RunEvent::HumanTimeout {
                node: id,
                action: action.clone(),
            })
            .await?;
        // The append may have met a decision that came first: then it was not written.
        if self.sched.state(node) == NodeState::AwaitingHuman && !timeout_resumes(&action) {
            if let Some((_, held)) = self.human.waits.get_mut(&node) {
                *held = true;
            }
        } else if self.sched.state(node) == NodeState::Running
            && !self.human.resolved.iter().any(|(n, _)| *n == node)
        {
            self.human
                .resolved
                .push_back((node, Resolution::Timeout(action)));
        }
        actions.extend(self.human.actions.drain(..));
        Ok(Some(Step::Actions(actions)))
    }

    /// Carries out a resolution: a gate, takeover or escalation settles the node; a task
    /// checkpoint lets the node go on (the next checkpoint, its attempt, `success`, the
    /// ladder) or, rejected, fails it.
    async fn resolve(&mut self, node: usize, res: Resolution) -> Result<Step, EngineError> {
        let stage = self.human.waits.get(&node).map(|(w, _)| w.stage.clone());
        if let Some(stage) = stage.filter(|s| {
            matches!(
                s.as_str(),
                "before_start"
                    | "before_side_effects"
                    | "after_outputs"
                    | "on_criteria_failure"
                    | "on_failure"
                    | "human_criterion"
                    | crate::human::TOOL_APPROVAL
            )
        }) {
            return self.resolve_checkpoint(node, &stage, res).await;
        }
        self.resolve_settling(node, res).await.map(Step::Actions)
    }

    /// A resolution that settles the node (gates, takeover, escalation).
    async fn resolve_settling(
        &mut self,
        node: usize,
        res: Resolution,
    ) -> Result<Vec<Action>, EngineError> {
        let Some((wait, _)) = self.human.waits.remove(&node) else {
            return Err(EngineError::Internal(format!(
                "a resolution for node {node}, which does not wait"
            )));
        };
        let (approved, values, who) = match &res {
            Resolution::Decision(d) => (
                d.outcome != "rejected",
                d.values.clone(),
                format!(
                    "{}{}",
                    d.actor,
                    d.note
                        .as_deref()
                        .map(|n| format!(": {n}"))
                        .unwrap_or_default()
                ),
            ),
            Resolution::Timeout(action) => (
                action == "approve",
                Map::new(),
                format!("timeout after {}s", wait.timeout_seconds.unwrap_or(0.0)),
            ),
        };
        let timed_out_fail = matches!(&res, Resolution::Timeout(a) if a != "approve");
        let mut outputs = self.wait_outputs(node, &wait);
        outputs.extend(values);
        let base = Finish {
            outcome: NodeOutcome::Succeeded,
            outputs: Map::new(),
            verdict: wait.verdict.clone(),
            attempts: wait.attempts,
            error: None,
            absorbed_by: None,
            absorbed_failure: None,
            escalate: false,
            warnings: Vec::new(),
        };
        let finish = match wait.stage.as_str() {
            "gate" => {
                let label = if wait.mode == "input" {
                    "provided"
                } else {
                    "approved"
                };
                if approved {
                    outputs.insert("decision".into(), json!(label));
                    Finish {
                        outputs,
                        absorbed_by: matches!(res, Resolution::Timeout(_))
                            .then(|| "on_timeout:approve".to_string()),
                        ..base
                    }
                } else if timed_out_fail {
                    Finish {
                        outcome: NodeOutcome::Failed,
                        error: Some(format!("human_timeout: no decision ({who})")),
                        ..base
                    }
                } else {
                    match wait.on_reject.as_str() {
                        "route" => Finish {
                            outputs: [("decision".to_string(), json!("rejected"))]
                                .into_iter()
                                .collect(),
                            ..base
                        },
                        "skip_dependents" => Finish {
                            outcome: NodeOutcome::Skipped,
                            error: Some(format!("rejected by {who}")),
                            ..base
                        },
                        _ => Finish {
                            outcome: NodeOutcome::Failed,
                            error: Some(format!("rejected by {who}")),
                            ..base
                        },
                    }
                }
            }
            "human_takeover" if approved => Finish {
                outputs,
                absorbed_by: wait.absorbed_by.clone(),
                ..base
            },
            "on_escalation" if approved => {
                // A person accepted the failed node: succeeded degraded (RT042, the run
                // is capped at partial), with the outputs it had and any they supplied.
                self.degraded = true;
                Finish {
                    outputs,
                    error: wait.error.clone(),
                    absorbed_by: wait.absorbed_by.clone(),
                    ..base
                }
            }
            _ => Finish {
                outcome: NodeOutcome::Failed,
                error: Some(format!(
                    "{} ({} {who})",
                    wait.error.as_deref().unwrap_or("failed"),
                    if timed_out_fail {
                        "no decision:"
                    } else {
                        "rejected by"
                    }
                )),
                ..base
            },
        };
        self.settle(node, finish).await
    }
}

impl Driver<'_> {
    /// Carries out the resolution of a task checkpoint (`docs/engine.md` §3e).
    async fn resolve_checkpoint(
        &mut self,
        node: usize,
        stage: &str,
        res: Resolution,
    ) -> Result<Step, EngineError> {
        let Some((wait, _)) = self.human.waits.remove(&node) else {
            return Err(EngineError::Internal(format!("node {node} does not wait")));
        };
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let index = job
            .checkpoints
            .iter()
            .position(|c| Some(&c.label) == wait.checkpoint.as_ref());
        let (approved, values, who) = match &res {
            Resolution::Decision(d) => (
                d.outcome != "rejected",
                d.values.clone(),
                format!(
                    "rejected by {}{}",
                    d.actor,
                    d.note
                        .as_deref()
                        .map(|n| format!(": {n}"))
                        .unwrap_or_default()
                ),
            ),
            Resolution::Timeout(a) => (
                a == "approve",
                Map::new(),
                format!(
                    "no decision within {}s",
                    wait.timeout_seconds.unwrap_or(0.0)
                ),
            ),
        };
        let label = wait.checkpoint.clone().unwrap_or_default();
        let mut outputs = self.wait_outputs(node, &wait);
        let fail = |error: String, outputs: Map<String, Value>| Finish {
            outcome: NodeOutcome::Failed,
            outputs,
            verdict: wait.verdict.clone(),
            attempts: wait.attempts,
            error: Some(error),
            absorbed_by: None,
            absorbed_failure: None,
            escalate: false,
            warnings: Vec::new(),
        };
        match stage {
            "before_start" | "before_side_effects" => {
                if !approved {
                    let f = fail(
                        format!("permission_denied: checkpoint `{label}` at {stage}: {who}"),
                        Map::new(),
                    );
                    return self.settle(node, f).await.map(Step::Actions);
                }
                self.human.collected.entry(node).or_default().extend(values);
                let after = index.map(|i| (stage.to_string(), i));
                match self
                    .checkpoint_before_run(node, wait.attempts, after)
                    .await?
                {
                    Some(actions) => Ok(Step::Actions(actions)),
                    None => Ok(Step::Spawn {
                        node,
                        attempt: wait.attempts,
                    }),
                }
            }
            crate::human::TOOL_APPROVAL => {
                // Approved: the node's next attempt may take exactly that action (its digest
                // binds tool, arguments, identity and policy version). Rejected: the node
                // fails as the policy's ask would have it.
                let digest = wait.checkpoint.clone().unwrap_or_default();
                if !approved {
                    let f = fail(
                        format!("permission_denied: tool action {digest} not approved: {who}"),
                        Map::new(),
                    );
                    return self.settle(node, f).await.map(Step::Actions);
                }
                self.human.approve_tool(node, digest);
                Ok(Step::Spawn {
                    node,
                    attempt: wait.attempts + 1,
                })
            }
            "human_criterion" => {
                // The answer goes to the criterion; `success` is evaluated again with it.
                let criterion = wait.checkpoint.clone().unwrap_or_default();
                let decision = match res {
                    Resolution::Decision(d) => d,
                    Resolution::Timeout(a) => Decision::from_timeout(&wait.node, &a),
                };
                self.human
                    .answers
                    .entry((node, wait.attempts))
                    .or_default()
                    .insert(criterion, &decision);
                let result = Attempt {
                    outputs,
                    success_pending: true,
                    passed: Some(("after_outputs".to_string(), job.checkpoints.len())),
                    ..Attempt::default()
                };
                Ok(Step::Reinject {
                    node,
                    attempt: wait.attempts,
                    result: Box::new(result),
                })
            }
            "after_outputs" | "on_criteria_failure" => {
                outputs.extend(values);
                if !approved {
                    let error = match &wait.error {
                        Some(e) => format!("criteria_failed: {e} (retries stopped: {who})"),
                        None => format!("checkpoint `{label}` at {stage}: {who}"),
                    };
                    return self
                        .settle(node, fail(error, outputs))
                        .await
                        .map(Step::Actions);
                }
                let result = Attempt {
                    outputs,
                    verdict: wait.verdict.clone(),
                    failure: (stage == "on_criteria_failure").then(|| {
                        (
                            FailureClass::CriteriaFailed,
                            wait.error.clone().unwrap_or_default(),
                        )
                    }),
                    success_pending: stage == "after_outputs",
                    passed: index.map(|i| (stage.to_string(), i)),
                    ..Attempt::default()
                };
                Ok(Step::Reinject {
                    node,
                    attempt: wait.attempts,
                    result: Box::new(result),
                })
            }
            _ => {
                // on_failure: an acknowledgement; the failure stands either way.
                outputs.extend(values);
                let finish = Finish {
                    absorbed_by: wait.absorbed_by.clone(),
                    absorbed_failure: None,
                    ..fail(wait.error.clone().unwrap_or_default(), outputs)
                };
                match self.checkpoint_on_failure(node, &finish, index).await? {
                    Some(actions) => Ok(Step::Actions(actions)),
                    None => self.settle(node, finish).await.map(Step::Actions),
                }
            }
        }
    }
}
