//! Human-in-the-loop, the driver side (`docs/engine.md` §3c): a blocking gate (or a
//! `human_takeover` fallback, or an escalation to a human) opens a wait (`gate_waiting`,
//! scheduler `AwaitingHuman`); a decision from the inbox or a timeout the driver detects
//! resolves it into the node's outcome; a cancel settles whatever still runs or waits; and
//! when nothing runs but something waits, the run is suspended (`awaiting_human`).

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Map, Value, json};
use tokio::task::JoinSet;
use weft_ags::model::{Fields, Node, NodeType, obj_of, str_of};
use weft_core::{Action, NodeState};
use weft_store::{RunStatus, RunTable};

use super::fallback::Finish;
use super::node::Attempt;
use super::{Driver, FinalStatus, NodeReport, RunReport, now_ms, state_name};
use crate::EngineError;
use crate::context::RunContext;
use crate::events::{NodeOutcome, RunEvent};
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
        if let Some(step) = result.takeover {
            let failed = result.attempt;
            let error = failed
                .failure
                .as_ref()
                .map(|(class, msg)| format!("{class}: {msg}"));
            let actions = self.open_failure_wait(node, number, &failed, error, Some(step))?;
            return Ok(Ending::Wait(actions));
        }
        let finish = self.finish(node, number, result);
        if finish.escalate {
            let failed = Attempt {
                outputs: finish.outputs,
                verdict: finish.verdict,
                ..Attempt::default()
            };
            let actions = self.open_failure_wait(node, number, &failed, finish.error, None)?;
            return Ok(Ending::Wait(actions));
        }
        if let Some(actions) = self.checkpoint_on_failure(node, &finish, None)? {
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
    /// Answers to `human` success criteria, per (node, attempt).
    pub(super) answers: BTreeMap<(usize, u32), super::checkpoint::CriteriaAnswers>,
}

impl HumanState {
    pub(super) fn new(policy: HumanPolicy) -> HumanState {
        HumanState {
            policy,
            waits: BTreeMap::new(),
            resolved: VecDeque::new(),
            actions: VecDeque::new(),
            cancel: None,
            collected: BTreeMap::new(),
            answers: BTreeMap::new(),
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
        let deadline = t.map(|t| now_ms().saturating_add((t * 1000.0) as i64));
        (t, deadline)
    }

    /// Opens the wait of a blocking gate that has just started (`node_started` logged).
    pub(super) fn open_gate(
        &mut self,
        node: usize,
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
            attempts: 1,
            error: None,
            outputs: Map::new(),
            absorbed_by: None,
            verdict: None,
        };
        self.open_wait(node, waiting)
    }

