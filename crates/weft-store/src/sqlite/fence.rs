//! A SQLite store handle fenced by a lease, and its [`RunLeases`].
//!
//! [`SqliteStore::fenced`] gives a handle through which every write to the lease's run — appends
//! blocking or awaited, status changes, the run's closing write — carries the lease's token
//! and is refused (`Fenced`, nothing written) once the run's lease has another one. The
//! check runs in the write's own transaction (its savepoint), so no write of a driver that lost its lease can land after the
//! takeover. Writes to other runs, and every read, are as through the plain handle.

use std::future::Future;
use std::sync::Arc;

use super::SqliteStore;
use super::writer::{WriteOp, WriteOutcome};
use crate::error::Result;
use crate::lease::{HandleFence, Lease, LeaseHolder, Takeover};
use crate::traits::RunLeases;

impl SqliteStore {
    /// This store, writing to `lease.run_id` as the holder of `lease`: each of those writes
    /// is refused with [`crate::StoreError::Fenced`] unless `lease.token` is still the run's.
    /// [`SqliteStore::open_run`] through it opens the run with `lease` as its first lease
    /// (token 1), and [`SqliteStore::close_run`] releases it with the run's last write.
    pub fn fenced(&self, lease: Lease) -> SqliteStore {
        SqliteStore {
            inner: Arc::clone(&self.inner),
            fence: HandleFence::of(lease),
            audit: self.audit.clone(),
        }
    }

    /// The lease this handle writes under (`None`: a plain handle).
    pub fn held_lease(&self) -> Option<&Lease> {
        self.fence.lease()
    }

    /// Whether this process let the handle's lease go ([`SqliteStore::close_run`] or
    /// [`RunLeases::release_lease`] through a handle fenced by it): nothing to release.
    pub fn lease_released(&self) -> bool {
        self.fence.released()
    }

    /// `op` fenced by this handle's token when it writes to the lease's run: an append
    /// carries the token (checked with the read of the log's end it makes anyway), any
    /// other write is wrapped in a check.
    pub(super) fn fence_op(&self, run_id: &str, op: WriteOp) -> WriteOp {
        match (self.fence.token_for(run_id), op) {
            (None, op) => op,
            (
                Some(token),
                WriteOp::Append {
                    run_id,
                    expected,
                    events,
                    ..
                },
            ) => WriteOp::Append {
                run_id,
                expected,
                events,
                fence: Some(token),
            },
            (Some(token), op) => WriteOp::Fenced {
                run_id: run_id.to_owned(),
                token,
                op: Box::new(op),
            },
        }
    }

    /// [`RunLeases::renew_lease`] without blocking: submitted now, resolved once committed
    /// (a driver renews from a timer on its runtime, where a blocking write would stall
    /// the other runs of the thread).
    pub fn renew_lease_async(
        &self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> impl Future<Output = Result<Lease>> + Send + use<> {
        let pending = self.submit_async(WriteOp::RenewLease {
            run_id: run_id.to_owned(),
            token,
            now_ms,
            ttl_ms,
        });
        async move { lease_of(pending.await?) }
    }

    /// [`RunLeases::release_lease`] without blocking: submitted now, resolved once
    /// committed (a driver that stops lets its lease go from its runtime).
    pub fn release_lease_async(
        &self,
        run_id: &str,
        token: u64,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        let pending = self.submit_async(WriteOp::ReleaseLease {
            run_id: run_id.to_owned(),
            token,
        });
        let fence = self.fence.of_token(run_id, token);
        async move {
            match pending.await? {
                WriteOutcome::Done => {}
                other => return Err(super::unexpected(other)),
            }
            if let Some(fence) = fence {
                fence.mark_released();
            }
            Ok(())
        }
    }
}

impl SqliteStore {
    /// [`RunLeases::acquire_lease`] without blocking: submitted now, resolved once
    /// committed.
    pub fn acquire_lease_async(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> impl Future<Output = Result<Lease>> + Send + use<> {
        let pending = self.submit_async(WriteOp::AcquireLease {
            run_id: run_id.to_owned(),
            holder: holder.clone(),
            now_ms,
            ttl_ms,
            takeover,
        });
        async move { lease_of(pending.await?) }
    }
}

fn lease_of(outcome: WriteOutcome) -> Result<Lease> {
    match outcome {
        WriteOutcome::Lease(lease) => Ok(lease),
        other => Err(super::unexpected(other)),
    }
}

impl RunLeases for SqliteStore {
    fn acquire_lease(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> Result<Lease> {
        lease_of(self.submit(WriteOp::AcquireLease {
            run_id: run_id.to_owned(),
            holder: holder.clone(),
            now_ms,
            ttl_ms,
            takeover,
        })?)
    }

    fn renew_lease(&self, run_id: &str, token: u64, now_ms: i64, ttl_ms: i64) -> Result<Lease> {
        lease_of(self.submit(WriteOp::RenewLease {
            run_id: run_id.to_owned(),
            token,
            now_ms,
            ttl_ms,
        })?)
    }

    fn release_lease(&self, run_id: &str, token: u64) -> Result<()> {
        match self.submit(WriteOp::ReleaseLease {
            run_id: run_id.to_owned(),
            token,
        })? {
            WriteOutcome::Done => {}
            other => return Err(super::unexpected(other)),
        }
        self.fence.released_by(run_id, token);
        Ok(())
    }

    fn get_lease(&self, run_id: &str) -> Result<Option<Lease>> {
        self.inner
            .readers
            .with(|conn| super::lease::get_lease(conn, run_id))
    }
}
