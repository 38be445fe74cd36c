//! `weft resume`: resume a stopped run from its log, applying the decisions and the cancel
//! its log holds, shown like `weft run` (`--jsonl`, `--json`, the live view or one line per
//! event: only the events this resume appends), its audit trail first completed from the
//! log. Exit 0 when the run ends succeeded (or had already succeeded: then nothing runs), 3
//! when it still waits on a person, 1 when it ends failed, partial or cancelled, or when the
//! resume is refused (uncertain nodes, RT053, unknown run), 5 when another live process
//! drives the run (who, on which host, its pid and lease expiry are printed).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use weft_engine::{ResumeOptions, RunObserver, RunOptions};
use weft_host::RunSetup;
use weft_store::{EventLog, RunTable};

use super::run::{DRIVEN_ELSEWHERE, emit_record, error_exit, print_error, print_report, who};
use crate::progress::{self, Mode};

pub struct Flags {
    pub force: bool,
    pub retry_nodes: Vec<String>,
    pub retry_uncertain: bool,
    pub cassette: Option<std::path::PathBuf>,
    /// `--config`: the routing profile whose model agent runs the model nodes still to run.
    pub config: Option<std::path::PathBuf>,
    /// `--sandbox`: the nodes still to run are confined as with `weft run --sandbox`.
    pub sandbox: bool,
    pub json: bool,
    pub jsonl: bool,
}

pub fn run(run_id: &str, file: Option<&Path>, db: &Path, flags: Flags) -> anyhow::Result<ExitCode> {
    let mode = Mode::from_flags(flags.json, flags.jsonl);
    // A concrete file store: its audited handle writes the audit lines in the commit.
    let store = weft_store::Store::open(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    let doc = match file.map(weft_engine::load_document).transpose() {
        Ok(d) => d,
        Err(e) => {
            print_error(mode, None, &e)?;
            return Ok(ExitCode::from(1));
        }
    };
    // The run's document for the nodes' tool requirements: the one given, else the one its
    // log holds.
    let document = doc
        .clone()
        .map(Arc::new)
        .or_else(|| logged_document(&store, run_id));
    // Agents, isolation, sandbox: one setup with `weft run` (weft-host).
    let project_dir = std::env::current_dir().context("cannot read the current directory")?;
    let setup = if flags.config.is_some() || flags.sandbox {
        let request = super::run::setup_request(
            flags.config.as_deref(),
            document,
            run_id,
            flags.cassette.as_deref(),
            flags.sandbox,
            &project_dir,
            db,
        );
        match request.and_then(|r| Ok(RunSetup::prepare(&r.request())?)) {
            Ok(setup) => Some(setup),
            Err(e) => {
                writeln!(anstream::stderr(), "error: {e}")?;
                return Ok(ExitCode::from(1));
            }
        }
    } else {
        None
    };
    let trail = weft_host::setup::audit_trail(db, &store);
    let exists = store.get_run(run_id)?.is_some();
    if exists {
        // A run another live process drives is left alone: not even its audit trail is
        // touched (its driver writes it). The resume itself checks again as it takes the
        // lease.
        let clock = weft_engine::clock::SystemClock;
        if let Some(lease) = weft_engine::lease::driven_by(&store, run_id, &clock)? {
            let e = weft_engine::EngineError::Driven(Box::new(lease));
            print_error(mode, Some(run_id), &e)?;
            return Ok(ExitCode::from(DRIVEN_ELSEWHERE));
        }
        // Events appended before the process stopped but not audited yet (a kill between
        // the store and the audit log), including a final `run_finished`.
        if let Err(e) = trail.catch_up(run_id) {
            writeln!(anstream::stderr(), "error: audit: {e}")?;
            return Ok(ExitCode::from(1));
        }
    }
    let seed = if exists && mode == Mode::Live {
        store.read(run_id, 1, usize::MAX)?
    } else {
        Vec::new()
    };
    let (printer, ticker) = progress::observer(mode, Some(run_id), &seed);
    // The driver's appends write their audit lines in their own commit.
    let audited = trail.store().shared();
    let export = Arc::clone(&trail);
    let trail: Arc<dyn RunObserver> = trail;
    let mut run = RunOptions {
        project_dir,
        started_by: who(),
        observers: std::iter::once(trail).chain(printer).collect(),
        cassette: flags.cassette.clone(),
        ..RunOptions::default()
    };
    if let Some(setup) = setup {
        setup.apply_to(&mut run);
    }
    let options = ResumeOptions {
        run,
        force: flags.force,
        retry_uncertain: flags.retry_uncertain,
        retry_nodes: flags.retry_nodes,
    };
    let result = match file {
        Some(path) => weft_engine::resume_file_blocking(&*audited, run_id, path, &options),
        None => weft_engine::resume_run_blocking(&*audited, run_id, None, &options),
    };
    drop(ticker);
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            if exists && !matches!(e, weft_engine::EngineError::Driven(_)) {
                complete_export(&export, run_id)?;
            }
            print_error(mode, exists.then_some(run_id), &e)?;
            return Ok(error_exit(&e));
        }
    };
    let mut out = anstream::stdout();
    if let (Some(old), false) = (
        &report.restarted_from,
        matches!(mode, Mode::Json | Mode::Jsonl),
    ) {
        writeln!(
            out,
            "restarted (policy.resume: restart): {old} is cancelled; the new run is {}",
            report.run_id
        )?;
    }
    match (mode, &report.report) {
        (Mode::Json, _) => writeln!(out, "{}", serde_json::to_string(&report)?)?,
        (Mode::Jsonl, _) => {}
        (_, Some(r)) => print_report(mode, r, &store, db)?,
        (_, None) => {
            writeln!(out, "run_id: {}", report.run_id)?;
            writeln!(out, "already finished: nothing to resume")?;
            writeln!(out, "status: {}", report.status)?;
        }
    }
    if report.resumed {
        emit_record(mode, &store, db, &report.run_id)?;
    }
    Ok(match report.status.as_str() {
        "succeeded" => ExitCode::SUCCESS,
        "awaiting_human" => ExitCode::from(super::run::AWAITING_HUMAN),
        _ => ExitCode::from(1),
    })
}

/// The document a run's `run_started` holds, when the store has the run.
fn logged_document(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> Option<Arc<serde_json::Value>> {
    let first = store.read(run_id, 1, 1).ok()?.into_iter().next()?;
    match weft_engine::RunEvent::from_record(&first).ok()? {
        weft_engine::RunEvent::RunStarted { graph, .. } if graph.is_object() => {
            Some(Arc::new(graph))
        }
        _ => None,
    }
}

/// After a run stopped on an error: its audit export brought up to date (the trail copies
/// nodes' routine lines in batches, `docs/audit.md` §9), so what the process committed is
/// in the file as well. A failure is a warning: the next resume completes the export.
pub fn complete_export(
    export: &weft_engine::audit::AuditTrail,
    run_id: &str,
) -> anyhow::Result<()> {
    if let Err(e) = export.catch_up(run_id) {
        writeln!(
            anstream::stderr(),
            "warning: the audit export was not completed: {e}"
        )?;
    }
    Ok(())
}
