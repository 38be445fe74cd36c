//! Human checkpoints on task nodes (`human[]`, DIGEST §1.17; `docs/engine.md` §3e): where
//! each stage fires in the driver, the side-effect classifier of `before_side_effects`, and
//! the waits they open. A blocking checkpoint (`required`, not `notify`) opens a wait like a
//! gate; an advisory (`required: false`) or `notify` one is logged (`gate_notified` with its
//! stage) and never blocks; a `when` that is false passes it over.

use serde_json::{Map, Value};
use weft_ags::model::{Fields, Node};
use weft_core::Action;
use weft_core::FailureClass;

use super::Driver;
use super::fallback::Finish;
use super::node::Attempt;
use crate::EngineError;
use crate::context::RunContext;
use crate::events::{NodeOutcome, RunEvent};
use crate::human::Waiting;

/// One `human[]` entry of a task node.
#[derive(Clone, Debug)]
pub(super) struct CheckpointSpec {
    /// `id`, else `human[<i>]`.
    pub(super) label: String,
    pub(super) at: String,
    pub(super) mode: String,
    pub(super) prompt: Option<String>,
    pub(super) required: bool,
    pub(super) roles: Vec<String>,
    pub(super) collect: Map<String, Value>,
    pub(super) timeout_seconds: Option<f64>,
    pub(super) on_timeout: Option<String>,
    pub(super) when: Option<String>,
}

impl CheckpointSpec {
    pub(super) fn blocking(&self) -> bool {
        self.required && self.mode != "notify"
    }
}

/// Reads a node's `human[]` entries.
pub(super) fn checkpoints_of(node: &Node<'_>) -> Vec<CheckpointSpec> {
    let text = |v: &Value, k: &str| v.field(k).and_then(Value::as_str).map(str::to_string);
    node.get("human")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, cp)| CheckpointSpec {
            label: text(cp, "id").unwrap_or_else(|| format!("human[{i}]")),
            at: text(cp, "at").unwrap_or_default(),
            mode: text(cp, "mode").unwrap_or_else(|| "approve".into()),
            prompt: text(cp, "prompt"),
            required: cp
                .field("required")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            roles: cp
                .field("roles")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            collect: cp
                .field("collect")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            timeout_seconds: cp.field("timeout_seconds").and_then(Value::as_f64),
            on_timeout: text(cp, "on_timeout"),
            when: text(cp, "when"),
        })
        .collect()
}

/// Permission actions that change nothing outside the process.
const READ_ACTIONS: &[&str] = &[
    "read", "list", "fetch", "get", "status", "diff", "log", "query", "search", "view",
];

