//! `[workspace]`: which nodes work in their own copy of the project (`isolate`).

use super::SectionError;

/// The `[workspace]` table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkspaceConfig {
    /// `isolate = "agents" | "declared" | "all"` (default `agents`).
    pub isolate: weft_engine::IsolateMode,
}

pub(super) fn read(table: &toml::Table) -> Result<WorkspaceConfig, SectionError> {
    let isolate = weft_agents::isolate_mode_of(table).map_err(|e| {
        let key = match &e {
            weft_agents::ConfigError::Invalid { path, .. } => path.clone(),
            _ => "workspace".to_string(),
        };
        SectionError::from_display(
            key,
            &e,
            "see docs/agents.md, \"Configuration\": isolate is agents, declared or all",
        )
    })?;
    Ok(WorkspaceConfig { isolate })
}
