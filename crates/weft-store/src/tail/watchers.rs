//! Who waits for which run's log to grow, and the in-process half of waking them.
//!
//! Every commit path of the store (the writer thread's group commit, the inline writes of
//! an in-memory database, the ephemeral backend) reports the runs it appended to with
//! [`Watchers::advanced`]; the hub thread reports what other processes committed (found by
//! its change check) the same way. A watcher of a run is either a [`RunWatch`]'s state,
//! which lives as long as the watch and only records the last seq seen (so a driver that
//! watches its run while it appends pays no registration per append), or a parked tail
//! read of the hub thread, woken once when its run (or any run) goes past its cursor. With
//! nobody watching, a commit pays one atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use super::hub::HubRequest;
use crate::error::{Result, StoreError};

/// What a [`RunWatch`] knows of its run: the last seq committed, as reported.
#[derive(Default)]
pub(crate) struct RunWatchState {
    seen: AtomicU64,
    waker: Mutex<Option<Waker>>,
    /// The first check of the run failed (e.g. `UnknownRun`).
    failed: Mutex<Option<StoreError>>,
}

impl RunWatchState {
    /// The run's log now ends at `last_seq` (or later).
    pub(crate) fn advance(&self, last_seq: u64) {
        if self.seen.fetch_max(last_seq, Ordering::AcqRel) < last_seq {
            self.wake();
        }
    }

    pub(crate) fn fail(&self, error: StoreError) {
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
        self.wake();
    }

