//! [`EphemeralStore`]: the ephemeral backend's handle and its trait implementations. Every
//! write runs under the log's mutex, where the fence check, the append and the audit of
//! what it appended are one step, and is counted like a committed transaction; every
//! awaited method carries its work out at the call and answers a resolved future (there is
//! nothing to wait for in this process's memory).

use std::future::ready;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::MemoryLog;
use crate::audit_log::{AuditEncoder, AuditEntries, AuditLine};
use crate::counters::Counters;
use crate::error::Result;
use crate::lease::{HandleFence, Lease, LeaseHolder, Takeover};
use crate::model::{
    AuditAnchor, EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus, StoreStats,
};
use crate::tail::{self, HubReader, RunWatch, Tail, TailFrom, TailSource, TailedEvent, Watchers};
use crate::traits::{
    AuditAnchors, AuditWrites, AwaitedReads, AwaitedWrites, EventLog, FollowLog, LeaseFence,
    RunLeases, RunStore, RunTable, SharedStore, StoreFuture,
};

/// Runs, logs, leases and audit chains held in this process only: no SQLite, no file,
/// nothing survives the process, with the semantics of [`crate::SqliteStore`] (the
/// backend-independent suite runs against both). For runs that need no durability and for
/// measuring the engine without a database.
///
/// Cheap to clone (an `Arc`); `Send + Sync`.
#[derive(Clone)]
pub struct EphemeralStore {
    inner: Arc<Shared>,
    /// The lease this handle writes under; none for a plain handle.
    fence: HandleFence,
    /// What writes the audit lines of this handle's appends; `None` for a handle that
    /// writes none.
    audit: Option<Arc<dyn AuditEncoder>>,
}

/// What every handle of one ephemeral store shares.
struct Shared {
    /// The state; its own `Arc` so that the tail's hub thread reads it without holding
    /// the store alive.
    log: Arc<Mutex<MemoryLog>>,
    counters: Counters,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.counters.watchers.stop_hub();
    }
}

impl std::fmt::Debug for EphemeralStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EphemeralStore").finish_non_exhaustive()
    }
}

impl Default for EphemeralStore {
    fn default() -> Self {
        EphemeralStore::new()
    }
}

fn lock(log: &Mutex<MemoryLog>) -> MutexGuard<'_, MemoryLog> {
    // A panic while holding it cannot leave a write half done that a later one trips
    // on (each write checks before it changes anything); keep using it.
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

impl EphemeralStore {
    /// An empty store.
    pub fn new() -> EphemeralStore {
        EphemeralStore {
            inner: Arc::new(Shared {
                log: Arc::new(Mutex::new(MemoryLog::default())),
                counters: Counters::default(),
            }),
            fence: HandleFence::default(),
            audit: None,
        }
    }

    /// This store, writing to `lease.run_id` as the holder of `lease` ([`LeaseFence`]).
    pub fn fenced(&self, lease: Lease) -> EphemeralStore {
        EphemeralStore {
            fence: HandleFence::of(lease),
            ..self.clone()
        }
    }

    /// This store, writing the audit lines `encoder` makes for every event it appends
    /// under the same lock as the events ([`AuditWrites`]).
    pub fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> EphemeralStore {
        EphemeralStore {
            audit: Some(encoder),
            ..self.clone()
        }
    }

    /// How many handles to this store are alive, this one included: a handle kept past
    /// its holder's use keeps the whole log alive (the engine's tests check that a run
    /// leaves none behind).
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Write counters since opening (each write counts as one transaction).
    pub fn stats(&self) -> StoreStats {
        self.inner.counters.snapshot()
    }

