//! Executing one node: its inputs resolved once (and checked against their declared types),
//! one attempt (a decision's branches, or the node's agent through the agent port, then its
//! declared outputs checked), the node's `success` criteria, and the feedback a retry
//! passes to the next attempt. The retry decision itself is the
//! driver's (`mod.rs`); what happens once retries are exhausted is `fallback.rs`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use weft_core::FailureClass;
use weft_criteria::CriteriaEnv;

use super::RT062;
use super::job::{DecisionSpec, Job, Work};
use super::judge::ModelJudge;
use crate::agent::{
    AgentRegistry, AgentRequest, AgentResult, EXEC, Limits, OutputDecl, Route, Usage,
};
use crate::backoff::Sleeper;
use crate::clock::{Clock, within};
use crate::context::RunContext;

/// One attempt's result.
#[derive(Debug, Default)]
pub(super) struct Attempt {
    pub(super) outputs: Map<String, Value>,
    pub(super) verdict: Option<Value>,
    /// (failure class, message)
    pub(super) failure: Option<(FailureClass, String)>,
    /// A `fallback: skip` step absorbed `failure`: the node ends `skipped`, not failed.
    pub(super) skipped: bool,
    /// `weft_criteria::feedback` of a failed verdict (empty when none).
    pub(super) criteria_feedback: String,
    /// What the agent spent.
    pub(super) usage: Usage,
    /// Warnings to log with the node (`RT022`).
    pub(super) warnings: Vec<String>,
    /// The agent's transcript, for `retry.feedback: full_transcript` (never logged).
    pub(super) transcript: Option<Value>,
    /// An `after_outputs` checkpoint comes first: `success` is not evaluated yet.
    pub(super) success_pending: bool,
    /// The human checkpoints this attempt has passed: (stage, index of the last one).
    pub(super) passed: Option<(String, usize)>,
    /// The action a policy `ask` holds for a person (the attempt failed `permission_denied`).
    /// Boxed, like `isolation`: rare, and an attempt's result is moved through the
    /// driver's queues once per node.
    pub(super) approval: Option<Box<crate::agent::ApprovalRequest>>,
    /// The attempt's own copy of the project (`isolation: worktree|sandbox`).
    pub(super) isolation: Option<Box<super::isolate::Isolation>>,
    /// A container node's fragment instances wait on a person: the container has not
    /// ended and stays `running` (`instance_waits.rs`).
    pub(super) waiting: bool,
}

/// The most transcript text a `full_transcript` feedback carries.
const MAX_TRANSCRIPT_FEEDBACK: usize = 16 * 1024;

impl Attempt {
    /// A container's result while its instances wait on a person: not an end.
    pub(super) fn waiting_on_person() -> Attempt {
        Attempt {
            waiting: true,
            ..Attempt::default()
        }
    }
}

/// What a retry passes to the next attempt.
pub(super) struct Retry {
    pub(super) delay: Duration,
    pub(super) sleeper: Arc<dyn Sleeper>,
    pub(super) feedback: Option<String>,
}

/// Resolves a node's inputs once (`from`, `template`, `value`, implicit params/context,
/// `default`); a required input left absent is `output_missing`.
pub(super) fn resolve_inputs(job: &Job, ctx: &RunContext) -> Result<Value, String> {
    resolve_inputs_noting(job, ctx, &mut Vec::new())
}

