//! Following the log as it is committed: [`crate::FollowLog::tail`] and
//! [`crate::FollowLog::watch_run`], for every backend.
//!
//! A [`Tail`] hands out committed events in commit order, one run's or every run's, from a
//! cursor, and waits for the next commit when it has handed out everything: woken at once
//! by a commit of this process, and within [`POLL`] by a commit of another process on the
//! same database file. Its cursor ([`Tail::cursor`]) is where a reader that stopped resumes,
//! losing and repeating nothing. Nothing here depends on an async runtime: the reads run
//! on the store's hub thread (`hub.rs`), and the answers come back on `futures-channel`
//! oneshots, so a tail is awaited on any executor (or blocked on, outside one).
//!
//! A backend is a [`TailSource`] to this module: the registry its commits report to, the
//! [`HubReader`] its hub thread reads through, and whether it answers a watch's first
//! check at the call. Nothing here knows SQLite or the ephemeral store.

mod hub;
mod watchers;

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_channel::oneshot;

use hub::HubRequest;
pub use hub::POLL;
pub use watchers::RunWatch;
pub(crate) use watchers::Watchers;

use crate::error::{Result, StoreError};
use crate::model::EventRecord;

/// How many events one read of a tail takes at most.
const READ_BATCH: usize = 512;

/// Where a tail starts: the cursor a reader that stopped resumes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TailFrom {
    /// One run's events with a seq above `after_seq` (0: from its first event).
    Run {
        /// The run.
        run_id: String,
        /// The last seq already seen.
        after_seq: u64,
    },
    /// Every run's events with a position above `after_position` (0: from the first
    /// event of the store), in commit order.
    All {
        /// The last position already seen.
        after_position: u64,
    },
}

/// A committed event as a tail hands it out.
#[derive(Clone, Debug, PartialEq)]
pub struct TailedEvent {
    /// The event's place in the store's commit order, across all runs: increasing by one
    /// per event (SQLite: the row's `rowid`). Stable: resume [`TailFrom::All`] from it.
    pub position: u64,
    /// The event.
    pub event: EventRecord,
}

/// What a tail needs from a backend.
pub(crate) trait TailSource: Send + Sync + 'static {
    /// The registry the backend's commits report their appends to.
    fn watchers(&self) -> &Watchers;

    /// How the hub thread reads this backend (made once, when the hub starts).
    fn hub_reader(&self) -> Box<dyn HubReader>;

    /// The run's last seq, answered at the call by a backend whose read never blocks;
    /// `None`: the hub thread asks.
    fn last_seq_now(&self, run_id: &str) -> Option<Result<u64>>;
}

/// How the hub thread reads a backend: events after a cursor, a run's last seq, and, for
/// a backend that other processes write too, which runs they advanced.
pub(crate) trait HubReader: Send {
    /// Up to `limit` committed events after `from`.
    fn read_after(&mut self, from: &TailFrom, limit: usize) -> Result<Vec<TailedEvent>>;

    /// The run's last seq (`UnknownRun` for no such run).
    fn last_seq(&mut self, run_id: &str) -> Result<u64>;

    /// Whether other processes commit to the same data: the hub then asks
    /// [`HubReader::others_committed`] every [`POLL`] while something waits.
    fn shared(&self) -> bool {
        false
    }

    /// Notes the data as it is now, unless already noted, before a wait's read: every
    /// commit after it is then found by [`HubReader::others_committed`].
    fn know(&mut self) -> Result<()> {
        Ok(())
    }

    /// The runs other processes appended to since the last check, each with its last
    /// seq (a failed check answers none and is tried again at the next tick).
    fn others_committed(&mut self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Nothing waits any more: the next wait starts from the data as it is then.
    fn forget(&mut self) {}
}

/// A backend's store as a tail holds it.
pub(crate) type Source = Arc<dyn TailSource>;

/// Follows the log of `source` from `from`: every committed event after it, in commit
/// order (a run's in seq order, which is the same), then each new one as it is committed,
/// by this process or another one writing the same data. A run tail of a run that does
/// not exist answers `UnknownRun`.
pub(crate) fn tail(source: Source, from: TailFrom) -> Tail {
    Tail {
        source,
        cursor: from,
        buffered: VecDeque::new(),
        pending: None,
    }
}

/// Watches `run_id`'s log until the watch is dropped: [`RunWatch::appended_after`] then
/// waits for it to grow, as often as needed, without registering again. Its first check
/// runs at the call when the backend answers it there, else on the hub thread, never
/// blocking the caller's.
pub(crate) fn watch_run(source: Source, run_id: &str) -> RunWatch {
    let now = source.last_seq_now(run_id);
    let watch = RunWatch::new(Arc::clone(&source), run_id);
    let state = Arc::clone(&watch.state);
    match now {
        Some(Ok(last)) => state.advance(last),
        Some(Err(e)) => state.fail(e),
        None => {
            let request = HubRequest::Check {
                run_id: run_id.to_owned(),
                state: Arc::clone(&state),
            };
            if let Err(e) = send_to_hub(&source, request) {
                state.fail(e);
            }
        }
    }
    watch
}

/// Resolves once `run_id`'s log has an event with a seq above `beyond_seq`, committed by
/// this process or another one (at once if it already has; `UnknownRun` if there is no
/// such run). A one-off [`watch_run`].
pub(crate) fn appended_after(source: Source, run_id: &str, beyond_seq: u64) -> AppendWait {
    AppendWait {
        watch: watch_run(source, run_id),
        beyond: beyond_seq,
    }
}

fn send_to_hub(source: &Source, request: HubRequest) -> Result<()> {
    let hub = source.watchers().hub(|| hub::start(source))?;
    hub.send(request).map_err(|_| hub_gone())
}

fn hub_gone() -> StoreError {
    StoreError::Internal("the store's tail thread has stopped".into())
}

impl RunWatch {
    /// Resolves once the run's log has an event with a seq above `beyond_seq` (at once if
    /// it already has).
    pub fn appended_after(&self, beyond_seq: u64) -> impl Future<Output = Result<()>> + '_ {
        self.appended_past(move || beyond_seq)
    }

