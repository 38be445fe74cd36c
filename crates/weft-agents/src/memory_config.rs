//! The `[memory]` table of `weft.toml`: the memory store (`weft-memory`) whose tools
//! (`memory_search`, `memory_subgraph`, `memory_propose`, `memory_verify`) `weft run` and
//! `weft resume` offer to the agent nodes that ask for them (`docs/memory.md` §8,
//! `docs/agents.md`, "Configuration").
//!
//! ```toml
//! [memory]
//! db = ".weft/memory.db"   # relative to the directory weft runs in
//!
//! [memory.embedder]        # optional: vector recall seeds passages too
//! base_url = "http://127.0.0.1:8091"   # an OpenAI-compatible server, without /v1
//! model = "text-embedding-3-small"
//! # api_key_env = "OPENAI_API_KEY"      # the variable holding the key; absent: no key sent
//! # dimensions = 256                    # sent as `dimensions`; answers must have as many
//! # timeout_seconds = 30                # one exchange (default 30)
//! # max_attempts = 2                    # sends in all (default 2)
//! ```
//!
//! No table: no memory tools (a node that requires one is refused, RT012).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::ConfigError;
use crate::embeddings::OpenAiEmbedder;
use crate::http::{HttpSettings, RetryPolicy};
use crate::secret::Secret;

fn invalid(path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// Where the memory store of a run is, and the embedder its searches use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// The SQLite file, as written (a relative path is the run directory's).
    pub db: PathBuf,
    /// `[memory.embedder]`: when set, a passage search also seeds the passages nearest to
    /// the query's embedding (`weft_memory::Memory::subgraph_near`); `None`: full text only.
    pub embedder: Option<EmbedderConfig>,
}

/// `[memory.embedder]`: an OpenAI-compatible `/v1/embeddings` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// Without `/v1` (a trailing `/` dropped).
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the key; `None`: no key is sent.
    pub api_key_env: Option<String>,
    /// Requested from the server (`dimensions`), and every vector must have as many.
    pub dimensions: Option<u32>,
    pub timeout: Duration,
    pub max_attempts: u32,
}

/// The keys of `[memory.embedder]`, for the unknown-key error.
const EMBEDDER_KEYS: [&str; 6] = [
    "base_url",
    "model",
    "api_key_env",
    "dimensions",
    "timeout_seconds",
    "max_attempts",
];

/// A search waits for its query's embedding, so the default limits are a search's, not a
/// chat answer's: 30 s, and one retry.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_MAX_ATTEMPTS: u32 = 2;

impl EmbedderConfig {
    /// The embedder this table describes, its key read from the environment now: an unset
    /// or empty variable is refused naming the key path and the variable (never a value).
    pub fn open(&self) -> Result<OpenAiEmbedder, ConfigError> {
        let key = match &self.api_key_env {
            None => None,
            Some(var) => Some(
                Secret::from_env(var).map_err(|why| invalid("memory.embedder.api_key_env", why))?,
            ),
        };
        let defaults = HttpSettings::default();
        let http = HttpSettings {
            timeout: self.timeout,
            retry: RetryPolicy {
                max_attempts: self.max_attempts,
                ..defaults.retry
            },
            ..defaults
        };
        let embedder = OpenAiEmbedder::new(&self.base_url, &self.model, key, http)
            .map_err(|e| invalid("memory.embedder", e.to_string()))?;
        Ok(match self.dimensions {
            Some(n) => embedder.with_dimensions(n),
            None => embedder,
        })
    }
}

