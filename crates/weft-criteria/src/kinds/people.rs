//! The kinds answered outside this process: `human` (through [`crate::HumanPort`]) and
//! `external` (through [`crate::ExternalCheckers`]).

use serde_json::Map;
use weft_agx::{parse_template, render};

use super::memory::expression_failure;
use super::{error, field, time_limit};
use crate::env::{CriteriaEnv, HumanAnswer, HumanRequest};
use crate::model::Criterion;
use crate::verdict::{Evidence, Outcome};

/// `human`: renders the prompt and asks; `Pending` until a person answers.
pub fn human(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let template = match field(c.prompt.as_deref(), "prompt", c) {
        Ok(t) => t,
        Err(e) => return *e,
    };
    let prompt = match parse_template(template)
        .map_err(|e| e.to_string())
        .and_then(|t| render(&t, env.context).map_err(|e| e.to_string()))
    {
        Ok(p) => p,
        Err(e) => return expression_failure("prompt cannot be rendered", e),
    };
    let request = HumanRequest {
        criterion_id: c.id.clone(),
        description: c.description.clone(),
        prompt,
        roles: c.roles.clone(),
    };
    match env.human.ask(&request) {
        HumanAnswer::Approved { reviewer, comment } => (
            Outcome::Passed,
            Evidence {
                summary: "approved by a reviewer".to_string(),
                reviewer,
                detail: comment,
                ..Evidence::default()
            },
        ),
        HumanAnswer::Rejected { reviewer, comment } => (
            Outcome::Failed,
            Evidence {
                summary: "rejected by a reviewer".to_string(),
                reviewer,
                detail: comment,
                ..Evidence::default()
            },
        ),
        HumanAnswer::Pending => (
            Outcome::Pending,
            Evidence::summary("waiting for a reviewer's answer"),
        ),
    }
}

/// `external`: runs the registered checker under the criterion's time limit. An unknown
/// checker is an `Error` (fail closed).
pub async fn external(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let name = match field(c.check.as_deref(), "check", c) {
        Ok(n) => n,
        Err(e) => return *e,
    };
    let empty = Map::new();
    let params = c.params.as_ref().unwrap_or(&empty);
    let Some(running) = env.checkers.check(name, params) else {
        return error(format!(
            "no external checker named '{name}' is registered; the criterion fails closed"
        ));
    };
    let limit = time_limit(c, env);
    match tokio::time::timeout(limit, running).await {
        Ok(v) => (
            if v.passed {
                Outcome::Passed
            } else {
                Outcome::Failed
            },
            Evidence {
                summary: format!(
                    "checker '{name}' {}",
                    if v.passed { "passed" } else { "failed" }
                ),
                detail: Some(v.detail),
                ..Evidence::default()
            },
        ),
        Err(_) => (
            Outcome::Failed,
            Evidence {
                summary: format!("checker '{name}' did not answer within {limit:?}"),
                timed_out: true,
                ..Evidence::default()
            },
        ),
    }
}
