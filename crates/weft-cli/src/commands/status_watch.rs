//! `weft status --watch RUN`: the status of `weft status`, rendered again each time events
//! of the run are committed (by any process; the store's tail, `docs/store.md` §7), until
//! the run ends. On a terminal each render replaces the previous one (the screen is
//! cleared); otherwise renders follow each other (with `--json`: one object per line).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use weft_store::TailFrom;

use super::follow::RunEnd;
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
    if store.get_run(run_id)?.is_none() {
        writeln!(anstream::stderr(), "error: unknown run `{run_id}`")?;
        return Ok(ExitCode::from(1));
    }
    let replace = !json && std::io::stdout().is_terminal();
    let render = || -> anyhow::Result<ExitCode> {
        if replace {
            write!(anstream::stdout(), "{CLEAR}")?;
        }
        super::status::render(&*store, run_id, db, json)
    };
    // The run as it is now; then each batch of committed events renders it again.
    let seen = store.last_seq(run_id)?;
    let mut end = RunEnd::default();
    end.read_up_to(&*store, run_id, seen)?;
    let code = render()?;
    if code != ExitCode::SUCCESS || end.ended_at(&*store, run_id, seen)? {
        return Ok(code);
    }
    let mut tail = store.tail(TailFrom::Run {
        run_id: run_id.to_owned(),
        after_seq: seen,
    });
    loop {
        let batch = tail.next_batch_blocking()?;
        batch.iter().for_each(|tailed| end.see(&tailed.event));
        let code = render()?;
        let Some(last) = batch.last() else {
            continue;
        };
        if code != ExitCode::SUCCESS || end.ended_at(&*store, run_id, last.event.seq)? {
            return Ok(code);
        }
    }
}