    /// The waiting future was dropped.
    pub(crate) fn forget_waker(&self) {
        self.waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn wake(&self) {
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ready once the run's log is known to go past `beyond`.
    pub(crate) fn poll_beyond(&self, cx: &mut Context<'_>, beyond: u64) -> Poll<Result<()>> {
        let ready = |state: &RunWatchState| -> Option<Result<()>> {
            if let Some(e) = state
                .failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                return Some(Err(e));
            }
            (state.seen.load(Ordering::Acquire) > beyond).then_some(Ok(()))
        };
        if let Some(done) = ready(self) {
            return Poll::Ready(done);
        }
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        // Checked again after the waker is in place: an advance in between is not missed.
        ready(self).map_or(Poll::Pending, Poll::Ready)
    }
}

/// What a watcher wakes when its run advances.
pub(crate) enum Wake {
    /// A [`RunWatch`]: its state records the seq (the watcher stays).
    Run(Arc<RunWatchState>),
    /// The hub thread, for its parked read (sent the watcher's id; the watcher goes).
    Hub,
}

struct Watcher {
    id: u64,
    /// A parked read wakes once the run's last seq exceeds this (ignored for a watcher
    /// of every run, and for a [`RunWatch`]).
    beyond: u64,
    wake: Wake,
}

/// Interest in one run's log, registered until dropped: [`crate::FollowLog::watch_run`]. A driver
/// keeps one while its nodes run and awaits [`RunWatch::appended_past`] the seq it knows
/// each time; the commits of this process and the hub's change check keep it up to date.
pub struct RunWatch {
    pub(crate) state: Arc<RunWatchState>,
    source: super::Source,
    run_id: String,
    id: u64,
}

impl RunWatch {
    pub(crate) fn new(source: super::Source, run_id: &str) -> RunWatch {
        let state = Arc::new(RunWatchState::default());
        let id = source
            .watchers()
            .watch(Some(run_id), 0, Wake::Run(Arc::clone(&state)));
        RunWatch {
            state,
            source,
            run_id: run_id.to_owned(),
            id,
        }
    }
}

impl Drop for RunWatch {
    fn drop(&mut self) {
        self.source.watchers().take(Some(&self.run_id), self.id);
    }
}

#[derive(Default)]
struct Map {
    next_id: u64,
    by_run: HashMap<String, Vec<Watcher>>,
    /// Watchers of every run: any append wakes them.
    all: Vec<Watcher>,
    /// The hub thread's request channel, once it has been started (`hub.rs`).
    hub: Option<Sender<HubRequest>>,
    /// The hub thread, joined when the store closes (`Watchers::stop_hub`).
    hub_thread: Option<std::thread::JoinHandle<()>>,
}

/// The registry of watchers, shared by the commit paths and the hub thread.
#[derive(Default)]
pub(crate) struct Watchers {
    /// How many watchers are registered: the commit paths' fast exit when it is 0.
    live: AtomicUsize,
    map: Mutex<Map>,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers")
            .field("live", &self.live.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, Map> {
        // A panic while holding it left the map consistent (every change is one push or
        // one retain); keep using it.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many watchers are registered.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// The hub's request channel, starting the hub with `start` the first time.
    pub(crate) fn hub(
        &self,
        start: impl FnOnce() -> Result<(Sender<HubRequest>, std::thread::JoinHandle<()>)>,
    ) -> Result<Sender<HubRequest>> {
        let mut map = self.lock();
        if let Some(hub) = &map.hub {
            return Ok(hub.clone());
        }
        let (hub, thread) = start()?;
        map.hub = Some(hub.clone());
        map.hub_thread = Some(thread);
        Ok(hub)
    }

    /// Ends the hub thread, if one runs, and waits until it is gone, so its connection
    /// is closed before the store's own: the last connection to close checkpoints the WAL
    /// into the database file, and a hub still holding one at process exit would leave
    /// the file behind its WAL. Called when the store closes (never on the hub thread
    /// itself, which only drops its request channel then).
    pub(crate) fn stop_hub(&self) {
        let (sender, thread) = {
            let mut map = self.lock();
            (map.hub.take(), map.hub_thread.take())
        };
        drop(sender);
        if let Some(thread) = thread
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }

    /// Registers a watcher of `run` (every run when `None`) past seq `beyond`; its id.
    pub(crate) fn watch(&self, run: Option<&str>, beyond: u64, wake: Wake) -> u64 {
        let mut map = self.lock();
        map.next_id += 1;
        let id = map.next_id;
        let watcher = Watcher { id, beyond, wake };
        match run {
            Some(run) => map.by_run.entry(run.to_owned()).or_default().push(watcher),
            None => map.all.push(watcher),
        }
        self.live.fetch_add(1, Ordering::Release);
        id
    }

    /// Takes watcher `id` of `run` back (`None`: it has already been woken).
    pub(crate) fn take(&self, run: Option<&str>, id: u64) -> Option<Wake> {
        let mut map = self.lock();
        let list = match run {
            Some(run) => map.by_run.get_mut(run)?,
            None => &mut map.all,
        };
        let at = list.iter().position(|w| w.id == id)?;
        let watcher = list.swap_remove(at);
        if let Some(run) = run
            && map.by_run.get(run).is_some_and(Vec::is_empty)
        {
            map.by_run.remove(run);
        }
        self.live.fetch_sub(1, Ordering::Release);
        Some(watcher.wake)
    }

    /// `run`'s log now ends at `last_seq` (committed): wakes its watchers that wait past
    /// a lower seq, and every watcher of all runs.
    pub(crate) fn advanced(&self, run: &str, last_seq: u64) {
        self.advanced_many(std::iter::once((run, last_seq)));
    }

    /// [`Watchers::advanced`] for several runs, under one lock.
    pub(crate) fn advanced_many<'a>(&self, runs: impl IntoIterator<Item = (&'a str, u64)>) {
        if self.live() == 0 {
            return;
        }
        let mut woken = Vec::new();
        let mut advanced = Vec::new();
        let hub = {
            let mut map = self.lock();
            for (run, last_seq) in runs {
                woken.append(&mut map.all);
                if let Some(list) = map.by_run.get_mut(run) {
                    let mut i = 0;
                    while i < list.len() {
                        match &list[i].wake {
                            Wake::Run(state) => {
                                advanced.push((Arc::clone(state), last_seq));
                                i += 1;
                            }
                            Wake::Hub if list[i].beyond < last_seq => {
                                woken.push(list.swap_remove(i));
                            }
                            Wake::Hub => i += 1,
                        }
                    }
                    if list.is_empty() {
                        map.by_run.remove(run);
                    }
                }
            }
            self.live.fetch_sub(woken.len(), Ordering::Release);
            map.hub.clone()
        };
        // Woken outside the lock: a task's waker may run code of its runtime.
        for (state, last_seq) in advanced {
            state.advance(last_seq);
        }
        if let Some(hub) = &hub {
            for watcher in woken {
                let _ = hub.send(HubRequest::Woken(watcher.id));
            }
        }
    }
}