    /// Opens a wait for a task node whose failure a person takes over: the `human_takeover`
    /// fallback step `step` (`input`: the person provides the outputs) or an escalation to a
    /// human (`review`: approve, optionally with outputs, or reject).
    fn open_failure_wait(
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
                        (
                            n.clone(),
                            json!({"type": "any", "description": n, "required": required}),
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
        };
        // An `on_escalation` checkpoint shapes the escalation's wait.
        if takeover_step.is_none()
            && let Some(i) = self.escalation_checkpoint(node, &failed.outputs)?
        {
            let cp = &job.checkpoints[i];
            let mut ctx = self.context();
            ctx.inputs = self.inputs[node].clone();
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
        self.open_wait(node, waiting)
    }

    pub(super) fn open_wait(
        &mut self,
        node: usize,
        waiting: Waiting,
    ) -> Result<Vec<Action>, EngineError> {
        let actions = self.record(&RunEvent::GateWaiting(Box::new(waiting.clone())))?;
        self.human.waits.insert(node, (waiting, false));
        Ok(actions)
    }

    /// One step of human work, if there is any: actions of absorbed inbox events, a logged
    /// resolution to carry out, or a deadline that passed (logged as `human_timeout`).
    pub(super) fn human_step(&mut self) -> Result<Option<Step>, EngineError> {
        if !self.human.actions.is_empty() {
            return Ok(Some(Step::Actions(self.human.actions.drain(..).collect())));
        }
        if let Some((node, res)) = self.human.resolved.pop_front() {
            return self.resolve(node, res).map(Some);
        }
        let now = now_ms();
        let due = self.human.waits.iter().find_map(|(&i, (w, held))| {
            (!held && w.deadline_ms.is_some_and(|d| d <= now))
                .then(|| (i, w.node.clone(), w.on_timeout.clone()))
        });
        let Some((node, id, action)) = due else {
            return Ok(None);
        };
        let mut actions = self.record(&RunEvent::HumanTimeout {
            node: id,
            action: action.clone(),
        })?;
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
    fn resolve(&mut self, node: usize, res: Resolution) -> Result<Step, EngineError> {
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
            )
        }) {
            return self.resolve_checkpoint(node, &stage, res);
        }
        self.resolve_settling(node, res).map(Step::Actions)
    }

    /// A resolution that settles the node (gates, takeover, escalation).
    fn resolve_settling(
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
        let mut outputs = wait.outputs.clone();
        outputs.extend(values);
        let base = Finish {
            outcome: NodeOutcome::Succeeded,
            outputs: Map::new(),
            verdict: None,
            attempts: wait.attempts,
            error: None,
            absorbed_by: None,
            escalate: false,
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
        self.settle(node, finish)
    }

    /// After a `cancel_requested`: stops every running attempt (dropping a task kills its
    /// process group) and settles every running or waiting node `cancelled`.
    pub(super) async fn sweep_cancel<T: 'static>(
        &mut self,
        tasks: &mut JoinSet<T>,
    ) -> Result<Vec<Action>, EngineError> {
        tasks.shutdown().await;
        self.human.waits.clear();
        self.human.resolved.clear();
        let mut actions = Vec::new();
        for i in 0..self.jobs.len() {
            if self.sched.state(i).is_started() {
                actions.extend(self.settle(
                    i,
                    Finish {
                        outcome: NodeOutcome::Cancelled,
                        outputs: Map::new(),
                        verdict: None,
                        attempts: self.attempts[i],
                        error: Some(format!(
                            "cancelled by {}",
                            self.human.cancel.as_deref().unwrap_or("unknown")
                        )),
                        absorbed_by: None,
                        escalate: false,
                    },
                )?);
            }
        }
        Ok(actions)
    }

    /// Does a cancel still have work (a node running or waiting)?
    pub(super) fn cancel_pending(&self) -> bool {
        self.human.cancel.is_some()
            && (0..self.jobs.len()).any(|i| self.sched.state(i).is_started())
    }

    /// Nothing runs and every remaining path waits on a person: the run is suspended
    /// (store status `suspended`, no `run_finished`); `weft resume` continues it.
    pub(super) fn suspend(&mut self) -> Result<RunReport, EngineError> {
        self.store
            .set_status(&self.run_id, RunStatus::Suspended, now_ms())?;
        let nodes = (0..self.jobs.len())
            .map(|i| NodeReport {
                id: self.jobs[i].id.clone(),
                state: state_name(self.sched.state(i)).to_string(),
                attempts: self.attempts[i],
                error: self.errors[i].clone(),
            })
            .collect();
        let id_of = |i: usize| {
            self.jobs
                .get(i)
                .map_or_else(|| i.to_string(), |j| j.id.clone())
        };
        Ok(RunReport {
            run_id: self.run_id.clone(),
            status: FinalStatus::AwaitingHuman,
            nodes,
            started: self.sched.started().iter().map(|&i| id_of(i)).collect(),
            outputs: Value::Object(Map::new()),
            reasons: Vec::new(),
            waiting: self.human.waits.values().map(|(w, _)| w.clone()).collect(),
        })
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
    }
    let scopes = weft_ags::model::scopes(root);
    for node in scopes.first().into_iter().flat_map(|s| s.nodes()) {
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

impl Driver<'_> {
    /// Carries out the resolution of a task checkpoint (`docs/engine.md` §3e).
    fn resolve_checkpoint(
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
        let mut outputs = wait.outputs.clone();
        let fail = |error: String, outputs: Map<String, Value>| Finish {
            outcome: NodeOutcome::Failed,
            outputs,
            verdict: wait.verdict.clone(),
            attempts: wait.attempts,
            error: Some(error),
            absorbed_by: None,
            escalate: false,
        };
        match stage {
            "before_start" | "before_side_effects" => {
                if !approved {
                    let f = fail(
                        format!("permission_denied: checkpoint `{label}` at {stage}: {who}"),
                        Map::new(),
                    );
                    return self.settle(node, f).map(Step::Actions);
                }
                self.human.collected.entry(node).or_default().extend(values);
                let after = index.map(|i| (stage.to_string(), i));
                match self.checkpoint_before_run(node, wait.attempts, after)? {
                    Some(actions) => Ok(Step::Actions(actions)),
                    None => Ok(Step::Spawn {
                        node,
                        attempt: wait.attempts,
                    }),
                }
            }
            "human_criterion" => {
                // The answer goes to the criterion; `success` is evaluated again with it.
                let criterion = wait.checkpoint.clone().unwrap_or_default();
                let decision = match res {
                    Resolution::Decision(d) => d,
                    Resolution::Timeout(a) => Decision {
                        node: wait.node.clone(),
                        outcome: if a == "approve" {
                            "approved"
                        } else {
                            "rejected"
                        }
                        .into(),
                        values: Map::new(),
                        actor: "on_timeout".into(),
                        role: None,
                        note: Some(format!("on_timeout: {a}")),
                    },
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
                    return self.settle(node, fail(error, outputs)).map(Step::Actions);
                }
                let result = Attempt {
                    outputs,
                    verdict: wait.verdict.clone(),
                    failure: (stage == "on_criteria_failure").then(|| {
                        (
                            "criteria_failed".to_string(),
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
                    ..fail(wait.error.clone().unwrap_or_default(), outputs)
                };
                match self.checkpoint_on_failure(node, &finish, index)? {
                    Some(actions) => Ok(Step::Actions(actions)),
                    None => self.settle(node, finish).map(Step::Actions),
                }
            }
        }
    }
}
