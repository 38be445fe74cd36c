//! The engine's audit trail: every authority-relevant run event (run start with its graph
//! digest, params and who started it; node starts with their route and attempt; node
//! outcomes with their criteria verdict summary; human decisions, policy decisions,
//! cancellations; resume actions; the run's end) becomes an entry of a hash-chained
//! `weft-audit` chain, one per run (`docs/audit.md` §9).
//!
//! The chain is written **in the store's commit**: a store handle made with
//! [`weft_store::AuditWrites::audited`] and [`RunAuditEncoder`] ([`encode`]) stores the lines of
//! the events it appends in the same transaction as the events (`audit_entries`, schema
//! v4) and moves the run's anchor (`audit_anchors`) to the chain's head, so the audit
//! costs no sync of its own and after any crash the log and its audit agree. [`AuditTrail`]
//! ([`export`]) copies the stored lines to `<dir>/<run id>.jsonl` after each commit, the
//! file `weft audit verify` checks; [`verify_run`] checks the stored chain, the export and
//! that the export is a prefix of the chain (it lags after a crash between a commit and
//! its copy, until the run's next use completes it). Which events are audited and how:
//! [`table`].

pub mod encode;
mod export;
mod payload_members;
pub mod table;
mod verify;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

pub use encode::RunAuditEncoder;
pub use export::AuditTrail;
pub use verify::{RunAuditReport, StoredChain, verify_run};

/// The directory of the audit logs for a store at `db`: `audit/` next to it
/// (`.weft/audit/` for the default `.weft/weft.db`).
pub fn default_dir(db: &Path) -> PathBuf {
    db.parent().unwrap_or(Path::new("")).join("audit")
}

/// weft's own files of the store `db`, absolute: the database with its `-wal`, `-shm` and
/// `-journal`, and its audit directory. Kept out of what a step may write (the sandbox) and
/// out of an isolated attempt's copy of the project (they change while it runs).
pub fn state_paths(db: &Path) -> Vec<PathBuf> {
    let db = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    let mut paths: Vec<PathBuf> = ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        })
        .collect();
    paths.push(default_dir(&db));
    paths
}

/// Why the audit trail could not record or read a run's log.
#[derive(Debug, thiserror::Error)]
pub enum AuditTrailError {
    /// A run id that cannot be a file name (the CLI's generated ids always can).
    #[error("run id `{0}` cannot name an audit file (use letters, digits, `.`, `_`, `-`)")]
    RunId(String),
    #[error("audit log {path}: {source}")]
    Log {
        path: PathBuf,
        source: weft_audit::AuditError,
    },
    #[error("store: {0}")]
    Store(#[from] weft_store::StoreError),
    #[error("audit log {path}: its last entry has no `event_seq`: not a run audit log")]
    Foreign { path: PathBuf },
    /// The export is not a prefix of the store's chain: it is never appended to.
    #[error("audit log {path} is not a copy of the store's audit chain: {detail}")]
    Diverged { path: PathBuf, detail: String },
    /// The store's own chain does not verify.
    #[error("the store's audit chain of run {run_id}: {source}")]
    Stored {
        run_id: String,
        source: weft_audit::AuditError,
    },
    /// The store keeps no audit of the run (unknown run, or a run without an audit).
    #[error(
        "the store has no audit anchor for run {0} (unknown run, or a run without an audit trail)"
    )]
    NoAnchor(String),
}

/// The audit log of `run_id` in `dir`.
pub fn log_path(dir: &Path, run_id: &str) -> Result<PathBuf, AuditTrailError> {
    let ok = !run_id.is_empty()
        && !run_id.starts_with('.')
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(dir.join(format!("{run_id}.jsonl")))
    } else {
        Err(AuditTrailError::RunId(run_id.to_string()))
    }
}

/// The `event_seq` of the last line of a (verified, non-empty) run audit log.
fn last_event_seq(path: &Path) -> Result<u64, AuditTrailError> {
    let file = std::fs::File::open(path).map_err(|e| AuditTrailError::Log {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    let mut last = None;
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|e| AuditTrailError::Log {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        last = Some(line);
    }
    last.and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .and_then(|v| v["entry"]["data"]["event_seq"].as_u64())
        .ok_or_else(|| AuditTrailError::Foreign {
            path: path.to_path_buf(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_run_ids_name_a_log() {
        let dir = Path::new("/a/audit");
        assert_eq!(
            log_path(dir, "run-1-2-3").ok(),
            Some(PathBuf::from("/a/audit/run-1-2-3.jsonl"))
        );
        for bad in ["", "../x", "a/b", ".hidden", "a b", "a\\b"] {
            assert!(log_path(dir, bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            default_dir(Path::new(".weft/weft.db")),
            PathBuf::from(".weft/audit")
        );
        assert_eq!(default_dir(Path::new("x.db")), PathBuf::from("audit"));
    }
}
