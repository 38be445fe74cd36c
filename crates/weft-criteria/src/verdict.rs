//! The result of evaluating a success block: [`Verdict`], one [`CriterionResult`] per
//! criterion in declared order, and the [`Evidence`] each carries.
//!
//! The serialized form is versioned ([`VERDICT_FORMAT`]) because it goes into run records,
//! which outlive the code that wrote them; `docs/criteria.md` describes it.

use serde::{Deserialize, Serialize};

use crate::model::{Kind, Severity};

/// Version of the serialized verdict format.
pub const VERDICT_FORMAT: u32 = 1;

/// What happened to one criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The check held.
    Passed,
    /// The check ran and did not hold.
    Failed,
    /// The check could not be carried out (bad pattern, refused path, evaluation error,
    /// unknown checker, ...). Gates like a failure.
    Error,
    /// Skipped by `cheapest_first` because the block's outcome was already fixed.
    NotEvaluated,
    /// A person has not answered yet (`human`).
    Pending,
    /// This build cannot evaluate the kind (`llm_judge`). Gates like a failure, never a pass.
    Unsupported,
}

/// Captured output of a stream: the first bytes, and whether more was discarded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputHead {
    /// The kept bytes, decoded lossily as UTF-8.
    pub text: String,
    /// How many bytes the stream produced in all.
    pub total_bytes: u64,
    /// `true` when `total_bytes` exceeded the cap and only the head was kept.
    pub truncated: bool,
}

/// One JSON Schema violation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaViolation {
    /// JSON pointer into the validated value.
    pub instance_path: String,
    /// JSON pointer into the schema (the keyword that failed).
    pub schema_path: String,
    /// The validator's message, shortened.
    pub message: String,
}

/// What a criterion's check observed. `summary` is always set; the other fields only when
/// they apply and the criterion has `record_evidence: true`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// One line saying why the criterion passed or not.
    pub summary: String,
    /// `command`: the exit code (absent when killed by a signal or timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// `command`: the time limit was reached and the process group killed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// `command`: stdout head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<OutputHead>,
    /// `command`: stderr head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<OutputHead>,
    /// `file_exists`: the workspace-relative file that satisfied the criterion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_file: Option<String>,
    /// `file_exists`: matches that were refused or too small, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
    /// `json_schema`: the violations (at most [`MAX_SCHEMA_VIOLATIONS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_errors: Vec<SchemaViolation>,
    /// `expression`, `regex` target, `human` prompt: the AGX evaluation error. Callers with
    /// `policy.on_expression_error: false` turn exactly these into a plain `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression_error: Option<String>,
    /// `regex`, `command`: the first match (shortened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_text: Option<String>,
    /// `regex`: the size of the matched input in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<u64>,
    /// `human`: who answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// `human` comment, `external` checker's explanation, `llm_judge`: the reasoning of
    /// the sample whose score is the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `llm_judge`: every sample's score, in the order taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<f64>,
    /// `llm_judge`: the models that judged (`provider/model`), one per sample when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judged_by: Vec<String>,
}

/// At most this many schema violations are kept per criterion.
pub const MAX_SCHEMA_VIOLATIONS: usize = 20;

impl Evidence {
    /// Evidence with only a summary.
    pub fn summary(text: impl Into<String>) -> Evidence {
        Evidence {
            summary: text.into(),
            ..Evidence::default()
        }
    }

    /// Drops the details (for `record_evidence: false`), keeping the summary and the
    /// expression error, which callers need to apply `policy.on_expression_error`.
    pub fn summary_only(self) -> Evidence {
        Evidence {
            summary: self.summary,
            expression_error: self.expression_error,
            ..Evidence::default()
        }
    }
}

/// The result of one criterion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// The criterion's id.
    pub id: String,
    /// Its kind.
    pub kind: Kind,
    /// Its severity.
    pub severity: Severity,
    /// What happened.
    pub outcome: Outcome,
    /// What was observed.
    pub evidence: Evidence,
    /// Wall time of the check (0 when not evaluated).
    pub duration_ms: u64,
}

/// The verdict on a success block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// [`VERDICT_FORMAT`].
    pub format: u32,
    /// The block passed: the node may succeed.
    pub passed: bool,
    /// The outcome waits on a person: the engine suspends the node and evaluates again when
    /// the answer arrives. Never `true` together with `passed`.
    pub pending_human: bool,
    /// One result per criterion, in declared order whatever the evaluation order.
    pub results: Vec<CriterionResult>,
}

impl Verdict {
    /// The criteria whose result is an AGX evaluation error (see
    /// [`Evidence::expression_error`]).
    pub fn expression_errors(&self) -> impl Iterator<Item = &CriterionResult> {
        self.results
            .iter()
            .filter(|r| r.evidence.expression_error.is_some())
    }

    /// The result for criterion `id`.
    pub fn result(&self, id: &str) -> Option<&CriterionResult> {
        self.results.iter().find(|r| r.id == id)
    }
}
