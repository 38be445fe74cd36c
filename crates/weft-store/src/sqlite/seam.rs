//! [`SqliteStore`] behind the seam's traits: each awaited write is the inherent one,
//! boxed; awaited reads answer at the call (a read of SQLite never waits for a commit: WAL
//! readers see the last committed state), with a resolved future.

use std::path::Path;
use std::sync::Arc;

use super::SqliteStore;
use crate::audit_log::AuditEncoder;
use crate::error::Result;
use crate::lease::{Lease, LeaseHolder, Takeover};
use crate::model::{NewEvent, NewRun, RunStatus, StoreStats};
use crate::tail::{self, RunWatch, Tail, TailFrom};
use crate::traits::{
    AuditWrites, AwaitedReads, AwaitedWrites, FollowLog, LeaseFence, RunStore, SharedStore,
    StoreFuture,
};

impl AwaitedWrites for SqliteStore {
    fn append_async(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(SqliteStore::append_async(
            self,
            run_id,
            expected_last_seq,
            events,
        ))
    }

    fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(SqliteStore::open_run(self, run, status, events))
    }

    fn close_run(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<Vec<u64>> {
        Box::pin(SqliteStore::close_run(
            self,
            run_id,
            expected_last_seq,
            events,
            status,
            updated_at_ms,
        ))
    }

    fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreFuture<Lease> {
        Box::pin(SqliteStore::renew_lease_async(
            self, run_id, token, now_ms, ttl_ms,
        ))
    }

    fn release_lease_async(&self, run_id: &str, token: u64) -> StoreFuture<()> {
        Box::pin(SqliteStore::release_lease_async(self, run_id, token))
    }

    fn acquire_lease_async(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> StoreFuture<Lease> {
        Box::pin(SqliteStore::acquire_lease_async(
            self, run_id, holder, now_ms, ttl_ms, takeover,
        ))
    }

    fn set_status_async(
        &self,
        run_id: &str,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> StoreFuture<()> {
        Box::pin(SqliteStore::set_status_async(
            self,
            run_id,
            status,
            updated_at_ms,
        ))
    }
}

/// Reads answered at the call (the trait's provided methods).
impl AwaitedReads for SqliteStore {}

impl AuditWrites for SqliteStore {
    fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> SharedStore {
        Arc::new(SqliteStore::audited(self, encoder))
    }

    fn audit_catch_up(&self, run_id: &str) -> Result<()> {
        SqliteStore::audit_catch_up(self, run_id)
    }
}

impl SqliteStore {
    /// Follows the log from `from` ([`FollowLog::tail`]).
    pub fn tail(&self, from: TailFrom) -> Tail {
        tail::tail(self.inner.clone(), from)
    }

    /// Watches `run_id`'s log until the watch is dropped ([`FollowLog::watch_run`]): for a
    /// database file its first check runs on the store's hub thread, never the caller's;
    /// in memory (nothing blocks there) it runs at the call.
    pub fn watch_run(&self, run_id: &str) -> RunWatch {
        tail::watch_run(self.inner.clone(), run_id)
    }

    /// Resolves once `run_id`'s log has an event with a seq above `beyond_seq` (at once if
    /// it already has; `UnknownRun` if there is no such run): a one-off
    /// [`SqliteStore::watch_run`].
    pub fn appended_after(&self, run_id: &str, beyond_seq: u64) -> tail::AppendWait {
        tail::appended_after(self.inner.clone(), run_id, beyond_seq)
    }
}

impl FollowLog for SqliteStore {
    fn tail(&self, from: TailFrom) -> Tail {
        SqliteStore::tail(self, from)
    }

    fn watch_run(&self, run_id: &str) -> RunWatch {
        SqliteStore::watch_run(self, run_id)
    }
}

impl LeaseFence for SqliteStore {
    fn fenced(&self, lease: Lease) -> SharedStore {
        Arc::new(SqliteStore::fenced(self, lease))
    }

    fn held_lease(&self) -> Option<&Lease> {
        SqliteStore::held_lease(self)
    }

    fn lease_released(&self) -> bool {
        SqliteStore::lease_released(self)
    }
}

impl RunStore for SqliteStore {
    fn shared(&self) -> SharedStore {
        Arc::new(self.clone())
    }

    fn path(&self) -> Option<&Path> {
        SqliteStore::path(self)
    }

    fn stats(&self) -> StoreStats {
        SqliteStore::stats(self)
    }
}
