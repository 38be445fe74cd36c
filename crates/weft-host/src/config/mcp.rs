//! `[mcp.servers.*]`: the MCP servers a node may require (`weft_mcp`).

use super::SectionError;

pub(super) fn read(table: &toml::Table) -> Result<weft_mcp::McpConfig, SectionError> {
    weft_mcp::McpConfig::from_table(table).map_err(|e| {
        let key = match &e {
            weft_mcp::ConfigError::Server { server, .. } => format!("mcp.servers.{server}"),
            weft_mcp::ConfigError::Toml(_) => "mcp".to_string(),
        };
        SectionError::from_display(key, &e, "see docs/agents.md, \"MCP servers\"")
    })
}