/// The side-effect classifier of `before_side_effects` (`docs/semantics.md`): an `exec`
/// node's command is an externally visible mutation unless the node declares
/// `requirements.permissions` and every one of them is read-only (`scope:action` with an
/// action in [`READ_ACTIONS`]). No declared permissions: a side effect (the command can do
/// anything).
pub(super) fn has_side_effects(node: &Node<'_>) -> bool {
    let permissions: Vec<&str> = node
        .obj("requirements")
        .and_then(|r| r.get("permissions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    permissions.is_empty()
        || permissions.iter().any(|p| {
            let action = p.split(':').nth(1).unwrap_or_default();
            !READ_ACTIONS.contains(&action)
        })
}

/// What follows an attempt's result once the checkpoints had their say.
pub(super) enum AfterAttempt {
    /// Go on: retries, the ladder, the outcome.
    Continue(Box<Attempt>),
    /// A checkpoint waits on a person.
    Waiting(Vec<Action>),
}

/// What a wait keeps for its continuation (all of it logged in `gate_waiting`).
#[derive(Default)]
pub(super) struct Carry {
    pub(super) attempts: u32,
    pub(super) outputs: Map<String, Value>,
    pub(super) error: Option<String>,
    pub(super) absorbed_by: Option<String>,
    pub(super) verdict: Option<Value>,
}

impl Driver<'_> {
    /// The context a checkpoint of `node` sees: the run, the node's inputs and `outputs`.
    pub(super) fn checkpoint_context(
        &self,
        node: usize,
        outputs: Option<&Map<String, Value>>,
    ) -> RunContext {
        // The nodes the node's own strings name (its `human[]` prompts and `when`s
        // included), not the whole graph: a start must not cost O(nodes).
        let mut ctx = self.context_for(node);
        ctx.inputs = self.slots[node].inputs.clone();
        ctx.outputs = outputs.map(|o| Value::Object(o.clone()));
        ctx
    }

    /// The next blocking checkpoint of `stage` after index `after` whose `when` holds,
    /// logging the advisory and `notify` ones passed on the way.
    async fn next_checkpoint(
        &mut self,
        node: usize,
        stage: &str,
        after: Option<usize>,
        ctx: &RunContext,
    ) -> Result<Option<usize>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let start = after.map_or(0, |i| i + 1);
        for (i, cp) in job.checkpoints.iter().enumerate().skip(start) {
            if cp.at != stage {
                continue;
            }
            if let Some(when) = &cp.when {
                let (value, error) = super::eval_condition(when, ctx);
                if let Some(e) = error {
                    // Logged with the node as RT062; fatal to the run under `fail`.
                    self.slots[node].expression_notes.push(format!(
                        "{}checkpoint `{}` when: {e}",
                        super::RT062,
                        cp.label
                    ));
                }
                if !value {
                    continue;
                }
            }
            if cp.blocking() {
                return Ok(Some(i));
            }
            self.append(&RunEvent::GateNotified {
                node: job.id.clone(),
                roles: cp.roles.clone(),
                prompt: cp.prompt.as_deref().map(|p| super::human::render(p, ctx)),
                stage: Some(stage.to_string()),
                checkpoint: Some(cp.label.clone()),
            })
            .await?;
        }
        Ok(None)
    }

    /// Opens the wait of checkpoint `index` of `node`.
    async fn open_checkpoint(
        &mut self,
        node: usize,
        index: usize,
        ctx: &RunContext,
        carry: Carry,
    ) -> Result<Vec<Action>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let cp = &job.checkpoints[index];
        let (timeout_seconds, deadline_ms) = self.effective_timeout(cp.timeout_seconds);
        let waiting = Waiting {
            node: job.id.clone(),
            stage: cp.at.clone(),
            checkpoint: Some(cp.label.clone()),
            mode: cp.mode.clone(),
            roles: cp.roles.clone(),
            prompt: cp.prompt.as_deref().map(|p| super::human::render(p, ctx)),
            present: Vec::new(),
            collect: cp.collect.clone(),
            // Before the command runs there are no outputs to edit yet.
            editable: if cp.mode == "review" && !cp.at.starts_with("before_") {
                job.outputs.iter().map(|(n, _)| n.clone()).collect()
            } else {
                Vec::new()
            },
            timeout_seconds,
            deadline_ms,
            on_timeout: cp
                .on_timeout
                .clone()
                .unwrap_or_else(|| self.human.policy.on_timeout.clone()),
            on_reject: "fail".into(),
            attempts: carry.attempts,
            error: carry.error,
            outputs: carry.outputs,
            absorbed_by: carry.absorbed_by,
            verdict: carry.verdict,
            redacted: Vec::new(),
        };
        self.open_wait(node, waiting).await
    }

    /// `before_start`, then (for a command with side effects) `before_side_effects`, from
    /// after checkpoint `after`: `Some` when one waits, `None` when the attempt may run.
    pub(super) async fn checkpoint_before_run(
        &mut self,
        node: usize,
        attempt: u32,
        after: Option<(String, usize)>,
    ) -> Result<Option<Vec<Action>>, EngineError> {
        if self.jobs[node].checkpoints.is_empty() {
            return Ok(None);
        }
        let ctx = self.checkpoint_context(node, None);
        let side_effects = self.jobs[node].side_effects;
        let (mut stages, mut from) = (vec!["before_start", "before_side_effects"], None);
        if let Some((stage, i)) = after {
            if stage == "before_side_effects" {
                stages.remove(0);
            }
            from = Some(i);
        }
        for stage in stages {
            if stage == "before_side_effects" && !side_effects {
                continue;
            }
            if let Some(i) = self.next_checkpoint(node, stage, from, &ctx).await? {
                let carry = Carry {
                    attempts: attempt,
                    ..Carry::default()
                };
                return self.open_checkpoint(node, i, &ctx, carry).await.map(Some);
            }
            from = None;
        }
        Ok(None)
    }

    /// After an attempt: `after_outputs` (then `success`, deferred for it), then
    /// `on_criteria_failure` when `success` failed.
    pub(super) async fn checkpoint_after_attempt(
        &mut self,
        node: usize,
        number: u32,
        mut result: Attempt,
    ) -> Result<AfterAttempt, EngineError> {
        let passed = result.passed.take();
        let after = |stage: &str| passed.as_ref().filter(|(s, _)| s == stage).map(|(_, i)| *i);
        if result.success_pending {
            let ctx = self.checkpoint_context(node, Some(&result.outputs));
            if let Some(i) = self
                .next_checkpoint(node, "after_outputs", after("after_outputs"), &ctx)
                .await?
            {
                let carry = Carry {
                    attempts: number,
                    outputs: result.outputs,
                    ..Carry::default()
                };
                return Ok(AfterAttempt::Waiting(
                    self.open_checkpoint(node, i, &ctx, carry).await?,
                ));
            }
            result = self
                .success_with_answers(node, number, result.outputs, result.usage)
                .await;
        }
        // `human` criteria: answered through the log, one wait per unanswered one.
        if let Some(pending) = self.pending_human_criteria(&result) {
            let answered = self.human.answers.get(&(node, number));
            match pending
                .iter()
                .find(|id| answered.is_none_or(|a| !a.0.contains_key(*id)))
            {
                Some(id) => {
                    let actions = self.open_criterion_wait(node, number, id, &result).await?;
                    return Ok(AfterAttempt::Waiting(actions));
                }
                None => {
                    result = self
                        .success_with_answers(node, number, result.outputs, result.usage)
                        .await;
                }
            }
        }
        if result
            .failure
            .as_ref()
            .is_some_and(|(class, _)| *class == FailureClass::CriteriaFailed)
        {
            let ctx = self.checkpoint_context(node, Some(&result.outputs));
            if let Some(i) = self
                .next_checkpoint(
                    node,
                    "on_criteria_failure",
                    after("on_criteria_failure"),
                    &ctx,
                )
                .await?
            {
                let carry = Carry {
                    attempts: number,
                    outputs: result.outputs.clone(),
                    error: result.failure.as_ref().map(|(_, m)| m.clone()),
                    verdict: result.verdict.clone(),
                    ..Carry::default()
                };
                return Ok(AfterAttempt::Waiting(
                    self.open_checkpoint(node, i, &ctx, carry).await?,
                ));
            }
        }
        Ok(AfterAttempt::Continue(Box::new(result)))
    }

    /// `on_failure`: the ladder ended the node `failed`; `Some` when a checkpoint waits.
    pub(super) async fn checkpoint_on_failure(
        &mut self,
        node: usize,
        finish: &Finish,
        after: Option<usize>,
    ) -> Result<Option<Vec<Action>>, EngineError> {
        if finish.outcome != NodeOutcome::Failed {
            return Ok(None);
        }
        let ctx = self.checkpoint_context(node, Some(&finish.outputs));
        let Some(i) = self
            .next_checkpoint(node, "on_failure", after, &ctx)
            .await?
        else {
            return Ok(None);
        };
        let (outputs, _) =
            super::redact::split_redacted(&finish.outputs, &self.jobs[node].redact_outputs);
        let carry = Carry {
            attempts: finish.attempts,
            outputs: outputs.as_object().cloned().unwrap_or_default(),
            error: finish.error.clone(),
            absorbed_by: finish.absorbed_by.clone(),
            verdict: finish.verdict.clone(),
        };
        self.open_checkpoint(node, i, &ctx, carry).await.map(Some)
    }

    /// The `on_escalation` checkpoint that shapes an escalation's wait, if one fires.
    pub(super) async fn escalation_checkpoint(
        &mut self,
        node: usize,
        outputs: &Map<String, Value>,
    ) -> Result<Option<usize>, EngineError> {
        let ctx = self.checkpoint_context(node, Some(outputs));
        self.next_checkpoint(node, "on_escalation", None, &ctx)
            .await
    }
}

