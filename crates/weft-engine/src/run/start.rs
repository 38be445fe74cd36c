//! A node's first attempt, from the scheduler's `Start`: its inputs resolved once, a notify
//! gate's `gate_notified`, the `before_*` checkpoints (an attempt is logged only once it may
//! run), admission (routing and the run's budgets), then its `node_started` — deferred, so
//! the nodes one scheduler step starts share one commit — and a blocking gate's wait.
//! A start that writes on its way (checkpoints, a gate's wait) is awaited
//! ([`Driver::start_writing`]); any other is synchronous ([`Driver::start`]): it writes
//! nothing, and the action loop's future holds no state for it.

use std::collections::VecDeque;
use std::sync::Arc;

use weft_core::Action;

use super::Driver;
use super::fallback::Finish;
use super::job::Job;
use super::node::{AttemptEnv, resolve_inputs_noting};
use super::redact::loggable_inputs;
use crate::EngineError;
use crate::context::RunContext;
use crate::events::{NodeOutcome, RunEvent};

/// The `node_started` of `job`'s first logged attempt, `attempt`, with its loggable
/// `inputs` and the model it was `routed` to. A light map item (`map_item.rs`) logs its
/// node's through this too.
pub(super) fn node_started(
    job: &Job,
    attempt: u32,
    inputs: serde_json::Value,
    routed: Option<crate::agent::Route>,
) -> RunEvent {
    RunEvent::NodeStarted {
        node: job.id.clone(),
        attempt,
        inputs: Some(inputs),
        delay_ms: None,
        previous_failure: None,
        routed,
    }
}

/// A node attempt to spawn once its `node_started` is durable. Its context and
/// environment are boxed: a start is moved several times on its way (returned, queued,
/// drained), and a step may start a thousand of them (W3's fan-out): 24 bytes a move
/// instead of 700.
pub(super) struct Starting {
    pub(super) node: usize,
    pub(super) first: u32,
    pub(super) job: Arc<Job>,
    pub(super) run: Box<(RunContext, AttemptEnv)>,
}

impl Driver<'_> {
    /// Does `Start` of `node` write before the node runs or waits (a `before_*` checkpoint
    /// passed or waited on, a gate's wait)? Then it is [`Driver::start_writing`]'s, else
    /// [`Driver::start`]'s.
    pub(super) fn start_writes(&self, node: usize) -> bool {
        let job = &self.jobs[node];
        job.gate.is_some() || !job.checkpoints.is_empty()
    }

    /// Carries out `Start` of `node`, one that writes nothing on its way
    /// ([`Driver::start_writes`]): what to spawn after the next flush, or `None` when the
    /// node ended before running (its [`Finish`] goes to `immediate`).
    pub(super) fn start(
        &mut self,
        node: usize,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Result<Option<Starting>, EngineError> {
        match self.start_inputs(node, immediate) {
            Some((job, ctx, logged)) => Ok(self.start_admitted(node, job, ctx, logged, immediate)),
            None => Ok(None),
        }
    }

    /// Carries out an action that writes before it goes on: a `when` evaluated (its
    /// `node_when`), or `Start` of a node with `before_*` checkpoints or a gate. Returns
    /// what to spawn after the next flush, if anything.
    pub(super) async fn carry_out_writing(
        &mut self,
        action: Action,
        queue: &mut VecDeque<Action>,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Result<Option<Starting>, EngineError> {
        match action {
            Action::EvaluateWhen { node } => {
                queue.extend(self.evaluate_when(node).await?);
                Ok(None)
            }
            Action::Start { node } => self.start_writing(node, queue, immediate).await,
            Action::Skipped { .. } | Action::Finished { .. } => Ok(None),
        }
    }

    /// [`Driver::start`] of a node whose start writes: its `before_*` checkpoints, then,
    /// for a gate, its wait (the actions go to `queue`, and nothing is spawned).
    async fn start_writing(
        &mut self,
        node: usize,
        queue: &mut VecDeque<Action>,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Result<Option<Starting>, EngineError> {
        let Some((job, ctx, logged)) = self.start_inputs(node, immediate) else {
            return Ok(None);
        };
        let first = self.slots[node].first_attempt;
        // `before_*` checkpoints come before the attempt is logged: an attempt is
        // `node_started` only once it may run.
        if job.gate.is_none()
            && let Some(actions) = self.checkpoint_before_run(node, first, None).await?
        {
            queue.extend(actions);
            return Ok(None);
        }
        let Some(start) = self.start_admitted(node, job, ctx, logged, immediate) else {
            return Ok(None);
        };
        if start.job.gate.is_some() {
            // The wait's `gate_waiting` is appended after the deferred `node_started`.
            queue.extend(
                self.open_gate(start.node, start.first, &start.run.0)
                    .await?,
            );
            return Ok(None);
        }
        Ok(Some(start))
    }

    /// The first part of a start: the node's inputs resolved once (a failure ends the node
    /// in `immediate`), a notify gate's `gate_notified` deferred. The job, its context with
    /// the inputs, and the inputs as logged.
    fn start_inputs(
        &mut self,
        node: usize,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Option<(Arc<Job>, RunContext, serde_json::Value)> {
        let job = Arc::clone(&self.jobs[node]);
        let mut ctx = self.context_for(node);
        let mut notes = Vec::new();
        let resolved = resolve_inputs_noting(&job, &ctx, &mut notes);
        self.slots[node].expression_notes.extend(notes);
        let inputs = match resolved {
            Ok(inputs) => inputs,
            Err(e) => {
                immediate.push_back((
                    node,
                    Finish {
                        outcome: NodeOutcome::Failed,
                        error: Some(e),
                        ..Finish::not_started(false, String::new())
                    },
                ));
                return None;
            }
        };
        self.slots[node].inputs = Some(inputs.clone());
        let logged = loggable_inputs(&job, &inputs);
        ctx.inputs = Some(inputs);
        if let Some(notify) = &job.notify {
            let (roles, prompt) = &**notify;
            self.defer(RunEvent::GateNotified {
                node: job.id.clone(),
                roles: roles.clone(),
                prompt: prompt.clone(),
                stage: None,
                checkpoint: None,
            });
        }
        Some((job, ctx, logged))
    }

    /// The rest of a start, once the node may run: admitted (routed, counted against the
    /// budgets; a refusal ends the node in `immediate`), then its `node_started` deferred.
    fn start_admitted(
        &mut self,
        node: usize,
        job: Arc<Job>,
        ctx: RunContext,
        logged: serde_json::Value,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Option<Starting> {
        let first = self.slots[node].first_attempt;
        // Admitted only once it may run, like an attempt a checkpoint lets run later: a
        // replay counts `node_started`s.
        let env = match self.admit_attempt(node, first) {
            Ok(env) => env,
            Err((blocked, reason)) => {
                immediate.push_back((node, Finish::not_started(blocked, reason)));
                return None;
            }
        };
        self.time_node(node, false);
        self.defer(node_started(&job, first, logged, env.route.clone()));
        Some(Starting {
            node,
            first,
            job,
            run: Box::new((ctx, env)),
        })
    }
}
