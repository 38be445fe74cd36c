//! Human-in-the-loop, the driver side (`docs/engine.md` §3c): the policy's fallbacks, the
//! driver's human state (rebuilt from the log on resume), and the waits a blocking gate, a
//! `human_takeover` fallback or an escalation to a human open (`gate_waiting`, scheduler
//! `AwaitingHuman`). Resolving them is `resolve.rs`; cancel and suspend are `stop.rs`.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Map, Value, json};
use weft_ags::model::{Fields, Node, NodeType, obj_of, str_of};
use weft_core::Action;

use super::Driver;
use super::fallback::Finish;
use super::node::Attempt;
use crate::EngineError;
use crate::context::RunContext;
use crate::events::RunEvent;
use crate::human::{Decision, OpenWait, Waiting, timeout_resumes};

/// The policy's human fallbacks (`policy.on_human_timeout`,
/// `policy.default_human_timeout_seconds`) and weft's own switch
/// `policy.x-weft-forbid-timeout-approve` (`docs/semantics.md`).
#[derive(Clone, Debug)]
pub(super) struct HumanPolicy {
    pub(super) on_timeout: String,
    pub(super) default_timeout: Option<f64>,
    pub(super) forbid_timeout_approve: bool,
}

impl HumanPolicy {
    pub(super) fn read(root: &Map<String, Value>) -> HumanPolicy {
        let policy = obj_of(root, "policy");
        HumanPolicy {
            on_timeout: policy
                .and_then(|p| str_of(p, "on_human_timeout"))
                .unwrap_or("hold")
                .to_string(),
            default_timeout: policy
                .and_then(|p| p.field("default_human_timeout_seconds"))
                .and_then(Value::as_f64),
            forbid_timeout_approve: policy
                .and_then(|p| p.field("x-weft-forbid-timeout-approve"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

/// A blocking gate (`approve`, `review`, `input`), read from the document.
#[derive(Clone, Debug)]
pub(super) struct GateSpec {
    pub(super) mode: String,
    pub(super) prompt: Option<String>,
    pub(super) roles: Vec<String>,
    pub(super) present: Vec<String>,
    pub(super) collect: Map<String, Value>,
    pub(super) timeout_seconds: Option<f64>,
    pub(super) on_timeout: Option<String>,
    pub(super) on_reject: String,
}

/// Reads a blocking gate's block.
pub(super) fn gate_spec(node: &Node<'_>, mode: &str) -> GateSpec {
    let gate = obj_of(node.obj, "gate");
    let strings = |key: &str| -> Vec<String> {
        gate.and_then(|g| g.field(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    GateSpec {
        mode: mode.to_string(),
        prompt: gate.and_then(|g| str_of(g, "prompt")).map(str::to_string),
        roles: strings("roles"),
        present: strings("present"),
        collect: gate
            .and_then(|g| obj_of(g, "collect"))
            .cloned()
            .unwrap_or_default(),
        timeout_seconds: gate
            .and_then(|g| g.field("timeout_seconds"))
            .and_then(Value::as_f64),
        on_timeout: gate
            .and_then(|g| str_of(g, "on_timeout"))
            .map(str::to_string),
        on_reject: gate
            .and_then(|g| str_of(g, "on_reject"))
            .unwrap_or("fail")
            .to_string(),
    }
}

/// How the failure ladder ends for a node: settled now, or waiting on a person.
pub(super) enum Ending {
    Settle(Box<Finish>),
    Wait(Vec<Action>),
}

impl Driver<'_> {
    /// After the retries: the fallback rungs, then a `human_takeover` step, an escalation
    /// to a human or an `on_failure` checkpoint may make the node wait on a person.
    pub(super) async fn ladder(
        &mut self,
        node: usize,
        number: u32,
        result: Attempt,
    ) -> Result<Ending, EngineError> {
        let result = self.fallbacks(node, result).await;
        self.budget.spent(node, number, result.spent);
        if let Some(step) = result.takeover {
            let failed = result.attempt;
            let error = failed
                .failure
                .as_ref()
                .map(|(class, msg)| format!("{class}: {msg}"));
            let actions = self
                .open_failure_wait(node, number, &failed, error, Some(step))
                .await?;
            return Ok(Ending::Wait(actions));
        }
        let finish = self.finish(node, number, result);
        if finish.escalate {
            let failed = Attempt {
                outputs: finish.outputs,
                verdict: finish.verdict,
                ..Attempt::default()
            };
            let actions = self
                .open_failure_wait(node, number, &failed, finish.error, None)
                .await?;
            return Ok(Ending::Wait(actions));
        }
        if let Some(actions) = self.checkpoint_on_failure(node, &finish, None).await? {
            return Ok(Ending::Wait(actions));
        }
        Ok(Ending::Settle(Box::new(finish)))
    }
}

/// What a step of human work asks of the driver loop.
pub(super) enum Step {
    Actions(Vec<Action>),
    /// A `before_*` checkpoint let the attempt run.
    Spawn {
        node: usize,
        attempt: u32,
    },
    /// A checkpoint after the attempt let its result go on (`success`, the ladder).
    Reinject {
        node: usize,
        attempt: u32,
        result: Box<Attempt>,
    },
}

/// How a wait was resolved.
#[derive(Clone, Debug)]
pub(super) enum Resolution {
    Decision(Decision),
    /// A `human_timeout` that resumes the node, with its action (`fail`, `approve`).
    Timeout(String),
}

/// The driver's human state: every field is rebuilt from the log on resume
/// ([`HumanState::rebuild`]).
#[derive(Debug)]
pub(super) struct HumanState {
    pub(super) policy: HumanPolicy,
    /// Waiting nodes; `held` once a `hold`/`escalate` timeout was logged.
    pub(super) waits: BTreeMap<usize, (Waiting, bool)>,
    /// Logged resolutions not carried out yet, in log order.
    pub(super) resolved: VecDeque<(usize, Resolution)>,
    /// Actions of inbox events absorbed during an append, not carried out yet.
    pub(super) actions: VecDeque<Action>,
    /// The actor of a `cancel_requested` in the log.
    pub(super) cancel: Option<String>,
    /// Values collected at `before_*` checkpoints: merged into the attempt's inputs.
    pub(super) collected: BTreeMap<usize, Map<String, Value>>,
    /// Redacted outputs a wait holds, in memory only (never logged).
    pub(super) hidden: BTreeMap<usize, Map<String, Value>>,
    /// Answers to `human` success criteria, per (node, attempt).
    pub(super) answers: BTreeMap<(usize, u32), super::criteria::CriteriaAnswers>,
    /// Digests of the tool actions a person approved, per node (`tool_approval` waits).
    pub(super) tool_approvals: BTreeMap<usize, Vec<String>>,
    /// Container nodes whose fragment instances wait on a person (`instance_waits.rs`):
    /// they stay `running`, and the driver suspends once nothing else can go on.
    pub(super) containers: BTreeMap<usize, super::instance_waits::WaitingContainer>,
}

impl HumanState {
    /// Is there a step of human work for the driver loop (`Driver::human_step`): actions
    /// of absorbed inbox events, a resolution to carry out, or a wait with a deadline?
    pub(super) fn has_work(&self) -> bool {
        !self.actions.is_empty()
            || !self.resolved.is_empty()
            || self
                .waits
                .values()
                .any(|(w, held)| !held && w.deadline_ms.is_some())
    }

    pub(super) fn new(policy: HumanPolicy) -> HumanState {
        HumanState {
            policy,
            waits: BTreeMap::new(),
            resolved: VecDeque::new(),
            actions: VecDeque::new(),
            cancel: None,
            collected: BTreeMap::new(),
            hidden: BTreeMap::new(),
            answers: BTreeMap::new(),
            tool_approvals: BTreeMap::new(),
            containers: BTreeMap::new(),
        }
    }

    /// The state a log implies (resume): open waits, logged resolutions, a pending cancel.
    pub(super) fn rebuild(
        &mut self,
        waits: Vec<OpenWait>,
        cancel: Option<String>,
        find: impl Fn(&str) -> Option<usize>,
    ) {
        for w in waits {
            let Some(i) = find(&w.waiting.node) else {
                continue;
            };
            let held = w.timed_out.as_deref().is_some_and(|a| !timeout_resumes(a));
            if let Some(d) = w.decided {
                self.resolved.push_back((i, Resolution::Decision(d)));
            } else if let Some(a) = w.timed_out.filter(|a| timeout_resumes(a)) {
                self.resolved.push_back((i, Resolution::Timeout(a)));
            }
            self.waits.insert(i, (w.waiting, held));
        }
        self.cancel = cancel;
    }

    /// The answers to `human` criteria a log holds (resume).
    /// Records that a person approved the tool action `digest` for `node`.
    pub(super) fn approve_tool(&mut self, node: usize, digest: String) {
        let approved = self.tool_approvals.entry(node).or_default();
        if !approved.contains(&digest) {
            approved.push(digest);
        }
    }

    pub(super) fn rebuild_answers(
        &mut self,
        answers: Vec<(String, u32, String, Decision)>,
        find: impl Fn(&str) -> Option<usize>,
    ) {
        for (node, attempt, criterion, d) in answers {
            if let Some(i) = find(&node) {
                self.answers
                    .entry((i, attempt))
                    .or_default()
                    .insert(criterion, &d);
            }
        }
    }
}

/// Evaluates `present` expressions; an error is shown as `{"error": ...}`.
fn present(exprs: &[String], ctx: &RunContext) -> Vec<Value> {
    exprs
        .iter()
        .map(|src| {
            match weft_agx::parse(src)
                .map_err(|e| e.to_string())
                .and_then(|e| weft_agx::eval(&e, ctx).map_err(|e| e.to_string()))
            {
                Ok(v) => v,
                Err(e) => json!({"expression": src, "error": e}),
            }
        })
        .collect()
}

pub(super) fn render(template: &str, ctx: &RunContext) -> String {
    match weft_agx::parse_template(template)
        .map_err(|e| e.to_string())
        .and_then(|t| weft_agx::render(&t, ctx).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => format!("{template} (the prompt could not be rendered: {e})"),
    }
}

impl Driver<'_> {
    pub(super) fn effective_timeout(&self, own: Option<f64>) -> (Option<f64>, Option<i64>) {
        let t = own
            .or(self.human.policy.default_timeout)
            .filter(|t| t.is_finite() && *t >= 0.0);
        // Truncation is fine: the deadline is in ms.
        #[allow(clippy::cast_possible_truncation)]
        let deadline = t.map(|t| self.clock.now_ms().saturating_add((t * 1000.0) as i64));
        (t, deadline)
    }

    /// Opens the wait of a blocking gate that has just started (`node_started` logged).
    pub(super) async fn open_gate(
        &mut self,
        node: usize,
        attempt: u32,
        ctx: &RunContext,
    ) -> Result<Vec<Action>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let Some(spec) = &job.gate else {
            return Err(EngineError::Internal(format!("`{}` is not a gate", job.id)));
        };
        let (timeout_seconds, deadline_ms) = self.effective_timeout(spec.timeout_seconds);
        let waiting = Waiting {
            node: job.id.clone(),
            stage: "gate".into(),
            checkpoint: None,
            mode: spec.mode.clone(),
            roles: spec.roles.clone(),
            prompt: spec.prompt.as_deref().map(|p| render(p, ctx)),
            present: present(&spec.present, ctx),
            collect: spec.collect.clone(),
            editable: if spec.mode == "review" {
                job.outputs.iter().map(|(n, _)| n.clone()).collect()
            } else {
                Vec::new()
            },
            timeout_seconds,
            deadline_ms,
            on_timeout: spec
                .on_timeout
                .clone()
                .unwrap_or_else(|| self.human.policy.on_timeout.clone()),
            on_reject: spec.on_reject.clone(),
            attempts: attempt,
            error: None,
            outputs: Map::new(),
            absorbed_by: None,
            verdict: None,
            redacted: Vec::new(),
        };
        self.open_wait(node, waiting).await
    }

    /// Opens a wait for a task node whose failure a person takes over: the `human_takeover`
    /// fallback step `step` (`input`: the person provides the outputs) or an escalation to a
    /// human (`review`: approve, optionally with outputs, or reject).
    async fn open_failure_wait(
        &mut self,
        node: usize,
        attempts: u32,
        failed: &Attempt,
        error: Option<String>,
        takeover_step: Option<usize>,
    ) -> Result<Vec<Action>, EngineError> {
        let job = std::sync::Arc::clone(&self.jobs[node]);
        let (timeout_seconds, deadline_ms) = self.effective_timeout(None);
        let names: Vec<String> = job.outputs.iter().map(|(n, _)| n.clone()).collect();
        let (stage, mode, collect, editable, absorbed_by, outputs) = match takeover_step {
            Some(i) => {
                let collect = job
                    .outputs
                    .iter()
                    .map(|(n, required)| {
                        let ty = job.output_types.get(n).map_or("any", String::as_str);
                        (
                            n.clone(),
                            json!({"type": ty, "description": n, "required": required}),
                        )
                    })
                    .collect();
                (
                    "human_takeover",
                    "input",
                    collect,
                    Vec::new(),
                    Some(format!("fallback[{i}]:human_takeover")),
                    Map::new(),
                )
            }
            None => {
                let (logged, _) =
                    super::redact::split_redacted(&failed.outputs, &job.redact_outputs);
                (
                    "on_escalation",
                    "review",
                    Map::new(),
                    names,
                    Some("escalation:human".to_string()),
                    logged.as_object().cloned().unwrap_or_default(),
                )
            }
        };
        let mut waiting = Waiting {
            node: job.id.clone(),
            stage: stage.into(),
            checkpoint: None,
            mode: mode.into(),
            roles: job.escalation_roles.clone(),
            prompt: Some(format!(
                "`{}` failed after {attempts} attempt(s): {}",
                job.id,
                error.as_deref().unwrap_or("unknown failure")
            )),
            present: Vec::new(),
            collect,
            editable,
            timeout_seconds,
            deadline_ms,
            on_timeout: self.human.policy.on_timeout.clone(),
            on_reject: "fail".into(),
            attempts,
            error,
            outputs,
            absorbed_by,
            verdict: failed.verdict.clone(),
            redacted: Vec::new(),
        };
        // An `on_escalation` checkpoint shapes the escalation's wait.
        if takeover_step.is_none()
            && let Some(i) = self.escalation_checkpoint(node, &failed.outputs).await?
        {
            let cp = &job.checkpoints[i];
            let mut ctx = self.context();
            ctx.inputs = self.slots[node].inputs.clone();
            ctx.outputs = Some(Value::Object(failed.outputs.clone()));
            let (t, deadline) = self.effective_timeout(cp.timeout_seconds);
            waiting.checkpoint = Some(cp.label.clone());
            if cp.mode != "review" {
                waiting.editable = Vec::new();
            }
            waiting.mode = cp.mode.clone();
            waiting.collect = cp.collect.clone();
            if !cp.roles.is_empty() {
                waiting.roles = cp.roles.clone();
            }
            if let Some(p) = &cp.prompt {
                waiting.prompt = Some(render(p, &ctx));
            }
            waiting.timeout_seconds = t;
            waiting.deadline_ms = deadline;
            if let Some(a) = &cp.on_timeout {
                waiting.on_timeout = a.clone();
            }
        }
        self.open_wait(node, waiting).await
    }

    /// Logs `gate_waiting` and remembers the wait. Outputs declared `redact: true` stay
    /// out of the log: they are kept in memory for the continuation (lost after a stop,
    /// like every redacted output), and a decision may not set them.
    pub(super) async fn open_wait(
        &mut self,
        node: usize,
        mut waiting: Waiting,
    ) -> Result<Vec<Action>, EngineError> {
        let redacted = self.jobs[node].redact_outputs.clone();
        let hidden: Map<String, Value> = waiting
            .outputs
            .iter()
            .filter(|(k, _)| redacted.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        waiting.outputs.retain(|k, _| !redacted.contains(k));
        waiting.redacted = redacted;
        if !hidden.is_empty() {
            self.human.hidden.insert(node, hidden);
        }
        let actions = self
            .record(&RunEvent::GateWaiting(Box::new(waiting.clone())))
            .await?;
        self.human.waits.insert(node, (waiting, false));
        Ok(actions)
    }

    /// A wait's outputs, with the redacted ones kept in memory when this process has them.
    pub(super) fn wait_outputs(&mut self, node: usize, wait: &Waiting) -> Map<String, Value> {
        let mut outputs = wait.outputs.clone();
        outputs.extend(self.human.hidden.remove(&node).unwrap_or_default());
        outputs
    }
}

/// What the preflight refuses about people: an `on_timeout: approve` (a gate's or a
/// checkpoint's own, or the policy's fallback) under
/// `policy.x-weft-forbid-timeout-approve: true`, and blocking human checkpoints (`human[]`
/// entries that are `required` and not `notify`) on nodes that are not tasks, which this
/// build cannot present: RT015, never skipped silently (DIGEST §1.17).
pub(super) fn policy_refusals(
    root: &Map<String, Value>,
    jobs: &[std::sync::Arc<super::job::Job>],
    policy: &HumanPolicy,
) -> Vec<String> {
    let mut out = Vec::new();
    if policy.forbid_timeout_approve {
        for job in jobs {
            let approves = |own: Option<&str>| own.unwrap_or(&policy.on_timeout) == "approve";
            let gate = job
                .gate
                .as_ref()
                .is_some_and(|g| approves(g.on_timeout.as_deref()));
            let checkpoint = job
                .checkpoints
                .iter()
                .any(|c| c.blocking() && approves(c.on_timeout.as_deref()));
            if gate || checkpoint {
                out.push(format!(
                    "node `{}`: `on_timeout: approve` is forbidden by `policy.x-weft-forbid-timeout-approve`",
                    job.id
                ));
            }
        }
        // A graph-level sign-off times out with the policy's own `on_human_timeout`.
        let signoff = root
            .get("success")
            .and_then(|s| s.get("criteria"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.get("kind").and_then(Value::as_str) == Some("human"))
            });
        if signoff && policy.on_timeout == "approve" {
            out.push(
                "the graph's `human` success criterion: `policy.on_human_timeout: approve` is forbidden by `policy.x-weft-forbid-timeout-approve`"
                    .to_string(),
            );
        }
    }
    // The root scope's nodes that declare checkpoints (the others are not looked at).
    let root_scope = weft_ags::model::Scope::root(root);
    for node in root_scope.nodes_where(|obj| obj.get("human").is_some()) {
        for cp in node
            .get("human")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mode = cp.field("mode").and_then(Value::as_str).unwrap_or_default();
            let at = cp.field("at").and_then(Value::as_str).unwrap_or_default();
            let required = cp
                .field("required")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let task = node.node_type().is_none_or(|t| t == NodeType::Task);
            if required && mode != "notify" && !task {
                out.push(format!(
                    "node `{}`: RT015 permission_denied: the human checkpoint at `{at}` (mode `{mode}`) cannot be presented on a `{}` node by this build (checkpoints run on task nodes)",
                    node.id,
                    node.node_type().map_or("unknown", |t| t.as_str())
                ));
            }
        }
    }
    out
}
