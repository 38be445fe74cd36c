//! `weft events RUN`: the run's stored events as JSON lines
//! (`{"seq","kind","payload","recorded_at_ms"}`), in log order; `--follow`: also those
//! committed afterwards (`follow.rs`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

pub fn run(run_id: Option<&str>, db: &Path, follow: bool, after: u64) -> anyhow::Result<ExitCode> {
    if !db.is_file() {
        writeln!(anstream::stderr(), "error: no store at {}", db.display())?;
        return Ok(ExitCode::from(1));
    }
    let store = weft_store::open_store(&weft_store::Backend::File(db.to_path_buf()))
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    if follow {
        return super::follow::run(&*store, run_id, after);
    }
    let Some(run_id) = run_id else {
        writeln!(
            anstream::stderr(),
            "error: RUN is required without --follow"
        )?;
        return Ok(ExitCode::from(2));
    };
    let mut out = anstream::stdout();
    let mut from = after.saturating_add(1);
    loop {
        let batch = match store.read(run_id, from, 1000) {
            Ok(b) => b,
            Err(e) => {
                writeln!(anstream::stderr(), "error: {e}")?;
                return Ok(ExitCode::from(1));
            }
        };
        let Some(last) = batch.last().map(|e| e.seq) else {
            break;
        };
        for e in &batch {
            writeln!(out, "{}", line(e))?;
        }
        from = last + 1;
    }
    Ok(ExitCode::SUCCESS)
}

/// An event as `weft events` prints it.
pub fn line(e: &weft_store::EventRecord) -> serde_json::Value {
    serde_json::json!({
        "seq": e.seq,
        "kind": e.kind,
        "payload": e.payload,
        "recorded_at_ms": e.recorded_at_ms,
    })
}
