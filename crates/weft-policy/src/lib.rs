//! weft-policy: permissions and operator policy, pure (no IO, no clock, no async).
//!
//! - [`permission`]: AGS permission strings (`scope:action[:target]`) as a typed model.
//! - [`path`], [`resource`]: actions and their normalised resources (lexical paths that
//!   cannot escape the workspace, lower-cased origins, `shlex` argv).
//! - [`pattern`]: a permission compiled into a glob matcher over normalised resources.
//! - [`grants`], [`document`]: what a node and the containers around it request.
//! - [`config`]: the operator's `[policy]` rules from `weft.toml`; [`fold`]: the spelling
//!   variants of fs names its refusing rules cover too.
//! - [`decide`]: graph ∩ node ∩ policy → allow / ask / deny, with the rule that matched, the
//!   normalised resource and, for `ask`, the approval binding.
//!
//! Format and semantics: docs/permissions.md.
#![warn(clippy::disallowed_methods)]

pub mod canonical;
pub mod config;
pub mod decide;
pub mod document;
mod error;
pub mod fold;
pub mod grants;
pub mod path;
pub mod pattern;
pub mod permission;
pub mod resource;

pub use config::{ConfigError, OperatorPolicy, Rule, Verdict};
pub use decide::{Approval, Context, Decision, Identity, Source, decide};
pub use document::{DocumentError, NodeGrants, node_grants, node_grants_at, node_requirements};
pub use error::Error;
pub use grants::{Grants, Network, WorkspaceAccess};
pub use path::{PathError, Workspace};
pub use pattern::{Matcher, PatternError};
pub use permission::{Permission, PermissionError, Scope};
pub use resource::{Action, Resource, ResourceError};
