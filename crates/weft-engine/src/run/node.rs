//! Executing one node: its inputs resolved once, one attempt (a decision's branches, or the
//! `exec` command with its time limit and declared outputs), the node's `success` criteria,
//! and the feedback a retry passes to the next attempt. The retry decision itself is the
//! driver's (`mod.rs`); what happens once retries are exhausted is `fallback.rs`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use weft_criteria::doubles::{MapCheckers, MapHumanPort};
use weft_criteria::{CriteriaEnv, Limits};

use super::eval_condition;
use super::job::Job;
use crate::backoff::Sleeper;
use crate::context::RunContext;
use crate::exec::{parse_outputs, run_command};

/// One attempt's result.
#[derive(Debug, Default)]
pub(super) struct Attempt {
    pub(super) outputs: Map<String, Value>,
    pub(super) verdict: Option<Value>,
    /// (failure class, message)
    pub(super) failure: Option<(String, String)>,
    /// `weft_criteria::feedback` of a failed verdict (empty when none).
    pub(super) criteria_feedback: String,
    /// An `after_outputs` checkpoint comes first: `success` is not evaluated yet.
    pub(super) success_pending: bool,
    /// The human checkpoints this attempt has passed: (stage, index of the last one).
    pub(super) passed: Option<(String, usize)>,
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
pub(super) async fn attempt(job: Arc<Job>, retry: Option<Retry>, ctx: RunContext) -> Attempt {
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
    if job.defer_success {
        // `after_outputs` checkpoints see the outputs before `success` (`checkpoint.rs`).
        return Attempt {
            outputs,
            success_pending: true,
            ..Attempt::default()
        };
    }
    check_success(&job, outputs, ctx).await
}

/// Evaluates the node's `success` block (if any) on an attempt's outputs; `human`
/// criteria have no answer (they stay pending).
pub(super) async fn check_success(
    job: &Job,
    outputs: Map<String, Value>,
    ctx: RunContext,
) -> Attempt {
    check_success_with(job, outputs, ctx, &MapHumanPort::default()).await
}

/// [`check_success`] with the answers `human` gives to `human` criteria.
pub(super) async fn check_success_with(
    job: &Job,
    outputs: Map<String, Value>,
    mut ctx: RunContext,
    human: &(dyn weft_criteria::HumanPort + Sync),
) -> Attempt {
    let mut verdict = None;
    let mut failure = None;
    let mut criteria_feedback = String::new();
    if let Some(block) = &job.success {
        let outputs_value = Value::Object(outputs.clone());
        ctx.outputs = Some(outputs_value.clone());
        let checkers = MapCheckers::default();
        let limits = Limits::default();
        let env = CriteriaEnv {
            workspace: &job.workspace,
            outputs: &outputs_value,
            context: &ctx,
            human,
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
        "failure_summary" | "full_transcript" => summary,
        _ if !failed.criteria_feedback.is_empty() => Some(failed.criteria_feedback.clone()),
        _ => summary,
    }
}
