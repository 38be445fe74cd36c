//! The built-in tools in the model agent's loop (`weft-tools`): which tools a node is offered
//! and how each call is run under the node's permissions.
//!
//! A node is offered the built-in tools its `requirements.tools` names (beside `emit_output`).
//! Every call goes through the [`Toolbox`] with the node's grants (its own requirements and its
//! containers'), the operator's `[policy]` rules, the operator's identity, the operator's
//! approvals and the journal, under the call id `{run, node, attempt, index}` (its idempotency
//! key). What the model is answered is data: a result, or a labelled refusal.
//!
//! A node is also offered the host tools (`weft_tools::host`) its `requirements.tools` names
//! that the embedder registered with [`AgentTools::with_host_tool`]: tools defined by the
//! program that embeds weft, decided as `custom:call:host/NAME` on the same path.
//!
//! A node that lists MCP servers in `requirements.mcp_servers` is also offered their tools
//! (`mcp__SERVER__TOOL`, with the server's input schema; [`AgentTools::mcp`], `weft-mcp`),
//! each call decided as `mcp:call:SERVER/TOOL` on the same path. A required server that is not
//! configured, cannot start or cannot list its tools makes the attempt `blocked` (`RT012`).
//!
//! The engine does not hand its run id to agents yet, so the run part of the key is the one
//! this setup is built with ([`AgentTools::run`]): an embedder that resumes a run builds the
//! agent with that run's id.
//!
//! Inside a run the journal is the engine's ([`AgentRequest::journal`]): side-effecting
//! results go to the run's log as `tool_effect` events through its port, and the attempt
//! part of the key is the attempt whose call slots this one continues (the one a dead
//! process abandoned, on resume; `docs/engine.md` §3p). [`AgentTools::journal`] serves
//! requests made outside a run.

use std::sync::Arc;

use serde_json::Value;
use weft_engine::agent::journal::{AttemptJournal, PolicyDecision, ToolEffect};
use weft_engine::agent::{AgentRequest, Failure};
use weft_mcp::{McpServers, OfferedTool};
use weft_policy::{
    Identity, NodeGrants, OperatorPolicy, Workspace, node_grants_at, node_requirements,
};
use weft_sandbox::Sandbox;
use weft_tools::{
    Approvals, CallId, HostTool, HostToolError, Journal, JournalFuture, ToolEnv, ToolLimits,
    ToolOutcome, Toolbox, spec_of,
};

use crate::FailureClass;
use crate::chat::ToolDef;

/// What the model agent needs to run built-in tools for the nodes of one document.
#[derive(Clone)]
pub struct AgentTools {
    /// The AGS document (the nodes' requirements).
    pub document: Arc<Value>,
    /// The operator's `[policy]` rules.
    pub policy: Arc<OperatorPolicy>,
    /// Who acts (the operator, never the document or the model).
    pub identity: Identity,
    /// What the operator approved.
    pub approvals: Arc<dyn Approvals>,
    /// Results of side-effecting calls, by idempotency key.
    pub journal: Arc<dyn Journal>,
    /// The sandbox `shell_exec` runs in (`None`: `shell_exec` fails `blocked`).
    pub sandbox: Option<Arc<Sandbox>>,
    /// The client `http_fetch` uses (`None`: `http_fetch` fails `blocked`).
    pub fetcher: Option<Arc<dyn weft_tools::Fetcher>>,
    /// The run the idempotency keys belong to.
    pub run: String,
    pub limits: ToolLimits,
    /// The MCP servers of `weft.toml` (`None`: a node that requires one is `blocked`).
    pub mcp: Option<Arc<McpServers>>,
    toolbox: Arc<Toolbox>,
}

impl std::fmt::Debug for AgentTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTools")
            .field("run", &self.run)
            .field("identity", &self.identity)
            .field("policy_version", &self.policy.version())
            .field("sandbox", &self.sandbox.is_some())
            .field("mcp", &self.mcp.as_ref().map(|m| m.config().servers.len()))
            .finish_non_exhaustive()
    }
}

/// One attempt's tools: what is offered, and the context its calls are decided in.
pub struct AttemptTools {
    /// The offered built-in tools, by logical name.
    pub offered: Vec<&'static str>,
    /// The offered host tools, by logical name, with their specs.
    pub host: Vec<ToolDef>,
    /// The offered MCP tools (`mcp__SERVER__TOOL`).
    pub mcp: Vec<OfferedTool>,
    grants: NodeGrants,
    workspace: Workspace,
    calls: u32,
}

