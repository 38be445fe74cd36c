//! `weft record RUN`: print the AGS run record of a stored run (built from its event log
//! alone by `weft_engine::record`), as pretty JSON.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

/// Opens the store at `db`, or says on stderr that there is none (exit 1): a missing store
/// must not be created by a read-only command.
pub fn open_store(db: &Path) -> anyhow::Result<Option<weft_store::Store>> {
    if !db.is_file() {
        writeln!(anstream::stderr(), "error: no store at {}", db.display())?;
        return Ok(None);
    }
    let store = weft_store::Store::open(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    Ok(Some(store))
}

pub fn run(run_id: &str, db: &Path) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    match weft_engine::record::record_of(&store, run_id) {
        Ok(record) => {
            writeln!(
                anstream::stdout(),
                "{}",
                serde_json::to_string_pretty(&record)?
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            Ok(ExitCode::from(1))
        }
    }
}
