//! `weft status --watch RUN`: the status of `weft status`, rendered again each time events
//! of the run are committed (by any process; the store's tail, `docs/store.md` §7), until
//! the run ends. On a terminal each render replaces the previous one (the screen is
//! cleared); otherwise renders follow each other (with `--json`: one object per line).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use weft_host::StatusReport;
use weft_host::view::RunView;
use weft_store::TailFrom;

use super::record::open_store;

/// Clears the screen and moves the cursor home.
const CLEAR: &str = "\x1b[H\x1b[2J";

pub fn run(run_id: Option<&str>, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(run_id) = super::record::run_or_latest(&*store, run_id, db)? else {
        return Ok(ExitCode::from(1));
    };
    let run_id = run_id.as_str();
    let Some(row) = store.get_run(run_id)? else {
        writeln!(anstream::stderr(), "error: unknown run `{run_id}`")?;
        return Ok(ExitCode::from(1));
    };
    let replace = !json && std::io::stdout().is_terminal();
    // The run view of the log as it is now, then each batch of committed events folded in
    // and rendered; the row is read again for what only it says (suspended).
    let records = weft_engine::record::read_log(&*store, run_id)?;
    let mut seen = records.last().map_or(0, |r| r.seq);
    let mut view = RunView::of_records(run_id, &records);
    drop(records);
    let mut row = row.status;
    let render = |view: &RunView, row| -> anyhow::Result<ExitCode> {
        if replace {
            write!(anstream::stdout(), "{CLEAR}")?;
        }
        super::status::render(&StatusReport::of_view(view, row), db, json)
    };
    let mut tail = store.tail(TailFrom::Run {
        run_id: run_id.to_owned(),
        after_seq: seen,
    });
    loop {
        let code = render(&view, row)?;
        // Ended (a later `node_reset` would reopen it) and nothing after the end.
        if code != ExitCode::SUCCESS || (view.status.is_some() && store.last_seq(run_id)? == seen) {
            return Ok(code);
        }
        let batch = tail.next_batch_blocking()?;
        for tailed in &batch {
            view.apply_record(&tailed.event);
            seen = tailed.event.seq;
        }
        row = store.get_run(run_id)?.map_or(row, |r| r.status);
    }
}
