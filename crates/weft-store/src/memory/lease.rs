//! Leases of the ephemeral backend: the same rules as the SQLite table, on the
//! [`MemoryLog`]'s map, under the store's mutex (so a fence check and the append it guards
//! are one step).

use super::MemoryLog;
use crate::error::{Result, StoreError};
use crate::lease::{Lease, LeaseHolder, RELEASED, Takeover, may_take};

impl MemoryLog {
    pub(crate) fn acquire_lease(
        &mut self,
        run_id: &str,
        holder: &LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    ) -> Result<Lease> {
        if !self.runs.contains_key(run_id) {
            return Err(StoreError::UnknownRun {
                run_id: run_id.to_owned(),
            });
        }
        let current = self.leases.get(run_id);
        if !may_take(current, now_ms, takeover) {
            return Err(StoreError::LeaseHeld {
                run_id: run_id.to_owned(),
                lease: Box::new(current.cloned().ok_or_else(|| {
                    StoreError::Internal("a lease refused without a holder".into())
                })?),
            });
        }
        let lease = Lease {
            run_id: run_id.to_owned(),
            holder: holder.clone(),
            token: current.map_or(1, |l| l.token + 1),
            acquired_at_ms: now_ms,
            expires_at_ms: now_ms.saturating_add(ttl_ms),
        };
        self.leases.insert(run_id.to_owned(), lease.clone());
        Ok(lease)
    }

    /// Inserts the first lease of a run just created (token 1).
    pub(crate) fn insert_lease(&mut self, lease: &Lease) -> Result<()> {
        if let Some(current) = self.leases.get(&lease.run_id) {
            return Err(StoreError::LeaseHeld {
                run_id: lease.run_id.clone(),
                lease: Box::new(current.clone()),
            });
        }
        self.leases.insert(lease.run_id.clone(), lease.clone());
        Ok(())
    }

    pub(crate) fn renew_lease(
        &mut self,
        run_id: &str,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Lease> {
        self.check_fence(run_id, Some(token))?;
        let lease = self
            .leases
            .get_mut(run_id)
            .ok_or_else(|| StoreError::Internal("a checked lease is gone".into()))?;
        lease.expires_at_ms = now_ms.saturating_add(ttl_ms);
        Ok(lease.clone())
    }

    pub(crate) fn release_lease(&mut self, run_id: &str, token: u64) {
        if let Some(lease) = self.leases.get_mut(run_id)
            && lease.token == token
        {
            lease.expires_at_ms = RELEASED;
        }
    }

    pub(crate) fn get_lease(&self, run_id: &str) -> Option<Lease> {
        self.leases.get(run_id).cloned()
    }

    /// `Fenced` unless `fence` is `None` (an unfenced write) or the run's current token.
    pub(crate) fn check_fence(&self, run_id: &str, fence: Option<u64>) -> Result<()> {
        let Some(token) = fence else {
            return Ok(());
        };
        let current = self.leases.get(run_id);
        if current.is_some_and(|l| l.token == token) {
            return Ok(());
        }
        Err(StoreError::Fenced {
            run_id: run_id.to_owned(),
            token,
            current: current.cloned().map(Box::new),
        })
    }
}
