//! AGS 1.0 success criteria (SPEC §10): every criterion kind, `mode` and
//! `evaluation_order`, and a [`Verdict`] with evidence that [`feedback`] turns into text for
//! the next attempt.
//!
//! ```no_run
//! # async fn demo(env: weft_criteria::CriteriaEnv<'_>) -> Result<(), weft_criteria::BlockError> {
//! use serde_json::json;
//! let block = weft_criteria::SuccessBlock::from_value(&json!({
//!     "criteria": [{"id": "tests", "kind": "command", "run": "cargo test",
//!                   "description": "The tests pass"}]
//! }))?;
//! let verdict = weft_criteria::evaluate(&block, &env).await;
//! if !verdict.passed {
//!     println!("{}", weft_criteria::feedback(&verdict, &block));
//! }
//! # Ok(()) }
//! ```
//!
//! The rules, defaults, cost classes and the verdict format are in `docs/criteria.md`.

mod combine;
pub mod doubles;
mod env;
mod evaluate;
mod feedback;
mod kinds;
mod model;
mod paths;
pub mod process;
mod verdict;

pub use combine::{Decision, Plan, Tally, cost_class, decide};
pub use env::{
    CheckFuture, CriteriaEnv, ExternalCheckers, ExternalVerdict, HumanAnswer, HumanPort,
    HumanRequest, JudgeFuture, JudgePort, JudgeRequest, JudgeScore, Limits, NoJudge,
};
pub use evaluate::evaluate;
pub use feedback::{FEEDBACK_STREAM_CHARS, feedback};
/// Compiles a declared JSON Schema under weft's rules (`kinds::schema::compile`).
pub use kinds::schema::compile as compile_schema;
pub use model::{
    BlockError, Criterion, DEFAULT_JUDGE_THRESHOLD, EvaluationOrder, Kind, MAX_JUDGE_SAMPLES, Mode,
    Severity, SuccessBlock,
};
pub use paths::PathError;
pub use verdict::{
    CriterionResult, Evidence, MAX_SCHEMA_VIOLATIONS, Outcome, OutputHead, SchemaViolation,
    VERDICT_FORMAT, Verdict,
};
