//! Dispatch of one tool call: the arguments checked against the tool's schema, every action
//! the call would take decided by the permission policy, the journal consulted for
//! side-effecting tools, then the tool run.
//!
//! Order matters: a call whose arguments do not fit is refused before anything is decided
//! (`validation_error`); a deny or an unapproved `ask` stops the call before it touches
//! anything; a call that was journalled under its idempotency key is answered from the journal
//! (`replayed: true`) instead of being done again. Approvals come only from [`ToolEnv::approvals`]
//! (the operator's side), never from the model's arguments: the schemas are closed, so an
//! `approved` member is a validation error, and the approval digest drops it anyway.

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Value, json};
use weft_core::FailureClass;
use weft_policy::{Action, Approval, Decision, Verdict, decide};

pub use crate::env::{Approvals, NoApprovals, ToolEnv, ToolError, ToolLimits};
use crate::host::{HostTool, HostToolError};
use crate::journal::arguments_digest;
pub use crate::spec::SchemaError;
use crate::spec::{BUILTIN, spec_of};
use crate::{files, shell};

/// What a call came to.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// The tool ran (or its journalled result was returned: `replayed`).
    Ok { result: Value, replayed: bool },
    /// It could not run: `validation_error` (arguments), `tool_error` (the file system, the
    /// command), `blocked` (no sandbox).
    Failed {
        class: FailureClass,
        message: String,
    },
    /// The policy refused an action of the call.
    Denied { decision: Decision },
    /// An action needs a person's approval, bound to `approval.digest`.
    NeedsApproval {
        approval: Approval,
        decision: Decision,
    },
}

impl ToolOutcome {
    /// A failed outcome.
    pub fn failed(class: FailureClass, message: impl Into<String>) -> ToolOutcome {
        ToolOutcome::Failed {
            class,
            message: message.into(),
        }
    }

    /// The outcome as data for the model: the result, or a labelled refusal.
    pub fn to_model(&self) -> (Value, bool) {
        match self {
            ToolOutcome::Ok { result, .. } => (result.clone(), false),
            ToolOutcome::Failed { class, message } => {
                (json!({"error": class, "message": message}), true)
            }
            ToolOutcome::Denied { decision } => (
                json!({"error": FailureClass::PermissionDenied, "message": decision.reason,
                    "source": decision.source}),
                true,
            ),
            ToolOutcome::NeedsApproval { approval, decision } => (
                json!({"error": "needs_approval", "message": decision.reason,
                    "approval": approval.digest}),
                true,
            ),
        }
    }
}

