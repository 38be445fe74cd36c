//! The driver: load → check → adapt → open the run → the loop that carries out the
//! scheduler's actions, appending every result to the store *before* applying it.
//!
//! One run is one task on a tokio runtime; node attempts are spawned on a `JoinSet`, and the
//! scheduler's `max_parallel` bounds how many run at once. The driver is the only writer of
//! the run's log (`append_expecting` with the last seq it wrote).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::task::JoinSet;
use weft_ags::model::{Fields, Node, NodeType, effective_block, entries_of, obj_of, str_of};
use weft_core::{Action, EdgeKind, FailurePolicy, NodeState, Options, Scheduler};
use weft_criteria::doubles::{MapCheckers, MapHumanPort};
use weft_criteria::{CriteriaEnv, Limits, SuccessBlock};
use weft_store::{EventLog, NewRun, RunStatus, RunTable, Store};

use crate::EngineError;
use crate::adapter::adapt_root;
use crate::backoff::{Backoff, BackoffKind, Sleeper, TokioSleeper};
use crate::context::{NodeView, RunContext};
use crate::events::{EVENT_FORMAT, NodeOutcome, RunEvent};
use crate::exec::{parse_outputs, run_command};

/// Default time limit of an exec command without `constraints.max_wall_clock_seconds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How to run a document.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Param values given by the caller (defaults fill the rest).
    pub params: Map<String, Value>,
    /// Overrides `constraints.max_parallel_nodes`.
    pub max_parallel: Option<usize>,
    /// Where commands and criteria run (the workspace).
    pub project_dir: PathBuf,
    /// The run id; generated when `None`.
    pub run_id: Option<String>,
    /// Carries out the pauses between attempts; `None` is [`TokioSleeper`] (tests pass a
    /// [`crate::RecordingSleeper`]).
    pub sleeper: Option<Arc<dyn Sleeper>>,
}

/// The final status of a run (`docs/engine.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalStatus {
    Succeeded,
    Failed,
    Partial,
}

impl FinalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Succeeded => "succeeded",
            FinalStatus::Failed => "failed",
            FinalStatus::Partial => "partial",
        }
    }
}

/// One node at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeReport {
    pub id: String,
    pub state: String,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a finished run reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub status: FinalStatus,
    pub nodes: Vec<NodeReport>,
    /// Node ids in the order they started.
    pub started: Vec<String>,
    pub outputs: Value,
    pub reasons: Vec<String>,
}

/// One declared input.
#[derive(Clone, Debug)]
struct InputSpec {
    name: String,
    from: Option<String>,
    template: Option<String>,
    value: Option<Value>,
    default: Option<Value>,
    required: bool,
    /// `redact: true`: the value never reaches the log (nor, so, the run record).
    redact: bool,
}

/// A `decision` node with `evaluator: expression` (DIGEST §1.8).
#[derive(Clone, Debug)]
struct DecisionSpec {
    /// (label, `when`) in declared order.
    branches: Vec<(String, String)>,
    default_branch: Option<String>,
}

/// One `failure.fallback[]` step (DIGEST §1.16).
#[derive(Debug, Clone)]
struct FallbackStep {
    strategy: String,
    when: Option<String>,
    /// `degrade_outputs.outputs` / `relax_criteria.criteria`.
    names: Vec<String>,
    /// `alternate_node.node`.
    node: Option<String>,
}

/// Everything needed to run one node, prepared up front.
#[derive(Clone, Debug)]
struct Job {
    id: String,
    /// Set for decision nodes: no command runs, the label is the output `decision`.
    decision: Option<DecisionSpec>,
    when: Option<String>,
    /// The command, or why the node is blocked.
    exec: Result<String, String>,
    timeout: Duration,
    max_attempts: u32,
    retry_on: Vec<String>,
    backoff: Backoff,
    /// `retry.feedback`: `none`, `failure_summary`, `failed_criteria` (default), `full_transcript`.
    feedback: String,
    on_exhausted: String,
    fallback: Vec<FallbackStep>,
    /// `escalation.to`, if the node declares an escalation.
    escalation_to: Option<String>,
    /// `failure.timeout_action`: `fail` (default), `retry`, `escalate`, `partial`.
    timeout_action: String,
    inputs: Vec<InputSpec>,
    outputs: Vec<(String, bool)>,
    /// Outputs declared `redact: true`: kept out of the log (AGS: out of logs and records).
    redact_outputs: Vec<String>,
    success: Option<SuccessBlock>,
    workspace: PathBuf,
}

/// One attempt's result.
#[derive(Debug, Default)]
struct Attempt {
    outputs: Map<String, Value>,
    verdict: Option<Value>,
    /// (failure class, message)
    failure: Option<(String, String)>,
    /// `weft_criteria::feedback` of a failed verdict (empty when none).
    criteria_feedback: String,
}

/// What a retry passes to the next attempt.
struct Retry {
    delay: Duration,
    sleeper: Arc<dyn Sleeper>,
    feedback: Option<String>,
}

