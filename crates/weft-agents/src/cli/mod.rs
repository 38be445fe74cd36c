//! Coding-agent CLIs as providers: Claude Code (`claude -p --output-format stream-json
//! --verbose`) and Codex (`codex exec --json`), configured in `weft.toml` as
//! `[providers.<name>]` with `kind = "claude-code"` or `"codex"` and a `command` path, and
//! routed to by tier like any provider (`docs/agents.md` §6).
//!
//! A CLI runs its own agent loop with its own tools, so weft's binding is below it: each run
//! is a child process INSIDE weft's sandbox ([`run`]: `weft_sandbox` with the node's
//! confinement from `weft_sandbox::from_grants`), and the model agent refuses to run it
//! without one (`blocked`, never unconfined). Its approvals are never bypassed ([`argv`]).
//! Its event stream is read into a provider-neutral answer ([`stream`]) and its outputs come
//! back as a JSON object at the end of its final message, checked like `emit_output`
//! ([`deliver`]).

pub mod argv;
pub mod deliver;
pub mod run;
pub mod stream;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use weft_sandbox::Sandbox;

pub use run::run_cli;

/// Which CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliKind {
    /// Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI Codex (`codex`).
    Codex,
}

impl CliKind {
    /// The `kind` in `weft.toml`.
    pub fn parse(s: &str) -> Option<CliKind> {
        match s {
            "claude-code" => Some(CliKind::ClaudeCode),
            "codex" => Some(CliKind::Codex),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CliKind::ClaudeCode => "claude-code",
            CliKind::Codex => "codex",
        }
    }

    /// The variable the CLI reads its API key from when it runs non-interactively: where
    /// weft puts a key read from a keyring reference.
    pub fn key_variable(self) -> &'static str {
        match self {
            CliKind::ClaudeCode => "ANTHROPIC_API_KEY",
            CliKind::Codex => "CODEX_API_KEY",
        }
    }

    /// The event stream it writes.
    pub fn dialect(self) -> stream::Dialect {
        match self {
            CliKind::ClaudeCode => stream::Dialect::ClaudeCode,
            CliKind::Codex => stream::Dialect::Codex,
        }
    }
}

/// A `[providers.<name>]` table with a CLI `kind`.
#[derive(Clone, Debug, PartialEq)]
pub struct CliConfig {
    pub name: String,
    pub kind: CliKind,
    /// The CLI's executable (absolute path): it is readable and executable in the sandbox.
    pub command: PathBuf,
    /// The variable that holds the CLI's API key, passed through to it under the same name
    /// (the only variable passed besides `PATH`, `HOME` and `LANG`); `None`: none.
    pub api_key_env: Option<String>,
    /// A keyring reference holding the CLI's API key (exclusive with `api_key_env`), passed
    /// to it as [`CliKind::key_variable`].
    pub api_key_keyring: Option<crate::KeyringRef>,
    /// Extra read-only paths the CLI needs to start (its installation, e.g. a Node.js
    /// package directory); chosen by the operator, never by a document or a model.
    pub read_paths: Vec<PathBuf>,
}

/// Where CLI runs are confined: the machine's sandbox and the document whose node grants
/// give each run's confinement.
#[derive(Clone, Debug)]
pub struct CliSandbox {
    pub sandbox: Arc<Sandbox>,
    pub document: Arc<Value>,
}
