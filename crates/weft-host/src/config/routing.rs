//! `[providers.*]`, `[tiers.*]` and `[limits]`: the routing profile (`weft_agents`).

use super::SectionError;

const HELP: &str = "see docs/agents.md, \"Configuration\" (`weft config check` shows what the profile routes where)";

pub(super) fn read(table: &toml::Table) -> Result<weft_agents::RoutingProfile, SectionError> {
    weft_agents::RoutingProfile::from_table(table).map_err(|e| {
        let key = match &e {
            weft_agents::ConfigError::Invalid { path, .. } => path.clone(),
            _ => "providers".to_string(),
        };
        SectionError::from_display(key, &e, HELP)
    })
}
