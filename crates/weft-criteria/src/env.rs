//! What evaluation needs from the engine: [`CriteriaEnv`] (workspace, outputs, AGX context,
//! the [`HumanPort`] and [`ExternalCheckers`] capabilities) and its [`Limits`].
//!
//! The ports are traits so the engine plugs in its own (a suspended node for humans, its
//! registry of checkers); [`crate::doubles`] has map-backed test doubles.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Bounds on what one criterion may consume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes kept from each of a command's stdout and stderr (the rest is read and
    /// discarded, so the child never blocks on a full pipe). Default 64 KiB.
    pub max_output_bytes: usize,
    /// Largest input a `regex` criterion matches; larger inputs fail the criterion.
    /// Default 1 MiB.
    pub max_regex_input: usize,
    /// Compiled size limit of any regex (the `regex` crate's `size_limit`). Default 1 MiB.
    pub max_regex_size: usize,
    /// Time limit of a `command` or `external` criterion without `timeout_seconds`.
    /// Default 300 s.
    pub default_command_timeout: Duration,
    /// Largest `schema_ref` file read. Default 4 MiB.
    pub max_schema_bytes: u64,
    /// Directory entries a `file_exists` glob may visit before giving up. Default 100 000.
    pub max_walk_entries: usize,
    /// `PATH` given to commands. Default `/usr/local/bin:/usr/bin:/bin`; a fixed value
    /// rather than the engine's own, so a criterion behaves the same on every host.
    pub command_path: String,
    /// A program and arguments put before `/bin/sh -c <command>` of a `command` criterion,
    /// so it runs confined: under `weft run --sandbox`, the sandbox helper with a read-only
    /// confinement of the workspace (`weft sandbox-exec --policy JSON --`), so what an
    /// earlier step planted (a tool in `.weft/bin`, a `core.fsmonitor` in `.git/config`)
    /// runs, if at all, with no write access and no network. Empty (the default): run
    /// directly.
    pub command_wrapper: Vec<String>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_output_bytes: 64 * 1024,
            max_regex_input: 1024 * 1024,
            max_regex_size: 1024 * 1024,
            default_command_timeout: Duration::from_secs(300),
            max_schema_bytes: 4 * 1024 * 1024,
            max_walk_entries: 100_000,
            command_path: "/usr/local/bin:/usr/bin:/bin".to_string(),
            command_wrapper: Vec::new(),
        }
    }
}

/// A question for a person (`human` criterion).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanRequest {
    /// The criterion's id.
    pub criterion_id: String,
    /// The criterion's description.
    pub description: String,
    /// The prompt, rendered from its AGX template.
    pub prompt: String,
    /// Roles allowed to answer (empty: anyone the engine allows).
    pub roles: Vec<String>,
}

/// A person's answer, as far as it is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum HumanAnswer {
    /// Confirmed.
    Approved {
        /// Who answered.
        reviewer: Option<String>,
        /// What they said.
        comment: Option<String>,
    },
    /// Refused.
    Rejected {
        /// Who answered.
        reviewer: Option<String>,
        /// What they said (fed back to the next attempt).
        comment: Option<String>,
    },
    /// No answer yet: the engine suspends the node.
    Pending,
}

/// How `human` criteria reach people. The engine implements it (recording the question and
/// answering `Pending` until a person replies); must not block.
pub trait HumanPort {
    /// The current answer to `request`.
    fn ask(&self, request: &HumanRequest) -> HumanAnswer;
}

/// What an external checker decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalVerdict {
    /// The check held.
    pub passed: bool,
    /// The checker's explanation, recorded as evidence.
    pub detail: String,
}

/// A running external check.
pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = ExternalVerdict> + Send + 'a>>;

/// The harness's registry of named checkers (`external` criteria).
pub trait ExternalCheckers {
    /// Starts checker `name` with `params`; `None` when no such checker is registered,
    /// which fails the criterion (fail closed: never skipped, never passed).
    fn check<'a>(
        &'a self,
        name: &'a str,
        params: &'a Map<String, Value>,
    ) -> Option<CheckFuture<'a>>;
}

/// What a judge is asked (`llm_judge`): one sample of one criterion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// The criterion's id.
    pub criterion_id: String,
    /// The criterion's description.
    pub description: String,
    /// The rubric, rendered.
    pub rubric: String,
    /// The values of the criterion's `inputs` expressions, in order.
    pub inputs: Vec<Value>,
    /// The outputs under judgement.
    pub outputs: Value,
    /// This sample's number, 1-based, and how many the criterion takes.
    pub sample: u32,
    pub samples: u32,
    /// The criterion's `judge_intelligence` block, when it has one.
    pub judge_intelligence: Option<Value>,
}

/// A judge's answer to one sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeScore {
    /// 0–1; anything else fails the criterion with an error.
    pub score: f64,
    /// The judge's explanation, recorded as evidence.
    pub reasoning: Option<String>,
    /// Which model judged (`provider/model`), recorded as evidence.
    pub judged_by: Option<String>,
}

/// A running judgement: a score, or why there is none (recorded as the error).
pub type JudgeFuture<'a> = Pin<Box<dyn Future<Output = Result<JudgeScore, String>> + Send + 'a>>;

/// How `llm_judge` criteria reach a model. The engine implements it over its agent port,
/// a fresh model call per sample (never the producing attempt's conversation).
pub trait JudgePort {
    /// Scores one sample.
    fn judge<'a>(&'a self, request: &'a JudgeRequest) -> JudgeFuture<'a>;
}

/// The judge of a build or a place with no model: every judgement is an error, so a
/// required `llm_judge` criterion fails closed.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoJudge;

impl JudgePort for NoJudge {
    fn judge<'a>(&'a self, _request: &'a JudgeRequest) -> JudgeFuture<'a> {
        Box::pin(async { Err("no model is available to judge here".to_string()) })
    }
}

/// Everything a block is evaluated against. The `Sync` bounds keep [`crate::evaluate`]'s
/// future `Send`, so the engine can spawn it on a multi-threaded runtime.
#[derive(Clone, Copy)]
pub struct CriteriaEnv<'a> {
    /// The node's workspace root, an existing directory.
    pub workspace: &'a Path,
    /// The node's outputs, an object keyed by output name.
    pub outputs: &'a Value,
    /// Names for `expression`, `regex.target` and `human.prompt`.
    pub context: &'a (dyn weft_agx::Context + Sync),
    /// Where `human` criteria go.
    pub human: &'a (dyn HumanPort + Sync),
    /// Where `external` criteria go.
    pub checkers: &'a (dyn ExternalCheckers + Sync),
    /// Where `llm_judge` criteria go.
    pub judge: &'a (dyn JudgePort + Sync),
    /// Bounds.
    pub limits: &'a Limits,
}

impl CriteriaEnv<'_> {
    /// Output `name`, if the node produced it (`null` counts as not produced).
    pub fn output(&self, name: &str) -> Option<&Value> {
        self.outputs.get(name).filter(|v| !v.is_null())
    }
}
