//! What one tool call is decided and run against ([`ToolEnv`]: the workspace, the policy
//! and grants, approvals, the journal, the sandbox and HTTP client, the limits) and why a
//! tool gives no result ([`ToolError`]): vocabulary the tools (`files`, `shell`, `fetch`,
//! host tools) and the dispatch over them (`toolbox`, which re-exports it) share, below
//! both.

use std::collections::BTreeSet;

use weft_core::FailureClass;
use weft_policy::{
    Action, Context, Identity, NodeGrants, OperatorPolicy, Verdict, Workspace, decide,
};
use weft_sandbox::Sandbox;

use crate::journal::{CallId, Journal};

/// Bounds on what one call may read, list, search or print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolLimits {
    /// Most bytes `file_read` returns per call.
    pub max_read_bytes: u64,
    /// Most entries `list_dir` returns.
    pub max_dir_entries: usize,
    /// Most directory entries `file_search` visits.
    pub max_walk_entries: usize,
    /// Most files and matching lines `file_search` returns (each).
    pub max_matches: usize,
    /// Files larger than this are not searched for `contains`.
    pub max_search_file_bytes: u64,
    /// Compiled size limit of a `contains` regular expression.
    pub max_regex_bytes: usize,
    /// `shell_exec`: the default and the largest wall-clock limit, in seconds.
    pub default_shell_seconds: u64,
    pub max_shell_seconds: u64,
    /// `shell_exec`: stdout + stderr bytes after which the process group is killed.
    pub max_shell_output: u64,
    /// `shell_exec`: bytes of stdout and of stderr returned to the model (each).
    pub shell_head_bytes: usize,
    /// `http_fetch`: the most body bytes returned, and the time limit in seconds.
    pub max_fetch_bytes: u64,
    pub fetch_seconds: u64,
}

impl Default for ToolLimits {
    fn default() -> ToolLimits {
        ToolLimits {
            max_read_bytes: 64 * 1024,
            max_dir_entries: 1000,
            max_walk_entries: 20_000,
            max_matches: 200,
            max_search_file_bytes: 1024 * 1024,
            max_regex_bytes: 1024 * 1024,
            default_shell_seconds: 60,
            max_shell_seconds: 600,
            max_shell_output: 1024 * 1024,
            shell_head_bytes: 16 * 1024,
            max_fetch_bytes: 256 * 1024,
            fetch_seconds: 30,
        }
    }
}

/// The approvals the operator has granted, by approval digest (`sha256:…`).
pub trait Approvals: Send + Sync {
    /// Whether the action bound to `digest` was approved.
    fn approved(&self, digest: &str) -> bool;
}

/// No approvals: every `ask` stays pending.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApprovals;

impl Approvals for NoApprovals {
    fn approved(&self, _digest: &str) -> bool {
        false
    }
}

impl Approvals for BTreeSet<String> {
    fn approved(&self, digest: &str) -> bool {
        self.contains(digest)
    }
}

/// What a call is decided and run against.
#[derive(Clone, Copy)]
pub struct ToolEnv<'a> {
    /// The workspace root (absolute); every path is relative to it.
    pub workspace: &'a Workspace,
    /// The operator's `[policy]` rules.
    pub policy: &'a OperatorPolicy,
    /// The node's requirements and its containers'; `None` decides on the policy alone.
    pub grants: Option<&'a NodeGrants>,
    /// Who acts (bound into approvals).
    pub identity: &'a Identity,
    /// What the operator approved.
    pub approvals: &'a dyn Approvals,
    /// Results of side-effecting calls, by idempotency key.
    pub journal: &'a dyn Journal,
    /// Which call this is (its idempotency key).
    pub call: &'a CallId,
    /// The OS sandbox `shell_exec` runs in; `None`: `shell_exec` is `blocked`.
    pub sandbox: Option<&'a Sandbox>,
    /// The HTTP client `http_fetch` uses; `None`: `http_fetch` is `blocked`.
    pub fetcher: Option<&'a dyn crate::fetcher::Fetcher>,
    pub limits: ToolLimits,
}

impl ToolEnv<'_> {
    pub(crate) fn context(&self) -> Context<'_> {
        Context {
            workspace: self.workspace,
            policy: self.policy,
            node: self.grants,
            identity: self.identity,
        }
    }

    /// Whether `action` is allowed outright (no approval pending): used to filter what a
    /// search shows, file by file.
    pub(crate) fn allows(&self, action: &Action) -> bool {
        let d = decide(action, &self.context());
        match d.decision {
            Verdict::Allow => true,
            Verdict::Ask => d
                .approval
                .as_ref()
                .is_some_and(|a| self.approvals.approved(&a.digest)),
            Verdict::Deny => false,
        }
    }
}

/// Why a tool did not produce a result (class and message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    pub class: FailureClass,
    pub message: String,
}

impl ToolError {
    pub fn tool(message: impl Into<String>) -> ToolError {
        ToolError {
            class: FailureClass::ToolError,
            message: message.into(),
        }
    }

    /// The run cannot give the tool what it needs (a sandbox, an HTTP client).
    pub fn blocked(message: impl Into<String>) -> ToolError {
        ToolError {
            class: FailureClass::Blocked,
            message: message.into(),
        }
    }
}