    /// Resolves once the run's log has an event above `last_known()`, which is read again
    /// each time the wait is polled: a writer that moves its own `last_known` as it appends
    /// (the drivers of one run share theirs) is never woken by its own appends, only by
    /// another writer's.
    pub fn appended_past<'w>(
        &'w self,
        last_known: impl Fn() -> u64 + 'w,
    ) -> impl Future<Output = Result<()>> + 'w {
        Appended {
            state: &self.state,
            last_known,
        }
    }
}

/// One wait of a [`RunWatch`]. Dropped unresolved, it takes its waker back, so the run's
/// next commit (the driver's own append, most often) wakes no task that stopped waiting.
struct Appended<'w, F> {
    state: &'w watchers::RunWatchState,
    last_known: F,
}

impl<F: Fn() -> u64> Future for Appended<'_, F> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.state.poll_beyond(cx, (self.last_known)())
    }
}

impl<F> Drop for Appended<'_, F> {
    fn drop(&mut self) {
        self.state.forget_waker();
    }
}

/// The future of a one-off wait for a run's log to grow. Dropping it stops the wait.
#[must_use = "a wait does nothing unless awaited"]
pub struct AppendWait {
    watch: RunWatch,
    beyond: u64,
}

impl AppendWait {
    pub(crate) fn new(watch: RunWatch, beyond: u64) -> AppendWait {
        AppendWait { watch, beyond }
    }
}

impl Future for AppendWait {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.watch.state.poll_beyond(cx, self.beyond)
    }
}

/// A reader following the log: see [`crate::FollowLog::tail`]. Await [`Tail::next`] or
/// [`Tail::next_batch`], use it as a `Stream` (it never ends; an error is an item), or,
/// outside an async runtime, block on [`Tail::next_batch_blocking`].
pub struct Tail {
    source: Source,
    /// Just after the last event handed out.
    cursor: TailFrom,
    /// Read but not handed out yet.
    buffered: VecDeque<TailedEvent>,
    /// The read asked of the hub, while there is nothing buffered.
    pending: Option<oneshot::Receiver<Result<Vec<TailedEvent>>>>,
}

impl std::fmt::Debug for Tail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tail")
            .field("cursor", &self.cursor)
            .field("buffered", &self.buffered.len())
            .finish_non_exhaustive()
    }
}

impl Tail {
    /// Where a new tail resumes to continue this one: just after the last event handed
    /// out (events read ahead but not handed out are read again).
    pub fn cursor(&self) -> &TailFrom {
        &self.cursor
    }

    /// The next committed event, waiting for one if need be.
    pub async fn next(&mut self) -> Result<TailedEvent> {
        poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Every event committed and not handed out yet (at least one, waiting for it if need
    /// be), in commit order, up to one read's worth.
    pub async fn next_batch(&mut self) -> Result<Vec<TailedEvent>> {
        poll_fn(|cx| self.poll_batch(cx)).await
    }

    /// [`Tail::next`], blocking the calling thread: for programs without an async runtime
    /// (never call it on a runtime's thread).
    pub fn next_blocking(&mut self) -> Result<TailedEvent> {
        block_on(self.next())
    }

    /// [`Tail::next_batch`], blocking the calling thread: for programs without an async
    /// runtime (never call it on a runtime's thread).
    pub fn next_batch_blocking(&mut self) -> Result<Vec<TailedEvent>> {
        block_on(self.next_batch())
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Result<TailedEvent>> {
        match self.poll_filled(cx) {
            Poll::Ready(Ok(())) => match self.buffered.pop_front() {
                Some(event) => Poll::Ready(Ok(self.hand_out(event))),
                None => Poll::Ready(Err(StoreError::Internal(
                    "a tail read answered nothing".into(),
                ))),
            },
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_batch(&mut self, cx: &mut Context<'_>) -> Poll<Result<Vec<TailedEvent>>> {
        match self.poll_filled(cx) {
            Poll::Ready(Ok(())) => {
                let batch: Vec<TailedEvent> = self.buffered.drain(..).collect();
                if let Some(last) = batch.last() {
                    self.advance(last);
                }
                Poll::Ready(Ok(batch))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn hand_out(&mut self, event: TailedEvent) -> TailedEvent {
        self.advance(&event);
        event
    }

    fn advance(&mut self, event: &TailedEvent) {
        match &mut self.cursor {
            TailFrom::Run { after_seq, .. } => *after_seq = event.event.seq,
            TailFrom::All { after_position } => *after_position = event.position,
        }
    }

    /// Ready once something is buffered (or the read failed).
    fn poll_filled(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        while self.buffered.is_empty() {
            let pending = match &mut self.pending {
                Some(pending) => pending,
                None => {
                    let (reply, answer) = oneshot::channel();
                    send_to_hub(
                        &self.source,
                        HubRequest::Fetch {
                            from: self.cursor.clone(),
                            limit: READ_BATCH,
                            reply,
                        },
                    )?;
                    self.pending.insert(answer)
                }
            };
            let answer = match Pin::new(pending).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(answer) => answer,
            };
            self.pending = None;
            match answer {
                Ok(Ok(events)) => self.buffered.extend(events),
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_) => return Poll::Ready(Err(hub_gone())),
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl futures_core::Stream for Tail {
    type Item = Result<TailedEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx).map(Some)
    }
}

/// Runs `future` to completion on this thread, parking it while the future waits.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}
