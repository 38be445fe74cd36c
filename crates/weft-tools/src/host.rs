//! Host tools: tools an embedder defines in its own process (a lookup in its own tables, a
//! call into its own service), offered to nodes beside the built-in ones.
//!
//! A host tool has the shape of a built-in one — a logical name, a description, a closed JSON
//! Schema of its arguments, whether it changes anything — and an async function that answers
//! a call. It is registered on the [`crate::Toolbox`] ([`crate::Toolbox::with_host_tool`]) and
//! takes the same path as every other tool: the arguments are checked against its schema, the
//! call is decided by the permission policy as `custom:call:host/NAME` (so a node must be
//! granted it and the operator's rules must allow it), a side-effecting call is journalled
//! under its idempotency key, then the function runs. A node is offered a host tool only when
//! its `requirements.tools` names it, like a built-in one.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use weft_policy::Action;

use crate::env::ToolError;
use crate::spec::BUILTIN;

/// The future a host tool's call returns.
pub type HostFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// Who calls a host tool: the run, node and attempt of the call and the acting identity,
/// taken from the call's environment (never from the model's arguments), so a tool that
/// writes can record its provenance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCaller {
    pub run: String,
    pub node: String,
    pub attempt: u32,
    pub actor: String,
}

/// A tool the embedding program provides.
pub trait HostTool: Send + Sync {
    /// The logical name a node's `requirements.tools` asks for.
    fn name(&self) -> &str;
    /// One line for the model.
    fn description(&self) -> &str;
    /// JSON Schema (draft 2020-12) of the arguments object.
    fn parameters(&self) -> Value;
    /// Whether a call changes anything (then it is journalled under its idempotency key).
    fn side_effect(&self) -> bool {
        false
    }
    /// Answers one call whose arguments fit [`HostTool::parameters`]; the result is data for
    /// the model (a string is handed over as text).
    fn call<'a>(&'a self, arguments: &'a Value) -> HostFuture<'a>;
    /// Answers one call knowing who calls; the toolbox calls this. By default the caller is
    /// ignored ([`HostTool::call`]); tools that record provenance override it.
    fn call_as<'a>(&'a self, arguments: &'a Value, caller: &'a HostCaller) -> HostFuture<'a> {
        let _ = caller;
        self.call(arguments)
    }
}

/// Why a host tool cannot be registered.
#[derive(Debug, thiserror::Error)]
pub enum HostToolError {
    #[error("host tool `{0}`: the name is taken by a built-in tool or another host tool")]
    Taken(String),
    #[error("host tool `{0}`: a name is `[a-z0-9_]+` and does not start with `mcp__`")]
    Name(String),
    #[error(transparent)]
    Schema(#[from] crate::spec::SchemaError),
}

/// Whether `name` may name a host tool: lowercase ASCII, digits and `_`, not an MCP name.
pub(crate) fn check_name(name: &str) -> Result<(), HostToolError> {
    let ok = !name.is_empty()
        && !name.starts_with("mcp__")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !ok {
        return Err(HostToolError::Name(name.to_owned()));
    }
    if BUILTIN.contains(&name) {
        return Err(HostToolError::Taken(name.to_owned()));
    }
    Ok(())
}

/// The one action a host tool's call takes: `custom:call:host/NAME`, with the tool and its
/// arguments bound in (an `ask` approval is for this exact call).
pub(crate) fn action(name: &str, arguments: &Value) -> Action {
    Action {
        scope: "custom".into(),
        action: "call".into(),
        target: Some(format!("host/{name}")),
        argv: None,
        tool: Some(name.into()),
        arguments: Some(arguments.clone()),
    }
}
