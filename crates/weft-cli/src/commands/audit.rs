//! `weft audit verify`: check a hash-chained audit log (format: docs/audit.md) and say
//! either `OK: N entries, last hash H` or `file:line: what is wrong` (exit 1). `--run RUN`
//! verifies a run's log against the anchor its store keeps (`docs/audit.md` §9).

use anyhow::Context as _;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_audit::{AuditError, VerifyReport};
use weft_engine::audit::AuditTrailError;

/// Where `weft` keeps the log when no file is named.
const DEFAULT_LOG: &str = ".weft/audit.jsonl";

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Verify the chain: detects edited, inserted, deleted and reordered lines; with
    /// --anchor, also a truncated tail.
    Verify {
        /// A hash kept outside the log (e.g. in the run store); fail unless a line has it.
        #[arg(long, value_name = "HASH")]
        anchor: Option<String>,
        /// Print the report (or the error) as JSON.
        #[arg(long)]
        json: bool,
        /// The log to verify.
        #[arg(value_name = "FILE", default_value = DEFAULT_LOG)]
        file: PathBuf,
        /// Verify this run's audit log (next to the store) against the anchor the store
        /// keeps for it, instead of FILE and --anchor.
        #[arg(long, value_name = "RUN", conflicts_with = "anchor")]
        run: Option<String>,
        /// The event store (with --run).
        #[arg(
            long,
            value_name = "PATH",
            default_value = ".weft/weft.db",
            requires = "run"
        )]
        db: PathBuf,
    },
    /// Complete a run's audit log (next to the store) from the store's audit chain: the
    /// entries a stop between a commit and its copy left out. Refuses a log that is not a
    /// prefix of the chain, and a run another live process drives.
    Export {
        /// The run.
        #[arg(long, value_name = "RUN")]
        run: String,
        /// The event store.
        #[arg(long, value_name = "PATH", default_value = ".weft/weft.db")]
        db: PathBuf,
    },
}

pub fn run(command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Verify {
            anchor,
            json,
            file,
            run: None,
            ..
        } => verify(file, anchor.as_deref(), *json),
        Command::Verify {
            json,
            run: Some(run),
            db,
            ..
        } => verify_run(run, db, *json),
        Command::Export { run, db } => export_run(run, db),
    }
}

/// The store at `db`, which must exist: `weft audit` checks and completes a store's
/// chain, it never creates one.
fn open_file_store(db: &Path) -> anyhow::Result<Option<weft_store::SharedStore>> {
    if !db.is_file() {
        anstream::eprintln!("error: no store at {}", db.display());
        return Ok(None);
    }
    let store = weft_store::open_store(&weft_store::Backend::File(db.to_path_buf()))
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    Ok(Some(store))
}

/// `export --run RUN`: the run's export completed from the store's chain, then verified.
fn export_run(run_id: &str, db: &Path) -> anyhow::Result<ExitCode> {
    let Some(store) = open_file_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let clock = weft_engine::clock::SystemClock;
    if let Some(lease) = weft_engine::lease::driven_by(&*store, run_id, &clock)? {
        // Its driver writes the export; a second writer could interleave lines.
        let e = weft_engine::EngineError::Driven(Box::new(lease));
        anstream::eprintln!("error: {e}");
        return Ok(ExitCode::from(super::run::DRIVEN_ELSEWHERE));
    }
    let trail = weft_engine::audit::AuditTrail::new(weft_engine::audit::default_dir(db), &*store);
    if let Err(e) = trail.catch_up(run_id) {
        anstream::eprintln!("error: audit: {e}");
        return Ok(ExitCode::from(1));
    }
    verify_run(run_id, db, false)
}

