//! `weft.toml`, parsed once: the file is read and parsed into one TOML tree
//! ([`ConfigFile`]), and each section's reader (one module per section) turns its tables
//! into typed configuration: all of them for a run ([`WeftConfig`]), only its own for a
//! command that needs one (`weft policy explain` reads `[policy]`, `weft routing explain`
//! and `weft generate` the routing profile).
//! A refused file is a [`ConfigError`] naming the file, the line and column of the key at
//! fault, what is wrong and where the format is documented.
//!
//! Sections: `routing` (`[providers.*]`, `[tiers.*]`, `[limits]`; docs/agents.md,
//! "Configuration"), `workspace` (`[workspace]`), `policy` (`[policy]`;
//! docs/permissions.md), `mcp` (`[mcp.servers.*]`; docs/agents.md, "MCP servers") and
//! `memory` (`[memory]`; docs/memory.md §8). A
//! new section is a new module here and a member of [`WeftConfig`].

mod locate;
mod mcp;
mod memory;
mod policy;
mod routing;
mod workspace;

use std::fmt;
use std::path::{Path, PathBuf};

pub use workspace::WorkspaceConfig;

/// A parsed, checked `weft.toml`.
#[derive(Clone, Debug)]
pub struct WeftConfig {
    /// The file it was read from (as given), for messages.
    pub path: PathBuf,
    /// `[providers.*]`, `[tiers.*]`, `[limits]`: which model serves which tier.
    pub routing: weft_agents::RoutingProfile,
    /// `[workspace]`: which nodes work in their own copy of the project.
    pub workspace: WorkspaceConfig,
    /// `[policy]`: the operator's rules (none: every tool action is denied).
    pub policy: weft_policy::OperatorPolicy,
    /// `[mcp.servers.*]`: the MCP servers a node may require.
    pub mcp: weft_mcp::McpConfig,
    /// `[memory]`: the store whose memory tools agent nodes may call (`None`: no tools).
    pub memory: Option<weft_agents::MemoryConfig>,
}

/// Why a `weft.toml` was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read (a missing one points to `weft init`).
    #[error("cannot read {path}: {source}{hint}", path = .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
        hint: &'static str,
    },
    /// Not TOML, or a section that does not fit: where, what, and how to fix it.
    #[error("{0}")]
    Invalid(Located),
}

/// A refusal at a place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    /// 1-based line and column of the key at fault (`None`: the file as a whole).
    pub position: Option<(usize, usize)>,
    pub message: String,
    /// How to fix it, or where the format is documented.
    pub help: &'static str,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}\n  help: {}", self.message, self.help)
    }
}

/// A section reader's refusal: the dotted key at fault (`tiers.minimal.provider`,
/// `policy.rules[0]`), what is wrong, and the hint.
pub(crate) struct SectionError {
    pub key: String,
    pub message: String,
    pub help: &'static str,
}

impl SectionError {
    /// A section crate's error, its `weft.toml: ` prefix dropped (the position says where).
    fn from_display(key: impl Into<String>, e: &dyn fmt::Display, help: &'static str) -> Self {
        let text = e.to_string();
        let message = text
            .strip_prefix("weft.toml: ")
            .map_or(text.clone(), str::to_string);
        SectionError {
            key: key.into(),
            message,
            help,
        }
    }
}

/// A `weft.toml` read and parsed (once) into its TOML tree, its sections not read yet: a
/// command that needs one section reads only that one ([`ConfigFile::policy`], …);
/// [`WeftConfig`] reads them all.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    path: PathBuf,
    text: String,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads and parses `path` (a missing file points to `weft init`).
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            hint: if source.kind() == std::io::ErrorKind::NotFound {
                "; `weft init` writes a commented one for the local model (hosted providers \
                 as alternatives), docs/agents.md §6"
            } else {
                ""
            },
            path: path.to_path_buf(),
            source,
        })?;
        ConfigFile::parse(path, text)
    }

    /// Parses the text of a `weft.toml` read from `path` (named in messages).
    pub fn parse(path: &Path, text: String) -> Result<ConfigFile, ConfigError> {
        match toml::from_str::<toml::Table>(&text) {
            Ok(table) => Ok(ConfigFile {
                path: path.to_path_buf(),
                text,
                table,
            }),
            Err(e) => Err(ConfigError::Invalid(Located {
                path: path.to_path_buf(),
                position: e.span().map(|s| locate::line_column(&text, s.start)),
                message: format!("not valid TOML: {}", e.message().trim_end()),
                help: "fix the TOML syntax at this position (https://toml.io/en/v1.0.0)",
            })),
        }
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A section reader's refusal, located in the text.
    fn at(&self, e: SectionError) -> ConfigError {
        ConfigError::Invalid(Located {
            path: self.path.clone(),
            position: locate::key(&self.text, &e.key),
            message: e.message,
            help: e.help,
        })
    }

    /// `[providers.*]`, `[tiers.*]`, `[limits]`.
    pub fn routing(&self) -> Result<weft_agents::RoutingProfile, ConfigError> {
        routing::read(&self.table).map_err(|e| self.at(e))
    }

    /// `[workspace]`.
    pub fn workspace(&self) -> Result<WorkspaceConfig, ConfigError> {
        workspace::read(&self.table).map_err(|e| self.at(e))
    }

    /// `[policy]`.
    pub fn policy(&self) -> Result<weft_policy::OperatorPolicy, ConfigError> {
        policy::read(&self.table).map_err(|e| self.at(e))
    }

    /// `[mcp.servers.*]`.
    pub fn mcp(&self) -> Result<weft_mcp::McpConfig, ConfigError> {
        mcp::read(&self.table).map_err(|e| self.at(e))
    }

    /// `[memory]`.
    pub fn memory(&self) -> Result<Option<weft_agents::MemoryConfig>, ConfigError> {
        memory::read(&self.table).map_err(|e| self.at(e))
    }
}

impl WeftConfig {
    /// Reads and parses `path`, every section checked.
    pub fn load(path: &Path) -> Result<WeftConfig, ConfigError> {
        WeftConfig::of_file(&ConfigFile::load(path)?)
    }

    /// Parses the text of a `weft.toml` read from `path` (named in messages): one TOML
    /// parse, then each section's reader.
    pub fn parse(path: &Path, text: &str) -> Result<WeftConfig, ConfigError> {
        WeftConfig::of_file(&ConfigFile::parse(path, text.to_string())?)
    }

    /// Every section of a parsed file.
    pub fn of_file(file: &ConfigFile) -> Result<WeftConfig, ConfigError> {
        Ok(WeftConfig {
            path: file.path.clone(),
            routing: file.routing()?,
            workspace: file.workspace()?,
            policy: file.policy()?,
            mcp: file.mcp()?,
            memory: file.memory()?,
        })
    }
}

#[cfg(test)]
mod tests;
