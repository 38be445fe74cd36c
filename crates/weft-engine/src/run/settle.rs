//! From a finished attempt to `node_finished`: [`complete`] carries a result through the
//! `after_outputs` / `on_criteria_failure` checkpoints, a retry (a new attempt is logged
//! and spawned), or the failure ladder to the node's [`Finish`]; [`Driver::settle_all`]
//! records the nodes that finished together.
//!
//! Settling in a batch: the nodes whose attempts the driver collects at one wake-up finished
//! at the same time, so each one's edge guards are evaluated on the state before any of them
//! is recorded; their `node_finished` events are then appended in one batch (one commit)
//! and applied in order. Append before apply holds: nothing is applied before the whole
//! batch is durable, and the guard values are in the log, so a replay needs no evaluation.

use std::sync::Arc;
use weft_core::FailureClass;

use tokio::task::JoinSet;
use weft_core::{Action, EdgeKind};

use super::fallback::Finish;
use super::job::Job;
use super::node::{Attempt, Retry, attempt, feedback_for};
use super::redact::split_redacted;
use super::{Driver, RT062, checkpoint, eval_condition, human};
use crate::EngineError;
use crate::agent::Usage;
use crate::backoff::Sleeper;
use crate::context::RunContext;
use crate::events::{NodeOutcome, RunEvent};

/// The `node_finished` of `job` ending as `finish`, with the values of its outgoing
/// `guards` and what each of its attempts `spent` (their sum from `total`, asked only when
/// one spent anything); and the node's outputs, redacted ones included, for the driver's
/// views. A light map item (`map_item.rs`) logs its node's end through this too.
pub(super) fn node_finished(
    job: &Job,
    finish: Finish,
    guards: Vec<(usize, bool)>,
    spent: Vec<Usage>,
    total: impl FnOnce() -> Usage,
) -> (RunEvent, serde_json::Map<String, serde_json::Value>) {
    let (outputs, redacted) = split_redacted(&finish.outputs, &job.redact_outputs);
    let any_spent = spent.iter().any(|u| !u.is_zero());
    let event = RunEvent::NodeFinished {
        node: job.id.clone(),
        outcome: finish.outcome,
        outputs,
        redacted,
        verdict: finish.verdict,
        guards,
        attempts: finish.attempts,
        error: finish.error,
        absorbed_by: finish.absorbed_by,
        absorbed_failure: finish.absorbed_failure,
        usage: any_spent.then(total),
        attempt_usage: if any_spent { spent } else { Vec::new() },
        warnings: finish.warnings,
    };
    (event, finish.outputs)
}

/// A node attempt's task: (node, attempt number, result).
pub(super) type Tasks = JoinSet<(usize, u32, Attempt)>;

/// What became of a finished attempt.
pub(super) enum Completion {
    /// The node ended: settle it.
    Finish(Box<Finish>),
    /// A retry was logged and spawned.
    Retried,
    /// A person is asked first (a checkpoint, a takeover, an escalation): these actions.
    Waiting(Vec<Action>),
}