    fn log(&self) -> MutexGuard<'_, MemoryLog> {
        lock(&self.inner.log)
    }

    /// A write that appends nothing, counted like a committed transaction.
    fn write<T>(&self, f: impl FnOnce(&mut MemoryLog) -> Result<T>) -> Result<T> {
        let r = f(&mut self.log());
        self.inner.counters.count_single(None);
        r
    }

    /// Appends (fenced and audited as this handle is), counts it and wakes the run's
    /// watchers.
    fn append_with(
        &self,
        run_id: &str,
        expected: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        let r = {
            let mut m = self.log();
            let r = m
                .check_fence(run_id, self.fence.token_for(run_id))
                .and_then(|()| m.append_owned(run_id, expected, events));
            self.audit_append(&mut m, run_id, r)
        };
        self.appended(run_id, &r);
        r
    }

    /// After an append (`m` still locked): its audit, or, when the lines cannot be made,
    /// the append undone and the error.
    fn audit_append(
        &self,
        m: &mut MemoryLog,
        run_id: &str,
        appended: Result<Vec<u64>>,
    ) -> Result<Vec<u64>> {
        let (Some(encoder), Ok(seqs)) = (&self.audit, &appended) else {
            return appended;
        };
        match m.audit_catch_up(run_id, encoder.as_ref()) {
            Ok(()) => appended,
            Err(e) => {
                if let Some(&first) = seqs.first() {
                    m.truncate(run_id, first - 1);
                }
                Err(e)
            }
        }
    }

    /// Counts an append that succeeded and wakes the run's watchers (`tail/`).
    fn appended(&self, run_id: &str, result: &Result<Vec<u64>>) {
        if let Ok(seqs) = result {
            self.inner.counters.count_single(Some(seqs.len()));
            if let Some(&last) = seqs.last() {
                self.inner.counters.watchers.advanced(run_id, last);
            }
        }
    }

    fn source(&self) -> tail::Source {
        self.inner.clone()
    }
}

impl TailSource for Shared {
    fn watchers(&self) -> &Watchers {
        &self.counters.watchers
    }

    fn hub_reader(&self) -> Box<dyn HubReader> {
        Box::new(LogReader(Arc::clone(&self.log)))
    }

    fn last_seq_now(&self, run_id: &str) -> Option<Result<u64>> {
        Some(lock(&self.log).last_seq(run_id))
    }
}

/// The hub thread reads the log under its mutex.
struct LogReader(Arc<Mutex<MemoryLog>>);

impl HubReader for LogReader {
    fn read_after(&mut self, from: &TailFrom, limit: usize) -> Result<Vec<TailedEvent>> {
        lock(&self.0).read_after(from, limit)
    }

    fn last_seq(&mut self, run_id: &str) -> Result<u64> {
        lock(&self.0).last_seq(run_id)
    }
}

impl RunTable for EphemeralStore {
    fn create_run(&self, run: &NewRun) -> Result<RunRecord> {
        self.write(|m| m.create_run(run))
    }

    fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>> {
        Ok(self.log().get_run(run_id))
    }

    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>> {
        Ok(self.log().list_runs(status, limit))
    }

    fn set_status(&self, run_id: &str, status: RunStatus, updated_at_ms: i64) -> Result<()> {
        let fence = self.fence.token_for(run_id);
        self.write(|m| {
            m.check_fence(run_id, fence)?;
            m.set_status(run_id, status, updated_at_ms)
        })
    }
}

impl EventLog for EphemeralStore {
    fn append(&self, run_id: &str, events: &[NewEvent]) -> Result<Vec<u64>> {
        self.append_with(run_id, None, events.to_vec())
    }

    fn append_expecting(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: &[NewEvent],
    ) -> Result<Vec<u64>> {
        self.append_with(run_id, Some(expected_last_seq), events.to_vec())
    }

