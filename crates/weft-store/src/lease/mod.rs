//! Leases (schema v3): which process drives a run, and the fencing token that makes a
//! driver that lost its lease unable to write.
//!
//! A run is driven by one owner at a time. The owner holds the run's lease row — who it is
//! (`owner`, `host`, `pid`), until when (`expires_at_ms`), and a fencing `token` that grows
//! by one at every acquisition. An append made through a handle fenced by a lease
//! ([`crate::Store::fenced`]) is refused with [`crate::StoreError::Fenced`] unless its token
//! is still the run's current one, in the same transaction as the insert: a driver whose
//! lease was taken over cannot add one event to the log, whatever its clock says. Appends
//! made without a fence (a person's decision, a cancel: the inbox) are not checked; they
//! are requests the driver absorbs, not driving.
//!
//! The store never reads the clock: the caller gives `now_ms` and the lease's length, and a
//! lease is expired when `expires_at_ms <= now_ms`. Whether a holder's process is gone is
//! the caller's knowledge too (the engine checks the pid on its own host) and is passed as
//! the token it replaces. Format and rules: `docs/store.md` §2a.

mod memory;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Who drives (or wants to drive) a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// Unique per driving process and run (the engine makes one per acquisition).
    pub owner: String,
    /// The host the driver runs on.
    pub host: String,
    /// The driver's process id on that host.
    pub pid: u32,
}

/// A run's lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub run_id: String,
    pub holder: LeaseHolder,
    /// The fencing token: 1 for the run's first lease, one more at every acquisition.
    pub token: u64,
    /// When this holder acquired it, ms since the Unix epoch.
    pub acquired_at_ms: i64,
    /// Until when it holds unless renewed; [`RELEASED`] once its holder let it go.
    pub expires_at_ms: i64,
}

/// The `expires_at_ms` of a lease its holder released: expired at any time.
pub const RELEASED: i64 = 0;

impl Lease {
    /// Whether the lease no longer holds at `now_ms` (expired or released).
    pub fn expired_at(&self, now_ms: i64) -> bool {
        self.expires_at_ms <= now_ms
    }

    /// Whether its holder released it.
    pub fn released(&self) -> bool {
        self.expires_at_ms == RELEASED
    }
}

/// How an acquisition may take a lease another holder has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takeover {
    /// Only a lease that has expired (or was released) is taken.
    IfExpired,
    /// The caller knows the holder of the lease with this token is gone (its process died
    /// on the caller's host): it is taken at once. If the token moved meanwhile, someone
    /// else took it first and this acquisition fails like an unexpired one.
    Replacing(u64),
}

/// The `leases` table (schema v3): one row per run that was ever driven.
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

/// Whether an acquisition at `now_ms` may take over `current`.
pub(crate) fn may_take(current: Option<&Lease>, now_ms: i64, takeover: Takeover) -> bool {
    current.is_none_or(|lease| {
        lease.expired_at(now_ms) || takeover == Takeover::Replacing(lease.token)
    })
}
