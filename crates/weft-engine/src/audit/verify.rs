//! `weft audit verify --run`: the store's chain of a run, its JSONL export, and that the
//! export is a prefix of the chain.

use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use weft_audit::VerifyReport;
use weft_store::{AuditAnchor, AuditLine, RunStore};

use super::{AuditTrailError, log_path};

/// Lines read from the store per query.
const CHUNK: usize = 4096;

/// The part of a run's chain the store keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredChain {
    /// Its first entry (1, unless the run was audited to a file before schema v4).
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_hash: String,
}

/// A verified run audit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunAuditReport {
    /// The export.
    pub file: PathBuf,
    /// The export's chain.
    pub export: VerifyReport,
    /// The store's chain; `None` for a run audited to its file only (before schema v4),
    /// whose file is then checked against the store's anchor.
    pub stored: Option<StoredChain>,
    /// Entries of the store's chain not (yet) in the export: it is written after each
    /// commit, so a crash in between leaves it behind until the run's next use.
    pub lag: u64,
    pub anchor: AuditAnchor,
    /// The run's events (the anchor says how many the chain covers).
    pub events: u64,
}

/// Verifies the audit of `run_id`: the store's chain up to its anchor, the export in
/// `dir`, and that every line of the export is the store's line of the same `seq`.
pub fn verify_run(
    store: &dyn RunStore,
    dir: &Path,
    run_id: &str,
) -> Result<RunAuditReport, AuditTrailError> {
    let file = log_path(dir, run_id)?;
    let anchor = store
        .get_anchor(run_id)?
        .ok_or_else(|| AuditTrailError::NoAnchor(run_id.to_string()))?;
    let events = store.last_seq(run_id)?;
    let lines = stored_lines(store, run_id)?;
    let log_err = |source| AuditTrailError::Log {
        path: file.clone(),
        source,
    };
    let open = || File::open(&file).map_err(|e| log_err(weft_audit::AuditError::Io(e)));
    let Some(first) = lines.first() else {
        // Audited to the file before schema v4: the anchor is all the store has.
        let export =
            weft_audit::verify(BufReader::new(open()?), Some(&anchor.hash)).map_err(log_err)?;
        return Ok(RunAuditReport {
            file,
            export,
            stored: None,
            lag: 0,
            anchor,
            events,
        });
    };
    let stored = verify_stored(run_id, &lines, &anchor)?;
    let diverged = |detail: String| AuditTrailError::Diverged {
        path: file.clone(),
        detail,
    };
    // The export: a valid chain, reaching the store's first line (for a chain begun in a
    // file before schema v4), and equal to the store's lines where both have one.
    let before = first.audit_seq - 1;
    let export = if before == 0 {
        weft_audit::verify(BufReader::new(open()?), None).map_err(log_err)?
    } else {
        let link = first_prev(first).unwrap_or_default();
        let r = weft_audit::verify(BufReader::new(open()?), Some(&link)).map_err(log_err)?;
        if r.anchor.map(|a| a.seq) != Some(before) {
            return Err(diverged(format!(
                "its entry {before} is not the one the store's chain continues"
            )));
        }
        r
    };
    if export.last_seq > stored.last_seq {
        return Err(diverged(format!(
            "it has {} entries, the store's chain {}",
            export.last_seq, stored.last_seq
        )));
    }
    for (seq, line) in (1u64..).zip(BufReader::new(open()?).lines()) {
        let line = line.map_err(|e| log_err(weft_audit::AuditError::Io(e)))?;
        let Some(stored_line) = seq
            .checked_sub(first.audit_seq)
            .and_then(|i| lines.get(usize::try_from(i).ok()?))
        else {
            continue;
        };
        if stored_line.line != line {
            return Err(diverged(format!(
                "its entry {seq} differs from the store's"
            )));
        }
    }
    Ok(RunAuditReport {
        file,
        lag: stored.last_seq - export.last_seq,
        export,
        stored: Some(stored),
        anchor,
        events,
    })
}

fn stored_lines(store: &dyn RunStore, run_id: &str) -> Result<Vec<AuditLine>, AuditTrailError> {
    let mut lines: Vec<AuditLine> = Vec::new();
    loop {
        let after = lines.last().map_or(0, |l| l.audit_seq);
        let chunk = store.audit_lines(run_id, after, CHUNK)?;
        let done = chunk.len() < CHUNK;
        lines.extend(chunk);
        if done {
            return Ok(lines);
        }
    }
}

/// The store's lines as a chain (from the first one's `prev`) that ends at the anchor.
fn verify_stored(
    run_id: &str,
    lines: &[AuditLine],
    anchor: &AuditAnchor,
) -> Result<StoredChain, AuditTrailError> {
    let stored_err = |source| AuditTrailError::Stored {
        run_id: run_id.to_string(),
        source,
    };
    let first = lines.first().map_or(1, |l| l.audit_seq);
    let text: String = lines.iter().map(|l| format!("{}\n", l.line)).collect();
    let link = lines.first().and_then(first_prev).unwrap_or_default();
    let report = weft_audit::verify_from(text.as_bytes(), first - 1, &link, Some(&anchor.hash))
        .map_err(stored_err)?;
    // Each row's own columns must be its line's (a row renumbered or re-hashed in place).
    for (i, l) in lines.iter().enumerate() {
        let expected = first + i as u64;
        if l.audit_seq != expected || !l.line.contains(&format!("\"hash\":\"{}\"", l.hash)) {
            return Err(stored_err(weft_audit::AuditError::Entry(format!(
                "row {} does not hold entry {expected}",
                l.audit_seq
            ))));
        }
    }
    if report.anchor.is_none_or(|a| !a.at_end) {
        return Err(stored_err(weft_audit::AuditError::Entry(format!(
            "the anchor (entry {}) is not the chain's last entry ({})",
            anchor.audit_seq, report.last_seq
        ))));
    }
    Ok(StoredChain {
        first_seq: first,
        last_seq: report.last_seq,
        last_hash: report.last_hash,
    })
}

/// The `prev` member of a stored line.
pub(super) fn first_prev(line: &AuditLine) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(&line.line)
        .ok()?
        .get("prev")?
        .as_str()
        .map(str::to_owned)
}
