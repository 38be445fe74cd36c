//! The run's lease (`docs/engine.md` §2d): one driver at a time.
//!
//! A driver takes the run's lease before it writes anything (a new run is created with
//! its first lease, in the run's opening write; a resume acquires it), writes only through
//! a store handle fenced by it (`weft_store::LeaseFence::fenced`: every append, status change and
//! the closing write carry its token, refused once it was taken over), renews it on the
//! run's clock every [`LeaseOptions::renew_every`] from a timer task (one write per
//! interval, none per node), and lets it go with the run's closing write, or when it stops
//! otherwise (suspended, failed, the test hook). A lease is taken from another holder only
//! when it has expired, or at once when its holder ran on this host and its process is gone
//! (`weft resume` right after a `kill -9`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use weft_store::{Lease, LeaseHolder, RunStore, SharedStore, StoreError, Takeover};

use crate::EngineError;
use crate::clock::Clock;

/// How a driver holds its run's lease.
#[derive(Clone, Debug)]
pub struct LeaseOptions {
    /// How long the lease holds without a renewal (default 30 s): how long a run whose
    /// driver vanished on another host waits before another may take it over.
    pub ttl: Duration,
    /// How often the driver renews it (default 10 s); kept below `ttl`.
    pub renew_every: Duration,
    /// Who the driver says it is; `None`: this process ([`this_process`]).
    pub holder: Option<LeaseHolder>,
}

impl Default for LeaseOptions {
    fn default() -> LeaseOptions {
        LeaseOptions {
            ttl: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            holder: None,
        }
    }
}

impl LeaseOptions {
    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// The renewal interval, below the lease's length whatever was asked.
    fn interval(&self) -> Duration {
        self.renew_every
            .min(self.ttl / 2)
            .max(Duration::from_millis(1))
    }

    fn holder(&self) -> LeaseHolder {
        self.holder.clone().unwrap_or_else(this_process)
    }
}

/// This process as a lease holder: the host's name, the pid, and an owner id unique to
/// this acquisition (`HOST/PID/N`).
pub fn this_process() -> LeaseHolder {
    static ACQUISITIONS: AtomicU64 = AtomicU64::new(0);
    let host = host_name();
    let pid = std::process::id();
    let n = ACQUISITIONS.fetch_add(1, Ordering::Relaxed);
    LeaseHolder {
        owner: format!("{host}/{pid}/{n}"),
        host,
        pid,
    }
}

/// This host's name (Linux: the kernel's; elsewhere `$HOSTNAME`), `localhost` if unknown;
/// read once per process (every run's lease names it).
pub fn host_name() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
            .unwrap_or_else(|| "localhost".to_owned())
    })
    .clone()
}

