//! The hub: one thread per store, started by the first tail (or the first run watch that
//! its backend cannot answer at the call), that does every read a tail needs and watches
//! for commits of other processes.
//!
//! Tails and the first check of such a run watch are served on this thread, never on the
//! caller's: a read of SQLite blocks, and the callers are tasks on an async runtime. A read
//! that finds nothing new is parked with a watcher (`watchers.rs`) and read again when its
//! run advances. Commits of this process wake the watchers directly (the commit paths
//! report them); for a backend that other processes write too (a SQLite file), the hub
//! also asks its [`HubReader`] every [`POLL`] whether another process has committed, and
//! wakes the watchers of the runs that advanced the same way. It polls only while
//! something watches.
//!
//! The hub holds the store weakly, between requests too: it never keeps a dropped store
//! alive, and ends when the store and every tail of it are gone.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use super::watchers::{RunWatchState, Wake};
use super::{HubReader, TailFrom, TailSource, TailedEvent};
use crate::error::{Result, StoreError};

/// How often the hub asks a database file whether another process committed, while
/// something waits: the bound on how late a commit of another process is seen.
pub const POLL: Duration = Duration::from_millis(10);

/// What the hub is asked.
pub(crate) enum HubRequest {
    /// Up to `limit` events after `from`: answered once there is at least one.
    Fetch {
        from: TailFrom,
        limit: usize,
        reply: oneshot::Sender<Result<Vec<TailedEvent>>>,
    },
    /// A [`super::watchers::RunWatch`] was registered: tell it the run's last seq now
    /// (or that the run does not exist).
    Check {
        run_id: String,
        state: Arc<RunWatchState>,
    },
    /// The watcher of a parked fetch saw its run advance.
    Woken(u64),
}

/// Starts the hub thread of `source`'s store; its request channel.
pub(crate) fn start(
    source: &Arc<dyn TailSource>,
) -> Result<(Sender<HubRequest>, std::thread::JoinHandle<()>)> {
    let (requests, receiver) = mpsc::channel();
    let hub = Hub {
        store: Arc::downgrade(source),
        reader: source.hub_reader(),
        parked: HashMap::new(),
    };
    let thread = std::thread::Builder::new()
        .name("weft-store-tail".to_owned())
        .spawn(move || hub.run(&receiver))
        .map_err(|e| StoreError::Setup(format!("cannot start the tail thread: {e}")))?;
    Ok((requests, thread))
}

/// A fetch that found nothing yet.
struct Parked {
    from: TailFrom,
    limit: usize,
    reply: oneshot::Sender<Result<Vec<TailedEvent>>>,
}

struct Hub {
    store: Weak<dyn TailSource>,
    /// How this thread reads the backend (for a file, through a connection of its own).
    reader: Box<dyn HubReader>,
    parked: HashMap<u64, Parked>,
}

impl Hub {
    fn run(mut self, requests: &Receiver<HubRequest>) {
        let mut watching = false;
        let mut next_check = Instant::now() + POLL;
        loop {
            let request = if watching {
                match requests.recv_timeout(next_check.saturating_duration_since(Instant::now())) {
                    Ok(request) => Some(request),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match requests.recv() {
                    Ok(request) => Some(request),
                    Err(_) => return,
                }
            };
            let Some(store) = self.store.upgrade() else {
                return;
            };
            if let Some(request) = request {
                self.handle(store.as_ref(), request);
                while let Ok(request) = requests.try_recv() {
                    self.handle(store.as_ref(), request);
                }
            }
            if watching && Instant::now() >= next_check {
                self.check_changes(store.as_ref());
                next_check = Instant::now() + POLL;
            }
            let was_watching = watching;
            watching = self.reader.shared() && store.watchers().live() > 0;
            if !watching {
                self.reader.forget();
            } else if !was_watching {
                next_check = Instant::now() + POLL;
            }
            // Dropped before blocking: the hub never keeps the store alive (if this was
            // the last handle, the store closes here and the channel with it).
            drop(store);
        }
    }

    fn handle(&mut self, store: &dyn TailSource, request: HubRequest) {
        match request {
            HubRequest::Fetch { from, limit, reply } => self.fetch(store, from, limit, reply),
            HubRequest::Check { run_id, state } => self.check(&run_id, &state),
            HubRequest::Woken(id) => {
                if let Some(Parked { from, limit, reply }) = self.parked.remove(&id) {
                    self.fetch(store, from, limit, reply);
                }
            }
        }
    }

    /// Reads after `from`; parks the fetch when there is nothing yet. The watcher is
    /// registered before the read, so a commit between the two is not missed.
    fn fetch(
        &mut self,
        store: &dyn TailSource,
        from: TailFrom,
        limit: usize,
        reply: oneshot::Sender<Result<Vec<TailedEvent>>>,
    ) {
        if reply.is_canceled() {
            return;
        }
        let watchers = store.watchers();
        if let Err(e) = self.reader.know() {
            let _ = reply.send(Err(e));
            return;
        }
        let (run, beyond) = match &from {
            TailFrom::Run { run_id, after_seq } => (Some(run_id.as_str()), *after_seq),
            TailFrom::All { .. } => (None, 0),
        };
        let id = watchers.watch(run, beyond, Wake::Hub);
        match self.reader.read_after(&from, limit) {
            Ok(events) if events.is_empty() => {
                self.parked.insert(id, Parked { from, limit, reply });
            }
            answer => {
                watchers.take(run, id);
                let _ = reply.send(answer);
            }
        }
    }

    /// The first check of a new watch (registered before this, so every commit after
    /// the read below reaches it).
    fn check(&mut self, run_id: &str, state: &RunWatchState) {
        let checked = self
            .reader
            .know()
            .and_then(|()| self.reader.last_seq(run_id));
        match checked {
            Ok(last) => state.advance(last),
            Err(e) => state.fail(e),
        }
    }

    /// Has another process committed? If so, the watchers of the runs that advanced wake.
    fn check_changes(&mut self, store: &dyn TailSource) {
        self.drop_abandoned(store);
        let runs = self.reader.others_committed();
        if !runs.is_empty() {
            store
                .watchers()
                .advanced_many(runs.iter().map(|(run, seq)| (run.as_str(), *seq)));
        }
    }

    /// Forgets the parked fetches whose tail was dropped, and their watchers.
    fn drop_abandoned(&mut self, store: &dyn TailSource) {
        let watchers = store.watchers();
        self.parked.retain(|id, parked| {
            if !parked.reply.is_canceled() {
                return true;
            }
            let run = match &parked.from {
                TailFrom::Run { run_id, .. } => Some(run_id.as_str()),
                TailFrom::All { .. } => None,
            };
            watchers.take(run, *id);
            false
        });
    }
}
