//! What hosts a weft run, below every shell that starts or shows one (the `weft` CLI today;
//! the HTTP and MCP servers are to be thin shells over it too):
//!
//! - [`config`]: `weft.toml`, read and parsed once into typed sections (one module per
//!   section), each error with its file, line and column and a hint.
//! - [`setup`]: the setup of a run — its agents (the model agent of the routing profile,
//!   its tools under the operator policy, MCP servers, the OS sandbox), isolation, the
//!   criteria wrapper, the store and the audit trail — one path for `weft run` and
//!   `weft resume`.
//! - [`view`]: the typed view of a run (the engine's fold of its log, `weft_engine::view`)
//!   and the status report `weft status` prints.
//!
//! Layering: above `weft-engine` and `weft-agents` (and the crates they use), below
//! `weft-cli`; the engine never depends on it (`scripts/check-layering.sh`).

pub mod config;
pub mod setup;
pub mod view;

pub use config::{ConfigError, ConfigFile, WeftConfig};
pub use setup::{RunSetup, SetupError, SetupRequest};
pub use view::{StatusReport, status_report};
