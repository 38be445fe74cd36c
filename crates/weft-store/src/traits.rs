//! The capability traits: one small trait per table.
//!
//! Engine code is bounded only by the traits it uses (`fn step(log: &impl EventLog)`), so the
//! SQLite backend today and a PostgreSQL backend later are interchangeable, and one generic
//! test suite checks both. The methods are synchronous and the implementors `Send + Sync`:
//! an async caller wraps a call in `spawn_blocking` with a cloned handle.

use crate::error::Result;
use crate::model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus,
};

/// The `runs` table.
pub trait RunTable: Send + Sync {
    /// Creates a run with status [`RunStatus::Pending`]; `RunExists` if the id is taken.
    fn create_run(&self, run: &NewRun) -> Result<RunRecord>;

    /// The run, or `None` if there is none with this id.
    fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>>;

    /// Runs ordered by `(created_at_ms, id)`, optionally only those with `status`, at most
    /// `limit` of them.
    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>>;

    /// Sets the status and `updated_at_ms`; `UnknownRun` if there is no such run.
    fn set_status(&self, run_id: &str, status: RunStatus, updated_at_ms: i64) -> Result<()>;
}

/// The `events` table: one append-only log per run.
pub trait EventLog: Send + Sync {
    /// Appends `events` after the current end of the run's log, all or nothing, and returns
    /// their sequence numbers. When it returns `Ok` the events are committed.
    fn append(&self, run_id: &str, events: &[NewEvent]) -> Result<Vec<u64>>;

    /// Like [`EventLog::append`], but only if the log still ends at `expected_last_seq`
    /// (0 for an empty log); otherwise `SequenceConflict` and nothing is written. Two workers
    /// that each read the log and then append this way can never interleave one run's log.
    fn append_expecting(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: &[NewEvent],
    ) -> Result<Vec<u64>>;

    /// Up to `limit` events with `seq >= from_seq`, in order; `UnknownRun` if no such run.
    fn read(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<EventRecord>>;

    /// [`EventLog::read`] with each payload left as its stored JSON text. The default
    /// serialises what `read` parsed; a backend that stores text hands it over as it is.
    fn read_raw(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<RawEventRecord>> {
        Ok(self
            .read(run_id, from_seq, limit)?
            .into_iter()
            .map(RawEventRecord::from)
            .collect())
    }

    /// The seq of the last event (0 if the log is empty); `UnknownRun` if no such run.
    fn last_seq(&self, run_id: &str) -> Result<u64>;
}

/// The `audit_anchors` table (schema v2): per run, the head of its audit log, kept apart
/// from the log so that a truncated log is detected (`docs/audit.md`).
pub trait AuditAnchors: Send + Sync {
    /// Sets the run's anchor; ignored when `audit_seq` is lower than the stored one (an
    /// anchor never moves back). `UnknownRun` if there is no such run.
    fn set_anchor(&self, anchor: &AuditAnchor) -> Result<()>;

    /// The run's anchor, `None` when its audit log has none yet.
    fn get_anchor(&self, run_id: &str) -> Result<Option<AuditAnchor>>;
}