    fn read(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<EventRecord>> {
        self.log().read(run_id, from_seq, limit)
    }

    fn read_raw(&self, run_id: &str, from_seq: u64, limit: usize) -> Result<Vec<RawEventRecord>> {
        self.log().read_raw(run_id, from_seq, limit)
    }

    fn last_seq(&self, run_id: &str) -> Result<u64> {
        self.log().last_seq(run_id)
    }

    fn append_expecting_owned(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<Vec<u64>> {
        self.append_with(run_id, Some(expected_last_seq), events)
    }
}

impl AuditAnchors for EphemeralStore {
    fn set_anchor(&self, anchor: &AuditAnchor) -> Result<()> {
        self.write(|m| m.set_anchor(anchor))
    }

    fn get_anchor(&self, run_id: &str) -> Result<Option<AuditAnchor>> {
        Ok(self.log().get_anchor(run_id))
    }
}

impl AuditEntries for EphemeralStore {
    fn audit_lines(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<AuditLine>> {
        Ok(self.log().audit_lines(run_id, after, limit))
    }
}

impl RunLeases for EphemeralStore {
    fn acquire_lease(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> Result<Lease> {
        self.write(|m| m.acquire_lease(run_id, holder, now_ms, ttl_ms, takeover))
    }

    fn renew_lease(&self, run_id: &str, token: u64, now_ms: i64, ttl_ms: i64) -> Result<Lease> {
        self.write(|m| m.renew_lease(run_id, token, now_ms, ttl_ms))
    }

    fn release_lease(&self, run_id: &str, token: u64) -> Result<()> {
        self.write(|m| {
            m.release_lease(run_id, token);
            Ok(())
        })?;
        self.fence.released_by(run_id, token);
        Ok(())
    }

    fn get_lease(&self, run_id: &str) -> Result<Option<Lease>> {
        Ok(self.log().get_lease(run_id))
    }
}

impl AwaitedWrites for EphemeralStore {
    fn release_lease_async(&self, run_id: &str, token: u64) -> StoreFuture<()> {
        Box::pin(ready(self.release_lease(run_id, token)))
    }

    fn append_async(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(ready(self.append_with(
            run_id,
            Some(expected_last_seq),
            events,
        )))
    }

    fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        let r = {
            let mut m = self.log();
            // Only the creation can fail (a taken id), and it writes nothing then: the
            // run is new, so its status and first append cannot.
            let lease = self.fence.opening_lease(&run.id);
            let r = m.create_run(&run).and_then(|_| {
                m.set_status(&run.id, status, run.created_at_ms)?;
                if let Some(lease) = lease {
                    m.insert_lease(lease)?;
                }
                m.append_owned(&run.id, Some(0), events)
            });
            match r {
                // A run whose first events cannot be audited is not created at all, as
                // the SQLite group rolls back.
                Ok(seqs) => self
                    .audit_append(&mut m, &run.id, Ok(seqs))
                    .inspect_err(|_| m.forget_run(&run.id)),
                Err(e) => Err(e),
            }
        };
        self.appended(&run.id, &r);
        Box::pin(ready(r))
    }

    fn close_run(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<Vec<u64>> {
        let fence = self.fence.token_for(run_id);
        let r = {
            let mut m = self.log();
            // Only the fence and the append can fail (a takeover, a conflict), and they
            // write nothing then.
            m.check_fence(run_id, fence)
                .and_then(|()| m.append_owned(run_id, Some(expected_last_seq), events))
                .and_then(|seqs| self.audit_append(&mut m, run_id, Ok(seqs)))
                .and_then(|seqs| {
                    m.set_status(run_id, status, updated_at_ms)?;
                    if let Some(token) = fence {
                        m.release_lease(run_id, token);
                    }
                    Ok(seqs)
                })
        };
        self.appended(run_id, &r);
        if r.is_ok()
            && let Some(fence) = self.fence.on(run_id)
        {
            fence.mark_released();
        }
        Box::pin(ready(r))
    }

    fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreFuture<Lease> {
        Box::pin(ready(self.renew_lease(run_id, token, now_ms, ttl_ms)))
    }

    fn acquire_lease_async(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> StoreFuture<Lease> {
        Box::pin(ready(
            self.acquire_lease(run_id, holder, now_ms, ttl_ms, takeover),
        ))
    }

    fn set_status_async(
        &self,
        run_id: &str,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<()> {
        Box::pin(ready(self.set_status(run_id, status, updated_at_ms)))
    }
}

/// Reads answered at the call (the trait's provided methods).
impl AwaitedReads for EphemeralStore {}

impl AuditWrites for EphemeralStore {
    fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> SharedStore {
        Arc::new(EphemeralStore::audited(self, encoder))
    }

    fn audit_catch_up(&self, run_id: &str) -> Result<()> {
        let Some(encoder) = self.audit.clone() else {
            return Ok(());
        };
        self.write(|m| m.audit_catch_up(run_id, encoder.as_ref()))
    }
}

impl FollowLog for EphemeralStore {
    fn tail(&self, from: TailFrom) -> Tail {
        tail::tail(self.source(), from)
    }

    fn watch_run(&self, run_id: &str) -> RunWatch {
        tail::watch_run(self.source(), run_id)
    }
}

impl LeaseFence for EphemeralStore {
    fn fenced(&self, lease: Lease) -> SharedStore {
        Arc::new(EphemeralStore::fenced(self, lease))
    }

    fn held_lease(&self) -> Option<&Lease> {
        self.fence.lease()
    }

    fn lease_released(&self) -> bool {
        self.fence.released()
    }
}

impl RunStore for EphemeralStore {
    fn shared(&self) -> SharedStore {
        Arc::new(self.clone())
    }

    fn path(&self) -> Option<&Path> {
        None
    }

    fn stats(&self) -> StoreStats {
        EphemeralStore::stats(self)
    }
}
