//! `weft run`: run a document to its end and print the run id, the status and (in text)
//! one line per node. Exit 0 when the run succeeded, 1 when it failed, is partial or was
//! cancelled, 3 when it waits on a person (`awaiting_human`: the waits and the commands
//! that decide them are printed; `weft resume RUN` continues).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::{Map, Value};
use weft_engine::{FinalStatus, RunOptions};

/// Parses `KEY=VALUE` params: VALUE as JSON when it parses, else as a string.
fn parse_params(params: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for p in params {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("--param `{p}`: expected KEY=VALUE"))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

pub fn run(
    file: &Path,
    params: &[String],
    max_parallel: Option<usize>,
    db: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let params = parse_params(params)?;
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let store = weft_store::Store::open(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    let options = RunOptions {
        params,
        max_parallel,
        project_dir: std::env::current_dir().context("cannot read the current directory")?,
        run_id: None,
        sleeper: None,
        stop_after_events: None,
    };
    let report = match weft_engine::run_file_blocking(file, &store, &options) {
        Ok(r) => r,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let mut out = anstream::stdout();
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        writeln!(out, "run_id: {}", report.run_id)?;
        for n in &report.nodes {
            let error = n
                .error
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default();
            writeln!(
                out,
                "  {:<24} {:<10} attempts {}{error}",
                n.id, n.state, n.attempts
            )?;
        }
        for r in &report.reasons {
            writeln!(out, "reason: {r}")?;
        }
        writeln!(out, "status: {}", report.status.as_str())?;
        if !report.waiting.is_empty() {
            super::waiting::print(&mut out, &report.run_id, db, &report.waiting)?;
        }
    }
    Ok(exit_code(report.status))
}

/// The run exit code of a final status: 0 succeeded, 3 awaiting a person, 1 otherwise.
pub fn exit_code(status: FinalStatus) -> ExitCode {
    match status {
        FinalStatus::Succeeded => ExitCode::SUCCESS,
        FinalStatus::AwaitingHuman => ExitCode::from(AWAITING_HUMAN),
        _ => ExitCode::from(1),
    }
}

/// The exit code of a run that waits on a person (`docs/cli.md`).
pub const AWAITING_HUMAN: u8 = 3;