impl AgentTools {
    /// Tools for the nodes of `document`, decided by `policy` for `identity`, with no
    /// approvals, the given journal, no sandbox and the default limits.
    pub fn new(
        document: Arc<Value>,
        policy: Arc<OperatorPolicy>,
        identity: Identity,
        journal: Arc<dyn Journal>,
        run: impl Into<String>,
    ) -> Result<AgentTools, weft_tools::toolbox::SchemaError> {
        Ok(AgentTools {
            document,
            policy,
            identity,
            approvals: Arc::new(weft_tools::NoApprovals),
            journal,
            sandbox: None,
            fetcher: None,
            run: run.into(),
            limits: ToolLimits::default(),
            mcp: None,
            toolbox: Arc::new(Toolbox::new()?),
        })
    }

    /// Adds a host tool (`weft_tools::host`): offered to the nodes whose
    /// `requirements.tools` names it. Its name must be free and its schema must compile.
    pub fn with_host_tool(mut self, tool: Arc<dyn HostTool>) -> Result<AgentTools, HostToolError> {
        let toolbox = match Arc::try_unwrap(self.toolbox) {
            Ok(toolbox) => toolbox,
            // Shared with a clone of this setup: build this one its own toolbox.
            Err(shared) => shared
                .host_names()
                .filter_map(|n| shared.host_tool(n).cloned())
                .try_fold(Toolbox::new()?, Toolbox::with_host_tool)?,
        };
        self.toolbox = Arc::new(toolbox.with_host_tool(tool)?);
        Ok(self)
    }

    /// RT012: the node's non-optional `requirements.tools` that this build cannot offer
    /// (none for a node or call the document does not have, such as a judge's).
    pub fn missing_for(&self, node: &str) -> Vec<String> {
        let requirements = node_requirements(&self.document, node);
        weft_tools::spec::missing_with(requirements.as_ref().and_then(|r| r.get("tools")), |n| {
            self.toolbox.host_tool(n).is_some()
        })
    }

    /// The tools of `request`'s node, or a `blocked` failure when its requirements cannot be
    /// judged (a node the document does not have, a malformed permission, a workspace that
    /// is not an absolute UTF-8 path) or a required MCP server is unavailable (`RT012`). A
    /// node that asks for no built-in tool and no MCP server gets `None`.
    pub async fn for_attempt(
        &self,
        request: &AgentRequest,
    ) -> Result<Option<AttemptTools>, Failure> {
        // An instance address (`fix[2].test`) names the node by its last id.
        let id = request.node.rsplit('.').next().unwrap_or(&request.node);
        let id = id.split('[').next().unwrap_or(id);
        let requirements = node_requirements(&self.document, id);
        let (offered, host) = weft_tools::spec::offered_with(
            requirements.as_ref().and_then(|r| r.get("tools")),
            |n| self.toolbox.host_tool(n).is_some(),
        );
        let host: Vec<ToolDef> = host
            .iter()
            .filter_map(|n| self.toolbox.host_tool(n))
            .map(|t| ToolDef {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                parameters: t.parameters(),
            })
            .collect();
        let servers = mcp_servers(requirements.as_ref().and_then(|r| r.get("mcp_servers")));
        if offered.is_empty() && host.is_empty() && servers.is_empty() {
            return Ok(None);
        }
        // Grants by the full address: two bodies may each have a node with this id.
        let address = request
            .node
            .split("/judge/")
            .next()
            .unwrap_or(&request.node);
        let grants = node_grants_at(&self.document, address)
            .map_err(|e| Failure::new(FailureClass::Blocked, format!("requirements: {e}")))?;
        let workspace = std::path::absolute(&request.workspace)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned))
            .and_then(|p| Workspace::new(&p).ok())
            .ok_or_else(|| {
                Failure::new(
                    FailureClass::Blocked,
                    "the project directory is not an absolute UTF-8 path",
                )
            })?;
        let mcp = match (&self.mcp, servers.is_empty()) {
            (_, true) => Vec::new(),
            (Some(mcp), false) => mcp.offer(&servers).await.map_err(|e| {
                Failure::new(
                    FailureClass::Blocked,
                    format!("RT012: a required MCP server: {e}"),
                )
            })?,
            (None, false) => {
                return Err(Failure::new(
                    FailureClass::Blocked,
                    format!(
                        "RT012: the node requires MCP servers ({}) and none is configured ([mcp.servers] in weft.toml)",
                        servers.join(", ")
                    ),
                ));
            }
        };
        Ok(Some(AttemptTools {
            offered,
            host,
            mcp,
            grants,
            workspace,
            calls: 0,
        }))
    }

    /// Runs one call of an offered tool as the attempt's next call.
    pub async fn call(
        &self,
        attempt: &mut AttemptTools,
        request: &AgentRequest,
        name: &str,
        arguments: &Value,
    ) -> ToolOutcome {
        attempt.calls += 1;
        let id = CallId {
            run: self.run.clone(),
            node: request.node.clone(),
            attempt: request.journal.key_attempt().unwrap_or(request.attempt),
            index: attempt.calls,
        };
        let logged = Logged {
            journal: &request.journal,
            node: &request.node,
            attempt: request.attempt,
        };
        let journal: &dyn Journal = if request.journal.is_connected() {
            &logged
        } else {
            self.journal.as_ref()
        };
        // What a person approved for this node in this run (the engine's `tool_approval`
        // waits), besides what the embedder's store holds.
        let approvals = Granted {
            digests: &request.approvals,
            store: self.approvals.as_ref(),
        };
        let env = ToolEnv {
            workspace: &attempt.workspace,
            policy: &self.policy,
            grants: Some(&attempt.grants),
            identity: &self.identity,
            approvals: &approvals,
            journal,
            call: &id,
            sandbox: self.sandbox.as_deref(),
            fetcher: self.fetcher.as_deref(),
            limits: self.limits,
        };
        match &self.mcp {
            Some(mcp) if weft_mcp::split_name(name).is_some() => {
                mcp.call(name, arguments, &env).await
            }
            _ => self.toolbox.call(name, arguments, &env).await,
        }
    }
}

