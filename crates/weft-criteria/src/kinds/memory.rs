//! The in-memory kinds: `artifact_present`, `regex` and `expression`.

use serde_json::Value;
use weft_agx::{eval, eval_bool, parse};

use super::{build_regex, error, field, shorten};
use crate::env::CriteriaEnv;
use crate::model::Criterion;
use crate::verdict::{Evidence, Outcome};

/// `artifact_present`: the output exists and is not null, `""`, `[]` or `{}`.
pub fn artifact_present(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let name = match field(c.output.as_deref(), "output", c) {
        Ok(n) => n,
        Err(e) => return *e,
    };
    let empty = match env.output(name) {
        None => return failed(format!("output '{name}' was not produced")),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    if empty {
        failed(format!("output '{name}' is empty"))
    } else {
        (
            Outcome::Passed,
            Evidence::summary(format!("output '{name}' is present")),
        )
    }
}

fn failed(summary: String) -> (Outcome, Evidence) {
    (Outcome::Failed, Evidence::summary(summary))
}

/// An AGX failure: `Error`, with the message also in `expression_error`.
pub(super) fn expression_failure(what: &str, message: String) -> (Outcome, Evidence) {
    (
        Outcome::Error,
        Evidence {
            summary: format!("{what}: {message}"),
            expression_error: Some(message),
            ..Evidence::default()
        },
    )
}

/// Text a regex is matched against: strings as they are, anything else as compact JSON.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `regex`: the pattern over `target`'s value or the output's value; `negate` inverts.
pub fn regex(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let pattern = match field(c.pattern.as_deref(), "pattern", c) {
        Ok(p) => p,
        Err(e) => return *e,
    };
    let re = match build_regex(pattern, &c.flags, env.limits.max_regex_size) {
        Ok(re) => re,
        Err(e) => return error(e),
    };
    let (text, source) = if let Some(target) = &c.target {
        let expr = match parse(target) {
            Ok(expr) => expr,
            Err(e) => return expression_failure("target does not parse", e.to_string()),
        };
        match eval(&expr, env.context) {
            Ok(v) => (as_text(&v), "target".to_string()),
            Err(e) => return expression_failure("target evaluation error", e.to_string()),
        }
    } else {
        let name = match field(c.output.as_deref(), "output|target", c) {
            Ok(n) => n,
            Err(e) => return *e,
        };
        match env.output(name) {
            Some(v) => (as_text(v), format!("output '{name}'")),
            None => return failed(format!("output '{name}' was not produced")),
        }
    };
    let bytes = text.len() as u64;
    if text.len() > env.limits.max_regex_input {
        // Matching a prefix could turn a `negate` criterion into a false pass, so an
        // oversized input fails the criterion instead of being truncated.
        return (
            Outcome::Failed,
            Evidence {
                summary: format!(
                    "{source} is {bytes} bytes, over the regex input cap of {} bytes; not matched",
                    env.limits.max_regex_input
                ),
                input_bytes: Some(bytes),
                ..Evidence::default()
            },
        );
    }
    let found = re.find(&text).map(|m| shorten(m.as_str(), 200));
    let passed = found.is_some() != c.negate;
    let summary = match (&found, c.negate) {
        (Some(_), false) => format!("{source} matches /{pattern}/"),
        (None, false) => format!("{source} does not match /{pattern}/"),
        (Some(_), true) => format!("{source} matches /{pattern}/, which it must not"),
        (None, true) => format!("{source} does not match /{pattern}/, as required"),
    };
    (
        if passed {
            Outcome::Passed
        } else {
            Outcome::Failed
        },
        Evidence {
            summary,
            matched_text: found,
            input_bytes: Some(bytes),
            ..Evidence::default()
        },
    )
}

/// `expression`: `true` passes, `false` fails, anything else (a non-boolean, an evaluation
/// or parse error) is an `Error` carrying `expression_error`.
pub fn expression(c: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    let src = match field(c.expr.as_deref(), "expr", c) {
        Ok(s) => s,
        Err(e) => return *e,
    };
    let expr = match parse(src) {
        Ok(expr) => expr,
        Err(e) => return expression_failure("expression does not parse", e.to_string()),
    };
    match eval_bool(&expr, env.context) {
        Ok(true) => (
            Outcome::Passed,
            Evidence::summary(format!("`{src}` is true")),
        ),
        Ok(false) => failed(format!("`{src}` is false")),
        Err(e) => expression_failure("expression evaluation error", e.to_string()),
    }
}
