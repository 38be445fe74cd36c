//! One running MCP server, reached over stdio (a child process in its own process group) or
//! streamable HTTP (rmcp's client on reqwest), listed and called with a per-call timeout and an
//! output cap.
//!
//! The process group is killed when the client is dropped, so a server's own children go
//! with it. What the server writes to stderr is kept (its last bytes) as evidence for the
//! failures it causes; nothing it writes there reaches the model.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::config::{ServerConfig, Transport};
use crate::error::McpError;

/// Bytes of a server's stderr kept as evidence.
const STDERR_TAIL: usize = 2048;

/// A tool a server offers.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// The tool's input schema (a JSON Schema object), as the server gave it.
    pub input_schema: Value,
}

/// A started server.
pub struct McpClient {
    server: String,
    service: RunningService<RoleClient, ()>,
    group: Option<rustix::process::Pid>,
    stderr: Arc<Mutex<Vec<u8>>>,
    call_timeout: Duration,
    max_output_bytes: usize,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            // The group may be gone already (the server exited): nothing to do then.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl McpClient {
    /// Starts (stdio) or reaches (HTTP) `config`'s server and completes the MCP handshake
    /// within its start timeout.
    pub async fn start(config: &ServerConfig) -> Result<McpClient, McpError> {
        match &config.transport {
            Transport::Stdio { command, args, env } => {
                McpClient::spawn(config, command, args, env).await
            }
            Transport::Http { url } => McpClient::connect(config, url).await,
        }
    }

    /// A streamable HTTP server at `url` (nothing to start or kill: weft does not own it).
    async fn connect(config: &ServerConfig, url: &str) -> Result<McpClient, McpError> {
        // The reqwest client is rustls without a provider of its own (no aws-lc): ring,
        // process-wide, as weft-agents does; a provider installed before is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        let service = match tokio::time::timeout(config.start_timeout, ().serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                return Err(McpError::transient(format!(
                    "MCP server `{}` at {url}: the handshake failed: {e}",
                    config.name
                )));
            }
            Err(_) => {
                return Err(McpError::timeout(format!(
                    "MCP server `{}` at {url}: no handshake within {}s",
                    config.name,
                    config.start_timeout.as_secs()
                )));
            }
        };
        Ok(McpClient {
            server: config.name.clone(),
            service,
            group: None,
            stderr: Arc::new(Mutex::new(Vec::new())),
            call_timeout: config.call_timeout,
            max_output_bytes: config.max_output_bytes,
        })
    }

    /// A child process speaking MCP on its stdin and stdout.
    async fn spawn(
        config: &ServerConfig,
        command: &str,
        args: &[String],
        env: &[String],
    ) -> Result<McpClient, McpError> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).env_clear().process_group(0);
        for name in env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        let (transport, stderr_pipe) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                McpError::transient(format!(
                    "MCP server `{}`: cannot start `{command}`: {e}",
                    config.name
                ))
            })?;
        let group = transport
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = stderr_pipe {
            let tail = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(&buf[..n]);
                        let over = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..over);
                    }
                }
            });
        }
        let handshake = tokio::time::timeout(config.start_timeout, ().serve(transport)).await;
        Ok(McpClient {
            server: config.name.clone(),
            // A failed handshake kills the group itself: no client exists to do it on drop.
            service: match handshake {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => {
                    kill(group);
                    return Err(McpError::transient(format!(
                        "MCP server `{}`: the handshake failed: {e}",
                        config.name
                    ))
                    .with_evidence(settle_tail(&stderr).await));
                }
                Err(_) => {
                    kill(group);
                    return Err(McpError::timeout(format!(
                        "MCP server `{}`: no handshake within {}s",
                        config.name,
                        config.start_timeout.as_secs()
                    ))
                    .with_evidence(settle_tail(&stderr).await));
                }
            },
            group,
            stderr,
            call_timeout: config.call_timeout,
            max_output_bytes: config.max_output_bytes,
        })
    }

    /// The server's process group (its process id), killed when the client is dropped.
    pub fn process_group(&self) -> Option<i32> {
        self.group
            .map(rustix::process::Pid::as_raw_nonzero)
            .map(i32::from)
    }

    /// The server's name in `weft.toml`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Every tool the server offers (all pages), within `limit`.
    pub async fn list_tools(&self, limit: Duration) -> Result<Vec<McpTool>, McpError> {
        let tools = match tokio::time::timeout(limit, self.service.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(self.classify("tools/list", e).await),
            Err(_) => {
                return Err(self
                    .evidence(McpError::timeout(format!(
                        "MCP server `{}`: tools/list did not answer within {}s",
                        self.server,
                        limit.as_secs()
                    )))
                    .await);
            }
        };
        Ok(tools
            .into_iter()
            .map(|t| McpTool {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments` (a JSON object) within the server's call timeout. The
    /// result is the server's `content` (and `structured_content`), cut to the output cap.
    pub async fn call_tool(&self, tool: &str, arguments: &Value) -> Result<Value, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            _ => {
                return Err(McpError::tool(format!(
                    "the arguments of `{tool}` must be a JSON object"
                )));
            }
        };
        let result =
            match tokio::time::timeout(self.call_timeout, self.service.call_tool(params)).await {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => return Err(self.classify(&format!("tools/call `{tool}`"), e).await),
                Err(_) => {
                    return Err(self
                        .evidence(McpError::timeout(format!(
                            "MCP server `{}`: `{tool}` did not answer within {}s",
                            self.server,
                            self.call_timeout.as_secs()
                        )))
                        .await);
                }
            };
        if result.is_error == Some(true) {
            return Err(McpError::tool(format!(
                "MCP server `{}`: `{tool}` failed: {}",
                self.server,
                text_of(&result.content)
            )));
        }
        Ok(capped(&result, self.max_output_bytes))
    }

    async fn classify(&self, what: &str, e: ServiceError) -> McpError {
        let message = format!("MCP server `{}`: {what}: {e}", self.server);
        match e {
            ServiceError::McpError(_) | ServiceError::UnexpectedResponse => McpError::tool(message),
            ServiceError::Timeout { .. } => self.evidence(McpError::timeout(message)).await,
            _ => self.evidence(McpError::transient(message)).await,
        }
    }

    async fn evidence(&self, e: McpError) -> McpError {
        e.with_evidence(settle_tail(&self.stderr).await)
    }
}

/// Kills a process group that is being given up on.
fn kill(group: Option<rustix::process::Pid>) {
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// The stderr tail, after giving the reader a moment to take what a dying server wrote last.
async fn settle_tail(stderr: &Mutex<Vec<u8>>) -> Option<String> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let tail = stderr.lock().ok()?;
    Some(String::from_utf8_lossy(&tail).into_owned())
}

/// The text blocks of a result, joined (for error messages).
fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result as the model sees it: its JSON, or, over `cap` bytes, its text cut to `cap`
/// bytes (on a character boundary) and marked `truncated`.
fn capped(result: &CallToolResult, cap: usize) -> Value {
    let mut value = json!({"content": result.content});
    if let Some(structured) = &result.structured_content {
        value["structured_content"] = structured.clone();
    }
    let size = value.to_string().len();
    if size <= cap {
        return value;
    }
    let text = text_of(&result.content);
    let mut end = cap.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({
        "content": [{"type": "text", "text": &text[..end]}],
        "truncated": true,
        "bytes": size,
    })
}