/// The server names of `requirements.mcp_servers` (strings; anything else is not a name).
fn mcp_servers(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

impl AttemptTools {
    /// The offered tools as the model sees them.
    pub fn defs(&self) -> Vec<ToolDef> {
        let builtin = self
            .offered
            .iter()
            .filter_map(|name| spec_of(name))
            .map(|spec| ToolDef {
                name: spec.name.to_owned(),
                description: spec.description.to_owned(),
                parameters: spec.parameters,
            });
        let host = self.host.iter().cloned();
        let mcp = self.mcp.iter().map(|t| ToolDef {
            name: t.name.clone(),
            description: format!("(MCP server `{}`) {}", t.server, t.tool.description),
            parameters: t.tool.input_schema.clone(),
        });
        builtin.chain(host).chain(mcp).collect()
    }

    /// The names of every offered tool.
    pub fn names(&self) -> Vec<&str> {
        let host = self.host.iter().map(|t| t.name.as_str());
        let mcp = self.mcp.iter().map(|t| t.name.as_str());
        self.offered
            .iter()
            .copied()
            .chain(host)
            .chain(mcp)
            .collect()
    }

    /// Whether `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.offered.contains(&name)
            || self.host.iter().any(|t| t.name == name)
            || self.mcp.iter().any(|t| t.name == name)
    }
}

/// The engine's journal of one attempt, as the tool layer's [`Journal`]: entries read from
/// what the log holds, new ones sent to the driver and awaited until appended.
struct Logged<'a> {
    journal: &'a AttemptJournal,
    node: &'a str,
    attempt: u32,
}

impl Journal for Logged<'_> {
    fn get(&self, key: &str) -> Option<Value> {
        self.journal.get(key).map(|e| e.entry())
    }

    fn put<'a>(&'a self, key: &'a str, entry: Value) -> JournalFuture<'a> {
        let text = |member: &str| {
            entry
                .get(member)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let effect = ToolEffect {
            node: self.node.to_owned(),
            attempt: self.attempt,
            key: key.to_owned(),
            tool: text("tool"),
            arguments: text("arguments"),
            result: entry.get("result").cloned().unwrap_or(Value::Null),
        };
        Box::pin(async move { self.journal.record(effect).await.map_err(|e| e.to_string()) })
    }

    fn decided(&self, record: Value) -> JournalFuture<'_> {
        let text = |member: &str| {
            record
                .get(member)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let decision = PolicyDecision {
            node: self.node.to_owned(),
            attempt: self.attempt,
            tool: text("tool"),
            action: text("action"),
            decision: text("decision"),
            rule: text("rule"),
            reason: text("reason"),
        };
        Box::pin(async move {
            self.journal
                .record_decision(decision)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// The approvals of one attempt: the digests the engine passes in the request, then the
/// embedder's store.
struct Granted<'a> {
    digests: &'a [String],
    store: &'a dyn Approvals,
}

impl Approvals for Granted<'_> {
    fn approved(&self, digest: &str) -> bool {
        self.digests.iter().any(|d| d == digest) || self.store.approved(digest)
    }
}
