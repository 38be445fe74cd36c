//! Typed errors of the store.
//!
//! Callers branch on these (a conflict means "re-read and retry", an unknown run is a caller
//! bug, a corrupt row or a too-new schema means "stop"), so each case is its own variant.

use thiserror::Error;

use crate::lease::Lease;

/// Result alias for store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything a store operation can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No run with this id exists.
    #[error("unknown run `{run_id}`")]
    UnknownRun {
        /// The id asked for.
        run_id: String,
    },
    /// `create_run` with an id that is already taken.
    #[error("run `{run_id}` already exists")]
    RunExists {
        /// The duplicate id.
        run_id: String,
    },
    /// `append_expecting` found a different last sequence number: another writer appended
    /// first. Re-read the log, re-decide, and retry.
    #[error("sequence conflict on run `{run_id}`: expected last seq {expected}, found {actual}")]
    SequenceConflict {
        /// The run.
        run_id: String,
        /// The last seq the caller had seen.
        expected: u64,
        /// The last seq in the store.
        actual: u64,
    },
    /// The run's lease is held by another, live holder (`acquire_lease`): it is driven
    /// elsewhere until the lease expires or its holder lets it go.
    #[error(
        "run `{run_id}` is driven by {} on host {} (pid {}); its lease holds until {} ms",
        lease.holder.owner, lease.holder.host, lease.holder.pid, lease.expires_at_ms
    )]
    LeaseHeld {
        /// The run.
        run_id: String,
        /// The lease as it is.
        lease: Box<Lease>,
    },
    /// A write fenced by lease token `token` (an append of a driver, a renewal) while the
    /// run's lease has another token: its lease was taken over, and nothing was written.
    #[error(
        "run `{run_id}`: the lease with token {token} was taken over{}; this driver may not write",
        current.as_ref().map(|l| format!(" by {} on host {} (pid {}, token {})", l.holder.owner, l.holder.host, l.holder.pid, l.token)).unwrap_or_default()
    )]
    Fenced {
        /// The run.
        run_id: String,
        /// The token the write carried.
        token: u64,
        /// The run's lease now, if it has one.
        current: Option<Box<Lease>>,
    },
    /// A stored row does not decode (bad JSON, unknown status, negative seq).
    #[error("corrupt row in `{table}` ({key}): {reason}")]
    CorruptRow {
        /// Table name.
        table: &'static str,
        /// Identifies the row, e.g. `run r1 seq 4`.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database was written by a newer weft; opening it could corrupt it.
    #[error(
        "store schema version {found} is newer than this weft supports ({supported}); upgrade weft"
    )]
    SchemaTooNew {
        /// Version recorded in the database.
        found: u32,
        /// Highest version this build knows.
        supported: u32,
    },
    /// The write was carried out but the transaction holding it (a group-commit batch) did
    /// not commit, so nothing of it is stored; retrying is safe.
    #[error("the write transaction failed to commit: {0}")]
    CommitFailed(String),
    /// The database cannot be set up as the store needs it (e.g. WAL refused).
    #[error("cannot set up the database: {0}")]
    Setup(String),
    /// The audit lines of a write could not be made (`audit_log.rs`): nothing of the
    /// write is stored.
    #[error("audit: {0}")]
    Audit(String),
    /// A broken invariant inside the store (a bug), reported instead of panicking.
    #[error("internal store error: {0}")]
    Internal(String),
    /// The writer thread has stopped (it panicked or the store is shutting down).
    #[error("the store's writer thread is gone")]
    WriterGone,
    /// An error from SQLite, with what the store was doing.
    #[error("sqlite error while {context}")]
    Sqlite {
        /// What the store was doing.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// True for errors a caller resolves by re-reading and retrying.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::SequenceConflict { .. })
    }

    /// True when a write was refused because its lease was taken over.
    pub fn is_fenced(&self) -> bool {
        matches!(self, StoreError::Fenced { .. })
    }
}

/// Attaches a context to a rusqlite result (`.ctx("reading events")?`).
pub(crate) trait SqliteContext<T> {
    fn ctx(self, context: &'static str) -> Result<T>;
}

impl<T> SqliteContext<T> for std::result::Result<T, rusqlite::Error> {
    fn ctx(self, context: &'static str) -> Result<T> {
        self.map_err(|source| StoreError::Sqlite { context, source })
    }
}
