//! The store seam: one small trait per capability, and [`RunStore`], the one the engine
//! holds (as `&dyn RunStore` or a [`SharedStore`]).
//!
//! Two kinds of methods, by who calls them:
//! - **Blocking** ([`RunTable`], [`EventLog`], [`AuditAnchors`], [`RunLeases`]): answered
//!   when they return. For callers off an async runtime (the CLI's commands, tests,
//!   tools). A network backend implements them by blocking the calling thread on its
//!   client. The engine does not call them on an async runtime's thread: it has the
//!   awaited ones.
//! - **Awaited** ([`AwaitedWrites`], [`AwaitedReads`], [`FollowLog`]): the driver's write
//!   path (every append of a running run, its opening and closing write, its status, its
//!   lease renewal), its reads, and the live tail. A write is submitted when the method is
//!   called (its order among the caller's writes is the call order) and the returned
//!   `Send + 'static` future resolves once it is committed; an embedded backend may carry
//!   it out (or answer a read) at the call and return a resolved future, a network backend
//!   sends it and resolves on the reply. No method of these traits blocks its caller
//!   beyond an embedded backend's own short work.
//!
//! # The contract every backend keeps (SQLite now, PostgreSQL next)
//! - **`Ok` is durable.** A write answers `Ok` only after it is committed as durably as the
//!   backend promises (SQLite file: the WAL fsynced; the ephemeral store: this process's
//!   memory only). `Err` means nothing of that write is stored: every write is all or
//!   nothing, a multi-part one ([`AwaitedWrites::open_run`], [`AwaitedWrites::close_run`])
//!   included. A backend that cannot tell (a connection lost after `COMMIT` was sent)
//!   answers `CommitFailed`, and the caller reads the log to find out.
//! - **Conflicts.** An append that expects the log to end at a seq fails with
//!   `SequenceConflict` (nothing written) if another writer appended first; the check and
//!   the insert are one atomic step (SQLite: one transaction under the single writer;
//!   PostgreSQL: the `(run_id, seq)` primary key, a unique violation mapped to the
//!   conflict). Seqs are 1-based and gap-free per run.
//! - **Fencing.** A handle from [`LeaseFence::fenced`] carries a lease token; each of its
//!   writes to that run is refused with `Fenced` (nothing written) unless the token is still
//!   the run's, checked in the same transaction as the write (PostgreSQL: a `SELECT … FOR
//!   SHARE` of the lease row, or the token compared in the insert's statement). A driver
//!   whose lease was taken over cannot land one more event.
//! - **Tail cursors.** [`FollowLog::tail`] hands out committed events in commit order; a
//!   run's in seq order, every run's by *position*, a number that grows with commit order
//!   across runs and is never reused (SQLite: the rowid; PostgreSQL: a sequence assigned
//!   under the commit's lock, so that no later-committed event gets a smaller one). A
//!   reader resuming from its cursor loses and repeats nothing. A backend wakes its tails
//!   on its own commits at once and on other processes' commits within a bounded delay
//!   (SQLite: `PRAGMA data_version`, polled; PostgreSQL: `LISTEN`/`NOTIFY`).
//! - **No clock.** Timestamps are the caller's; a lease is expired when
//!   `expires_at_ms <= now_ms` as the caller gives it.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use crate::audit_log::{AuditEncoder, AuditEntries};
use crate::error::Result;
use crate::lease::{Lease, LeaseHolder, Takeover};
use crate::model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus, StoreStats,
};
use crate::tail::{AppendWait, RunWatch, Tail, TailFrom};

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

    /// [`EventLog::append_expecting`] taking the events by value: a backend that keeps
    /// them (the ephemeral store) moves their payloads instead of copying them.
    fn append_expecting_owned(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        self.append_expecting(run_id, expected_last_seq, &events)
    }
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

