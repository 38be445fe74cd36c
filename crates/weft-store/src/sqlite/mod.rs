//! The SQLite backend: [`SqliteStore`] (a database file, or a private one in memory), its
//! opening, and its trait implementations.

mod anchors;
mod audit_entries;
mod connection;
mod fence;
mod follow;
mod lease;
mod migrations;
mod pending;
mod queries;
mod readers;
mod seam;
mod tail_read;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;

pub use migrations::SCHEMA_VERSION;
use queries::PreparedEvent;
use readers::Readers;
use writer::{Reply, Request, WriteOp, WriteOutcome};

use crate::counters::Counters;
use crate::error::{Result, StoreError};
use crate::lease::HandleFence;
use crate::model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus, StoreStats,
};
use crate::traits::{AuditAnchors, EventLog, RunTable};

/// The event store on SQLite: on a file, one writer thread with group commit and pooled
/// readers; in memory, one connection written inline.
///
/// Cheap to clone (an `Arc`); `Send + Sync`, so one handle serves every thread. The writer
/// thread stops when the last clone is dropped, after finishing what was queued.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
    /// The lease this handle writes under (`fence.rs`); none for a plain handle.
    fence: HandleFence,
    /// What writes the audit lines of this handle's appends (`audit_entries.rs`); `None`
    /// for a handle that writes none.
    audit: Option<Arc<dyn crate::audit_log::AuditEncoder>>,
}

struct Inner {
    requests: Option<Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    /// In-memory stores write inline, on the caller's thread: there is no fsync to group,
    /// and a hop to a writer thread would cost more than the write.
    inline: Option<Arc<Mutex<Connection>>>,
    readers: Readers,
    counters: Arc<Counters>,
    path: Option<PathBuf>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channel ends the writer's loop; joining makes sure the last batch
        // is committed and the connection closed before the store is gone.
        drop(self.requests.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        // The tail's hub closes its connection before the readers close theirs, so the
        // last close checkpoints the WAL (`tail/hub.rs`).
        self.counters.watchers.stop_hub();
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` and migrates it to
    /// [`SCHEMA_VERSION`]; `SchemaTooNew` if a newer weft wrote it.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref().to_path_buf();
        let mut conn = connection::open_writer(&path)?;
        migrations::migrate(&mut conn)?;
        let readers = Readers::Pool {
            path: path.clone(),
            idle: Mutex::new(Vec::new()),
        };
        SqliteStore::start(Arc::new(Mutex::new(conn)), readers, Some(path))
    }

    /// A private in-memory database (tests, benchmarks, runs that need no durability): the
    /// same SQL and transactions, written inline on the caller's thread instead of by a
    /// writer thread (nothing to fsync, so nothing to group).
    pub fn open_in_memory() -> Result<SqliteStore> {
        let mut conn = connection::open_memory()?;
        migrations::migrate(&mut conn)?;
        let conn = Arc::new(Mutex::new(conn));
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                requests: None,
                writer: None,
                inline: Some(Arc::clone(&conn)),
                readers: Readers::Shared(conn),
                counters: Arc::new(Counters::default()),
                path: None,
            }),
            fence: HandleFence::default(),
            audit: None,
        })
    }

    fn start(
        conn: Arc<Mutex<Connection>>,
        readers: Readers,
        path: Option<PathBuf>,
    ) -> Result<SqliteStore> {
        let (requests, receiver) = mpsc::channel();
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let writer = std::thread::Builder::new()
            .name("weft-store-writer".to_owned())
            .spawn(move || writer::run(conn, receiver, thread_counters))
            .map_err(|e| StoreError::Setup(format!("cannot start the writer thread: {e}")))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                requests: Some(requests),
                writer: Some(writer),
                inline: None,
                readers,
                counters,
                path,
            }),
            fence: HandleFence::default(),
            audit: None,
        })
    }

    /// The database file, `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> Result<u32> {
        self.inner.readers.with(migrations::current_version)
    }

    /// [`EventLog::append_expecting`] taking the events by value (serialised text moves
    /// into the write instead of being copied).
    pub fn append_expecting_owned(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        let events = events.into_iter().map(PreparedEvent::from).collect();
        self.submit_prepared(run_id, Some(expected_last_seq), events)
    }

    /// Write counters since opening (transactions = fsyncs of the WAL).
    pub fn stats(&self) -> StoreStats {
        self.inner.counters.snapshot()
    }

    /// Sends a write to the writer thread and waits until its batch has committed (an
    /// in-memory store writes it inline).
    /// Carries `op` out on the caller's thread when the store has no writer thread (in
    /// memory: one connection, a transaction of one write); `None` otherwise.
    fn write_inline(&self, op: &WriteOp) -> Option<Result<WriteOutcome>> {
        let conn = self.inner.inline.as_ref()?;
        // Poisoning only means a reader panicked mid-query; the connection is usable.
        let conn = conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(
            writer::write_batch(&conn, &[op], &self.inner.counters)
                .pop()
                .unwrap_or(Err(StoreError::WriterGone)),
        )
    }

    fn submit(&self, op: WriteOp) -> Result<WriteOutcome> {
        let op = self.audit_op(op);
        if let Some(done) = self.write_inline(&op) {
            return done;
        }
        let (reply, answer) = mpsc::sync_channel(1);
        let requests = self.inner.requests.as_ref().ok_or(StoreError::WriterGone)?;
        requests
            .send(Request {
                op,
                reply: Reply::Blocking(reply),
            })
            .map_err(|_| StoreError::WriterGone)?;
        answer.recv().map_err(|_| StoreError::WriterGone)?
    }

    fn submit_append(
        &self,
        run_id: &str,
        expected: Option<u64>,
        events: &[NewEvent],
    ) -> Result<Vec<u64>> {
        // Serialise here, on the caller's thread, to keep the single writer busy with SQL only.
        let events = events
            .iter()
            .map(|event| PreparedEvent {
                kind: event.kind.clone(),
                payload: event.payload.text().into_owned(),
                recorded_at_ms: event.recorded_at_ms,
            })
            .collect();
        self.submit_prepared(run_id, expected, events)
    }

    /// Appends events already serialised, on the writer (or inline).
    fn submit_prepared(
        &self,
        run_id: &str,
        expected: Option<u64>,
        events: Vec<PreparedEvent>,
    ) -> Result<Vec<u64>> {
        let op = WriteOp::Append {
            run_id: run_id.to_owned(),
            expected,
            events,
            fence: None,
        };
        match self.submit(self.fence_op(run_id, op))? {
            WriteOutcome::Seqs(seqs) => Ok(seqs),
            other => Err(unexpected(other)),
        }
    }
}

/// The writer answered a different kind of outcome than the op asks for: a bug, reported
/// rather than panicking.
fn unexpected(outcome: WriteOutcome) -> StoreError {
    StoreError::Internal(format!("unexpected writer outcome {outcome:?}"))
}

impl RunTable for SqliteStore {
    fn create_run(&self, run: &NewRun) -> Result<RunRecord> {
        match self.submit(WriteOp::CreateRun(run.clone()))? {
            WriteOutcome::Run(record) => Ok(record),
            other => Err(unexpected(other)),
        }
    }

    fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        self.inner
            .readers
            .with(|conn| queries::get_run(conn, run_id))
    }

    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>> {
        self.inner
            .readers
            .with(|conn| queries::list_runs(conn, status, limit))
    }

    fn set_status(&self, run_id: &str, status: RunStatus, updated_at_ms: i64) -> Result<()> {
        let op = WriteOp::SetStatus {
            run_id: run_id.to_owned(),
            status,
            updated_at_ms,
        };
        match self.submit(self.fence_op(run_id, op))? {
            WriteOutcome::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }
}

impl EventLog for SqliteStore {
    fn append(&self, run_id: &str, events: &[NewEvent]) -> Result<Vec<u64>> {
        self.submit_append(run_id, None, events)
    }

    fn append_expecting(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: &[NewEvent],
    ) -> Result<Vec<u64>> {
        self.submit_append(run_id, Some(expected_last_seq), events)
    }

    fn read(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<EventRecord>> {
        self.inner
            .readers
            .with(|conn| queries::read_events(conn, run_id, from_seq, limit))
    }

    fn read_raw(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<RawEventRecord>> {
        self.inner
            .readers
            .with(|conn| queries::read_events_raw(conn, run_id, from_seq, limit))
    }

    fn append_expecting_owned(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        SqliteStore::append_expecting_owned(self, run_id, expected_last_seq, events)
    }

    fn last_seq(&self, run_id: &str) -> Result<u64> {
        self.inner
            .readers
            .with(|conn| queries::last_seq(conn, run_id))
    }
}

impl AuditAnchors for SqliteStore {
    fn set_anchor(&self, anchor: &AuditAnchor) -> Result<()> {
        match self.submit(WriteOp::SetAnchor(anchor.clone()))? {
            WriteOutcome::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    fn get_anchor(&self, run_id: &str) -> Result<Option<AuditAnchor>> {
        self.inner
            .readers
            .with(|conn| anchors::get_anchor(conn, run_id))
    }
}
