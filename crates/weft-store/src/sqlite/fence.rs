//! A store handle fenced by a lease, and the [`RunLeases`] of every backend.
//!
//! [`Store::fenced`] gives a handle through which every write to the lease's run — appends
//! blocking or awaited, status changes, the run's closing write — carries the lease's token
//! and is refused (`Fenced`, nothing written) once the run's lease has another one. The
//! check runs in the write's own transaction (its savepoint on SQLite, under the mutex in
//! the ephemeral store), so no write of a driver that lost its lease can land after the
//! takeover. Writes to other runs, and every read, are as through the plain handle.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Store;
use super::pending::PendingWrite;
use super::writer::{WriteOp, WriteOutcome};
use crate::error::Result;
use crate::lease::{Lease, LeaseHolder, RunLeases, Takeover};

/// The lease a handle writes under, and whether this process has let it go.
pub(super) struct Fence {
    lease: Lease,
    released: AtomicBool,
}

impl Fence {
    pub(super) fn mark_released(&self) {
        self.released.store(true, Ordering::Relaxed);
    }
}

impl Store {
    /// This store, writing to `lease.run_id` as the holder of `lease`: each of those writes
    /// is refused with [`crate::StoreError::Fenced`] unless `lease.token` is still the run's.
    /// [`Store::open_run`] through it opens the run with `lease` as its first lease (token
    /// 1), and [`Store::close_run`] releases it with the run's last write.
    pub fn fenced(&self, lease: Lease) -> Store {
        Store {
            inner: Arc::clone(&self.inner),
            fence: Some(Arc::new(Fence {
                lease,
                released: AtomicBool::new(false),
            })),
            audit: self.audit.clone(),
        }
    }

    /// The lease this handle writes under (`None`: a plain handle).
    pub fn held_lease(&self) -> Option<&Lease> {
        self.fence.as_deref().map(|f| &f.lease)
    }

    /// Whether this process let the handle's lease go ([`Store::close_run`] or
    /// [`RunLeases::release_lease`] through a handle fenced by it): nothing to release.
    pub fn lease_released(&self) -> bool {
        self.fence
            .as_deref()
            .is_some_and(|f| f.released.load(Ordering::Relaxed))
    }

    /// The fence of this handle when it writes to `run_id`.
    pub(super) fn fence_of(&self, run_id: &str) -> Option<Arc<Fence>> {
        self.fence
            .as_ref()
            .filter(|f| f.lease.run_id == run_id)
            .cloned()
    }

    /// The token this handle's writes to `run_id` carry.
    pub(super) fn fence_for(&self, run_id: &str) -> Option<u64> {
        self.fence
            .as_deref()
            .filter(|f| f.lease.run_id == run_id)
            .map(|f| f.lease.token)
    }

    /// The lease this handle opens `run_id` with, if any.
    pub(super) fn opening_lease(&self, run_id: &str) -> Option<&Lease> {
        self.fence
            .as_deref()
            .map(|f| &f.lease)
            .filter(|l| l.run_id == run_id)
    }

    /// `op` fenced by this handle's token when it writes to the lease's run: an append
    /// carries the token (checked with the read of the log's end it makes anyway), any
    /// other write is wrapped in a check.
    pub(super) fn fence_op(&self, run_id: &str, op: WriteOp) -> WriteOp {
        match (self.fence_for(run_id), op) {
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
        let pending = if let Some(mut m) = self.memory() {
            let r = m.renew_lease(run_id, token, now_ms, ttl_ms);
            self.count_memory_write(None);
            PendingWrite::done(r.map(WriteOutcome::Lease))
        } else {
            self.submit_async(WriteOp::RenewLease {
                run_id: run_id.to_owned(),
                token,
                now_ms,
                ttl_ms,
            })
        };
        async move { lease_of(pending.await?) }
    }
}

fn lease_of(outcome: WriteOutcome) -> Result<Lease> {
    match outcome {
        WriteOutcome::Lease(lease) => Ok(lease),
        other => Err(super::unexpected(other)),
    }
}

impl RunLeases for Store {
    fn acquire_lease(
        &self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> Result<Lease> {
        if let Some(mut m) = self.memory() {
            let r = m.acquire_lease(run_id, holder, now_ms, ttl_ms, takeover);
            self.count_memory_write(None);
            return r;
        }
        lease_of(self.submit(WriteOp::AcquireLease {
            run_id: run_id.to_owned(),
            holder: holder.clone(),
            now_ms,
            ttl_ms,
            takeover,
        })?)
    }

    fn renew_lease(&self, run_id: &str, token: u64, now_ms: i64, ttl_ms: i64) -> Result<Lease> {
        if let Some(mut m) = self.memory() {
            let r = m.renew_lease(run_id, token, now_ms, ttl_ms);
            self.count_memory_write(None);
            return r;
        }
        lease_of(self.submit(WriteOp::RenewLease {
            run_id: run_id.to_owned(),
            token,
            now_ms,
            ttl_ms,
        })?)
    }

    fn release_lease(&self, run_id: &str, token: u64) -> Result<()> {
        if let Some(mut m) = self.memory() {
            m.release_lease(run_id, token);
            self.count_memory_write(None);
        } else {
            match self.submit(WriteOp::ReleaseLease {
                run_id: run_id.to_owned(),
                token,
            })? {
                WriteOutcome::Done => {}
                other => return Err(super::unexpected(other)),
            }
        }
        if let Some(fence) = self.fence_of(run_id).filter(|f| f.lease.token == token) {
            fence.mark_released();
        }
        Ok(())
    }

    fn get_lease(&self, run_id: &str) -> Result<Option<Lease>> {
        if let Some(m) = self.memory() {
            return Ok(m.get_lease(run_id));
        }
        self.inner
            .readers
            .with(|conn| super::lease::get_lease(conn, run_id))
    }
}