/// The built-in tools with their compiled argument schemas, and the host tools the embedder
/// registered (`crate::host`).
pub struct Toolbox {
    validators: BTreeMap<&'static str, Validator>,
    host: BTreeMap<String, (Arc<dyn HostTool>, Validator)>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.validators.keys().collect::<Vec<_>>())
            .field("host", &self.host.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    /// Compiles the schemas of every built-in tool.
    pub fn new() -> Result<Toolbox, SchemaError> {
        let mut validators = BTreeMap::new();
        for name in BUILTIN {
            let Some(spec) = spec_of(name) else { continue };
            validators.insert(*name, compile(name, &spec.parameters)?);
        }
        Ok(Toolbox {
            validators,
            host: BTreeMap::new(),
        })
    }

    /// Adds a host tool (`crate::host`): its name must be free and its schema must compile.
    pub fn with_host_tool(mut self, tool: Arc<dyn HostTool>) -> Result<Toolbox, HostToolError> {
        let name = tool.name().to_owned();
        crate::host::check_name(&name)?;
        if self.host.contains_key(&name) {
            return Err(HostToolError::Taken(name));
        }
        let validator = compile(&name, &tool.parameters())?;
        self.host.insert(name, (tool, validator));
        Ok(self)
    }

    /// The host tool named `name`, when one is registered.
    pub fn host_tool(&self, name: &str) -> Option<&Arc<dyn HostTool>> {
        self.host.get(name).map(|(tool, _)| tool)
    }

    /// The names of the registered host tools.
    pub fn host_names(&self) -> impl Iterator<Item = &str> {
        self.host.keys().map(String::as_str)
    }

    /// Runs the call of tool `name` with `arguments` (see the module docs).
    pub async fn call(&self, name: &str, arguments: &Value, env: &ToolEnv<'_>) -> ToolOutcome {
        if let Some((tool, validator)) = self.host.get(name) {
            if let Some(refused) = check_arguments(name, validator, arguments) {
                return refused;
            }
            let actions = vec![crate::host::action(name, arguments)];
            let caller = crate::host::HostCaller {
                run: env.call.run.clone(),
                node: env.call.node.clone(),
                attempt: env.call.attempt,
                actor: env.identity.subject.clone(),
            };
            return gated(
                name,
                arguments,
                actions,
                tool.side_effect(),
                env,
                tool.call_as(arguments, &caller),
            )
            .await;
        }
        let (Some(validator), Some(spec)) = (self.validators.get(name), spec_of(name)) else {
            let host: Vec<&str> = self.host_names().collect();
            return ToolOutcome::failed(
                FailureClass::ValidationError,
                format!(
                    "unknown tool `{name}`; the tools are {}",
                    BUILTIN
                        .iter()
                        .copied()
                        .chain(host)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        };
        if let Some(refused) = check_arguments(name, validator, arguments) {
            return refused;
        }
        let side_effect = spec.side_effect;
        let key = env.call.key();
        gated(
            name,
            arguments,
            actions(name, arguments),
            side_effect,
            env,
            async {
                match name {
                    "file_read" => files::read(arguments, env),
                    "file_write" => files::write(arguments, env),
                    "file_edit" => files::edit(arguments, env),
                    "list_dir" => files::list(arguments, env),
                    "file_search" => files::search(arguments, env),
                    "shell_exec" => shell::exec(arguments, env, &key).await,
                    "http_fetch" => crate::fetch::fetch(arguments, env).await,
                    _ => Err(ToolError::tool(format!("tool `{name}` is not built"))),
                }
            },
        )
        .await
    }
}

/// A tool's argument schema, compiled.
fn compile(name: &str, schema: &Value) -> Result<Validator, SchemaError> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| SchemaError {
            tool: name.to_owned(),
            message: e.to_string(),
        })
}

/// A `validation_error` outcome when `arguments` do not fit the tool's schema.
fn check_arguments(name: &str, validator: &Validator, arguments: &Value) -> Option<ToolOutcome> {
    let errors: Vec<String> = validator
        .iter_errors(arguments)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{e} at {at}")
            }
        })
        .collect();
    (!errors.is_empty()).then(|| {
        ToolOutcome::failed(
            FailureClass::ValidationError,
            format!("arguments of `{name}`: {}", errors.join("; ")),
        )
    })
}

/// The path every tool call takes once its arguments are known to fit, built-in or not (MCP
/// tools come through here too, from `weft-mcp`): each of `actions` decided by the policy
/// (a deny or an unapproved `ask` stops the call before `run` starts), then, for a
/// side-effecting tool, the journal consulted under the call's idempotency key (a journalled
/// call is answered from it, `replayed: true`), then `run`, whose result is journalled.
pub async fn gated(
    name: &str,
    arguments: &Value,
    actions: Vec<Action>,
    side_effect: bool,
    env: &ToolEnv<'_>,
    run: impl Future<Output = Result<Value, ToolError>>,
) -> ToolOutcome {
    for action in actions {
        let decision = decide(&action, &env.context());
        // On the record before it takes effect: a refusal leaves a trace, an allow says
        // which rule let the call through.
        if let Err(e) = env
            .journal
            .decided(decision_record(name, &action, &decision))
            .await
        {
            return ToolOutcome::failed(
                FailureClass::ToolError,
                format!(
                    "the policy decision on this call could not be logged, so the call was not made: {e}"
                ),
            );
        }
        match decision.decision {
            Verdict::Allow => {}
            Verdict::Deny => return ToolOutcome::Denied { decision },
            Verdict::Ask => match decision.approval.clone() {
                Some(a) if env.approvals.approved(&a.digest) => {}
                Some(approval) => return ToolOutcome::NeedsApproval { approval, decision },
                // An ask always carries its binding; without one nobody can approve it.
                None => return ToolOutcome::Denied { decision },
            },
        }
    }
    let key = env.call.key();
    if side_effect && let Some(entry) = env.journal.get(&key) {
        return replay(name, arguments, entry);
    }
    match run.await {
        Ok(result) => {
            if side_effect {
                let entry = json!({"tool": name, "arguments": arguments_digest(arguments),
                    "result": result});
                // Kept before the model sees the result: a crash after this point replays it.
                if let Err(e) = env.journal.put(&key, entry).await {
                    return ToolOutcome::failed(
                        FailureClass::ToolError,
                        format!("the call ran but its result could not be journalled: {e}"),
                    );
                }
            }
            ToolOutcome::Ok {
                result,
                replayed: false,
            }
        }
        Err(e) => ToolOutcome::failed(e.class, e.message),
    }
}

