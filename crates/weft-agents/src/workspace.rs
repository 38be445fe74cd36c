//! The `[workspace]` table of `weft.toml`: which nodes work in their own copy of the project
//! (`isolate = "agents" | "declared" | "all"`, default `agents`; `docs/agents.md`,
//! "Configuration", and `docs/semantics.md`, "Workspaces").

use serde::Deserialize;
use weft_engine::IsolateMode;

use crate::config::ConfigError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspaceTable {
    isolate: Option<String>,
}

/// The `[workspace] isolate` mode of a `weft.toml` text (the default, `agents`, when the
/// table or the key is absent).
pub fn isolate_mode(text: &str) -> Result<IsolateMode, ConfigError> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
    isolate_mode_of(&table)
}

/// [`isolate_mode`] of a parsed `weft.toml` (`weft-host` parses the file once).
pub fn isolate_mode_of(table: &toml::Table) -> Result<IsolateMode, ConfigError> {
    let workspace: Option<WorkspaceTable> = table
        .get("workspace")
        .cloned()
        .map(toml::Value::try_into)
        .transpose()
        .map_err(|e: toml::de::Error| ConfigError::Invalid {
            path: "workspace".into(),
            message: e.message().to_string(),
        })?;
    let Some(value) = workspace.and_then(|w| w.isolate) else {
        return Ok(IsolateMode::default());
    };
    IsolateMode::parse(&value).ok_or_else(|| ConfigError::Invalid {
        path: "workspace.isolate".into(),
        message: format!("`{value}` is not one of agents, declared, all"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_defaults_to_agents_and_a_wrong_one_is_refused_with_its_key() {
        assert_eq!(isolate_mode("").unwrap(), IsolateMode::Agents);
        assert_eq!(
            isolate_mode("[workspace]\nisolate = \"declared\"\n").unwrap(),
            IsolateMode::Declared
        );
        assert_eq!(
            isolate_mode("[workspace]\nisolate = \"all\"\n").unwrap(),
            IsolateMode::All
        );
        let e = isolate_mode("[workspace]\nisolate = \"some\"\n").unwrap_err();
        assert!(e.to_string().contains("workspace.isolate"), "{e}");
        assert!(isolate_mode("[workspace]\ncopy = true\n").is_err());
    }
}
