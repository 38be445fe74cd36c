//! The `[mcp.servers.NAME]` tables of `weft.toml` (docs/agents.md, "MCP servers"). Only the
//! `mcp` table is read; the other tables belong to other readers and are ignored here.
//!
//! ```toml
//! [mcp.servers.files]
//! command = "/usr/local/bin/files-mcp"   # stdio: a child process, argv without a shell
//! args = ["--root", "."]
//! env = ["HOME", "FILES_TOKEN"]          # the only variables it gets from weft's environment
//! call_timeout_seconds = 60               # optional (default 60)
//! max_output_bytes = 65536                # optional (default 64 KiB)
//!
//! [mcp.servers.search]
//! url = "http://127.0.0.1:8931/mcp"       # streamable HTTP (a server weft does not start)
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// How weft reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Names of the variables passed from weft's environment; nothing else is.
        env: Vec<String>,
    },
    /// A streamable HTTP endpoint.
    Http { url: String },
}

/// One configured server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    /// How long starting (spawn, handshake, `tools/list`) may take.
    pub start_timeout: Duration,
    /// How long one `tools/call` may take.
    pub call_timeout: Duration,
    /// Most bytes of a call's result handed to the model.
    pub max_output_bytes: usize,
}

/// Every configured server, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
}

/// A `[mcp]` table that does not fit.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("weft.toml: {0}")]
    Toml(String),
    #[error("weft.toml: [mcp.servers.{server}]: {message}")]
    Server { server: String, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpTable {
    #[serde(default)]
    servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    url: Option<String>,
    start_timeout_seconds: Option<u64>,
    call_timeout_seconds: Option<u64>,
    max_output_bytes: Option<usize>,
}

impl McpConfig {
    /// The `[mcp]` table of a `weft.toml` text (no table: no servers).
    pub fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        McpConfig::from_table(&table)
    }

    /// The `[mcp]` table of a parsed `weft.toml` (`weft-host` parses the file once).
    pub fn from_table(table: &toml::Table) -> Result<McpConfig, ConfigError> {
        let mcp: Option<McpTable> = table
            .get("mcp")
            .cloned()
            .map(toml::Value::try_into)
            .transpose()
            .map_err(|e: toml::de::Error| ConfigError::Toml(format!("[mcp]: {}", e.message())))?;
        let mut servers = BTreeMap::new();
        for (name, raw) in mcp.map(|m| m.servers).unwrap_or_default() {
            let fail = |message: &str| ConfigError::Server {
                server: name.clone(),
                message: message.to_owned(),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                || name.contains("__")
            {
                return Err(fail(
                    "a server name is letters, digits, `-` and `_` (no `__`: tools are named mcp__SERVER__TOOL)",
                ));
            }
            let transport = match (raw.command, raw.url) {
                (Some(command), None) if !command.is_empty() => Transport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                },
                (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                    if !raw.args.is_empty() || !raw.env.is_empty() {
                        return Err(fail("`args` and `env` are for a `command`, not a `url`"));
                    }
                    Transport::Http { url }
                }
                (None, Some(_)) => return Err(fail("`url` must be http:// or https://")),
                _ => {
                    return Err(fail(
                        "give exactly one of `command` (stdio) or `url` (HTTP)",
                    ));
                }
            };
            let seconds = |v: Option<u64>, default: u64| match v {
                Some(0) => Err(fail("a timeout is at least 1 second")),
                v => Ok(Duration::from_secs(v.unwrap_or(default))),
            };
            let server = ServerConfig {
                name: name.clone(),
                transport,
                start_timeout: seconds(raw.start_timeout_seconds, 30)?,
                call_timeout: seconds(raw.call_timeout_seconds, 60)?,
                max_output_bytes: raw.max_output_bytes.unwrap_or(64 * 1024),
            };
            servers.insert(name, server);
        }
        Ok(McpConfig { servers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_servers_parse_and_other_tables_are_ignored() -> Result<(), ConfigError> {
        let c = McpConfig::parse(
            r#"
            [policy]
            whatever = 1
            [mcp.servers.files]
            command = "files-mcp"
            args = ["--root", "."]
            env = ["HOME"]
            call_timeout_seconds = 5
            [mcp.servers.search]
            url = "http://127.0.0.1:1/mcp"
            "#,
        )?;
        let files = &c.servers["files"];
        assert_eq!(
            files.transport,
            Transport::Stdio {
                command: "files-mcp".into(),
                args: vec!["--root".into(), ".".into()],
                env: vec!["HOME".into()]
            }
        );
        assert_eq!(files.call_timeout, Duration::from_secs(5));
        assert_eq!(files.max_output_bytes, 64 * 1024);
        assert_eq!(
            c.servers["search"].transport,
            Transport::Http {
                url: "http://127.0.0.1:1/mcp".into()
            }
        );
        assert!(McpConfig::parse("[tiers]\nx = 1\n")?.servers.is_empty());
        Ok(())
    }

    #[test]
    fn a_server_needs_exactly_one_transport_and_a_plain_name() {
        for bad in [
            "[mcp.servers.a]\nargs = []\n",
            "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h/\"\n",
            "[mcp.servers.a]\nurl = \"ftp://h/\"\n",
            "[mcp.servers.a]\ncommand = \"x\"\ncall_timeout_seconds = 0\n",
            "[mcp.servers.a]\ncommand = \"x\"\nshell = true\n",
            "[mcp.servers.\"a__b\"]\ncommand = \"x\"\n",
            "[mcp.servers.\"a/b\"]\ncommand = \"x\"\n",
        ] {
            assert!(McpConfig::parse(bad).is_err(), "{bad}");
        }
    }
}