fn embedder_of(value: &toml::Value) -> Result<EmbedderConfig, ConfigError> {
    let path = "memory.embedder";
    let table = value
        .as_table()
        .ok_or_else(|| invalid(path, "must be a table (`[memory.embedder]`)"))?;
    if let Some(key) = table.keys().find(|k| !EMBEDDER_KEYS.contains(&k.as_str())) {
        return Err(invalid(
            &format!("{path}.{key}"),
            format!("unknown key (the keys are {})", EMBEDDER_KEYS.join(", ")),
        ));
    }
    let text = |key: &str| -> Result<Option<String>, ConfigError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(v)) if !v.trim().is_empty() => Ok(Some(v.clone())),
            Some(toml::Value::String(_)) => Err(invalid(&format!("{path}.{key}"), "is empty")),
            Some(_) => Err(invalid(&format!("{path}.{key}"), "must be a string")),
        }
    };
    let positive = |key: &str| -> Result<Option<u32>, ConfigError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(n)) => u32::try_from(*n)
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| {
                    invalid(
                        &format!("{path}.{key}"),
                        format!("{n} is not a positive count"),
                    )
                }),
            Some(_) => Err(invalid(&format!("{path}.{key}"), "must be an integer")),
        }
    };
    let base_url = text("base_url")?.ok_or_else(|| {
        invalid(
            &format!("{path}.base_url"),
            "missing: the embeddings server, such as \"http://127.0.0.1:8091\" (without /v1)",
        )
    })?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(invalid(
            &format!("{path}.base_url"),
            format!("`{base_url}` is not an http:// or https:// URL"),
        ));
    }
    let model = text("model")?.ok_or_else(|| {
        invalid(
            &format!("{path}.model"),
            "missing: the embedding model the server knows",
        )
    })?;
    let api_key_env = text("api_key_env")?;
    if api_key_env
        .as_ref()
        .is_some_and(|v| v.contains(['=', '\0']))
    {
        return Err(invalid(
            &format!("{path}.api_key_env"),
            "must name an environment variable (the key itself never goes in this file)",
        ));
    }
    let timeout = match table.get("timeout_seconds") {
        None => DEFAULT_TIMEOUT,
        Some(v) => v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                invalid(
                    &format!("{path}.timeout_seconds"),
                    "must be a positive number of seconds",
                )
            })?,
    };
    Ok(EmbedderConfig {
        base_url,
        model,
        api_key_env,
        dimensions: positive("dimensions")?,
        timeout,
        max_attempts: positive("max_attempts")?.unwrap_or(DEFAULT_MAX_ATTEMPTS),
    })
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
    if let Some(key) = table.keys().find(|k| *k != "db" && *k != "embedder") {
        return Err(invalid(
            &format!("memory.{key}"),
            "unknown key (the keys are `db` and the table `[memory.embedder]`)",
        ));
    }
    let embedder = table.get("embedder").map(embedder_of).transpose()?;
    match table.get("db") {
        Some(toml::Value::String(db)) if !db.trim().is_empty() => Ok(Some(MemoryConfig {
            db: db.into(),
            embedder,
        })),
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
                db: ".weft/memory.db".into(),
                embedder: None,
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

    const DB: &str = "[memory]\ndb = \"m.db\"\n";

    #[test]
    fn the_embedder_table_is_read_with_its_defaults_and_mistakes_name_their_key() {
        let text = format!(
            "{DB}[memory.embedder]\nbase_url = \"http://127.0.0.1:9/\"\nmodel = \"e5\"\n\
             api_key_env = \"EMBED_KEY\"\ndimensions = 4\n"
        );
        let config = memory_config(&text).unwrap().unwrap();
        assert_eq!(
            config.embedder,
            Some(EmbedderConfig {
                base_url: "http://127.0.0.1:9/".into(),
                model: "e5".into(),
                api_key_env: Some("EMBED_KEY".into()),
                dimensions: Some(4),
                timeout: DEFAULT_TIMEOUT,
                max_attempts: DEFAULT_MAX_ATTEMPTS,
            })
        );
        let minimal = "[memory.embedder]\nbase_url = \"http://h\"\nmodel = \"m\"\n";
        let config = memory_config(&format!(
            "{DB}{minimal}timeout_seconds = 2.5\nmax_attempts = 1\n"
        ))
        .unwrap()
        .unwrap()
        .embedder
        .unwrap();
        assert_eq!(
            (config.timeout, config.max_attempts, config.api_key_env),
            (Duration::from_millis(2500), 1, None)
        );
        for (table, expected) in [
            (
                "[memory.embedder]\nmodel = \"m\"\n",
                "`memory.embedder.base_url`: missing",
            ),
            (
                "[memory.embedder]\nbase_url = \"http://h\"\n",
                "`memory.embedder.model`: missing",
            ),
            (
                "[memory.embedder]\nbase_url = \"h:80\"\nmodel = \"m\"\n",
                "`memory.embedder.base_url`: `h:80` is not an http",
            ),
            (
                &format!("{minimal}url = \"x\"\n"),
                "`memory.embedder.url`: unknown key",
            ),
            (
                &format!("{minimal}dimensions = 0\n"),
                "`memory.embedder.dimensions`: 0 is not a positive count",
            ),
            (
                &format!("{minimal}dimensions = \"4\"\n"),
                "`memory.embedder.dimensions`: must be an integer",
            ),
            (
                &format!("{minimal}max_attempts = -1\n"),
                "`memory.embedder.max_attempts`: -1 is not",
            ),
            (
                &format!("{minimal}timeout_seconds = 0\n"),
                "`memory.embedder.timeout_seconds`: must be a positive",
            ),
            (
                &format!("{minimal}api_key_env = \"sk=1\"\n"),
                "`memory.embedder.api_key_env`: must name an environment variable",
            ),
            (
                "[memory]\nembedder = \"http://h\"\n",
                "`memory.embedder`: must be a table",
            ),
        ] {
            let text = if table.starts_with("[memory]") {
                table.to_string()
            } else {
                format!("{DB}{table}")
            };
            let e = memory_config(&text).unwrap_err();
            assert!(e.to_string().contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn opening_the_embedder_reads_its_key_variable_now_and_names_it_when_unset() {
        let config = |var: &str| EmbedderConfig {
            base_url: "http://127.0.0.1:9".into(),
            model: "m".into(),
            api_key_env: Some(var.into()),
            dimensions: None,
            timeout: DEFAULT_TIMEOUT,
            max_attempts: 1,
        };
        let e = config("WEFT_TEST_SURELY_UNSET_EMBEDDER_KEY")
            .open()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            ConfigError::Invalid {
                path: "memory.embedder.api_key_env".into(),
                message: "environment variable WEFT_TEST_SURELY_UNSET_EMBEDDER_KEY is not set"
                    .into()
            }
            .to_string()
        );
        // A variable every test process has opens (the key is not checked until a request).
        assert!(config("PATH").open().is_ok());
    }
}