/// How a node ended, before it is logged.
struct Finish {
    outcome: NodeOutcome,
    outputs: Map<String, Value>,
    verdict: Option<Value>,
    attempts: u32,
    error: Option<String>,
    absorbed_by: Option<String>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run-{:013}-{}-{n}", now_ms(), std::process::id())
}

fn is_executor_key(k: &str) -> bool {
    (k.starts_with("x-") && k.ends_with("-executor"))
        || (k.starts_with("x-weft-") && k != "x-weft-exec")
}

fn seconds(v: Option<&Value>) -> Option<Duration> {
    v.and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Prepares a node, or says why the run must refuse it.
fn prepare(
    node: &Node<'_>,
    defaults: Option<&Map<String, Value>>,
    workspace: &Path,
) -> Result<Job, String> {
    let id = node.id;
    let mut decision = None;
    match node.node_type() {
        Some(NodeType::Task) => {}
        Some(NodeType::Decision) => {
            let block = obj_of(node.obj, "decision");
            let evaluator = block
                .and_then(|b| str_of(b, "evaluator"))
                .unwrap_or("agent");
            if evaluator != "expression" {
                return Err(format!(
                    "node `{id}`: decision `evaluator: {evaluator}` needs a model: no agent provider yet (use `evaluator: expression`)"
                ));
            }
            let mut branches = Vec::new();
            for b in block
                .and_then(|b| b.field("branches"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (Some(label), Some(when)) = (
                    b.field("label").and_then(Value::as_str),
                    b.field("when").and_then(Value::as_str),
                ) else {
                    return Err(format!(
                        "node `{id}`: every branch of an expression decision needs `label` and `when` (AG121)"
                    ));
                };
                branches.push((label.to_string(), when.to_string()));
            }
            decision = Some(DecisionSpec {
                branches,
                default_branch: block
                    .and_then(|b| str_of(b, "default_branch"))
                    .map(str::to_string),
            });
        }
        Some(other) => {
            return Err(format!(
                "node `{id}`: `{}` nodes are not supported yet (this engine runs root-scope task nodes only)",
                other.as_str()
            ));
        }
        None => return Err(format!("node `{id}`: unknown type")),
    }
    let executor_keys: Vec<&str> = node
        .obj
        .keys()
        .map(String::as_str)
        .filter(|k| is_executor_key(k))
        .collect();
    let exec = match node.obj("x-weft-exec") {
        _ if decision.is_some() => Ok(String::new()),
        _ if !executor_keys.is_empty() => Err(format!(
            "no executor for {} in this build",
            executor_keys.join(", ")
        )),
        Some(x) => match str_of(x, "run") {
            Some(run) => Ok(run.to_string()),
            None => return Err(format!("node `{id}`: `x-weft-exec` needs a string `run`")),
        },
        None => {
            return Err(format!(
                "node `{id}`: no agent provider yet: the model issue adds them (give the node `x-weft-exec: {{run: ...}}`)"
            ));
        }
    };
    let constraints = effective_block(node, defaults, "constraints");
    let timeout = seconds(
        constraints
            .as_ref()
            .and_then(|c| c.field("max_wall_clock_seconds")),
    )
    .unwrap_or(DEFAULT_TIMEOUT);
    let failure = effective_block(node, defaults, "failure");
    let retry = failure.as_ref().and_then(|f| obj_of(f, "retry"));
    let max_attempts = retry
        .and_then(|r| r.field("max_attempts"))
        .and_then(Value::as_u64)
        .map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX).max(1));
    let retry_on = match retry
        .and_then(|r| r.field("retry_on"))
        .and_then(Value::as_array)
    {
        Some(list) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => vec![
            "transient".into(),
            "tool_error".into(),
            "criteria_failed".into(),
        ],
    };
    let defaults_b = Backoff::default();
    let backoff = Backoff {
        kind: match retry
            .and_then(|r| r.field("backoff"))
            .and_then(Value::as_str)
        {
            Some("none") => BackoffKind::None,
            Some("fixed") => BackoffKind::Fixed,
            Some("linear") => BackoffKind::Linear,
            _ => BackoffKind::Exponential,
        },
        initial: seconds(retry.and_then(|r| r.field("initial_delay_seconds")))
            .map_or(defaults_b.initial, |d| d.as_secs_f64()),
        max: seconds(retry.and_then(|r| r.field("max_delay_seconds")))
            .map_or(defaults_b.max, |d| d.as_secs_f64()),
        jitter: retry
            .and_then(|r| r.field("jitter"))
            .and_then(Value::as_bool)
            .unwrap_or(defaults_b.jitter),
    };
    let feedback = retry
        .and_then(|r| r.field("feedback"))
        .and_then(Value::as_str)
        .unwrap_or("failed_criteria")
        .to_string();
    let on_exhausted = failure
        .as_ref()
        .and_then(|f| str_of(f, "on_exhausted"))
        .unwrap_or("fail")
        .to_string();
    let list = |v: &Value, key: &str| -> Vec<String> {
        v.field(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let fallback = failure
        .as_ref()
        .and_then(|f| f.field("fallback"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|step| FallbackStep {
            strategy: step
                .field("strategy")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            when: step
                .field("when")
                .and_then(Value::as_str)
                .map(str::to_string),
            names: if step.field("outputs").is_some() {
                list(step, "outputs")
            } else {
                list(step, "criteria")
            },
            node: step
                .field("node")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
        .collect();
    let escalation_to = failure
        .as_ref()
        .and_then(|f| obj_of(f, "escalation"))
        .map(|e| str_of(e, "to").unwrap_or("human").to_string());
    let timeout_action = failure
        .as_ref()
        .and_then(|f| str_of(f, "timeout_action"))
        .unwrap_or("fail")
        .to_string();
    let inputs = entries_of(node.obj, "inputs")
        .map(|(name, spec)| InputSpec {
            name: name.to_string(),
            from: spec
                .field("from")
                .and_then(Value::as_str)
                .map(str::to_string),
            template: spec
                .field("template")
                .and_then(Value::as_str)
                .map(str::to_string),
            value: spec.field("value").cloned(),
            default: spec.field("default").cloned(),
            required: spec
                .field("required")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            redact: spec
                .field("redact")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect();
    let outputs = entries_of(node.obj, "outputs")
        .map(|(name, spec)| {
            (
                name.to_string(),
                spec.field("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            )
        })
        .collect();
    let redact_outputs = redacted_names(node.obj);
    let success = match node.get("success") {
        Some(v) => Some(
            SuccessBlock::from_value(v)
                .map_err(|e| format!("node `{id}`: invalid success block: {e}"))?,
        ),
        None => None,
    };
    Ok(Job {
        id: id.to_string(),
        decision,
        when: str_of(node.obj, "when").map(str::to_string),
        exec,
        timeout,
        max_attempts,
        retry_on,
        backoff,
        feedback,
        on_exhausted,
        fallback,
        escalation_to,
        timeout_action,
        inputs,
        outputs,
        redact_outputs,
        success,
        workspace: workspace.to_path_buf(),
    })
}

pub(crate) fn state_name(s: NodeState) -> &'static str {
    match s {
        NodeState::Pending => "pending",
        NodeState::Ready => "ready",
        NodeState::Running => "running",
        NodeState::AwaitingHuman => "awaiting_human",
        NodeState::Succeeded => "succeeded",
        NodeState::Failed => "failed",
        NodeState::Skipped => "skipped",
        NodeState::Cancelled => "cancelled",
        NodeState::Blocked => "blocked",
    }
}

/// Binds params: given values, then defaults; a required one missing is AG301.
fn bind_params(
    root: &Map<String, Value>,
    given: &Map<String, Value>,
) -> Result<Value, EngineError> {
    let mut out = Map::new();
    let declared: Vec<(&str, &Value)> = entries_of(root, "params").collect();
    for name in given.keys() {
        if !declared.iter().any(|(d, _)| d == name) {
            return Err(EngineError::Params(format!("unknown param `{name}`")));
        }
    }
    for (name, spec) in declared {
        if let Some(v) = given.get(name) {
            out.insert(name.to_string(), v.clone());
        } else if let Some(d) = spec.field("default") {
            out.insert(name.to_string(), d.clone());
        } else if spec
            .field("required")
            .and_then(Value::as_bool)
            .unwrap_or(true)
        {
            return Err(EngineError::Params(format!(
                "AG301: required param `{name}` has no value and no default"
            )));
        }
    }
    Ok(Value::Object(out))
}

/// Evaluates an AGX condition; an error is `false` plus its message.
fn eval_condition(src: &str, ctx: &RunContext) -> (bool, Option<String>) {
    match weft_agx::parse(src) {
        Ok(expr) => match weft_agx::eval_bool(&expr, ctx) {
            Ok(v) => (v, None),
            Err(e) => (false, Some(format!("`{src}`: {e}"))),
        },
        Err(e) => (false, Some(format!("`{src}`: {e}"))),
    }
}

/// Resolves a node's inputs once (`from`, `template`, `value`, implicit params/context,
/// `default`); a required input left absent is `output_missing`.
/// The names of the `outputs` declared `redact: true` in `obj` (a node or the graph).
fn redacted_names(obj: &Map<String, Value>) -> Vec<String> {
    entries_of(obj, "outputs")
        .filter(|(_, spec)| spec.field("redact").and_then(Value::as_bool) == Some(true))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Splits outputs into what may be logged and the names of those left out.
fn split_redacted(outputs: &Map<String, Value>, redact: &[String]) -> (Value, Vec<String>) {
    let mut kept = outputs.clone();
    let mut left_out = Vec::new();
    for name in redact {
        if kept.shift_remove(name).is_some() {
            left_out.push(name.clone());
        }
    }
    (Value::Object(kept), left_out)
}

/// The resolved inputs as logged: those declared `redact: true` left out.
fn loggable_inputs(job: &Job, inputs: &Value) -> Value {
    let mut out = inputs.as_object().cloned().unwrap_or_default();
    for spec in job.inputs.iter().filter(|i| i.redact) {
        out.shift_remove(&spec.name);
    }
    Value::Object(out)
}

fn resolve_inputs(job: &Job, ctx: &RunContext) -> Result<Value, String> {
    let mut out = Map::new();
    for input in &job.inputs {
        let value = if let Some(from) = &input.from {
            let expr = weft_agx::parse(from).map_err(|e| format!("input `{}`: {e}", input.name))?;
            let v =
                weft_agx::eval(&expr, ctx).map_err(|e| format!("input `{}`: {e}", input.name))?;
            Some(v).filter(|v| !v.is_null())
        } else if let Some(t) = &input.template {
            let tpl =
                weft_agx::parse_template(t).map_err(|e| format!("input `{}`: {e}", input.name))?;
            Some(Value::String(
                weft_agx::render(&tpl, ctx).map_err(|e| format!("input `{}`: {e}", input.name))?,
            ))
        } else if let Some(v) = &input.value {
            Some(v.clone())
        } else {
            ctx.params
                .get(&input.name)
                .or_else(|| ctx.context.get(&input.name))
                .filter(|v| !v.is_null())
                .cloned()
        };
        match value.or_else(|| input.default.clone()) {
            Some(v) => {
                out.insert(input.name.clone(), v);
            }
            None if input.required => {
                return Err(format!(
                    "output_missing: required input `{}` resolved absent",
                    input.name
                ));
            }
            None => {}
        }
    }
    Ok(Value::Object(out))
}

/// One attempt: run the command, collect outputs, evaluate `success`.
async fn attempt(job: Arc<Job>, retry: Option<Retry>, ctx: RunContext) -> Attempt {
    let mut feedback = None;
    if let Some(r) = retry {
        r.sleeper.sleep(r.delay).await;
        feedback = r.feedback;
    }
    if let Some(spec) = &job.decision {
        let mut chosen = None;
        for (label, when) in &spec.branches {
            let (value, error) = eval_condition(when, &ctx);
            if let Some(e) = error {
                return Attempt {
                    failure: Some((
                        "tool_error".into(),
                        format!("decision branch `{label}`: {e}"),
                    )),
                    ..Attempt::default()
                };
            }
            if value {
                chosen = Some(label.clone());
                break;
            }
        }
        let Some(label) = chosen.or_else(|| spec.default_branch.clone()) else {
            return Attempt {
                failure: Some((
                    "criteria_failed".into(),
                    "no decision branch matched and there is no default_branch".into(),
                )),
                ..Attempt::default()
            };
        };
        let mut outputs = Map::new();
        outputs.insert("decision".into(), Value::String(label));
        return check_success(&job, outputs, ctx).await;
    }
    let run = match &job.exec {
        Ok(run) => run,
        Err(reason) => {
            return Attempt {
                failure: Some(("blocked".into(), reason.clone())),
                ..Attempt::default()
            };
        }
    };
    let mut stdin = ctx.inputs.clone().unwrap_or(Value::Null);
    if let (Some(f), Value::Object(m)) = (feedback, &mut stdin) {
        m.insert("feedback".into(), Value::String(f));
    }
    let stdin = stdin.to_string();
    let result = match run_command(run, &job.workspace, stdin.as_bytes(), job.timeout).await {
        Ok(r) => r,
        Err(e) => {
            return Attempt {
                failure: Some((
                    "tool_error".into(),
                    format!("cannot start the command: {e}"),
                )),
                ..Attempt::default()
            };
        }
    };
    if result.timed_out {
        return Attempt {
            failure: Some((
                "timeout".into(),
                format!(
                    "timed out after {:?}; the process group was killed",
                    job.timeout
                ),
            )),
            ..Attempt::default()
        };
    }
    if !result.success() {
        let tail: String = result
            .stderr
            .lines()
            .last()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        let code = result
            .exit_code
            .map_or("a signal".to_string(), |c| c.to_string());
        return Attempt {
            failure: Some(("tool_error".into(), format!("exit code {code}: {tail}"))),
            ..Attempt::default()
        };
    }
    let declared: Vec<String> = job.outputs.iter().map(|(n, _)| n.clone()).collect();
    let outputs = parse_outputs(&result.stdout, &declared);
    if let Some((missing, _)) = job
        .outputs
        .iter()
        .find(|(n, required)| *required && outputs.get(n).is_none_or(Value::is_null))
    {
        return Attempt {
            failure: Some((
                "output_missing".into(),
                format!("required output `{missing}` was not produced"),
            )),
            outputs,
            ..Attempt::default()
        };
    }
    check_success(&job, outputs, ctx).await
}

/// Evaluates the node's `success` block (if any) on an attempt's outputs.
async fn check_success(job: &Job, outputs: Map<String, Value>, mut ctx: RunContext) -> Attempt {
    let mut verdict = None;
    let mut failure = None;
    let mut criteria_feedback = String::new();
    if let Some(block) = &job.success {
        let outputs_value = Value::Object(outputs.clone());
        ctx.outputs = Some(outputs_value.clone());
        let human = MapHumanPort::default();
        let checkers = MapCheckers::default();
        let limits = Limits::default();
        let env = CriteriaEnv {
            workspace: &job.workspace,
            outputs: &outputs_value,
            context: &ctx,
            human: &human,
            checkers: &checkers,
            limits: &limits,
        };
        let v = weft_criteria::evaluate(block, &env).await;
        if !v.passed {
            let failed: Vec<&str> = v
                .results
                .iter()
                .filter(|r| {
                    !matches!(
                        r.outcome,
                        weft_criteria::Outcome::Passed | weft_criteria::Outcome::NotEvaluated
                    )
                })
                .map(|r| r.id.as_str())
                .collect();
            failure = Some((
                "criteria_failed".into(),
                format!("success criteria not met: {}", failed.join(", ")),
            ));
        }
        if !v.passed {
            criteria_feedback = weft_criteria::feedback(&v, block);
        }
        verdict = serde_json::to_value(&v).ok();
    }
    Attempt {
        outputs,
        verdict,
        failure,
        criteria_feedback,
    }
}

/// The feedback the next attempt receives (`retry.feedback`, `docs/engine.md`).
fn feedback_for(job: &Job, failed: &Attempt) -> Option<String> {
    let summary = failed
        .failure
        .as_ref()
        .map(|(class, msg)| format!("The previous attempt failed ({class}): {msg}"));
    match job.feedback.as_str() {
        "none" => None,
        "failure_summary" | "full_transcript" => summary,
        _ if !failed.criteria_feedback.is_empty() => Some(failed.criteria_feedback.clone()),
        _ => summary,
    }
}

/// The run in progress.
struct Driver<'a> {
    store: &'a Store,
    run_id: String,
    last_seq: u64,
    sched: Scheduler,
    jobs: Vec<Arc<Job>>,
    edge_when: Vec<Option<String>>,
    params: Value,
    context: Value,
    outputs: Vec<Map<String, Value>>,
    attempts: Vec<u32>,
    errors: Vec<Option<String>>,
    /// Inputs as resolved at start, reused verbatim by every retry.
    inputs: Vec<Option<Value>>,
    expression_errors: Vec<String>,
    degraded: bool,
}

impl Driver<'_> {
    /// Appends `event` to the log (the driver is its only writer).
    fn append(&mut self, event: &RunEvent) -> Result<(), EngineError> {
        let seqs = self.store.append_expecting(
            &self.run_id,
            self.last_seq,
            &[event.to_new_event(now_ms())],
        )?;
        if let Some(&s) = seqs.last() {
            self.last_seq = s;
        }
        Ok(())
    }

    /// Append, then apply: the state is always a fold over the log.
    fn record(&mut self, event: &RunEvent) -> Result<Vec<Action>, EngineError> {
        self.append(event)?;
        let mapped = event
            .to_scheduler(self.sched.graph())
            .map_err(|n| EngineError::Internal(format!("unknown node `{n}`")))?;
        match mapped {
            Some(e) => Ok(self.sched.apply(&e)?),
            None => Ok(Vec::new()),
        }
    }

    fn context(&self) -> RunContext {
        let mut nodes = BTreeMap::new();
        for (i, job) in self.jobs.iter().enumerate() {
            nodes.insert(
                job.id.clone(),
                NodeView {
                    status: state_name(self.sched.state(i)).to_string(),
                    outputs: self.outputs.get(i).cloned().unwrap_or_default(),
                },
            );
        }
        RunContext {
            params: self.params.clone(),
            context: self.context.clone(),
            nodes,
            inputs: None,
            outputs: None,
        }
    }

    fn settle(&mut self, node: usize, finish: Finish) -> Result<Vec<Action>, EngineError> {
        let id = self.jobs[node].id.clone();
        let mut ctx = self.context();
        if let Some(view) = ctx.nodes.get_mut(&id) {
            view.status = finish.outcome.as_str().to_string();
            view.outputs = finish.outputs.clone();
        }
        let needed = match finish.outcome {
            NodeOutcome::Succeeded => Some(EdgeKind::Conditional),
            NodeOutcome::Failed | NodeOutcome::Blocked => Some(EdgeKind::OnFailure),
            _ => None,
        };
        let mut guards = Vec::new();
        for &e in self.sched.graph().outgoing(node) {
            let spec = self.sched.graph().edge(e);
            if !spec.guarded || Some(spec.kind) != needed {
                continue;
            }
            let when = self.edge_when.get(e).cloned().flatten().unwrap_or_default();
            let (value, error) = eval_condition(&when, &ctx);
            if let Some(err) = error {
                self.expression_errors
                    .push(format!("edge from `{id}`: {err}"));
            }
            guards.push((e, value));
        }
        self.outputs[node] = finish.outputs.clone();
        self.attempts[node] = finish.attempts;
        self.errors[node] = finish.error.clone();
        let (outputs, redacted) = split_redacted(&finish.outputs, &self.jobs[node].redact_outputs);
        self.record(&RunEvent::NodeFinished {
            node: id,
            outcome: finish.outcome,
            outputs,
            redacted,
            verdict: finish.verdict,
            guards,
            attempts: finish.attempts,
            error: finish.error,
            absorbed_by: finish.absorbed_by,
        })
    }

    /// The fallback rungs of the ladder, in order, after the retries are exhausted: the
    /// first step whose `when` holds and that absorbs the failure wins (`docs/engine.md`).
    async fn fallbacks(&mut self, node: usize, a: Attempt) -> Attempted {
        let job = Arc::clone(&self.jobs[node]);
        let Some((class, msg)) = a.failure.clone() else {
            return Attempted {
                attempt: a,
                absorbed_by: None,
            };
        };
        if class == "blocked" {
            return Attempted {
                attempt: a,
                absorbed_by: None,
            };
        }
        let mut ctx = self.context();
        ctx.inputs = self.inputs[node].clone();
        ctx.outputs = Some(Value::Object(a.outputs.clone()));
        for (i, step) in job.fallback.iter().enumerate() {
            if let Some(when) = &step.when {
                let (value, error) = eval_condition(when, &ctx);
                if let Some(e) = error {
                    self.expression_errors
                        .push(format!("fallback of `{}`: {e}", job.id));
                }
                if !value {
                    continue;
                }
            }
            let rung = format!("fallback[{i}]:{}", step.strategy);
            let absorbed = match step.strategy.as_str() {
                "skip" => Some(Attempt {
                    failure: Some(("skip".into(), format!("{class}: {msg}"))),
                    ..Attempt::default()
                }),
                "degrade_outputs" if class == "output_missing" => {
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
                        Some(check_success(&degraded, a.outputs.clone(), c).await)
                    }
                }
                "relax_criteria" if class == "criteria_failed" => {
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
                    Some(check_success(&relaxed, a.outputs.clone(), c).await)
                }
                "alternate_node" => {
                    let mut visited = vec![job.id.clone()];
                    self.alternate(&job, step.node.as_deref(), &mut visited, &ctx)
                        .await
                }
                _ => None,
            };
            if let Some(result) = absorbed.filter(|r| {
                r.failure.is_none() || r.failure.as_ref().is_some_and(|(c, _)| c == "skip")
            }) {
                return Attempted {
                    attempt: result,
                    absorbed_by: Some(rung),
                };
            }
        }
        Attempted {
            attempt: a,
            absorbed_by: None,
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
            let result = attempt(Arc::clone(alt), None, c).await;
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
                            "output_missing".into(),
                            format!("alternate `{id}` did not produce `{missing}`"),
                        )),
                        ..Attempt::default()
                    });
                }
                return Some(Attempt {
                    outputs,
                    verdict: result.verdict,
                    failure: None,
                    criteria_feedback: String::new(),
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

    /// Turns a final attempt into the node's outcome (`timeout_action`, `on_exhausted`).
    fn finish(&mut self, node: usize, attempts: u32, a: Attempted) -> Finish {
        let job = &self.jobs[node];
        let Attempted {
            attempt: a,
            mut absorbed_by,
        } = a;
        let escalate = |msg: String| match job.escalation_to.as_deref() {
            Some("human") | None => {
                format!("escalation pending: no human channel in this build (RT code none); {msg}")
            }
            Some(to) => format!("escalation to `{to}` is not built yet; {msg}"),
        };
        let (outcome, error) = match a.failure {
            None => (NodeOutcome::Succeeded, None),
            Some((class, msg)) if class == "blocked" => (NodeOutcome::Blocked, Some(msg)),
            Some((class, msg)) if class == "skip" => (NodeOutcome::Skipped, Some(msg)),
            Some((class, msg)) => {
                let msg = format!("{class}: {msg}");
                let action = if class == "timeout" && job.timeout_action != "retry" {
                    match job.timeout_action.as_str() {
                        "partial" => "succeed_degraded",
                        "escalate" => "escalate",
                        _ => job.on_exhausted.as_str(),
                    }
                } else {
                    job.on_exhausted.as_str()
                };
                if class == "timeout"
                    && matches!(job.timeout_action.as_str(), "partial" | "escalate")
                {
                    absorbed_by = Some(format!("timeout_action:{}", job.timeout_action));
                }
                match action {
                    "skip" => (NodeOutcome::Skipped, Some(msg)),
                    "succeed_degraded" => {
                        self.degraded = true;
                        (NodeOutcome::Succeeded, Some(msg))
                    }
                    "escalate" => (NodeOutcome::Failed, Some(escalate(msg))),
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
        }
    }
}

/// A final attempt after the fallback rungs.
struct Attempted {
    attempt: Attempt,
    absorbed_by: Option<String>,
}

/// Runs a loaded, valid document to its end. The caller has validated it (see
/// [`crate::load_document`]); the graph digest is computed here.
pub async fn run_document(
    doc: &Value,
    store: &Store,
    options: &RunOptions,
) -> Result<RunReport, EngineError> {
    let root = doc
        .as_object()
        .ok_or_else(|| EngineError::Refused(vec!["the document is not an object".into()]))?;
    let scopes = weft_ags::model::scopes(root);
    let Some(scope) = scopes.first() else {
        return Err(EngineError::Refused(vec![
            "the document has no root scope".into(),
        ]));
    };
    let defaults = obj_of(root, "defaults");
    let mut refusals = Vec::new();
    let mut jobs = Vec::new();
    for node in scope.nodes() {
        match prepare(&node, defaults, &options.project_dir) {
            Ok(job) => jobs.push(Arc::new(job)),
            Err(e) => refusals.push(e),
        }
    }
    if root.has("success")
        && SuccessBlock::from_value(root.field("success").unwrap_or(&Value::Null)).is_err()
    {
        refusals.push("the graph's success block is invalid".into());
    }
    if !refusals.is_empty() {
        return Err(EngineError::Refused(refusals));
    }
    let params = bind_params(root, &options.params)?;
    let adapted = adapt_root(root)?;
    let policy = obj_of(root, "policy");
    let on_node_failure = match policy.and_then(|p| str_of(p, "on_node_failure")) {
        Some("halt") => FailurePolicy::Halt,
        Some("continue") => FailurePolicy::Continue,
        _ => FailurePolicy::Isolate,
    };
    let expression_errors_fatal =
        policy.and_then(|p| str_of(p, "on_expression_error")) != Some("false");
    let max_parallel = options.max_parallel.unwrap_or_else(|| {
        obj_of(root, "constraints")
            .and_then(|c| c.field("max_parallel_nodes"))
            .and_then(Value::as_u64)
            .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX))
    });
    let sched_options = Options {
        max_parallel,
        on_node_failure,
    };
    let digest = weft_ags::digest::graph_digest(doc);
    let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
    let created = now_ms();
    store.create_run(&NewRun {
        id: run_id.clone(),
        graph_digest: digest.clone(),
        created_at_ms: created,
    })?;
    store.set_status(&run_id, RunStatus::Running, created)?;
    let n = jobs.len();
    let mut d = Driver {
        store,
        run_id: run_id.clone(),
        last_seq: 0,
        sched: Scheduler::new(adapted.graph, sched_options),
        jobs,
        edge_when: adapted.edge_when,
        params: params.clone(),
        context: root
            .field("context")
            .cloned()
            .unwrap_or(Value::Object(Map::new())),
        outputs: vec![Map::new(); n],
        attempts: vec![0; n],
        errors: vec![None; n],
        inputs: vec![None; n],
        expression_errors: Vec::new(),
        degraded: false,
    };
    let mut queue: std::collections::VecDeque<Action> = d
        .record(&RunEvent::RunStarted {
            v: EVENT_FORMAT,
            graph_digest: digest,
            params,
            max_parallel,
            on_node_failure: match on_node_failure {
                FailurePolicy::Halt => "halt",
                FailurePolicy::Isolate => "isolate",
                FailurePolicy::Continue => "continue",
            }
            .to_string(),
            graph: doc.clone(),
        })?
        .into();
    let sleeper: Arc<dyn Sleeper> = options
        .sleeper
        .clone()
        .unwrap_or_else(|| Arc::new(TokioSleeper));
    let mut tasks: JoinSet<(usize, u32, Attempt)> = JoinSet::new();
    let mut immediate: std::collections::VecDeque<(usize, Finish)> = Default::default();
    let summary = loop {
        let mut finished = None;
        while let Some(action) = queue.pop_front() {
            match action {
                Action::EvaluateWhen { node } => {
                    if !d.sched.when_pending(node) {
                        continue;
                    }
                    let job = Arc::clone(&d.jobs[node]);
                    let (value, error) =
                        eval_condition(job.when.as_deref().unwrap_or("true"), &d.context());
                    if let Some(e) = &error {
                        d.expression_errors
                            .push(format!("when of `{}`: {e}", job.id));
                    }
                    let actions = d.record(&RunEvent::NodeWhen {
                        node: job.id.clone(),
                        value,
                        error,
                    })?;
                    queue.extend(actions);
                }
                Action::Start { node } => {
                    let job = Arc::clone(&d.jobs[node]);
                    let mut ctx = d.context();
                    match resolve_inputs(&job, &ctx) {
                        Ok(inputs) => {
                            d.inputs[node] = Some(inputs.clone());
                            let logged = loggable_inputs(&job, &inputs);
                            ctx.inputs = Some(inputs);
                            d.append(&RunEvent::NodeStarted {
                                node: job.id.clone(),
                                attempt: 1,
                                inputs: Some(logged),
                                delay_ms: None,
                            })?;
                            tasks.spawn(async move { (node, 1, attempt(job, None, ctx).await) });
                        }
                        Err(e) => immediate.push_back((
                            node,
                            Finish {
                                outcome: NodeOutcome::Failed,
                                outputs: Map::new(),
                                verdict: None,
                                attempts: 0,
                                error: Some(e),
                                absorbed_by: None,
                            },
                        )),
                    }
                }
                Action::Skipped { .. } => {}
                Action::Finished { summary } => finished = Some(summary),
            }
        }
        if let Some(s) = finished {
            break s;
        }
        let (node, finish) = match immediate.pop_front() {
            Some(x) => x,
            None => match tasks.join_next().await {
                Some(Ok((node, number, result))) => {
                    let job = Arc::clone(&d.jobs[node]);
                    let retry = result.failure.as_ref().is_some_and(|(class, _)| {
                        class != "blocked"
                            && (job.retry_on.iter().any(|r| r == class || r == "any")
                                || (class == "timeout" && job.timeout_action == "retry"))
                    });
                    if retry && number < job.max_attempts {
                        let mut ctx = d.context();
                        ctx.inputs = d.inputs[node].clone();
                        let delay = job.backoff.delay(&d.run_id, &job.id, number);
                        d.append(&RunEvent::NodeStarted {
                            node: job.id.clone(),
                            attempt: number + 1,
                            // Retries reuse the first attempt's inputs: logged once.
                            inputs: None,
                            delay_ms: Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
                        })?;
                        let retry = Retry {
                            delay,
                            sleeper: Arc::clone(&sleeper),
                            feedback: feedback_for(&job, &result),
                        };
                        tasks.spawn(async move {
                            (node, number + 1, attempt(job, Some(retry), ctx).await)
                        });
                        continue;
                    }
                    let result = d.fallbacks(node, result).await;
                    (node, d.finish(node, number, result))
                }
                Some(Err(e)) => {
                    return Err(EngineError::Internal(format!("a node task failed: {e}")));
                }
                None => {
                    return Err(EngineError::Internal(
                        "the scheduler waits, but nothing runs".into(),
                    ));
                }
            },
        };
        queue.extend(d.settle(node, finish)?);
    };

    // FINALIZE: bind graph outputs, graph success, final status.
    let ctx = d.context();
    let mut reasons = Vec::new();
    let mut graph_outputs = Map::new();
    let mut unbound = Vec::new();
    for (name, spec) in entries_of(root, "outputs") {
        let required = spec
            .field("required")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let value = spec
            .field("from")
            .and_then(Value::as_str)
            .and_then(|src| weft_agx::parse(src).ok())
            .and_then(|e| weft_agx::eval(&e, &ctx).ok())
            .filter(|v| !v.is_null());
        match value {
            Some(v) => {
                graph_outputs.insert(name.to_string(), v);
            }
            None if required => unbound.push(name.to_string()),
            None => {}
        }
    }
    let graph_outputs = Value::Object(graph_outputs);
    let mut success_failed = false;
    let mut graph_verdict = None;
    if let Some(block) = root
        .field("success")
        .and_then(|v| SuccessBlock::from_value(v).ok())
    {
        let mut gctx = ctx.clone();
        gctx.outputs = Some(graph_outputs.clone());
        let human = MapHumanPort::default();
        let checkers = MapCheckers::default();
        let limits = Limits::default();
        let env = CriteriaEnv {
            workspace: &options.project_dir,
            outputs: &graph_outputs,
            context: &gctx,
            human: &human,
            checkers: &checkers,
            limits: &limits,
        };
        let verdict = weft_criteria::evaluate(&block, &env).await;
        if !verdict.passed {
            success_failed = true;
            reasons.push("the graph's success criteria failed".into());
        }
        graph_verdict = serde_json::to_value(&verdict).ok();
    }
    let ids: Vec<String> = d.jobs.iter().map(|j| j.id.clone()).collect();
    let id_of = |i: usize| ids.get(i).cloned().unwrap_or_else(|| i.to_string());
    let mut status = FinalStatus::Succeeded;
    if summary.halted {
        status = FinalStatus::Failed;
        reasons.push("halted after an unabsorbed failure (on_node_failure: halt)".into());
    }
    if success_failed {
        status = FinalStatus::Failed;
    }
    if expression_errors_fatal && !d.expression_errors.is_empty() {
        status = FinalStatus::Failed;
        reasons.extend(
            d.expression_errors
                .iter()
                .map(|e| format!("expression error: {e}")),
        );
    }
    if status != FinalStatus::Failed {
        if !summary.unabsorbed.is_empty() {
            status = FinalStatus::Partial;
            let ids: Vec<String> = summary.unabsorbed.iter().map(|&i| id_of(i)).collect();
            reasons.push(format!("unabsorbed failure of {}", ids.join(", ")));
        }
        if !unbound.is_empty() {
            status = FinalStatus::Partial;
            reasons.push(format!(
                "RT041: required graph outputs unbound: {}",
                unbound.join(", ")
            ));
        }
        if d.degraded {
            status = FinalStatus::Partial;
            reasons.push("RT042: a node succeeded degraded".into());
        }
    }
    let (logged_outputs, redacted) = match &graph_outputs {
        Value::Object(m) => split_redacted(m, &redacted_names(root)),
        other => (other.clone(), Vec::new()),
    };
    d.append(&RunEvent::RunFinished {
        status: status.as_str().to_string(),
        outputs: logged_outputs,
        redacted,
        reasons: reasons.clone(),
        graph_verdict,
    })?;
    let stored = if status == FinalStatus::Succeeded {
        RunStatus::Succeeded
    } else {
        RunStatus::Failed
    };
    store.set_status(&run_id, stored, now_ms())?;
    let nodes = (0..d.jobs.len())
        .map(|i| NodeReport {
            id: id_of(i),
            state: state_name(d.sched.state(i)).to_string(),
            attempts: d.attempts[i],
            error: d.errors[i].clone(),
        })
        .collect();
    Ok(RunReport {
        run_id,
        status,
        nodes,
        started: summary.started.iter().map(|&i| id_of(i)).collect(),
        outputs: graph_outputs,
        reasons,
    })
}
