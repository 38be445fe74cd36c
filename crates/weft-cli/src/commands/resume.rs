//! `weft resume`: resume a stopped run from its log, applying the decisions and the cancel
//! its log holds. Exit 0 when the run ends succeeded (or had already succeeded: then
//! nothing runs), 3 when it still waits on a person, 1 when it ends failed, partial or
//! cancelled, or when the resume is refused (uncertain nodes, RT053, unknown run).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use weft_engine::{ResumeOptions, RunOptions};

pub struct Flags {
    pub force: bool,
    pub retry_nodes: Vec<String>,
    pub retry_uncertain: bool,
    pub json: bool,
}

pub fn run(run_id: &str, file: Option<&Path>, db: &Path, flags: Flags) -> anyhow::Result<ExitCode> {
    let store = weft_store::Store::open(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    let doc = match file.map(weft_engine::load_document).transpose() {
        Ok(d) => d,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let options = ResumeOptions {
        run: RunOptions {
            project_dir: std::env::current_dir().context("cannot read the current directory")?,
            ..RunOptions::default()
        },
        force: flags.force,
        retry_uncertain: flags.retry_uncertain,
        retry_nodes: flags.retry_nodes,
    };
    let report = match weft_engine::resume_run_blocking(&store, run_id, doc.as_ref(), &options) {
        Ok(r) => r,
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            return Ok(ExitCode::from(1));
        }
    };
    let mut out = anstream::stdout();
    if flags.json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        writeln!(out, "run_id: {}", report.run_id)?;
        if !report.resumed {
            writeln!(out, "already finished: nothing to resume")?;
        }
        if let Some(r) = &report.report {
            for n in &r.nodes {
                writeln!(
                    out,
                    "  {:<24} {:<10} attempts {}",
                    n.id, n.state, n.attempts
                )?;
            }
        }
        writeln!(out, "status: {}", report.status)?;
        if let Some(r) = report.report.as_ref().filter(|r| !r.waiting.is_empty()) {
            super::waiting::print(&mut out, &report.run_id, db, &r.waiting)?;
        }
    }
    Ok(match report.status.as_str() {
        "succeeded" => ExitCode::SUCCESS,
        "awaiting_human" => ExitCode::from(super::run::AWAITING_HUMAN),
        _ => ExitCode::from(1),
    })
}