impl Driver<'_> {
    /// Starts the attempt `before_*` checkpoints let run (`node_started`, then the task);
    /// inputs that cannot be resolved again fail the node instead (returned).
    pub(super) async fn start_checked_attempt(
        &mut self,
        node: usize,
        number: u32,
        tasks: &mut tokio::task::JoinSet<(usize, u32, Attempt)>,
    ) -> Result<Option<(usize, Finish)>, EngineError> {
        let ctx = match self.checkpoint_inputs(node) {
            Ok(ctx) => ctx,
            Err(e) => {
                let finish = Finish {
                    outcome: NodeOutcome::Failed,
                    outputs: Map::new(),
                    verdict: None,
                    attempts: 0,
                    error: Some(e),
                    absorbed_by: None,
                    absorbed_failure: None,
                    escalate: false,
                    warnings: Vec::new(),
                };
                return Ok(Some((node, finish)));
            }
        };
        let env = match self.admit_attempt(node, number) {
            Ok(env) => env,
            Err((blocked, reason)) => {
                return Ok(Some((node, Finish::not_started(blocked, reason))));
            }
        };
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let inputs = ctx.inputs.clone().unwrap_or(Value::Null);
        self.append(&RunEvent::NodeStarted {
            node: job.id.clone(),
            attempt: number,
            inputs: Some(super::redact::loggable_inputs(&job, &inputs)),
            delay_ms: None,
            previous_failure: None,
            routed: env.route.clone(),
        })
        .await?;
        tasks.spawn(async move {
            (
                node,
                number,
                super::node::attempt(job, None, ctx, env).await,
            )
        });
        Ok(None)
    }

    /// The context of an attempt a `before_*` checkpoint let run: the node's inputs (resolved
    /// again after a resume) with the values collected at its checkpoints.
    pub(super) fn checkpoint_inputs(&mut self, node: usize) -> Result<RunContext, String> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let mut ctx = self.context();
        let inputs = match self.slots[node].inputs.clone() {
            Some(i) => i,
            None => {
                // Noted with the node as RT062 (under `on_expression_error: false`), like
                // the inputs of a node with no checkpoint (`start.rs`).
                let mut notes = Vec::new();
                let resolved = super::node::resolve_inputs_noting(&job, &ctx, &mut notes);
                self.slots[node].expression_notes.extend(notes);
                resolved?
            }
        };
        self.slots[node].inputs = Some(inputs.clone());
        let mut inputs = inputs;
        if let (Value::Object(m), Some(extra)) = (&mut inputs, self.human.collected.remove(&node)) {
            m.extend(extra);
        }
        ctx.inputs = Some(inputs);
        Ok(ctx)
    }
}
