//! The configured MCP servers of one weft process: started on first use and kept running,
//! the tools a node is offered, and each call decided and journalled like a built-in tool.
//!
//! A tool is offered to the model as `mcp__SERVER__TOOL` with the server's input schema. A call
//! is one policy action `mcp:call:SERVER/TOOL` (the tool name and arguments bound in, so an
//! approval covers exactly this call) through `weft_tools::gated`: a deny is a refusal to the
//! model, an `ask` a pending approval, and the result is journalled under the call's
//! idempotency key (MCP tools may have effects weft cannot see, so every call is treated as
//! side-effecting). A server that crashed or timed out is dropped (its process group killed)
//! and started again on next use.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Mutex;
use weft_policy::Action;
use weft_tools::{ToolEnv, ToolError, ToolOutcome, gated};

use crate::client::{McpClient, McpTool};
use crate::config::McpConfig;
use crate::error::McpError;
use weft_core::FailureClass;

/// The prefix of every MCP tool's name as the model sees it.
const PREFIX: &str = "mcp__";

/// The model-facing name of `server`'s `tool`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}__{tool}")
}

/// `(server, tool)` of a model-facing MCP tool name.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(PREFIX)?.split_once("__")
}

/// A tool offered to a node.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedTool {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    pub server: String,
    pub tool: McpTool,
}

/// The servers of a `weft.toml`, started on first use.
#[derive(Debug, Default)]
pub struct McpServers {
    config: McpConfig,
    running: Mutex<BTreeMap<String, Arc<McpClient>>>,
}

impl McpServers {
    pub fn new(config: McpConfig) -> McpServers {
        McpServers {
            config,
            running: Mutex::new(BTreeMap::new()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    /// The running client of `server`, started when it is not running.
    pub async fn client(&self, server: &str) -> Result<Arc<McpClient>, McpError> {
        let config = self.config.servers.get(server).ok_or_else(|| {
            McpError::tool(format!(
                "no MCP server `{server}` is configured in weft.toml ([mcp.servers.{server}])"
            ))
        })?;
        let mut running = self.running.lock().await;
        if let Some(client) = running.get(server) {
            return Ok(Arc::clone(client));
        }
        let client = Arc::new(McpClient::start(config).await?);
        running.insert(server.to_owned(), Arc::clone(&client));
        Ok(client)
    }

    /// Drops `client` when it is still the running one of its server (it crashed or hung).
    async fn forget(&self, client: &Arc<McpClient>) {
        let mut running = self.running.lock().await;
        if running
            .get(client.server())
            .is_some_and(|c| Arc::ptr_eq(c, client))
        {
            running.remove(client.server());
        }
    }

    /// The tools of `servers`, each server started and listed; the first that cannot be is
    /// the error.
    pub async fn offer(&self, servers: &[String]) -> Result<Vec<OfferedTool>, McpError> {
        let mut offered = Vec::new();
        for server in servers {
            let client = self.client(server).await?;
            let limit = self
                .config
                .servers
                .get(server)
                .map(|c| c.start_timeout)
                .unwrap_or_default();
            let tools = match client.list_tools(limit).await {
                Ok(tools) => tools,
                Err(e) => {
                    self.forget(&client).await;
                    return Err(e);
                }
            };
            offered.extend(tools.into_iter().map(|tool| OfferedTool {
                name: tool_name(server, &tool.name),
                server: server.clone(),
                tool,
            }));
        }
        Ok(offered)
    }

    /// Runs the call of the model-facing tool `name` under `env` (see the module docs).
    pub async fn call(&self, name: &str, arguments: &Value, env: &ToolEnv<'_>) -> ToolOutcome {
        let Some((server, tool)) = split_name(name) else {
            return ToolOutcome::failed(
                FailureClass::ValidationError,
                format!("`{name}` is not an MCP tool name (mcp__SERVER__TOOL)"),
            );
        };
        let action = Action {
            scope: "mcp".into(),
            action: "call".into(),
            target: Some(format!("{server}/{tool}")),
            argv: None,
            tool: Some(name.into()),
            arguments: Some(arguments.clone()),
        };
        gated(name, arguments, vec![action], true, env, async {
            let client = self.client(server).await.map_err(to_tool_error)?;
            let result = client.call_tool(tool, arguments).await;
            if let Err(e) = &result
                && e.class != FailureClass::ToolError
            {
                self.forget(&client).await;
            }
            result.map_err(to_tool_error)
        })
        .await
    }
}

fn to_tool_error(e: McpError) -> ToolError {
    ToolError {
        class: e.class,
        message: e.to_string(),
    }
}
