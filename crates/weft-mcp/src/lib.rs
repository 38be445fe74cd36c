//! weft-mcp: the tools of MCP servers named in `weft.toml`, offered to the nodes that require
//! them and called under the same permission, approval and journal path as the built-in tools.
//!
//! All of weft's rmcp code (the official Rust MCP SDK, pinned `~3.11`: it breaks between
//! majors) lives in this crate.
//!
//! - [`config`]: the `[mcp.servers.NAME]` tables of `weft.toml`.
//! - [`client`]: one server (a child process in its own process group over stdio, or a
//!   streamable HTTP endpoint),
//!   `list_tools` and `call_tool` with a per-call timeout and an output cap.
//! - [`error`]: why a server or a call failed (`tool_error`, `transient`, `timeout`), with
//!   evidence (the server's last stderr).
//! - [`servers`]: the configured servers, started on first use; the tools a node is offered
//!   (`mcp__SERVER__TOOL`) and each call decided as `mcp:call:SERVER/TOOL` by
//!   `weft_tools::gated`.

pub mod client;
pub mod config;
pub mod error;
pub mod servers;

pub use client::{McpClient, McpTool};
pub use config::{ConfigError, McpConfig, ServerConfig, Transport};
pub use error::McpError;
pub use servers::{McpServers, OfferedTool, split_name, tool_name};