/// Handles one finished attempt: the checkpoints after it, then a retryable failure with
/// attempts left (and budget) logs and spawns the next attempt; otherwise the failure
/// ladder decides the node's end or a wait on a person.
pub(super) async fn complete(
    d: &mut Driver<'_>,
    tasks: &mut Tasks,
    sleeper: &Arc<dyn Sleeper>,
    node: usize,
    number: u32,
    mut result: Attempt,
) -> Result<Completion, EngineError> {
    if let Some(isolation) = result.isolation.take() {
        // Recorded (and merged when the attempt succeeded) before anything else decides.
        d.finish_isolation(node, number, isolation, &mut result)
            .await?;
    }
    if let Some(approval) = result.approval.clone() {
        // A policy `ask`: the node waits for a person, not for the ladder (`approval.rs`).
        d.budget.spent(node, number, result.usage);
        d.log_attempt_spent(node, number).await?;
        let actions = d
            .open_tool_approval(node, number, &approval, &result)
            .await?;
        return Ok(Completion::Waiting(actions));
    }
    let result = match d.checkpoint_after_attempt(node, number, result).await? {
        checkpoint::AfterAttempt::Continue(r) => *r,
        checkpoint::AfterAttempt::Waiting(actions) => return Ok(Completion::Waiting(actions)),
    };
    let job = Arc::clone(&d.jobs[node]);
    d.budget.spent(node, number, result.usage);
    let retry = result.failure.as_ref().is_some_and(|&(class, _)| {
        job.retry_on.retries(class)
            || (class == FailureClass::Timeout && job.timeout_action == "retry")
    });
    let env = (retry && number < job.max_attempts)
        .then(|| d.admit_attempt(node, number + 1).ok())
        .flatten();
    if let Some(env) = env {
        let mut ctx = d.context_for(node);
        ctx.inputs = d.slots[node].inputs.clone();
        let delay = job.backoff.delay(&d.run_id, &job.id, number);
        d.append(&RunEvent::NodeStarted {
            node: job.id.clone(),
            attempt: number + 1,
            // Retries reuse the first attempt's inputs: logged once.
            inputs: None,
            delay_ms: Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
            previous_failure: result
                .failure
                .as_ref()
                .map(|(class, msg)| format!("{class}: {msg}")),
            routed: env.route.clone(),
        })
        .await?;
        let retry = Retry {
            delay,
            sleeper: Arc::clone(sleeper),
            feedback: feedback_for(&job, &result),
        };
        tasks.spawn(async move { (node, number + 1, attempt(job, Some(retry), ctx, env).await) });
        return Ok(Completion::Retried);
    }
    Ok(match d.ladder(node, number, result).await? {
        human::Ending::Settle(finish) => Completion::Finish(finish),
        human::Ending::Wait(actions) => {
            // The node waits on a person (an escalation, a takeover): what its attempts
            // spent must outlive this process, or a resumed run would forget it.
            d.log_attempt_spent(node, number).await?;
            Completion::Waiting(actions)
        }
    })
}

