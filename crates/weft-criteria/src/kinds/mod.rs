//! One module per criterion kind; [`check`] dispatches. Each check returns an [`Outcome`]
//! and its [`Evidence`]; none panics or returns `Err`: a problem evaluating a criterion is
//! itself a result (`Error`), so the verdict always records every criterion.

mod command;
mod files;
pub(crate) mod judge;
mod memory;
mod people;
pub(crate) mod schema;

use std::time::Duration;

use regex::{Regex, RegexBuilder};

use crate::env::CriteriaEnv;
use crate::model::{Criterion, Kind};
use crate::verdict::{Evidence, Outcome};

/// Evaluates one criterion.
pub async fn check(criterion: &Criterion, env: &CriteriaEnv<'_>) -> (Outcome, Evidence) {
    match criterion.kind {
        Kind::Command => command::check(criterion, env).await,
        Kind::FileExists => files::check(criterion, env),
        Kind::ArtifactPresent => memory::artifact_present(criterion, env),
        Kind::JsonSchema => schema::check(criterion, env),
        Kind::Regex => memory::regex(criterion, env),
        Kind::Expression => memory::expression(criterion, env),
        Kind::Human => people::human(criterion, env),
        Kind::External => people::external(criterion, env).await,
        Kind::LlmJudge => judge::check(criterion, env).await,
    }
}

/// An `Error` result with a summary.
fn error(summary: impl Into<String>) -> (Outcome, Evidence) {
    (Outcome::Error, Evidence::summary(summary))
}

/// A criterion field the kind needs, or an `Error` result naming it.
fn field<'c, T: ?Sized>(
    value: Option<&'c T>,
    name: &str,
    criterion: &Criterion,
) -> Result<&'c T, Box<(Outcome, Evidence)>> {
    value.ok_or_else(|| {
        Box::new(error(format!(
            "criterion '{}' ({}) has no '{name}'",
            criterion.id,
            criterion.kind.as_str()
        )))
    })
}

/// Compiles a pattern with AGS flags (`i`, `m`, `s`, `x`) on the linear-time `regex` crate,
/// bounded by `size_limit` so a hostile pattern cannot take unbounded memory.
fn build_regex(pattern: &str, flags: &str, size_limit: usize) -> Result<Regex, String> {
    if let Some(bad) = flags.chars().find(|f| !"imsx".contains(*f)) {
        return Err(format!("unknown regex flag '{bad}' (allowed: i, m, s, x)"));
    }
    RegexBuilder::new(pattern)
        .case_insensitive(flags.contains('i'))
        .multi_line(flags.contains('m'))
        .dot_matches_new_line(flags.contains('s'))
        .ignore_whitespace(flags.contains('x'))
        .size_limit(size_limit)
        .dfa_size_limit(size_limit)
        .build()
        .map_err(|e| format!("invalid pattern: {e}"))
}

/// The criterion's time limit: `timeout_seconds`, else the default. A value too large
/// for a `Duration` saturates (the author asked for "very long", not for the default); a
/// non-positive or NaN value, which `SuccessBlock::check` rejects, falls back to the default.
fn time_limit(c: &Criterion, env: &CriteriaEnv<'_>) -> Duration {
    match c.timeout_seconds {
        Some(t) if t > 0.0 => Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX),
        _ => env.limits.default_command_timeout,
    }
}

/// At most `max` characters of `text`, with an ellipsis when shortened.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
