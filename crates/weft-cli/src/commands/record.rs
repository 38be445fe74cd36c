//! `weft record [RUN]`: print the AGS run record of a stored run (built from its event log
//! alone by `weft_engine::record`), as pretty JSON; `RUN/PATH` (a subgraph's child run id)
//! prints the child's record; without RUN, the store's latest run.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

/// Opens the store at `db`, or says on stderr that there is none (exit 1): a missing store
/// must not be created by a read-only command.
pub fn open_store(db: &Path) -> anyhow::Result<Option<weft_store::SharedStore>> {
    if !db.is_file() {
        writeln!(anstream::stderr(), "error: no store at {}", db.display())?;
        return Ok(None);
    }
    let store = weft_store::open_store(&weft_store::Backend::File(db.to_path_buf()))
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    Ok(Some(store))
}

/// `run`, else the store's latest run (the last created), said on stderr so stdout stays
/// what the command prints; `None` (said on stderr) when the store holds no run.
pub fn run_or_latest(
    store: &dyn weft_store::RunStore,
    run: Option<&str>,
    db: &Path,
) -> anyhow::Result<Option<String>> {
    if let Some(run) = run {
        return Ok(Some(run.to_string()));
    }
    let latest = store.list_runs(None, usize::MAX)?.pop();
    let mut err = anstream::stderr();
    match latest {
        Some(row) => {
            writeln!(
                err,
                "note: no run id given: the latest run of {}, {} (`weft runs` lists them all)",
                db.display(),
                row.id
            )?;
            Ok(Some(row.id))
        }
        None => {
            writeln!(err, "error: {} holds no run yet", db.display())?;
            Ok(None)
        }
    }
}

pub fn run(run_id: Option<&str>, db: &Path) -> anyhow::Result<ExitCode> {
    let Some(store) = open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(run_id) = run_or_latest(&*store, run_id, db)? else {
        return Ok(ExitCode::from(1));
    };
    let run_id = run_id.as_str();
    // A subgraph's child run id is `<run id>/<path>` (`docs/engine.md` §3j): its record is
    // built from its part of the parent's log.
    let printed = match run_id.split_once('/') {
        Some((parent, path)) => weft_engine::record::child_record_of(&*store, parent, path)
            .map(|record| print_value(&record)),
        // As text, the same bytes as the record file: a large run's record is never held
        // as one value tree (`write_if_asked`).
        None => weft_engine::record::record_text_of(&*store, run_id).map(|record| {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            record.write_pretty(&mut out)?;
            out.write_all(b"\n")?;
            out.flush()
        }),
    };
    match printed {
        Ok(written) => {
            written.context("cannot write the record to stdout")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(anstream::stderr(), "error: {e}")?;
            Ok(ExitCode::from(1))
        }
    }
}

/// A record value as pretty JSON on stdout.
fn print_value(record: &serde_json::Value) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    writeln!(std::io::stdout().lock(), "{text}")
}

/// `policy.record_run` (DIGEST §1.5, default `true`): once a run has ended (not while it
/// waits on a person), its record is written to `<store dir>/records/<run id>.json`, the
/// same JSON `weft record` prints. `false` writes nothing (`weft record` still builds it on
/// demand: the log is the truth either way). Returns the path written.
pub fn write_if_asked(
    store: &dyn weft_store::RunStore,
    db: &Path,
    run_id: &str,
) -> anyhow::Result<Option<std::path::PathBuf>> {
    if !weft_engine::record::asks_for_record(store, run_id)? {
        return Ok(None);
    }
    // As text: a large run's record is never held as one value tree.
    let record = weft_engine::record::record_text_of(store, run_id)?;
    if matches!(record.status(), Some("running" | "awaiting_human")) {
        return Ok(None);
    }
    let dir = db.parent().unwrap_or(Path::new("")).join("records");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let safe = !run_id.is_empty()
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !run_id.starts_with('.');
    if !safe {
        anyhow::bail!("run id `{run_id}` cannot name a record file");
    }
    let path = dir.join(format!("{run_id}.json"));
    // Streamed to the file: the text of a large record is never held whole.
    let write = || -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        record.write_pretty(&mut out)?;
        out.write_all(b"\n")?;
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        Ok(())
    };
    write().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Some(path))
}