impl Driver<'_> {
    /// Logs what each attempt of `node` up to `number` has spent (`attempt_spent`, one
    /// per attempt that spent anything): the node is about to wait, and its
    /// `node_finished`, which carries usage otherwise, may be written by another process
    /// after a resume. Logging an attempt again is harmless: the fold keeps the last.
    pub(super) async fn log_attempt_spent(
        &mut self,
        node: usize,
        number: u32,
    ) -> Result<(), EngineError> {
        let spent: Vec<RunEvent> = (1..=number)
            .map(|n| (n, self.budget.attempt_spent(node, n)))
            .filter(|(_, usage)| !usage.is_zero())
            .map(|(attempt, usage)| RunEvent::AttemptSpent {
                node: self.jobs[node].id.clone(),
                attempt,
                usage,
            })
            .collect();
        if !spent.is_empty() {
            let batch: Vec<&RunEvent> = spent.iter().collect();
            self.write(&batch).await?;
        }
        Ok(())
    }

    /// Records one node's end; see [`Driver::settle_all`].
    pub(super) async fn settle(
        &mut self,
        node: usize,
        finish: Finish,
    ) -> Result<Vec<Action>, EngineError> {
        self.settle_all(vec![(node, finish)]).await
    }

    /// Records the nodes in `done` (see the module docs) in one awaited commit and returns
    /// the scheduler's actions, in order: those of inbox events absorbed on the way first.
    pub(super) async fn settle_all(
        &mut self,
        done: Vec<(usize, Finish)>,
    ) -> Result<Vec<Action>, EngineError> {
        if done.is_empty() {
            return Ok(Vec::new());
        }
        let (deferred, events) = self.finishing(done);
        let batch: Vec<&RunEvent> = deferred.iter().chain(&events).collect();
        let written = self.write(&batch).await?;
        self.apply_finished(&events, written.get(deferred.len()..).unwrap_or_default())
    }

    /// What settling `done` writes, in one commit: the deferred events, then the nodes'
    /// `node_finished`.
    fn finishing(&mut self, done: Vec<(usize, Finish)>) -> (Vec<RunEvent>, Vec<RunEvent>) {
        let events = self.finished_events(done);
        (std::mem::take(&mut self.deferred), events)
    }

    /// The `node_finished` of each node in `done`, its guards evaluated on the state before
    /// the batch; keeps each node's outputs, attempts and error for the views.
    fn finished_events(&mut self, done: Vec<(usize, Finish)>) -> Vec<RunEvent> {
        let guards: Vec<Guards> = done
            .iter()
            .map(|(node, finish)| self.guards(*node, finish))
            .collect();
        let mut events = Vec::with_capacity(done.len());
        let fatal = super::expression_errors_fatal(&self.scope.doc);
        for ((node, mut finish), (guards, guard_errors)) in done.into_iter().zip(guards) {
            // Every AGX evaluation error of the node (its inputs, criteria, loop test,
            // outgoing guards) is logged with it as `RT062`, and under `fail` fails the run.
            let mut warnings = std::mem::take(&mut self.slots[node].expression_notes);
            warnings.append(&mut finish.warnings);
            warnings.extend(guard_errors.into_iter().map(|e| format!("{RT062}{e}")));
            finish.warnings = warnings;
            if fatal {
                let id = &self.jobs[node].id;
                let raised = finish
                    .warnings
                    .iter()
                    .filter_map(|w| w.strip_prefix(RT062))
                    .chain(finish.error.as_deref().and_then(rt062_of));
                for e in raised {
                    if !self.expression_errors.iter().any(|k| k.ends_with(e)) {
                        self.expression_errors.push(format!("`{id}`: {e}"));
                    }
                }
            }
            self.slots[node].attempts = finish.attempts;
            self.time_node(node, true);
            self.slots[node].error = finish.error.clone();
            let spent = self.budget.attempts.get(node).cloned().unwrap_or_default();
            let (event, outputs) = node_finished(&self.jobs[node], finish, guards, spent, || {
                self.budget.node_total(node)
            });
            self.outputs[node] = Arc::new(outputs);
            events.push(event);
        }
        events
    }

    /// Applies the written `node_finished` events, after the actions of inbox events
    /// absorbed while writing them.
    fn apply_finished(
        &mut self,
        events: &[RunEvent],
        written: &[bool],
    ) -> Result<Vec<Action>, EngineError> {
        let mut actions: Vec<Action> = self.human.actions.drain(..).collect();
        for (event, &written) in events.iter().zip(written) {
            if written {
                actions.extend(self.apply(event)?);
            }
        }
        Ok(actions)
    }

    /// The values of the guarded outgoing edges `finish` needs: conditional edges on
    /// success, guarded on_failure edges on failure or block. A guard that fails to
    /// evaluate is `false`, and its error is returned (logged with the node as `RT062`).
    fn guards(&mut self, node: usize, finish: &Finish) -> Guards {
        let needed = match finish.outcome {
            NodeOutcome::Succeeded => Some(EdgeKind::Conditional),
            NodeOutcome::Failed | NodeOutcome::Blocked => Some(EdgeKind::OnFailure),
            _ => None,
        };
        let graph = self.sched.graph();
        let guarded: Vec<usize> = graph
            .outgoing(node)
            .iter()
            .copied()
            .filter(|&e| graph.edge(e).guarded && Some(graph.edge(e).kind) == needed)
            .collect();
        if guarded.is_empty() {
            // Most nodes have no guarded edge: no view is built at all.
            return (Vec::new(), Vec::new());
        }
        // Guards see every node (edge `when`s are not scanned), the settling one with its
        // outcome and outputs.
        let id = self.jobs[node].id.clone();
        let mut ctx: RunContext = self.context();
        if let Some(view) = ctx.nodes.get_mut(&id) {
            view.status = finish.outcome.as_str();
            view.outputs = Arc::new(finish.outputs.clone());
        }
        let mut guards = Vec::with_capacity(guarded.len());
        let mut errors = Vec::new();
        for e in guarded {
            let when = self.edge_when.get(e).cloned().flatten().unwrap_or_default();
            let (value, error) = eval_condition(&when, &ctx);
            if let Some(err) = error {
                let to = &self.jobs[self.sched.graph().edge(e).to].id;
                errors.push(format!("edge `{id}` -> `{to}`: {err}"));
            }
            guards.push((e, value));
        }
        (guards, errors)
    }
}

/// A settling node's guard values (`[edge, value]`) and the errors of those that failed
/// to evaluate.
type Guards = (Vec<(usize, bool)>, Vec<String>);

/// The AGX evaluation error an `RT062` error message carries, if it is one.
fn rt062_of(error: &str) -> Option<&str> {
    error.find(RT062).map(|k| &error[k + RT062.len()..])
}