/// Each run's lease: the `lease_*` columns of its row in SQLite (schema v5), set once the
/// run is first driven.
pub trait RunLeases: Send + Sync {
    /// Takes the run's lease for `holder` until `now_ms + ttl_ms` with the next token, when
    /// there is none, it has expired at `now_ms`, or `takeover` replaces its token;
    /// otherwise `LeaseHeld` with the lease as it is. `UnknownRun` if no such run.
    fn acquire_lease(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> Result<Lease>;

    /// Extends the lease of `token` to `now_ms + ttl_ms`; `Fenced` when the run's lease has
    /// another token (it was taken over).
    fn renew_lease(&self, run_id: &str, token: u64, now_ms: i64, ttl_ms: i64) -> Result<Lease>;

    /// Lets the lease of `token` go (it becomes [`RELEASED`], keeping its token so the next
    /// holder's is higher). Nothing happens when the run's lease has another token.
    fn release_lease(&self, run_id: &str, token: u64) -> Result<()>;

    /// The run's lease, `None` when it was never driven under one.
    fn get_lease(&self, run_id: &str) -> Result<Option<Lease>>;
}

/// An awaited store operation: `Send` and `'static`, so a task holds it across awaits on a
/// multi-threaded runtime and a backend may complete it from its own threads. One boxed
/// future per write (below what `examples/seam_cost.rs` resolves: `docs/BENCHMARKS.md`),
/// so that the engine is compiled once for every backend.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'static>>;

/// The awaited write path of a running run. Each write is submitted at the call, in call
/// order, and its future resolves once it is committed (`Ok` is durable) or failed
/// (nothing written). Writes of concurrent callers may share one commit (SQLite's group
/// commit: one fsync for every write queued meanwhile).
pub trait AwaitedWrites: Send + Sync {
    /// [`EventLog::append_expecting`], awaited: resolves to the events' seqs.
    fn append_async(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>>;

    /// Creates the run already in `status` and appends its first `events`, all or nothing
    /// (`RunExists`, nothing written, if the id is taken). Through a fenced handle the run
    /// is created with the handle's lease as its first lease, in the same write.
    fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>>;

    /// Appends the run's last `events` (expecting the log to end at `expected_last_seq`)
    /// and sets its final `status`, all or nothing. Through a fenced handle the same write
    /// releases the lease (`Fenced`, nothing written, if it was taken over).
    fn close_run(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<Vec<u64>>;

    /// [`RunLeases::renew_lease`], awaited (a driver renews from a timer on its runtime).
    fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreFuture<Lease>;

    /// [`RunLeases::release_lease`], awaited: a driver that stops without a closing write
    /// (suspended, failed, stopped) lets its lease go from its runtime.
    fn release_lease_async(&self, run_id: &str, token: u64) -> StoreFuture<()>;

    /// [`RunLeases::acquire_lease`], awaited (a resume takes the run's lease on its
    /// runtime).
    fn acquire_lease_async(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> StoreFuture<Lease>;

    /// [`RunTable::set_status`], awaited.
    fn set_status_async(
        &self,
        run_id: &str,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<()>;
}

/// The reads of a running run, awaited: a resume reading its log, the driver reading what
/// another process appended (a decision, a cancel), a sign-off or a compensation reading
/// the run's history. A network backend sends the query and resolves on the reply (it
/// overrides every method); an embedded one (SQLite, whose reads are short and never wait
/// for a commit; the ephemeral store) answers at the call with a resolved future, which is
/// what the provided methods do.
pub trait AwaitedReads: RunTable + EventLog + RunLeases + Send + Sync {
    /// [`RunTable::get_run`], awaited.
    fn get_run_async(&self, run_id: &str) -> StoreFuture<Option<RunRecord>> {
        Box::pin(std::future::ready(self.get_run(run_id)))
    }

    /// [`EventLog::read`], awaited.
    fn read_async(
        &self,
        run_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> StoreFuture<Vec<EventRecord>> {
        Box::pin(std::future::ready(self.read(run_id, from_seq, limit)))
    }

    /// [`EventLog::read_raw`], awaited.
    fn read_raw_async(
        &self,
        run_id: &str,
        from_seq: u64,
        limit: usize,
    ) -> StoreFuture<Vec<RawEventRecord>> {
        Box::pin(std::future::ready(self.read_raw(run_id, from_seq, limit)))
    }

    /// [`EventLog::last_seq`], awaited.
    fn last_seq_async(&self, run_id: &str) -> StoreFuture<u64> {
        Box::pin(std::future::ready(self.last_seq(run_id)))
    }

    /// [`RunLeases::get_lease`], awaited (a driver that meets another driver's event asks
    /// whether its lease was taken over).
    fn get_lease_async(&self, run_id: &str) -> StoreFuture<Option<Lease>> {
        Box::pin(std::future::ready(self.get_lease(run_id)))
    }
}

/// Handles whose appends write the runs' audit chains in their own commit (`docs/store.md`
/// §2b).
pub trait AuditWrites: Send + Sync {
    /// A handle to the same store (with this one's fence) whose every append also writes
    /// the audit lines `encoder` makes for the events, in the same commit.
    fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> SharedStore;

    /// Audits, through this handle's encoder, every event of `run_id` its chain does not
    /// cover yet, in one write; nothing for a handle made without an encoder.
    fn audit_catch_up(&self, run_id: &str) -> Result<()>;
}

/// Following the log as it is committed, by this process or another one.
pub trait FollowLog: Send + Sync {
    /// Every committed event after `from`, in commit order, then each new one as it is
    /// committed (see the module's cursor contract). A run tail of a run that does not
    /// exist answers `UnknownRun` at its first read.
    fn tail(&self, from: TailFrom) -> Tail;

    /// Watches `run_id`'s log until the watch is dropped: [`RunWatch::appended_after`]
    /// resolves once the log grows past a seq, as often as needed. Never blocks: a
    /// backend whose first check of the run blocks makes it off the caller's thread.
    fn watch_run(&self, run_id: &str) -> RunWatch;

    /// Resolves once `run_id`'s log has an event with a seq above `beyond_seq`, committed
    /// by this process or another one (at once if it already has; `UnknownRun` if there
    /// is no such run): a one-off [`FollowLog::watch_run`].
    fn appended_after(&self, run_id: &str, beyond_seq: u64) -> AppendWait {
        AppendWait::new(self.watch_run(run_id), beyond_seq)
    }
}

/// Writing as the holder of a run's lease.
pub trait LeaseFence: Send + Sync {
    /// A handle to the same store whose writes to `lease.run_id` (blocking or awaited,
    /// appends, status changes, the closing write) carry `lease.token` and are refused
    /// with `Fenced` once the run's lease has another token. Writes to other runs and all
    /// reads are as through this handle.
    fn fenced(&self, lease: Lease) -> SharedStore;

    /// The lease this handle writes under; `None` for a plain handle.
    fn held_lease(&self) -> Option<&Lease>;

    /// Whether this process let the handle's lease go ([`AwaitedWrites::close_run`] or
    /// [`RunLeases::release_lease`] through it): there is nothing left to release.
    fn lease_released(&self) -> bool;
}

/// Everything the engine, the inbox, the run record and the audit trail use: the store as
/// one trait object. Implemented by [`crate::SqliteStore`] (a file or in memory) and
/// [`crate::EphemeralStore`]; PostgreSQL joins them behind it.
pub trait RunStore:
    RunTable
    + EventLog
    + AuditAnchors
    + AuditEntries
    + RunLeases
    + AwaitedWrites
    + AwaitedReads
    + AuditWrites
    + FollowLog
    + LeaseFence
{
    /// Another handle to the same store, with this one's fence.
    fn shared(&self) -> SharedStore;

    /// The database file on this machine, if the backend keeps one (an attempt's isolated
    /// copy of a workspace leaves it out).
    fn path(&self) -> Option<&Path>;

    /// Write counters since opening.
    fn stats(&self) -> StoreStats;
}

/// A store handle as the engine keeps one: cheap to clone, `Send + Sync`.
pub type SharedStore = Arc<dyn RunStore>;
