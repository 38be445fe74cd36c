//! `[memory]`: the memory store whose tools (`memory_search`, `memory_subgraph`,
//! `memory_propose`, `memory_verify`) a run offers its agent nodes (`weft_agents`,
//! docs/memory.md §8). No table: no memory tools.

use super::SectionError;

pub(super) fn read(table: &toml::Table) -> Result<Option<weft_agents::MemoryConfig>, SectionError> {
    weft_agents::memory_config_of(table).map_err(|e| {
        let key = match &e {
            weft_agents::ConfigError::Invalid { path, .. } => path.clone(),
            _ => "memory".to_string(),
        };
        SectionError::from_display(
            key,
            &e,
            "see docs/memory.md §8: `[memory]` has the key `db`, the store's path, and the optional table `[memory.embedder]`",
        )
    })
}