/// Whether process `pid` of this host may still run. Linux: it has a `/proc` entry that is
/// not a zombie. Elsewhere there is no cheap check, and the answer is `true` (the lease is
/// then taken over only once expired).
pub fn process_alive(pid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)` (comm may hold one).
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| !matches!(state, "Z" | "X" | "x")),
        Err(_) => false,
    }
}

/// Whether `lease` is held by a live driver at `now_ms`: not released or expired, and not
/// the lease of a process of this host that is gone.
pub fn is_live(lease: &Lease, now_ms: i64) -> bool {
    !lease.expired_at(now_ms) && !holder_gone(lease)
}

fn holder_gone(lease: &Lease) -> bool {
    lease.holder.host == host_name()
        && lease.holder.pid != std::process::id()
        && !process_alive(lease.holder.pid)
}

/// The live driver of `run_id`, if another holds its lease (what `weft resume` tells
/// before touching the run).
pub fn driven_by(
    store: &dyn RunStore,
    run_id: &str,
    clock: &dyn Clock,
) -> Result<Option<Lease>, EngineError> {
    Ok(store
        .get_lease(run_id)?
        .filter(|l| is_live(l, clock.now_ms())))
}

/// The first lease of a run being created (token 1), written with the run's opening write.
pub(super) fn first(run_id: &str, options: &LeaseOptions, now_ms: i64) -> Lease {
    Lease {
        run_id: run_id.to_owned(),
        holder: options.holder(),
        token: 1,
        acquired_at_ms: now_ms,
        expires_at_ms: now_ms.saturating_add(options.ttl_ms()),
    }
}

/// Takes `run_id`'s lease: free, expired, or held by a process of this host that is gone;
/// [`EngineError::Driven`] when a live driver holds it.
pub(super) async fn acquire(
    store: &dyn RunStore,
    run_id: &str,
    options: &LeaseOptions,
    clock: &dyn Clock,
) -> Result<Lease, EngineError> {
    let holder = options.holder();
    let now = clock.now_ms();
    let ttl = options.ttl_ms();
    let first = store
        .acquire_lease_async(run_id, &holder, now, ttl, Takeover::IfExpired)
        .await;
    match first {
        Err(StoreError::LeaseHeld { lease, .. }) if holder_gone(&lease) => {
            // Its holder died here (`kill -9`): take it now, unless someone was quicker.
            store
                .acquire_lease_async(run_id, &holder, now, ttl, Takeover::Replacing(lease.token))
                .await
                .map_err(driven)
        }
        other => other.map_err(driven),
    }
}

fn driven(e: StoreError) -> EngineError {
    match e {
        StoreError::LeaseHeld { lease, .. } => EngineError::Driven(lease),
        other => EngineError::Store(other),
    }
}

/// A driver's hold on its lease: the renewal timer runs while it lives, and
/// [`Held::release`] lets the lease go unless the run's closing write already did (a
/// driver that stops for any reason — suspended, failed, the test hook — frees its run at
/// once; only a dead process leaves its lease to expire or to the dead-pid check).
/// Dropped without that (its run's future dropped mid-run), it submits the release from
/// its drop without waiting for it.
pub(super) struct Held {
    store: SharedStore,
    renewal: tokio::task::JoinHandle<()>,
}

impl Held {
    /// Stops renewing and lets the lease go, awaited (best effort: a release that fails
    /// leaves the lease to expire).
    pub(super) async fn release(self) {
        self.renewal.abort();
        if let Some(lease) = self.unreleased() {
            let _ = self
                .store
                .release_lease_async(&lease.run_id, lease.token)
                .await;
        }
    }

    /// The lease still to let go: none once the closing write or a release did.
    fn unreleased(&self) -> Option<Lease> {
        if self.store.lease_released() {
            return None;
        }
        self.store.held_lease().cloned()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewal.abort();
        if let Some(lease) = self.unreleased() {
            // A run's future dropped mid-run is dropped on a runtime thread, which must not
            // block: the release is submitted at the call (the awaited path's contract,
            // `AwaitedWrites`) and committed after the writes before it, not waited for.
            // Best effort: a release that fails leaves the lease to expire.
            drop(self.store.release_lease_async(&lease.run_id, lease.token));
        }
    }
}

/// Starts renewing the lease `store` is fenced by, on `clock`: every
/// [`LeaseOptions::renew_every`], to `now + ttl`. A renewal refused as fenced ends the
/// timer (the lease was taken over: the driver's next write is refused); any other error
/// is tried again at the next tick.
pub(super) fn hold(store: &dyn RunStore, options: &LeaseOptions, clock: Arc<dyn Clock>) -> Held {
    let held = store.shared();
    // The timer holds the handle weakly: a run that never yields to its runtime (pure
    // nodes on a store that answers at once) ends before the timer is ever polled, and on
    // a current-thread runtime an aborted task that was never polled is dropped only when
    // the runtime next runs its tasks, which `block_on` of the next ready run never does.
    // A strong handle there kept every such run's whole log alive (W1: 0.5 MB per run).
    let renewer = Arc::downgrade(&held);
    let interval = options.interval();
    let ttl = options.ttl_ms();
    let renewal = tokio::spawn(async move {
        let Some(lease) = renewer.upgrade().and_then(|s| s.held_lease().cloned()) else {
            return;
        };
        loop {
            clock.sleep(interval).await;
            // Released (the run ended): nothing left to renew.
            let Some(renewer) = renewer.upgrade() else {
                return;
            };
            let renewed = renewer
                .renew_lease_async(&lease.run_id, lease.token, clock.now_ms(), ttl)
                .await;
            // Taken over: stop (the driver's next write is refused). A lease not written
            // yet (the run's opening write in flight) is renewed at the next tick.
            if matches!(
                renewed,
                Err(StoreError::Fenced {
                    current: Some(_),
                    ..
                })
            ) {
                return;
            }
        }
    });
    Held {
        store: held,
        renewal,
    }
}
