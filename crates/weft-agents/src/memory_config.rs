//! The `[memory]` table of `weft.toml`: the memory store (`weft-memory`) whose tools
//! (`memory_search`, `memory_subgraph`, `memory_propose`, `memory_verify`) `weft run` and
//! `weft resume` offer to the agent nodes that ask for them (`docs/memory.md` §8,
//! `docs/agents.md`, "Configuration").
//!
//! ```toml
//! [memory]
//! db = ".weft/memory.db"   # relative to the directory weft runs in
//! ```
//!
//! No table: no memory tools (a node that requires one is refused, RT012).

use std::path::PathBuf;

use crate::config::ConfigError;

fn invalid(path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// Where the memory store of a run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// The SQLite file, as written (a relative path is the run directory's).
    pub db: PathBuf,
}

/// The `[memory]` table of a `weft.toml` text: `None` when it is absent.
pub fn memory_config(text: &str) -> Result<Option<MemoryConfig>, ConfigError> {
    let file: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
    memory_config_of(&file)
}

/// [`memory_config`] of a file already parsed (its top-level table).
pub fn memory_config_of(file: &toml::Table) -> Result<Option<MemoryConfig>, ConfigError> {
    let Some(value) = file.get("memory") else {
        return Ok(None);
    };
    let table = value
        .as_table()
        .ok_or_else(|| invalid("memory", "must be a table (`[memory]`)"))?;
    if let Some(key) = table.keys().find(|k| *k != "db") {
        return Err(invalid(
            &format!("memory.{key}"),
            "unknown key (the only key is `db`)",
        ));
    }
    match table.get("db") {
        Some(toml::Value::String(db)) if !db.trim().is_empty() => {
            Ok(Some(MemoryConfig { db: db.into() }))
        }
        Some(toml::Value::String(_)) => Err(invalid("memory.db", "the path is empty")),
        Some(_) => Err(invalid("memory.db", "must be a string (a path)")),
        None => Err(invalid(
            "memory.db",
            "missing: the path of the memory store, such as \".weft/memory.db\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_the_store_and_mistakes_are_refused_with_their_key() {
        assert_eq!(memory_config("").unwrap(), None);
        assert_eq!(
            memory_config("[memory]\ndb = \".weft/memory.db\"\n").unwrap(),
            Some(MemoryConfig {
                db: ".weft/memory.db".into()
            })
        );
        for (text, key) in [
            ("[memory]\n", "memory.db"),
            ("[memory]\ndb = \" \"\n", "memory.db"),
        ] {
            let e = memory_config(text).unwrap_err();
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
        // An unknown key is refused, not ignored (a typo would silently drop the tools).
        let e = memory_config("[memory]\ndb = \"m.db\"\npath = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("`memory.path`: unknown key"), "{e}");
        let e = memory_config("[memory]\ndb = 3\n").unwrap_err();
        assert!(
            e.to_string().contains("`memory.db`: must be a string"),
            "{e}"
        );
        let e = memory_config("memory = \"m.db\"\n").unwrap_err();
        assert!(e.to_string().contains("`memory`: must be a table"), "{e}");
    }
}
