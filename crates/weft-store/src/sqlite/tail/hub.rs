//! The hub: one thread per store, started by the first tail (or the first run watch of a
//! database file), that does every read a tail needs and watches for commits of other
//! processes.
//!
//! Tails and the first check of a run watch are served on this thread, never on the
//! caller's: a read of SQLite blocks, and the callers are tasks on an async runtime. A read
//! that finds nothing new is parked with a watcher (`watchers.rs`) and read again when its
//! run advances. Commits of this process wake the watchers directly (the commit paths
//! report them); for a database file, the hub also asks SQLite every [`POLL`] whether
//! another connection has committed (`PRAGMA data_version` on its own connection, a read of
//! the WAL index in shared memory), and when one has and the new events are not all this
//! process's own, reads which runs advanced and wakes their watchers the same way. It polls
//! only while something watches.
//!
//! The hub holds the store weakly, between requests too: it never keeps a dropped store
//! alive, and ends when the store and every tail of it are gone.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use rusqlite::Connection;

use super::watchers::{RunWatchState, Wake};
use super::{TailFrom, TailedEvent, read};
use crate::error::{Result, StoreError};
use crate::sqlite::{Inner, connection, queries};

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

/// Starts the hub thread of `inner`'s store; its request channel.
pub(crate) fn start(
    inner: &Arc<Inner>,
) -> Result<(Sender<HubRequest>, std::thread::JoinHandle<()>)> {
    let (requests, receiver) = mpsc::channel();
    let hub = Hub {
        store: Arc::downgrade(inner),
        path: inner.path.clone(),
        conn: None,
        parked: HashMap::new(),
        known: None,
    };
    let thread = std::thread::Builder::new()
        .name("weft-store-tail".to_owned())
        .spawn(move || hub.run(&receiver))
        .map_err(|e| StoreError::Setup(format!("cannot start the tail thread: {e}")))?;
    Ok((requests, thread))
}

/// Events this process's writer has committed to the file.
fn own_events(store: &Inner) -> u64 {
    store.counters.snapshot().events
}

/// A fetch that found nothing yet.
struct Parked {
    from: TailFrom,
    limit: usize,
    reply: oneshot::Sender<Result<Vec<TailedEvent>>>,
}

/// What the hub last knew of a database file: its `data_version`, its last position, and
/// how many events this process's writer had committed once that position was read.
#[derive(Clone, Copy)]
struct Known {
    data_version: i64,
    position: i64,
    own_events: u64,
}

