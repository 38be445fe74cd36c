//! The engine's audit trail: every authority-relevant run event (run start with its graph
//! digest, params and who started it; node starts with their route and attempt; node
//! outcomes with their criteria verdict summary; human decisions, policy decisions,
//! cancellations; resume actions; the run's end) becomes an entry of a hash-chained
//! `weft-audit` log, one file per run (`<dir>/<run id>.jsonl`), and the head hash of that
//! log is anchored in the store (`audit_anchors`), so a truncated log is detected.
//!
//! [`AuditTrail`] is a [`RunObserver`]: for each event, right after it is appended to the
//! store and before the driver acts on it, its entry is appended, the file is synced, and
//! the anchor is set (one batch per event). A failure stops the run (fail closed). Because
//! the anchor moves only after the sync, and the entries carry the `event_seq` they cover,
//! a process killed anywhere in between leaves an audit log that [`AuditTrail::catch_up`]
//! (called by every resume and on first use of a run) completes from the store, without
//! duplicates. Opening a run's log checks that it still contains the store's anchor (a
//! truncated log is never appended to) and anchors a synced batch whose anchor was lost.
//! Which events are audited and how: [`table`].

pub mod table;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use weft_audit::{AuditWriter, Entry};
use weft_store::{AuditAnchor, SharedStore};

use crate::observe::{ObserveError, Observed, RunObserver};

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

/// One run's open log and how far it covers the run's events.
#[derive(Debug)]
struct OpenLog {
    run_id: String,
    writer: AuditWriter,
    /// The last run event the log covers.
    event_seq: u64,
}

/// Writes the audit trail of the runs it observes (see the module docs).
pub struct AuditTrail {
    dir: PathBuf,
    store: SharedStore,
    open: Mutex<Option<OpenLog>>,
}

impl std::fmt::Debug for AuditTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditTrail")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl AuditTrail {
    /// Audit logs go to `dir` (created when needed); anchors go to `store`, which must be
    /// the store the runs are logged in.
    pub fn new(dir: impl Into<PathBuf>, store: SharedStore) -> Self {
        AuditTrail {
            dir: dir.into(),
            store,
            open: Mutex::new(None),
        }
    }

    /// Audits every event of `run_id` in the store that its log does not cover yet, and
    /// anchors the result. Idempotent.
    pub fn catch_up(&self, run_id: &str) -> Result<(), AuditTrailError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let log = self.log_for(&mut open, run_id)?;
        let last = self.store.last_seq(run_id)?;
        self.write_upto(log, last, None)
    }

    /// Opens (or keeps) the log of `run_id`: verifies it and finds the last event it covers.
    fn log_for<'a>(
        &self,
        open: &'a mut Option<OpenLog>,
        run_id: &str,
    ) -> Result<&'a mut OpenLog, AuditTrailError> {
        if open.as_ref().is_none_or(|o| o.run_id != run_id) {
            let path = log_path(&self.dir, run_id)?;
            let log_err = |source| AuditTrailError::Log {
                path: path.clone(),
                source,
            };
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| log_err(weft_audit::AuditError::Io(e)))?;
            let writer = AuditWriter::open(&path).map_err(log_err)?;
            let event_seq = if writer.head().seq == 0 {
                0
            } else {
                last_event_seq(&path)?
            };
            // Never append to a log cut below what the store vouches for; and re-anchor a
            // log whose last batch was synced but not anchored (a stop in between).
            let anchor = self.store.get_anchor(run_id)?;
            if let Some(a) = &anchor {
                let file = std::fs::File::open(&path)
                    .map_err(|e| log_err(weft_audit::AuditError::Io(e)))?;
                weft_audit::verify(BufReader::new(file), Some(&a.hash)).map_err(log_err)?;
            }
            let head = writer.head();
            if head.seq > anchor.as_ref().map_or(0, |a| a.audit_seq) {
                self.store.set_anchor(&AuditAnchor {
                    run_id: run_id.to_string(),
                    event_seq,
                    audit_seq: head.seq,
                    hash: head.hash.clone(),
                    updated_at_ms: crate::clock::Clock::now_ms(&crate::clock::SystemClock),
                })?;
            }
            *open = Some(OpenLog {
                run_id: run_id.to_string(),
                writer,
                event_seq,
            });
        }
        open.as_mut()
            .ok_or_else(|| AuditTrailError::RunId(run_id.to_string()))
    }

    /// Audits the stored events after `log.event_seq` up to `upto` (reading them from the
    /// store, except `current`, which the caller already has), as one batch: append, sync,
    /// anchor.
    fn write_upto(
        &self,
        log: &mut OpenLog,
        upto: u64,
        current: Option<(&str, &serde_json::Value, i64)>,
    ) -> Result<(), AuditTrailError> {
        if upto <= log.event_seq {
            return Ok(());
        }
        let mut entries: Vec<Entry> = Vec::new();
        let stored_upto = if current.is_some() { upto - 1 } else { upto };
        if stored_upto > log.event_seq {
            let missing = usize::try_from(stored_upto - log.event_seq).unwrap_or(usize::MAX);
            for r in self.store.read(&log.run_id, log.event_seq + 1, missing)? {
                entries.extend(table::entry_for(
                    &log.run_id,
                    r.seq,
                    r.recorded_at_ms,
                    &r.kind,
                    &r.payload,
                ));
            }
        }
        if let Some((kind, payload, at)) = current {
            entries.extend(table::entry_for(&log.run_id, upto, at, kind, payload));
        }
        if entries.is_empty() {
            log.event_seq = upto;
            return Ok(());
        }
        let path = log.writer.path().to_path_buf();
        let log_err = |source| AuditTrailError::Log {
            path: path.clone(),
            source,
        };
        let receipts = log.writer.append_all(&entries).map_err(&log_err)?;
        log.writer.sync().map_err(&log_err)?;
        log.event_seq = upto;
        if let Some(last) = receipts.last() {
            self.store.set_anchor(&AuditAnchor {
                run_id: log.run_id.clone(),
                event_seq: upto,
                audit_seq: last.seq,
                hash: last.hash.clone(),
                updated_at_ms: entries
                    .last()
                    .map_or(0, |e| i64::try_from(e.at_ms).unwrap_or(i64::MAX)),
            })?;
        }
        Ok(())
    }
}

impl RunObserver for AuditTrail {
    fn on_event(&self, seen: &Observed<'_>) -> Result<(), ObserveError> {
        let (kind, payload) = seen.stored().map_err(|e| ObserveError::new("audit", e))?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let result = self.log_for(&mut open, seen.run_id).and_then(|log| {
            self.write_upto(log, seen.seq, Some((kind, &payload, seen.recorded_at_ms)))
        });
        result.map_err(|e| ObserveError::new("audit", e))
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
