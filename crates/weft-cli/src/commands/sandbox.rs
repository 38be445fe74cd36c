//! `weft sandbox doctor`: what this machine enforces for confined commands (Landlock ABI,
//! seccomp, rlimits, bubblewrap presence), from the sandbox helper confining itself. Exit 0
//! when everything required is fully enforced, 1 otherwise. The helper itself is the hidden
//! `weft sandbox-exec` (handled in `main` before argument parsing).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use weft_agents::cli::CliSandbox;
use weft_engine::agent::AgentRegistry;
use weft_engine::agent::sandboxed::SandboxedExecAgent;
use weft_sandbox::{Helper, Sandbox};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Report what is enforced here (exit 0 fully, 1 not: nodes needing it are blocked).
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    let Command::Doctor { json } = command;
    let weft = std::env::current_exe().context("cannot find the weft binary to run the helper")?;
    let report =
        weft_sandbox::doctor_blocking(&Helper::weft(weft)).context("cannot start a runtime")?;
    let mut out = anstream::stdout().lock();
    if *json {
        let value = serde_json::json!({
            "fully_enforced": report.fully_enforced(),
            "landlock_abi": report.landlock_abi,
            "checks": report.checks,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        for c in &report.checks {
            let mark = match (c.enforced, c.required) {
                (true, _) => "ok  ",
                (false, true) => "MISSING",
                (false, false) => "absent",
            };
            writeln!(out, "{mark:<8}{:<15}{}", c.name, c.detail)?;
        }
        let verdict = if report.fully_enforced() {
            "fully enforced: confined nodes run here"
        } else {
            "NOT fully enforced: nodes that need the sandbox are blocked"
        };
        writeln!(out, "{verdict}")?;
    }
    Ok(if report.fully_enforced() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What `command` success criteria run under with `--sandbox`: this `weft` as the sandbox
/// helper, confined to reading the project (no write, no network), so a tool or git setting
/// an earlier step planted cannot act unconfined when a criterion runs it.
pub fn criteria_wrapper(project_dir: &Path) -> anyhow::Result<Vec<String>> {
    let weft = std::env::current_exe().context("cannot find the weft binary to run the helper")?;
    let root = std::path::absolute(project_dir).context("cannot resolve the project directory")?;
    let confinement = weft_sandbox::Confinement {
        read_roots: vec![root.clone()],
        workspace: Some(root),
        // The operator's step user, as every other job of this weft gets it.
        step_user: Some(weft_sandbox::StepUser::from_env()),
        ..weft_sandbox::Confinement::minimal()
    };
    Ok(vec![
        weft.to_string_lossy().into_owned(),
        "sandbox-exec".into(),
        "--policy".into(),
        serde_json::to_string(&confinement)?,
        "--".into(),
    ])
}

/// What confines the sandboxed `exec` nodes besides their grants: the `--config` file whose
/// `[policy]` narrows them (docs/permissions.md §6), and the store, whose files and audit
/// directory are kept read-only wherever they lie in the workspace.
pub struct Around<'a> {
    /// The `--config` file, when given.
    pub policy_file: Option<&'a Path>,
    /// The store (`--db`).
    pub db: &'a Path,
}

impl Around<'_> {
    /// The store's files and the audit directory, absolute.
    fn state(&self) -> Vec<PathBuf> {
        weft_engine::audit::state_paths(self.db)
    }

    /// The operator policy of the `--config` file (`None` without one).
    fn policy(&self) -> anyhow::Result<Option<Arc<weft_policy::OperatorPolicy>>> {
        let Some(file) = self.policy_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let policy = weft_policy::OperatorPolicy::from_toml(&text)
            .with_context(|| file.display().to_string())?;
        Ok(Some(Arc::new(policy)))
    }
}

/// `weft run --sandbox`: the run's agents (`base`, e.g. a `--config` profile's, else the
/// default ones) with `exec` replaced by the sandboxed one, over the document in `file` (read
/// here for its requirements; `None` when it cannot be loaded, so the run reports that as
/// usual). With `config` (the `--config` profile), the model agent is rebuilt with the same
/// sandbox for its coding-agent CLI providers. The helper is this `weft` binary.
pub fn registry(
    file: &Path,
    cassette: Option<&Path>,
    base: Option<Arc<AgentRegistry>>,
    config: Option<(&Path, &str)>,
    around: &Around<'_>,
) -> anyhow::Result<Option<Arc<AgentRegistry>>> {
    let input = crate::input::load(file, weft_ags::load::Limits::default().max_bytes);
    let Some(doc) = input.document else {
        return Ok(None);
    };
    registry_for(Arc::new(doc.value), cassette, base, config, around).map(Some)
}

/// [`registry`] over a document already at hand (`weft resume --sandbox`: the one given, or
/// the one the run's log holds).
pub fn registry_for(
    document: Arc<serde_json::Value>,
    cassette: Option<&Path>,
    base: Option<Arc<AgentRegistry>>,
    config: Option<(&Path, &str)>,
    around: &Around<'_>,
) -> anyhow::Result<Arc<AgentRegistry>> {
    let weft = std::env::current_exe().context("cannot find the weft binary to run the helper")?;
    let sandbox =
        Sandbox::probe_blocking(Helper::weft(weft)).context("cannot probe the sandbox")?;
    let mut agents = match base {
        Some(base) => (*base).clone(),
        None => AgentRegistry::with_defaults(match cassette {
            Some(p) => Some(weft_engine::agent::cassette::load(p)?),
            None => None,
        }),
    };
    let sandbox = Arc::new(sandbox);
    if let Some((config, run_id)) = config {
        let agent = super::config::model_agent(config, Some(Arc::clone(&document)), run_id)
            .map_err(anyhow::Error::msg)?
            .with_cli_sandbox(CliSandbox {
                sandbox: Arc::clone(&sandbox),
                document: Arc::clone(&document),
            });
        agents.register(Arc::new(agent));
    }
    let mut exec = SandboxedExecAgent::new(sandbox, document).with_protected(around.state());
    if let Some(policy) = around.policy()? {
        exec = exec.with_policy(policy);
    }
    agents.register(Arc::new(exec));
    Ok(Arc::new(agents))
}
