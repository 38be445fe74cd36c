//! `weft cancel RUN`: asks a run to stop. It appends `cancel_requested` (an inbox event,
//! `docs/engine.md` §2c) with who asked. A live driver notices it, kills the running node
//! processes, settles what runs or waits `cancelled` and finishes the run `cancelled`; this
//! command waits up to `--wait` seconds for that. A run that is not live (suspended on a
//! person, or stopped) is finished here, through the resume machinery.
//!
//! Exit codes: 0 the run is cancelled; 1 refused (unknown run, already finished) or the
//! finishing failed; 4 the cancel is recorded but no driver finished the run within
//! `--wait` (`weft resume RUN` completes it).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use weft_engine::{ResumeOptions, RunEvent, RunOptions};
use weft_store::RunStatus;

use super::decide::Identity;
use super::record::open_store;

/// The exit code of a cancel that no driver completed in time.
const PENDING: u8 = 4;

fn finished_status(
    store: &dyn weft_store::RunStore,
    run_id: &str,
) -> anyhow::Result<Option<String>> {
    let records = store.read(run_id, 1, usize::MAX)?;
    Ok(records
        .iter()
        .rev()
        .find_map(|r| match RunEvent::from_record(r) {
            Ok(RunEvent::RunFinished { status, .. }) => Some(status),
            _ => None,
        }))
}

/// Nobody drives the run: finishes the cancellation through the resume machinery.
fn finish_here(
    store: &dyn weft_store::RunStore,
    run_id: &str,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let options = ResumeOptions {
        run: RunOptions {
            project_dir: std::env::current_dir().context("cannot read the current directory")?,
            ..RunOptions::default()
        },
        ..ResumeOptions::default()
    };
    match weft_engine::resume_run_blocking(store, run_id, None, &options) {
        Ok(report) => {
            writeln!(out, "status: {}", report.status)?;
            Ok(ExitCode::from(if report.status == "cancelled" {
                0
            } else {
                1
            }))
        }
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            Ok(ExitCode::from(1))
        }
    }
}

pub fn run(run_id: &str, db: &Path, wait: f64, who: &Identity) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let actor = who.actor().name;
    let receipt =
        match weft_engine::human::request_cancel(&*store, run_id, &actor, who.note.as_deref()) {
            Ok(r) => r,
            Err(e) => {
                writeln!(anstream::stderr(), "error: {e}")?;
                return Ok(ExitCode::from(1));
            }
        };
    let mut out = anstream::stdout();
    if receipt.seq.is_some() {
        writeln!(out, "cancel requested by {actor}")?;
    } else {
        writeln!(out, "a cancel was already requested")?;
    }
    if receipt.run_status != RunStatus::Running {
        return finish_here(&*store, run_id, &mut out);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(wait.max(0.0));
    loop {
        if let Some(status) = finished_status(&*store, run_id)? {
            writeln!(out, "status: {status}")?;
            return Ok(ExitCode::from(if status == "cancelled" { 0 } else { 1 }));
        }
        // The driver suspended (or stopped) before it saw the request: finish it here.
        if store
            .get_run(run_id)?
            .is_some_and(|r| r.status != RunStatus::Running)
        {
            return finish_here(&*store, run_id, &mut out);
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    writeln!(
        out,
        "the run is marked running but no driver finished it within {wait}s (its process may be gone); `weft resume {run_id}` completes the cancellation"
    )?;
    Ok(ExitCode::from(PENDING))
}
