//! Leases (schema v3): which process drives a run, and the fencing token that makes a
//! driver that lost its lease unable to write.
//!
//! A run is driven by one owner at a time. The owner holds the run's lease row — who it is
//! (`owner`, `host`, `pid`), until when (`expires_at_ms`), and a fencing `token` that grows
//! by one at every acquisition. An append made through a handle fenced by a lease
//! ([`crate::LeaseFence::fenced`]) is refused with [`crate::StoreError::Fenced`] unless its token
//! is still the run's current one, in the same transaction as the insert: a driver whose
//! lease was taken over cannot add one event to the log, whatever its clock says. Appends
//! made without a fence (a person's decision, a cancel: the inbox) are not checked; they
//! are requests the driver absorbs, not driving.
//!
//! The store never reads the clock: the caller gives `now_ms` and the lease's length, and a
//! lease is expired when `expires_at_ms <= now_ms`. Whether a holder's process is gone is
//! the caller's knowledge too (the engine checks the pid on its own host) and is passed as
//! the token it replaces. Format and rules: `docs/store.md` §2a.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

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

/// Whether an acquisition at `now_ms` may take over `current`.
pub(crate) fn may_take(current: Option<&Lease>, now_ms: i64, takeover: Takeover) -> bool {
    current.is_none_or(|lease| {
        lease.expired_at(now_ms) || takeover == Takeover::Replacing(lease.token)
    })
}

/// The lease a fenced handle writes under, and whether this process has let it go: shared
/// by the clones of the handle (`LeaseFence::fenced` makes one per acquisition).
#[derive(Debug)]
pub(crate) struct Fence {
    lease: Lease,
    released: AtomicBool,
}

impl Fence {
    pub(crate) fn mark_released(&self) {
        self.released.store(true, Ordering::Relaxed);
    }
}

/// A store handle's fence, `None` for a plain handle: what every backend's handle keeps to
/// tell which of its writes carry a token.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandleFence(Option<Arc<Fence>>);

impl HandleFence {
    /// A fence of `lease`, not released.
    pub(crate) fn of(lease: Lease) -> HandleFence {
        HandleFence(Some(Arc::new(Fence {
            lease,
            released: AtomicBool::new(false),
        })))
    }

    /// The lease the handle writes under.
    pub(crate) fn lease(&self) -> Option<&Lease> {
        self.0.as_deref().map(|f| &f.lease)
    }

    /// Whether this process let the handle's lease go.
    pub(crate) fn released(&self) -> bool {
        self.0
            .as_deref()
            .is_some_and(|f| f.released.load(Ordering::Relaxed))
    }

    /// The fence when the handle writes to `run_id`.
    pub(crate) fn on(&self, run_id: &str) -> Option<Arc<Fence>> {
        self.0
            .as_ref()
            .filter(|f| f.lease.run_id == run_id)
            .cloned()
    }

    /// The token the handle's writes to `run_id` carry.
    pub(crate) fn token_for(&self, run_id: &str) -> Option<u64> {
        self.0
            .as_deref()
            .filter(|f| f.lease.run_id == run_id)
            .map(|f| f.lease.token)
    }

    /// The lease the handle opens `run_id` with, if any.
    pub(crate) fn opening_lease(&self, run_id: &str) -> Option<&Lease> {
        self.lease().filter(|l| l.run_id == run_id)
    }

    /// After a release of `token` on `run_id` through the handle: nothing left to release.
    pub(crate) fn released_by(&self, run_id: &str, token: u64) {
        if let Some(fence) = self.of_token(run_id, token) {
            fence.mark_released();
        }
    }

    /// The fence when the handle writes to `run_id` under `token` (what a release of
    /// `token` marks released once it is committed).
    pub(crate) fn of_token(&self, run_id: &str, token: u64) -> Option<Arc<Fence>> {
        self.on(run_id).filter(|f| f.lease.token == token)
    }
}
