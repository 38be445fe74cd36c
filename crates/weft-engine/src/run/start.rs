//! A node's first attempt, from the scheduler's `Start`: its inputs resolved once, a notify
//! gate's `gate_notified`, the `before_*` checkpoints (an attempt is logged only once it may
//! run), admission (routing and the run's budgets), then its `node_started` — deferred, so
//! the nodes one scheduler step starts share one commit — and a blocking gate's wait.

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

/// A node attempt to spawn once its `node_started` is durable.
pub(super) type Starting = (usize, u32, Arc<Job>, RunContext, AttemptEnv);

impl Driver<'_> {
    /// Carries out `Start` of `node`: what to spawn after the next flush, or `None` when the
    /// node waits on a person (its actions go to `queue`) or ended before running (its
    /// [`Finish`] goes to `immediate`).
    pub(super) fn start(
        &mut self,
        node: usize,
        queue: &mut VecDeque<Action>,
        immediate: &mut VecDeque<(usize, Finish)>,
    ) -> Result<Option<Starting>, EngineError> {
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
                return Ok(None);
            }
        };
        self.slots[node].inputs = Some(inputs.clone());
        let logged = loggable_inputs(&job, &inputs);
        ctx.inputs = Some(inputs);
        let first = self.slots[node].first_attempt;
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
        // `before_*` checkpoints come before the attempt is logged: an attempt is
        // `node_started` only once it may run.
        if job.gate.is_none()
            && let Some(actions) = self.checkpoint_before_run(node, first, None)?
        {
            queue.extend(actions);
            return Ok(None);
        }
        // Admitted (routed, counted against the budgets) only once it may run, like an
        // attempt a checkpoint lets run later: a replay counts `node_started`s.
        let env = match self.admit_attempt(node, first) {
            Ok(env) => env,
            Err((blocked, reason)) => {
                immediate.push_back((node, Finish::not_started(blocked, reason)));
                return Ok(None);
            }
        };
        self.time_node(node, false);
        self.defer(node_started(&job, first, logged, env.route.clone()));
        if job.gate.is_some() {
            // The wait's `gate_waiting` is appended after the deferred `node_started`.
            queue.extend(self.open_gate(node, first, &ctx)?);
            return Ok(None);
        }
        Ok(Some((node, first, job, ctx, env)))
    }
}
