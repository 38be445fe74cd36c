//! Feedback for the next attempt (`retry.feedback: failed_criteria`): each failed required
//! criterion's description and its evidence (AGS §10, DIGEST §1.12).
//!
//! The text holds only what the checks observed (command output, schema errors, reviewer
//! comments); nothing from the engine's environment is added. Long output is cut to
//! [`FEEDBACK_STREAM_CHARS`] per stream so one noisy command cannot crowd out the prompt.

use std::fmt::Write;

use crate::model::{Severity, SuccessBlock};
use crate::verdict::{CriterionResult, Outcome, OutputHead, Verdict};

/// Characters of each of stdout and stderr quoted in feedback.
pub const FEEDBACK_STREAM_CHARS: usize = 4000;

/// The feedback text; empty when no required criterion failed.
///
/// "Failed" means `failed`, `error` or `unsupported`; `pending` and `not_evaluated`
/// criteria are not reported (nothing is known against them).
pub fn feedback(verdict: &Verdict, block: &SuccessBlock) -> String {
    let failed: Vec<&CriterionResult> = verdict
        .results
        .iter()
        .filter(|r| r.severity == Severity::Required)
        .filter(|r| {
            matches!(
                r.outcome,
                Outcome::Failed | Outcome::Error | Outcome::Unsupported
            )
        })
        .collect();
    if failed.is_empty() {
        return String::new();
    }
    let mut out = String::from("The previous attempt did not meet these success criteria:\n");
    for (n, r) in failed.iter().enumerate() {
        let description = block
            .criteria
            .iter()
            .find(|c| c.id == r.id)
            .map_or("", |c| c.description.as_str());
        let outcome = match r.outcome {
            Outcome::Error => "could not be checked",
            Outcome::Unsupported => "unsupported",
            _ => "failed",
        };
        let _ = write!(
            out,
            "\n{}. {} [{}, {}, {outcome}]\n   Evidence: {}\n",
            n + 1,
            description,
            r.id,
            r.kind.as_str(),
            r.evidence.summary
        );
        write_details(&mut out, r);
    }
    out
}

fn write_details(out: &mut String, r: &CriterionResult) {
    let e = &r.evidence;
    for v in &e.schema_errors {
        let at = if v.instance_path.is_empty() {
            "(root)"
        } else {
            v.instance_path.as_str()
        };
        let _ = writeln!(out, "   - at {at}: {}", v.message);
    }
    if let Some(err) = &e.expression_error {
        let _ = writeln!(out, "   Expression error: {err}");
    }
    if let Some(detail) = &e.detail {
        let _ = writeln!(out, "   Detail: {detail}");
    }
    if !e.rejected.is_empty() {
        let _ = writeln!(out, "   Rejected: {}", e.rejected.join("; "));
    }
    write_stream(out, "stdout", e.stdout.as_ref());
    write_stream(out, "stderr", e.stderr.as_ref());
}

fn write_stream(out: &mut String, name: &str, head: Option<&OutputHead>) {
    let Some(head) = head.filter(|h| !h.text.is_empty()) else {
        return;
    };
    let (text, cut) = match head.text.char_indices().nth(FEEDBACK_STREAM_CHARS) {
        Some((at, _)) => (&head.text[..at], true),
        None => (head.text.as_str(), head.truncated),
    };
    let note = if cut {
        format!(" (first part of {} bytes)", head.total_bytes)
    } else {
        String::new()
    };
    let _ = writeln!(out, "   {name}{note}:");
    for line in text.lines() {
        let _ = writeln!(out, "   | {line}");
    }
}