struct Hub {
    store: Weak<Inner>,
    /// The database file; `None` in memory (nothing else can write there).
    path: Option<PathBuf>,
    /// The hub's own connection to the file, opened on first use: `data_version` is per
    /// connection, and a pooled one would not be the same one each time.
    conn: Option<Connection>,
    parked: HashMap<u64, Parked>,
    /// Set while something waits on a file store; `None` when nothing does, so that the
    /// next wait starts from the file as it is then.
    known: Option<Known>,
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
                self.handle(&store, request);
                while let Ok(request) = requests.try_recv() {
                    self.handle(&store, request);
                }
            }
            if watching && Instant::now() >= next_check {
                self.check_changes(&store);
                next_check = Instant::now() + POLL;
            }
            let was_watching = watching;
            watching = self.path.is_some() && store.counters.watchers.live() > 0;
            if !watching {
                self.known = None;
            } else if !was_watching {
                next_check = Instant::now() + POLL;
            }
            // Dropped before blocking: the hub never keeps the store alive (if this was
            // the last handle, the store closes here and the channel with it).
            drop(store);
        }
    }

    fn handle(&mut self, store: &Inner, request: HubRequest) {
        match request {
            HubRequest::Fetch { from, limit, reply } => self.fetch(store, from, limit, reply),
            HubRequest::Check { run_id, state } => self.check(store, &run_id, &state),
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
        store: &Inner,
        from: TailFrom,
        limit: usize,
        reply: oneshot::Sender<Result<Vec<TailedEvent>>>,
    ) {
        if reply.is_canceled() {
            return;
        }
        let watchers = &store.counters.watchers;
        if let Err(e) = self.know(store) {
            let _ = reply.send(Err(e));
            return;
        }
        let (run, beyond) = match &from {
            TailFrom::Run { run_id, after_seq } => (Some(run_id.as_str()), *after_seq),
            TailFrom::All { .. } => (None, 0),
        };
        let id = watchers.watch(run, beyond, Wake::Hub);
        match self.read_after(store, &from, limit) {
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
    fn check(&mut self, store: &Inner, run_id: &str, state: &RunWatchState) {
        let checked = self.know(store).and_then(|()| self.last_seq(store, run_id));
        match checked {
            Ok(last) => state.advance(last),
            Err(e) => state.fail(e),
        }
    }

    /// For a file store: what the file is now, unless already known (then every commit
    /// since is still to be found by [`Hub::check_changes`]).
    fn know(&mut self, store: &Inner) -> Result<()> {
        if self.path.is_none() || self.known.is_some() {
            return Ok(());
        }
        let conn = self.conn()?;
        let data_version = read::data_version(conn)?;
        let position = read::max_position(conn)?;
        self.known = Some(Known {
            data_version,
            position,
            // Read after the position: an own event counted here is at or below it.
            own_events: own_events(store),
        });
        Ok(())
    }

    /// Has another connection committed? If so, which runs advanced: their watchers wake.
    fn check_changes(&mut self, store: &Inner) {
        let watchers = &store.counters.watchers;
        self.drop_abandoned(store);
        let Some(known) = self.known else {
            return;
        };
        let Ok(conn) = self.conn() else {
            return;
        };
        // A failed check is tried again at the next tick; a lasting failure shows in the
        // waiters' own reads.
        let Ok(data_version) = read::data_version(conn) else {
            return;
        };
        if data_version == known.data_version {
            return;
        }
        // Most changes are this process's own commits, whose watchers the commit path
        // has woken already. Positions are gap-free, so when the events after the known
        // position are as many as this process committed since, none is another's and
        // nothing needs reading. (Counted before the position is read: every event counted
        // is then at or below it.)
        let own_before = own_events(store);
        let Ok(position) = read::max_position(conn) else {
            return;
        };
        let own_after = own_events(store);
        let new = u64::try_from(position - known.position).unwrap_or(u64::MAX);
        if new != own_before.saturating_sub(known.own_events) {
            let Ok(runs) = read::advanced_between(conn, known.position, position) else {
                return;
            };
            watchers.advanced_many(runs.iter().map(|(run, seq)| (run.as_str(), *seq)));
        }
        self.known = Some(Known {
            data_version,
            position,
            own_events: own_after,
        });
    }

    /// Forgets the parked fetches whose tail was dropped, and their watchers.
    fn drop_abandoned(&mut self, store: &Inner) {
        let watchers = &store.counters.watchers;
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

    fn conn(&mut self) -> Result<&Connection> {
        let Some(path) = &self.path else {
            return Err(StoreError::Internal(
                "an in-memory store has no file to watch".into(),
            ));
        };
        if self.conn.is_none() {
            self.conn = Some(connection::open_reader(path)?);
        }
        self.conn
            .as_ref()
            .ok_or_else(|| StoreError::Internal("the tail connection is gone".into()))
    }

    fn read_after(
        &mut self,
        store: &Inner,
        from: &TailFrom,
        limit: usize,
    ) -> Result<Vec<TailedEvent>> {
        if let Some(memory) = &store.memory {
            let memory = memory.lock().unwrap_or_else(PoisonError::into_inner);
            return memory.read_after(from, limit);
        }
        if self.path.is_some() {
            return read::read_after(self.conn()?, from, limit);
        }
        store
            .readers
            .with(|conn| read::read_after(conn, from, limit))
    }

    fn last_seq(&mut self, store: &Inner, run_id: &str) -> Result<u64> {
        if let Some(memory) = &store.memory {
            let memory = memory.lock().unwrap_or_else(PoisonError::into_inner);
            return memory.last_seq(run_id);
        }
        if self.path.is_some() {
            return queries::last_seq(self.conn()?, run_id);
        }
        store.readers.with(|conn| queries::last_seq(conn, run_id))
    }
}