/// `--run RUN`: the store's audit chain of the run (ending at its anchor), the run's
/// export in the store's audit directory, and that the export is a prefix of the chain.
fn verify_run(run_id: &str, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = open_file_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let dir = weft_engine::audit::default_dir(db);
    let file = match weft_engine::audit::log_path(&dir, run_id) {
        Ok(f) => f,
        Err(e) => {
            anstream::eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let report = match weft_engine::audit::verify_run(&*store, &dir, run_id) {
        Ok(r) => r,
        Err(e) => {
            let shown = file.display();
            let (line, text) = match &e {
                AuditTrailError::Log {
                    source: AuditError::Line { line, problem },
                    ..
                } => (Some(*line), format!("{shown}:{line}: {problem}")),
                AuditTrailError::Stored {
                    source: AuditError::Line { line, problem },
                    ..
                } => (
                    Some(*line),
                    format!("store (audit_entries of {run_id}), entry {line}: {problem}"),
                ),
                other => (None, format!("error: {other}")),
            };
            if json {
                let value = json!({"ok": false, "file": shown.to_string(), "line": line, "error": e.to_string()});
                writeln!(
                    anstream::stdout(),
                    "{}",
                    serde_json::to_string_pretty(&value)?
                )?;
            } else {
                anstream::eprintln!("{text}");
            }
            return Ok(ExitCode::from(1));
        }
    };
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("ok".into(), (report.lag == 0).into());
        }
        writeln!(
            anstream::stdout(),
            "{}",
            serde_json::to_string_pretty(&value)?
        )?;
        return Ok(if report.lag == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let mut out = anstream::stdout();
    let (anchor, last) = (&report.anchor, report.events);
    writeln!(
        out,
        "anchor: seq {} covering events 1..={} of {last}{}",
        anchor.audit_seq,
        anchor.event_seq,
        if anchor.event_seq < last {
            " (the rest is audited when the run resumes)"
        } else {
            ""
        }
    )?;
    match &report.stored {
        Some(s) => writeln!(
            out,
            "store: entries {}..={} verified, the last one is the anchor",
            s.first_seq, s.last_seq
        )?,
        None => writeln!(
            out,
            "store: no entries (audited to the file before store schema v4; the file is checked against the anchor)"
        )?,
    }
    if report.lag > 0 {
        anstream::eprintln!(
            "{}: truncated: it ends at entry {}, the store's chain {} entries later (a stop \
             between a commit and its copy leaves it behind; `weft audit export --run {run_id}` \
             completes it from the store)",
            report.file.display(),
            report.export.last_seq,
            report.lag
        );
        return Ok(ExitCode::from(1));
    }
    let mut summary = summary(&report.export);
    if report.stored.is_some() {
        summary.push_str(&format!(
            "; anchor is the last entry (seq {})",
            report.anchor.audit_seq
        ));
    }
    writeln!(out, "OK: {summary}")?;
    Ok(ExitCode::SUCCESS)
}

fn verify(file: &Path, anchor: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let result = std::fs::File::open(file)
        .map_err(AuditError::from)
        .and_then(|f| weft_audit::verify(std::io::BufReader::new(f), anchor));
    let shown = file.display();
    match (result, json) {
        (Ok(report), false) => {
            writeln!(anstream::stdout(), "OK: {}", summary(&report))?;
            Ok(ExitCode::SUCCESS)
        }
        (Ok(report), true) => {
            let mut value = serde_json::to_value(&report)?;
            if let Some(obj) = value.as_object_mut() {
                obj.insert("ok".into(), true.into());
                obj.insert("file".into(), shown.to_string().into());
            }
            writeln!(
                anstream::stdout(),
                "{}",
                serde_json::to_string_pretty(&value)?
            )?;
            Ok(ExitCode::SUCCESS)
        }
        (Err(AuditError::BadAnchor(a)), _) => {
            // A malformed argument is a command-line error (exit 2), not a broken log.
            anstream::eprintln!("error: --anchor {a:?} is not a hash (64 hex digits)");
            Ok(ExitCode::from(2))
        }
        (Err(err), false) => {
            let what = match &err {
                AuditError::Line { line, problem } => format!("{shown}:{line}: {problem}"),
                AuditError::Io(e) => format!("{shown}: cannot read: {e}"),
                other => format!("{shown}: {other}"),
            };
            anstream::eprintln!("{what}");
            Ok(ExitCode::from(1))
        }
        (Err(err), true) => {
            let detail = match &err {
                AuditError::Line { problem, .. } => problem.to_string(),
                other => other.to_string(),
            };
            let value = json!({"ok": false, "file": shown.to_string(), "line": err.line(), "error": detail});
            writeln!(
                anstream::stdout(),
                "{}",
                serde_json::to_string_pretty(&value)?
            )?;
            Ok(ExitCode::from(1))
        }
    }
}

fn summary(report: &VerifyReport) -> String {
    let mut s = format!("{} entries, last hash {}", report.lines, report.last_hash);
    if let Some(a) = report.anchor {
        if a.at_end {
            s.push_str(&format!("; anchor is the last entry (seq {})", a.seq));
        } else {
            s.push_str(&format!(
                "; anchor at seq {}, {} entries after it",
                a.seq,
                report.last_seq - a.seq
            ));
        }
    }
    s
}
