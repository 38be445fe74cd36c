//! The setup of a run, one path for every shell that starts or resumes one (`weft run`,
//! `weft resume`): its agents (the default ones, or the `--config` profile's model agent
//! with its built-in tools under the operator policy and its MCP servers; `exec` and the
//! coding-agent CLIs confined by the OS sandbox with `--sandbox`), which nodes are
//! isolated, the wrapper `command` criteria run under, the store and the audit trail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use weft_agents::cli::CliSandbox;
use weft_agents::{AgentTools, LoopSettings, ModelAgent};
use weft_engine::agent::AgentRegistry;
use weft_engine::agent::sandboxed::SandboxedExecAgent;
use weft_engine::audit::{AuditTrail, default_dir};
use weft_engine::{IsolateMode, RunOptions};
use weft_sandbox::{Helper, Sandbox};

use crate::config::WeftConfig;

/// Why a run could not be set up (nothing was run or written).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The `--config` profile's model agent or its tools cannot be built.
    #[error("{path}: {message}", path = .path.display())]
    Agents { path: PathBuf, message: String },
    /// `--sandbox` without the run's document, or a sandbox that cannot be probed.
    #[error("{0}")]
    Sandbox(String),
    #[error(transparent)]
    Cassette(#[from] weft_engine::agent::cassette::CassetteError),
    /// The store cannot be opened (or its directory created).
    #[error("cannot open the store {path}: {message}", path = .path.display())]
    Store { path: PathBuf, message: String },
}

/// What a run is set up from.
pub struct SetupRequest<'a> {
    /// The parsed `--config` file, when given.
    pub config: Option<&'a WeftConfig>,
    /// The run's document: its nodes' tool requirements and what the sandbox confines
    /// (`None` when it cannot be had; `--sandbox` then refuses).
    pub document: Option<Arc<Value>>,
    pub run_id: &'a str,
    /// `--cassette`: the recorded model turns the `replay` agent plays.
    pub cassette: Option<&'a Path>,
    /// `--sandbox`: `exec` nodes and coding-agent CLIs run confined.
    pub sandbox: bool,
    /// The binary that is the sandbox helper (`weft sandbox-exec`).
    pub helper: &'a Path,
    /// Who runs weft, bound into tool approvals.
    pub identity: String,
    /// The project directory (what `command` criteria may read under `--sandbox`).
    pub project_dir: &'a Path,
    /// The store (`--db`): its files and audit directory stay read-only to confined nodes.
    pub db: &'a Path,
}

/// A run's agents, isolation and criteria wrapper, ready for its [`RunOptions`].
pub struct RunSetup {
    /// `None`: the engine's default agents (with the cassette of the options).
    pub agents: Option<Arc<AgentRegistry>>,
    pub isolate: IsolateMode,
    pub criteria_wrapper: Vec<String>,
}

impl RunSetup {
    /// Sets up the run `request` describes.
    pub fn prepare(request: &SetupRequest<'_>) -> Result<RunSetup, SetupError> {
        let mut setup = RunSetup {
            agents: None,
            isolate: request
                .config
                .map_or_else(IsolateMode::default, |c| c.workspace.isolate),
            criteria_wrapper: Vec::new(),
        };
        // The sandbox, probed once for all who use it.
        let sandbox = if request.sandbox {
            Some(Arc::new(
                Sandbox::probe_blocking(Helper::weft(request.helper.to_path_buf()))
                    .map_err(|e| SetupError::Sandbox(format!("cannot probe the sandbox: {e}")))?,
            ))
        } else {
            None
        };
        let mut agents = match request.config {
            Some(config) => {
                let mut registry = AgentRegistry::with_defaults(None);
                registry.register(Arc::new(model_agent(config, request, sandbox.as_ref())?));
                registry.set_model_agent(weft_agents::MODEL);
                Some(registry)
            }
            None => None,
        };
        if let Some(sandbox) = sandbox {
            let document = request.document.clone().ok_or_else(|| {
                SetupError::Sandbox(
                    "--sandbox needs the run's document (give FILE, or a run this store holds)"
                        .into(),
                )
            })?;
            let mut registry = match agents.take() {
                Some(registry) => registry,
                None => AgentRegistry::with_defaults(
                    request
                        .cassette
                        .map(weft_engine::agent::cassette::load)
                        .transpose()?,
                ),
            };
            let mut exec = SandboxedExecAgent::new(sandbox, document)
                .with_protected(weft_engine::audit::state_paths(request.db));
            if let Some(config) = request.config {
                exec = exec.with_policy(Arc::new(config.policy.clone()));
            }
            registry.register(Arc::new(exec));
            agents = Some(registry);
            setup.criteria_wrapper = criteria_wrapper(request.helper, request.project_dir)?;
        }
        setup.agents = agents.map(Arc::new);
        Ok(setup)
    }

