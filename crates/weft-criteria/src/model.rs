//! The typed success block: [`SuccessBlock`] and [`Criterion`], deserialized from a node's
//! `success` JSON (AGS 1.0 §10, DIGEST §1.12).
//!
//! The document was validated before it reaches this crate, but [`SuccessBlock::from_value`]
//! still checks every rule it relies on (kind-specific required fields, `count` for `n_of`)
//! and returns a [`BlockError`] instead of panicking, so a bug upstream degrades into a typed
//! error. Unknown members (`x-` extensions, fields irrelevant to the kind) are ignored, as the
//! schema allows.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

// The judge's limits (`llm_judge`, `kinds/judge.rs`): part of the model because a block's
// own check refuses a `samples` over the cap before anything runs.

/// The threshold of a criterion that declares none (AGS default).
pub const DEFAULT_JUDGE_THRESHOLD: f64 = 0.8;
/// The most samples weft takes for one criterion (the spec sets no bound; each is a paid
/// model call).
pub const MAX_JUDGE_SAMPLES: u32 = 9;

/// How required criteria combine (`mode`, default `all`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every required criterion passes.
    #[default]
    All,
    /// At least one required criterion passes.
    Any,
    /// At least `count` required criteria pass.
    NOf,
}

/// `evaluation_order` (default `declared`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationOrder {
    /// In document order, every criterion evaluated.
    #[default]
    Declared,
    /// By cost class, stopping once the outcome is fixed (see `docs/criteria.md`).
    CheapestFirst,
}

/// Whether a criterion gates (`severity`, default `required`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Combined by `mode`.
    #[default]
    Required,
    /// Evaluated and recorded, never gates.
    Advisory,
}

/// The criterion kinds of AGS 1.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Run a shell command.
    Command,
    /// A workspace file (or glob match) exists.
    FileExists,
    /// A declared output is present and non-empty.
    ArtifactPresent,
    /// An output validates against a JSON Schema.
    JsonSchema,
    /// A regular expression matches an output or an expression's value.
    Regex,
    /// An AGX expression is `true`.
    Expression,
    /// A model judges the output against a rubric (through [`crate::JudgePort`]).
    LlmJudge,
    /// A person confirms.
    Human,
    /// A harness-registered checker.
    External,
}

impl Kind {
    /// The kind's name as written in documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::FileExists => "file_exists",
            Kind::ArtifactPresent => "artifact_present",
            Kind::JsonSchema => "json_schema",
            Kind::Regex => "regex",
            Kind::Expression => "expression",
            Kind::LlmJudge => "llm_judge",
            Kind::Human => "human",
            Kind::External => "external",
        }
    }
}

fn default_true() -> bool {
    true
}

/// One criterion. Kind-specific fields are optional here; [`SuccessBlock::from_value`]
/// checks that the ones a kind requires are present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// Unique within the block.
    pub id: String,
    /// What is checked.
    pub kind: Kind,
    /// What must be true, in prose; fed back to the next attempt on failure.
    pub description: String,
    /// `required` (default) or `advisory`.
    #[serde(default)]
    pub severity: Severity,
    /// Whether detailed evidence is kept (default `true`).
    #[serde(default = "default_true")]
    pub record_evidence: bool,
    /// Time limit in seconds (`command`, `external`).
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// `command`: the command line, run with `sh -c`.
    #[serde(default)]
    pub run: Option<String>,
    /// `command`: workspace-relative working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// `command`: the exit code that passes (default 0).
    #[serde(default)]
    pub expect_exit_code: Option<i64>,
    /// `command`: a regex stdout must match.
    #[serde(default)]
    pub expect_stdout_matches: Option<String>,
    /// `file_exists`: workspace-relative path or glob.
    #[serde(default)]
    pub path: Option<String>,
    /// `file_exists`: minimum size in bytes (default 0).
    #[serde(default)]
    pub min_bytes: Option<u64>,
    /// `artifact_present`, `json_schema`, `regex`: the declared output inspected.
    #[serde(default)]
    pub output: Option<String>,
    /// `json_schema`: inline schema.
    #[serde(default)]
    pub schema: Option<Value>,
    /// `json_schema`: workspace-relative schema file.
    #[serde(default)]
    pub schema_ref: Option<String>,
    /// `regex`: an AGX expression producing the text to match.
    #[serde(default)]
    pub target: Option<String>,
    /// `regex`: the pattern.
    #[serde(default)]
    pub pattern: Option<String>,
    /// `regex`: any of `i`, `m`, `s`, `x` (default empty).
    #[serde(default)]
    pub flags: String,
    /// `regex`: pass when the pattern does not match.
    #[serde(default)]
    pub negate: bool,
    /// `expression`: the AGX expression.
    #[serde(default)]
    pub expr: Option<String>,
    /// `llm_judge`: the rubric template.
    #[serde(default)]
    pub rubric: Option<String>,
    /// `llm_judge`: AGX expressions whose values the judge sees besides the outputs.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// `llm_judge`: the median score that passes, 0–1 (default 0.8).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// `llm_judge`: how many times the judge scores; the median counts (default 1,
    /// at most [`MAX_JUDGE_SAMPLES`]).
    #[serde(default)]
    pub samples: Option<u64>,
    /// `llm_judge`: the judge's `intelligence` block (default: the node's).
    #[serde(default)]
    pub judge_intelligence: Option<Value>,
    /// `human`: the prompt template.
    #[serde(default)]
    pub prompt: Option<String>,
    /// `human`: roles allowed to answer.
    #[serde(default)]
    pub roles: Vec<String>,
    /// `external`: the checker's registered name.
    #[serde(default)]
    pub check: Option<String>,
    /// `external`: arguments for the checker.
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}

