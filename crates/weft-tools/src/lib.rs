//! weft-tools: the built-in tools a node's agent may call, under the node's permissions.
//!
//! A model never touches the machine directly: it asks for a tool by its AGS logical name
//! (`file_read`, `file_write`, `file_edit`, `file_search`, `list_dir`, `shell_exec`) with
//! JSON arguments, and the [`Toolbox`] answers with a [`ToolOutcome`]. Before anything runs,
//! the arguments are checked against the tool's schema and every action the call would take
//! is decided by `weft_policy::decide` (graph ∩ node ∩ operator policy): a deny is returned to
//! the model as a refusal, an `ask` as a pending approval bound to the exact action. What a
//! model says in its arguments (`approved: true`, …) never changes a decision. Side-effecting
//! calls carry an idempotency key ([`CallId::key`]) and are journalled, so the same call of
//! the same attempt replayed after a crash returns what it did instead of doing it again.
//!
//! - [`spec`]: the tools' names, descriptions and argument schemas (what a model is offered).
//! - [`toolbox`]: dispatch, argument checks, the permission decision, the journal.
//! - [`files`]: the file tools, confined to the workspace (lexically and through symlinks).
//! - [`shell`]: `shell_exec`, an argv run without a shell inside `weft-sandbox`.
//! - [`journal`]: idempotency keys and the journal of side effects.
//! - [`host`]: tools the embedding program defines (host tools), on the same path.
//! - [`memory`]: host tools over a `weft-memory` store (`memory_search`, `memory_subgraph`,
//!   `memory_propose`, `memory_verify`), their writes carrying the caller's provenance.

mod env;
pub mod fetch;
mod fetcher;
pub mod files;
pub mod host;
pub mod journal;
pub mod memory;
pub mod shell;
pub mod spec;
pub mod toolbox;

pub use env::{Approvals, NoApprovals, ToolEnv, ToolError, ToolLimits};
pub use fetch::{FetchFuture, FetchRequest, FetchResponse, Fetcher};
pub use host::{HostCaller, HostFuture, HostTool, HostToolError};
pub use journal::{CallId, Journal, JournalFuture, MemoryJournal, arguments_digest};
pub use spec::{BUILTIN, ToolSpec, missing, offered, spec_of};
pub use toolbox::{ToolOutcome, Toolbox, gated};