    /// Puts the setup into `options`.
    pub fn apply_to(self, options: &mut RunOptions) {
        options.agents = self.agents;
        options.isolate = self.isolate;
        options.criteria_wrapper = self.criteria_wrapper;
    }
}

/// The model agent of the profile: its providers (keys read from the environment now) and,
/// with the run's document, the built-in tools each node's `requirements.tools` names,
/// decided by the file's `[policy]` rules (none: every action denied), `shell_exec` in the
/// OS sandbox when this machine enforces it, and the MCP servers (started on first use).
/// With `--sandbox`, its coding-agent CLI providers run in the sandbox.
fn model_agent(
    config: &WeftConfig,
    request: &SetupRequest<'_>,
    sandbox: Option<&Arc<Sandbox>>,
) -> Result<ModelAgent, SetupError> {
    let fail = |e: &dyn std::fmt::Display| SetupError::Agents {
        path: config.path.clone(),
        message: e.to_string(),
    };
    let mut agent = config
        .routing
        .model_agent(LoopSettings::default())
        .map_err(|e| fail(&e))?;
    let Some(document) = request.document.clone() else {
        return Ok(agent);
    };
    let identity = weft_policy::Identity {
        subject: request.identity.clone(),
        session: None,
    };
    let mut tools = AgentTools::new(
        Arc::clone(&document),
        Arc::new(config.policy.clone()),
        identity,
        Arc::new(weft_tools::MemoryJournal::default()),
        request.run_id,
    )
    .map_err(|e| fail(&e))?;
    // `shell_exec` only where the sandbox is enforced; elsewhere it fails `blocked`.
    tools.sandbox = match sandbox {
        Some(s) => Some(Arc::clone(s)),
        None => Sandbox::probe_blocking(Helper::weft(request.helper.to_path_buf()))
            .ok()
            .map(Arc::new),
    }
    .filter(|s| s.report().fully_enforced());
    tools.fetcher = Some(Arc::new(
        weft_agents::HttpFetcher::new().map_err(|e| fail(&e))?,
    ));
    if !config.mcp.servers.is_empty() {
        tools.mcp = Some(Arc::new(weft_mcp::McpServers::new(config.mcp.clone())));
    }
    // The memory tools, when `[memory]` names a store: opened now, so a store that cannot
    // be opened (or an embedder whose key variable is unset) refuses the run before any
    // token is spent (docs/memory.md §8).
    if let Some(memory) = &config.memory {
        let store = weft_memory::Memory::open(&memory.db, weft_memory::Config::default())
            .map_err(|e| fail(&format!("[memory] db {}: {e}", memory.db.display())))?;
        let embedder = match &memory.embedder {
            Some(table) => Some(Arc::new(table.open().map_err(|e| fail(&e))?)
                as Arc<dyn weft_tools::memory::QueryEmbedder>),
            None => None,
        };
        for tool in weft_tools::memory::memory_tools_with(&store, embedder) {
            tools = tools.with_host_tool(tool).map_err(|e| fail(&e))?;
        }
    }
    agent = agent.with_tools(tools);
    if let Some(sandbox) = sandbox {
        agent = agent.with_cli_sandbox(CliSandbox {
            sandbox: Arc::clone(sandbox),
            document,
        });
    }
    Ok(agent)
}

/// What `command` success criteria run under with `--sandbox`: the helper, confined to
/// reading the project (no write, no network), so a tool or git setting an earlier step
/// planted cannot act unconfined when a criterion runs it.
pub fn criteria_wrapper(helper: &Path, project_dir: &Path) -> Result<Vec<String>, SetupError> {
    let root = std::path::absolute(project_dir)
        .map_err(|e| SetupError::Sandbox(format!("cannot resolve the project directory: {e}")))?;
    let confinement = weft_sandbox::Confinement {
        read_roots: vec![root.clone()],
        workspace: Some(root),
        // The operator's step user, as every other job of this weft gets it.
        step_user: Some(weft_sandbox::StepUser::from_env()),
        ..weft_sandbox::Confinement::minimal()
    };
    let policy = serde_json::to_string(&confinement)
        .map_err(|e| SetupError::Sandbox(format!("cannot encode the confinement: {e}")))?;
    Ok(vec![
        helper.to_string_lossy().into_owned(),
        "sandbox-exec".into(),
        "--policy".into(),
        policy,
        "--".into(),
    ])
}

/// Opens the store at `db`, creating its directory.
pub fn open_store(db: &Path) -> Result<weft_store::Store, SetupError> {
    let fail = |message: String| SetupError::Store {
        path: db.to_path_buf(),
        message,
    };
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    }
    weft_store::Store::open(db).map_err(|e| fail(e.to_string()))
}

/// The run's audit trail: next to the store, anchored in it (`docs/audit.md`).
pub fn audit_trail(db: &Path, store: &dyn weft_store::RunStore) -> Arc<AuditTrail> {
    Arc::new(AuditTrail::new(default_dir(db), store))
}