/// [`resolve_inputs`], noting in `notes` each AGX evaluation error that
/// `on_expression_error: false` turned into `false` (an `RT062` warning, DIGEST §2.6).
/// Under `fail` such an error is the `RT062` error returned, which fails the run.
pub(super) fn resolve_inputs_noting(
    job: &Job,
    ctx: &RunContext,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    let mut out = Map::new();
    let mut evaluation_error = |what: String| -> Result<Option<Value>, String> {
        if job.expressions_yield_false {
            notes.push(format!("{RT062}{what} (evaluated as false)"));
            Ok(Some(Value::Bool(false)))
        } else {
            Err(format!("{RT062}{what}"))
        }
    };
    for input in &job.inputs {
        let value = if let Some(from) = &input.from {
            let expr = weft_agx::parse(from).map_err(|e| format!("input `{}`: {e}", input.name))?;
            match weft_agx::eval(&expr, ctx) {
                Ok(v) => Some(v).filter(|v| !v.is_null()),
                Err(e) => evaluation_error(format!("input `{}`: `{from}`: {e}", input.name))?,
            }
        } else if let Some(t) = &input.template {
            let tpl =
                weft_agx::parse_template(t).map_err(|e| format!("input `{}`: {e}", input.name))?;
            match weft_agx::render(&tpl, ctx) {
                Ok(text) => Some(Value::String(text)),
                Err(e) => evaluation_error(format!("input `{}`: {e}", input.name))?,
            }
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
                if let Err((code, msg)) = input.typed.check("input", &v) {
                    return Err(format!("validation_error: {code}: {msg}"));
                }
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

/// What an attempt runs with besides the job: the agents, its route and its limits.
#[derive(Clone)]
pub(super) struct AttemptEnv {
    pub(super) agents: Arc<AgentRegistry>,
    /// The run's clock: the attempt's time limit is measured on it.
    pub(super) clock: Arc<dyn Clock>,
    pub(super) number: u32,
    pub(super) route: Option<Route>,
    pub(super) limits: Limits,
    /// The scope instance the node runs in (`fix_loop[2]`); `None` in the root scope.
    pub(super) scope: Option<String>,
    /// The tool actions a person approved for the node (`tool_approval` waits).
    pub(super) approvals: Vec<String>,
    /// The node's tool journal and the port to log side effects (`journal.rs`); `None`
    /// for work that calls no agent (an expression decision, a gate), which has no tools.
    pub(super) journal: Option<crate::agent::journal::AttemptJournal>,
    /// Where an isolated attempt keeps its copy of the project (`isolate.rs`); `None`: a
    /// fresh temporary one.
    pub(super) scratch: Option<std::path::PathBuf>,
    /// weft's own files inside the workspace that a copy of it leaves out (the store, its
    /// `-wal`/`-shm`/`-journal`, the audit directory), anchored as `/PATH`: they change
    /// while the attempt runs, and are never the node's work (`isolate.rs`).
    pub(super) keep_out: Vec<String>,
}

fn failed(class: FailureClass, message: impl Into<String>) -> Attempt {
    Attempt {
        failure: Some((class, message.into())),
        ..Attempt::default()
    }
}

/// One attempt: the work (a decision's branches, or the node's agent), the declared
/// outputs checked (required, `type`, `schema`), then `success`. A panic anywhere in it
/// fails this attempt (`tool_error`, the panic's message as evidence), never the run
/// (`contain.rs`).
pub(super) async fn attempt(
    job: Arc<Job>,
    retry: Option<Retry>,
    mut ctx: RunContext,
    env: AttemptEnv,
) -> Attempt {
    // `self.id`, `self.attempt` and `env.*` (DIGEST §2.5), whatever view the caller built.
    ctx.enter_node(&job.id, env.number, &job.environment);
    match super::contain::Contained::new(attempt_uncontained(job, retry, ctx, env)).await {
        Ok(a) => a,
        Err(panic) => failed(
            FailureClass::ToolError,
            format!(
                "internal: weft panicked during this attempt (a bug in weft, please report it): {panic}"
            ),
        ),
    }
}

async fn attempt_uncontained(
    job: Arc<Job>,
    retry: Option<Retry>,
    ctx: RunContext,
    env: AttemptEnv,
) -> Attempt {
    if !(job.isolated && matches!(job.work, Work::Exec(_) | Work::Model)) {
        return attempt_in(job, retry, ctx, env).await;
    }
    // Its own copy of the project: the driver records and merges its edits (`isolate.rs`).
    let (job, isolation) = match super::isolate::begin(&job, env.scratch.as_deref(), &env.keep_out)
    {
        Ok(pair) => pair,
        Err(e) => return failed(FailureClass::Blocked, format!("RT014: {e}")),
    };
    let mut a = attempt_in(job, retry, ctx, env).await;
    a.isolation = Some(Box::new(isolation));
    a
}

/// [`attempt`] in the job's workspace as given.
async fn attempt_in(
    job: Arc<Job>,
    retry: Option<Retry>,
    ctx: RunContext,
    env: AttemptEnv,
) -> Attempt {
    let mut feedback = None;
    if let Some(r) = retry {
        r.sleeper.sleep(r.delay).await;
        feedback = r.feedback;
    }
    let (agent, config) = match &job.work {
        Work::Expression => {
            let judge = ModelJudge::new(
                &job,
                Arc::clone(&env.agents),
                Arc::clone(&env.clock),
                env.number,
                env.limits,
            );
            let mut a = decide_by_expression(&job, ctx, &judge).await;
            a.usage = judge.spent();
            return a;
        }
        Work::Blocked(reason) => return failed(FailureClass::Blocked, reason.clone()),
        // Containers run through their fragment instances (`fragment.rs`), never here.
        Work::Container(_) => {
            return failed(
                FailureClass::ToolError,
                "a container node has no agent of its own",
            );
        }
        Work::Exec(config) => (env.agents.get(EXEC), config.clone()),
        Work::Model => (env.agents.model_agent(), Value::Null),
    };
    let Some(agent) = agent else {
        return failed(
            FailureClass::Blocked,
            "no agent for this node is registered",
        );
    };
    let brief = match render_brief(&job, &ctx) {
        Ok(b) => b,
        Err(e) if matches!(job.work, Work::Model) => return failed(FailureClass::ToolError, e),
        // `exec` runs a command, not the brief: a template it cannot render is not its
        // failure.
        Err(_) => None,
    };
    let request = AgentRequest {
        // The node instance's address (`fix_loop[2].run_tests`) inside a fragment.
        node: env
            .scope
            .as_ref()
            .map_or_else(|| job.id.clone(), |p| format!("{p}.{}", job.id)),
        attempt: env.number,
        inputs: ctx.inputs.clone().unwrap_or(Value::Null),
        brief,
        guidance: std::sync::Arc::clone(&job.guidance),
        outputs: job
            .outputs
            .iter()
            .map(|(name, required)| OutputDecl {
                name: name.clone(),
                required: *required,
                type_name: job
                    .typed_outputs
                    .iter()
                    .find(|t| &t.name == name)
                    .and_then(|t| t.ty.clone()),
            })
            .collect(),
        decision_labels: job
            .decision
            .as_ref()
            .map(|d| d.branches.iter().map(|b| b.label.clone()).collect())
            .unwrap_or_default(),
        decision_default: job.decision.as_ref().and_then(|d| d.default_branch.clone()),
        feedback,
        route: env.route.clone(),
        limits: env.limits.clone(),
        workspace: job.workspace.to_path_buf(),
        config,
        approvals: env.approvals.clone(),
        journal: env.journal.clone().unwrap_or_default(),
    };
    let result = if matches!(job.work, Work::Model) {
        // Model agents get the attempt's time limit from outside; `exec` kills its own
        // process group on time.
        match within(&*env.clock, request.limits.wall_clock, agent.run(&request)).await {
            Some(r) => r,
            None => AgentResult::failed(
                FailureClass::Timeout,
                format!("timed out after {:?}", request.limits.wall_clock),
            ),
        }
    } else {
        agent.run(&request).await
    };
    let usage = result.usage;
    let transcript = result.transcript;
    let mut outputs = result.outputs;
    if let Some(f) = result.failure {
        return Attempt {
            outputs,
            usage,
            failure: Some((f.class, f.message)),
            transcript,
            approval: result.approval.map(Box::new),
            ..Attempt::default()
        };
    }
    let mut warnings = Vec::new();
    if let Some(spec) = &job.decision {
        match choose_label(spec, outputs.get("decision")) {
            Ok((label, warning)) => {
                outputs.insert("decision".into(), Value::String(label));
                warnings.extend(warning);
            }
            Err(e) => {
                return Attempt {
                    outputs,
                    usage,
                    failure: Some((FailureClass::CriteriaFailed, e)),
                    transcript,
                    ..Attempt::default()
                };
            }
        }
    }
    if let Some(failure) = check_outputs(&job, &outputs) {
        return Attempt {
            outputs,
            usage,
            failure: Some(failure),
            warnings,
            transcript,
            ..Attempt::default()
        };
    }
    if job.defer_success {
        // `after_outputs` checkpoints see the outputs before `success` (`checkpoint.rs`).
        return Attempt {
            outputs,
            usage,
            warnings,
            transcript,
            success_pending: true,
            ..Attempt::default()
        };
    }
    // The judges get what the attempt has left after the agent's own spend.
    let judge = ModelJudge::new(
        &job,
        Arc::clone(&env.agents),
        Arc::clone(&env.clock),
        env.number,
        env.limits.less(&usage),
    );
    let mut a = check_success(&job, outputs, ctx, &judge).await;
    a.usage = usage.plus(&judge.spent());
    a.warnings.splice(0..0, warnings);
    a.transcript = transcript;
    a
}

/// An expression decision (or a notify gate): the first branch whose `when` holds, then
/// the node's `success`.
async fn decide_by_expression(
    job: &Job,
    ctx: RunContext,
    judge: &(dyn weft_criteria::JudgePort + Sync),
) -> Attempt {
    match decided_outputs(job, &ctx) {
        Ok(outputs) => check_success(job, outputs, ctx, judge).await,
        Err((class, message)) => failed(class, message),
    }
}

/// The attempt of a pure job ([`Job::is_pure`]), decided in place: what [`attempt`]
/// gives such a job (no `success` to check, so no judge and nothing to wait on) without
/// building the future, the judge or the agent request of one. The driver's pure nodes and
/// the light path of a map item (`map_item.rs`) use it.
pub(super) fn decide_pure(job: &Job, ctx: &RunContext) -> Attempt {
    if job.success.is_some() {
        return failed(
            FailureClass::Blocked,
            "a `success` block is not decided in place",
        );
    }
    match decided_outputs(job, ctx) {
        Ok(outputs) => Attempt {
            outputs,
            ..Attempt::default()
        },
        Err((class, message)) => failed(class, message),
    }
}

/// The outputs of an expression decision (`decision`: the first branch whose `when`
/// holds, else `default_branch`), or why the attempt failed (class, message).
fn decided_outputs(
    job: &Job,
    ctx: &RunContext,
) -> Result<Map<String, Value>, (FailureClass, String)> {
    let Some(spec) = &job.decision else {
        return Err((FailureClass::Blocked, "nothing to run".into()));
    };
    let mut chosen = None;
    for super::job::Branch {
        label,
        when,
        parsed,
    } in &spec.branches
    {
        let (value, error) = match parsed {
            Ok(expr) => match weft_agx::eval_bool(expr, ctx) {
                Ok(v) => (v, None),
                Err(e) => (false, Some(format!("`{when}`: {e}"))),
            },
            Err(e) => (false, Some(e.clone())),
        };
        if let Some(e) = error {
            return Err((
                FailureClass::ToolError,
                format!("decision branch `{label}`: {e}"),
            ));
        }
        if value {
            chosen = Some(label);
            break;
        }
    }
    let Some(label) = chosen.or(spec.default_branch.as_ref()) else {
        return Err((
            FailureClass::CriteriaFailed,
            "no decision branch matched and there is no default_branch".into(),
        ));
    };
    let mut outputs = Map::new();
    outputs.insert("decision".into(), Value::String(label.clone()));
    Ok(outputs)
}

/// The label of a decision by agent (DIGEST §1.8): a declared label wins; an empty or
/// absent answer falls through to `default_branch`; an undeclared label is
/// `criteria_failed`, or, with a `default_branch`, the default with warning `RT022`.
fn choose_label(
    spec: &DecisionSpec,
    answer: Option<&Value>,
) -> Result<(String, Option<String>), String> {
    let labels: Vec<&str> = spec.branches.iter().map(|b| b.label.as_str()).collect();
    let answer = answer.and_then(Value::as_str).map(str::trim).unwrap_or("");
    if labels.contains(&answer) {
        return Ok((answer.to_string(), None));
    }
    match (&spec.default_branch, answer.is_empty()) {
        (Some(d), true) => Ok((d.clone(), None)),
        (Some(d), false) => Ok((
            d.clone(),
            Some(format!(
                "RT022: the agent answered `{answer}`, not a declared branch ({}); default_branch `{d}` used",
                labels.join(", ")
            )),
        )),
        (None, true) => Err(format!(
            "the agent gave no decision and there is no default_branch (branches: {})",
            labels.join(", ")
        )),
        (None, false) => Err(format!(
            "the agent answered `{answer}`, not a declared branch ({})",
            labels.join(", ")
        )),
    }
}

/// The node's declared outputs against what the attempt produced: a required one missing
/// is `output_missing` (RT033); a wrong `type` (RT031) or `schema` (RT032) is
/// `validation_error`. `None` when all hold.
pub(super) fn check_outputs(
    job: &Job,
    outputs: &Map<String, Value>,
) -> Option<(FailureClass, String)> {
    if let Some((missing, _)) = job
        .outputs
        .iter()
        .find(|(n, required)| *required && outputs.get(n).is_none_or(Value::is_null))
    {
        return Some((
            FailureClass::OutputMissing,
            format!("required output `{missing}` was not produced"),
        ));
    }
    for t in &job.typed_outputs {
        if let Some(v) = outputs.get(&t.name).filter(|v| !v.is_null())
            && let Err((code, msg)) = t.check("output", v)
        {
            return Some((FailureClass::ValidationError, format!("{code}: {msg}")));
        }
    }
    None
}

/// The brief: `description`, then `instructions` and (decisions) `question`, each rendered
/// (`${{ }}` over the run's names and `inputs`), separated by blank lines.
fn render_brief(job: &Job, ctx: &RunContext) -> Result<Option<String>, String> {
    let render = |what: &str, t: &str| -> Result<String, String> {
        let tpl = weft_agx::parse_template(t).map_err(|e| format!("{what}: {e}"))?;
        weft_agx::render(&tpl, ctx).map_err(|e| format!("{what}: {e}"))
    };
    let mut parts = Vec::new();
    if let Some(d) = &job.description {
        parts.push(d.clone());
    }
    if let Some(t) = &job.instructions {
        parts.push(render("instructions", t)?);
    }
    if let Some(q) = job.decision.as_ref().and_then(|d| d.question.as_deref()) {
        parts.push(render("decision.question", q)?);
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
}

/// Evaluates the node's `success` block (if any) on an attempt's outputs; `human`
/// criteria have no answer yet (they stay pending).
pub(super) async fn check_success(
    job: &Job,
    outputs: Map<String, Value>,
    ctx: RunContext,
    judge: &(dyn weft_criteria::JudgePort + Sync),
) -> Attempt {
    check_success_with(
        job,
        outputs,
        ctx,
        &super::criteria::CriteriaAnswers::default(),
        judge,
    )
    .await
}

/// [`check_success`] with the answers `human` gives to `human` criteria.
pub(super) async fn check_success_with(
    job: &Job,
    outputs: Map<String, Value>,
    mut ctx: RunContext,
    human: &(dyn weft_criteria::HumanPort + Sync),
    judge: &(dyn weft_criteria::JudgePort + Sync),
) -> Attempt {
    let mut verdict = None;
    let mut failure = None;
    let mut criteria_feedback = String::new();
    let mut warnings = Vec::new();
    if let Some(block) = &job.success {
        let outputs_value = Value::Object(outputs.clone());
        ctx.outputs = Some(outputs_value.clone());
        let limits = weft_criteria::Limits {
            command_wrapper: job.criteria_wrapper.to_vec(),
            ..crate::tool_path::criteria_limits(&job.workspace)
        };
        let env = CriteriaEnv {
            workspace: &job.workspace,
            outputs: &outputs_value,
            context: &ctx,
            human,
            checkers: &*job.checkers,
            judge,
            limits: &limits,
        };
        let v = weft_criteria::evaluate(block, &env).await;
        // A criterion whose expression failed to evaluate gates like a failure; the error
        // is `RT062` (fatal to the run under `on_expression_error: fail`, DIGEST §2.6).
        for r in v.expression_errors() {
            let e = r.evidence.expression_error.as_deref().unwrap_or_default();
            warnings.push(format!("{RT062}criterion `{}`: {e}", r.id));
        }
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
                FailureClass::CriteriaFailed,
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
        warnings,
        ..Attempt::default()
    }
}

/// The feedback the next attempt receives (`retry.feedback`, `docs/engine.md`).
pub(super) fn feedback_for(job: &Job, failed: &Attempt) -> Option<String> {
    let summary = failed
        .failure
        .as_ref()
        .map(|(class, msg)| format!("The previous attempt failed ({class}): {msg}"));
    match job.feedback.as_str() {
        "none" => None,
        "failure_summary" => summary,
        "full_transcript" => match (&summary, &failed.transcript) {
            (Some(sum), Some(t)) => {
                let mut text = t.to_string();
                if text.len() > MAX_TRANSCRIPT_FEEDBACK {
                    let mut cut = MAX_TRANSCRIPT_FEEDBACK;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push('…');
                }
                Some(format!("{sum}\nTranscript of the failed attempt: {text}"))
            }
            _ => summary,
        },
        _ if !failed.criteria_feedback.is_empty() => Some(failed.criteria_feedback.clone()),
        _ => summary,
    }
}
