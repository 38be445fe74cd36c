//! `weft audit verify`: check a hash-chained audit log (format: docs/audit.md) and say
//! either `OK: N entries, last hash H` or `file:line: what is wrong` (exit 1). `--run RUN`
//! verifies a run's log against the anchor its store keeps (`docs/audit.md` §9).

use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_audit::{AuditError, VerifyReport};

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
    }
}

/// `--run RUN`: the run's log in the store's audit directory, the store's anchor, and how
/// far the log covers the run's events.
fn verify_run(run_id: &str, db: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(store) = super::record::open_store(db)? else {
        return Ok(ExitCode::from(1));
    };
    let file = match weft_engine::audit::log_path(&weft_engine::audit::default_dir(db), run_id) {
        Ok(f) => f,
        Err(e) => {
            anstream::eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let Some(anchor) = store.get_anchor(run_id)? else {
        anstream::eprintln!(
            "error: the store has no audit anchor for run {run_id} (unknown run, or a run \
             from before audit logs)"
        );
        return Ok(ExitCode::from(1));
    };
    let last = store.last_seq(run_id)?;
    if !json {
        writeln!(
            anstream::stdout(),
            "anchor: seq {} covering events 1..={} of {last}{}",
            anchor.audit_seq,
            anchor.event_seq,
            if anchor.event_seq < last {
                " (the rest is audited when the run resumes)"
            } else {
                ""
            }
        )?;
    }
    verify(&file, Some(&anchor.hash), json)
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