/// A node's `success` block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuccessBlock {
    /// One-line summary of what success means.
    #[serde(default)]
    pub summary: Option<String>,
    /// How required criteria combine.
    #[serde(default)]
    pub mode: Mode,
    /// For `n_of`: how many required criteria must pass.
    #[serde(default)]
    pub count: Option<u64>,
    /// `declared` or `cheapest_first`.
    #[serde(default)]
    pub evaluation_order: EvaluationOrder,
    /// The criteria, at least one.
    pub criteria: Vec<Criterion>,
}

/// Why a `success` value is not a usable block.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BlockError {
    /// The JSON does not have the block's shape (wrong type, unknown kind, ...).
    #[error("malformed success block: {0}")]
    Malformed(String),
    /// `criteria` is empty.
    #[error("a success block needs at least one criterion")]
    NoCriteria,
    /// Two criteria share an id.
    #[error("duplicate criterion id '{0}'")]
    DuplicateId(String),
    /// A field the kind requires is missing.
    #[error("criterion '{id}' ({kind}) needs '{field}'")]
    MissingField {
        /// The criterion.
        id: String,
        /// Its kind.
        kind: &'static str,
        /// The missing field (or alternatives, `a|b`).
        field: &'static str,
    },
    /// `n_of` without a `count` of at least 1.
    #[error("mode n_of needs a count of at least 1")]
    MissingCount,
    /// A value out of range (non-positive timeout, bad regex flags).
    #[error("criterion '{id}': {reason}")]
    Invalid {
        /// The criterion.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

impl SuccessBlock {
    /// Deserializes and checks a `success` block.
    pub fn from_value(value: &Value) -> Result<SuccessBlock, BlockError> {
        let block: SuccessBlock = serde_json::from_value(value.clone())
            .map_err(|e| BlockError::Malformed(e.to_string()))?;
        block.check()?;
        Ok(block)
    }

    /// Checks the rules evaluation relies on.
    pub fn check(&self) -> Result<(), BlockError> {
        if self.criteria.is_empty() {
            return Err(BlockError::NoCriteria);
        }
        if self.mode == Mode::NOf && self.count.is_none_or(|c| c < 1) {
            return Err(BlockError::MissingCount);
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &self.criteria {
            if !seen.insert(c.id.as_str()) {
                return Err(BlockError::DuplicateId(c.id.clone()));
            }
            c.check()?;
        }
        Ok(())
    }
}

impl Criterion {
    fn check(&self) -> Result<(), BlockError> {
        let missing = |field| BlockError::MissingField {
            id: self.id.clone(),
            kind: self.kind.as_str(),
            field,
        };
        let required: &[(&'static str, bool)] = match self.kind {
            Kind::Command => &[("run", self.run.is_some())],
            Kind::FileExists => &[("path", self.path.is_some())],
            Kind::ArtifactPresent => &[("output", self.output.is_some())],
            Kind::JsonSchema => &[
                ("output", self.output.is_some()),
                (
                    "schema|schema_ref",
                    self.schema.is_some() || self.schema_ref.is_some(),
                ),
            ],
            Kind::Regex => &[
                ("pattern", self.pattern.is_some()),
                (
                    "output|target",
                    self.output.is_some() || self.target.is_some(),
                ),
            ],
            Kind::Expression => &[("expr", self.expr.is_some())],
            Kind::LlmJudge => &[("rubric", self.rubric.is_some())],
            Kind::Human => &[("prompt", self.prompt.is_some())],
            Kind::External => &[("check", self.check.is_some())],
        };
        if let Some((field, _)) = required.iter().find(|(_, present)| !present) {
            return Err(missing(field));
        }
        if let Some(t) = self.timeout_seconds
            && !(t.is_finite() && t > 0.0)
        {
            return Err(BlockError::Invalid {
                id: self.id.clone(),
                reason: format!("timeout_seconds must be a positive number, got {t}"),
            });
        }
        if let Some(bad) = self.flags.chars().find(|f| !"imsx".contains(*f)) {
            return Err(BlockError::Invalid {
                id: self.id.clone(),
                reason: format!("unknown regex flag '{bad}' (allowed: i, m, s, x)"),
            });
        }
        if let Some(t) = self.threshold
            && !(0.0..=1.0).contains(&t)
        {
            return Err(BlockError::Invalid {
                id: self.id.clone(),
                reason: format!("threshold must be between 0 and 1, got {t}"),
            });
        }
        if let Some(n) = self.samples
            && !(1..=u64::from(MAX_JUDGE_SAMPLES)).contains(&n)
        {
            return Err(BlockError::Invalid {
                id: self.id.clone(),
                reason: format!(
                    "samples must be 1–{} (weft caps judge samples), got {n}",
                    MAX_JUDGE_SAMPLES
                ),
            });
        }
        Ok(())
    }
}