/// What the log keeps of one decision: the tool, the action as `scope:action:target`, the
/// verdict, the layer or rule that decided, and why.
pub fn decision_record(tool: &str, action: &Action, decision: &weft_policy::Decision) -> Value {
    let target = action
        .argv
        .as_ref()
        .map(|argv| argv.join(" "))
        .or_else(|| action.target.clone())
        .unwrap_or_default();
    let rule = match &decision.source {
        weft_policy::Source::Resource => "resource".to_string(),
        weft_policy::Source::Node => "node".to_string(),
        weft_policy::Source::Graph { holder } => holder.clone(),
        weft_policy::Source::Rule { index, permission } => {
            format!("policy.rules[{index}] {permission}")
        }
        weft_policy::Source::Default => "default".to_string(),
    };
    json!({
        "tool": tool,
        "action": format!("{}:{}:{}", action.scope, action.action, target),
        "decision": decision.decision,
        "rule": rule,
        "reason": decision.reason,
    })
}

/// The journalled result of this call slot, when it was the same call.
fn replay(name: &str, arguments: &Value, entry: Value) -> ToolOutcome {
    if entry.get("tool").and_then(Value::as_str) != Some(name)
        || entry.get("arguments").and_then(Value::as_str) != Some(&arguments_digest(arguments))
    {
        // The same slot of the same attempt did something else before: doing this one
        // under the same key would make the key ambiguous.
        return ToolOutcome::failed(
            FailureClass::ToolError,
            "this call slot of the attempt was journalled with another call; make a new call",
        );
    }
    ToolOutcome::Ok {
        result: entry.get("result").cloned().unwrap_or(Value::Null),
        replayed: true,
    }
}

/// The actions a (validated) call takes, each with the tool and its arguments bound in.
fn actions(name: &str, arguments: &Value) -> Vec<Action> {
    let path = |default: &str| {
        arguments
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    let fs = |action: &str, target: String| Action {
        scope: "fs".into(),
        action: action.into(),
        target: Some(target),
        argv: None,
        tool: Some(name.into()),
        arguments: Some(arguments.clone()),
    };
    match name {
        "file_read" | "list_dir" | "file_search" => vec![fs("read", path("."))],
        "file_write" => vec![fs("write", path("."))],
        // Editing reads the file (the match count is an answer about its content) and writes it.
        "file_edit" => vec![fs("read", path(".")), fs("write", path("."))],
        "http_fetch" => vec![Action {
            scope: "net".into(),
            action: "fetch".into(),
            target: arguments
                .get("url")
                .and_then(Value::as_str)
                .map(str::to_owned),
            argv: None,
            tool: Some(name.into()),
            arguments: Some(arguments.clone()),
        }],
        "shell_exec" => vec![Action {
            scope: "shell".into(),
            action: "exec".into(),
            target: arguments
                .get("command")
                .and_then(Value::as_str)
                .map(str::to_owned),
            argv: None,
            tool: Some(name.into()),
            arguments: Some(arguments.clone()),
        }],
        _ => Vec::new(),
    }
}
