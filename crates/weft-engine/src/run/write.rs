//! How the driver appends to its run's log: append before apply, in batches, awaited.
//!
//! Every event reaches the store before it changes the driver's state, and the driver is its
//! log's only writer (`append_expecting` at the last seq it wrote; other processes append
//! only inbox kinds, absorbed on a conflict: `inbox.rs`). Events that a step produces
//! together share one commit ([`Driver::defer`], then one [`Driver::append`] or
//! [`Driver::flush`]).
//!
//! Every write is awaited ([`Driver::append`], [`Driver::write`], [`Driver::flush`],
//! [`Driver::open`], [`Driver::close`]): it goes to the store's awaited write path
//! (`AwaitedWrites`: SQLite's writer thread, later a network database) and the driver's
//! task yields until it is committed, so the other runs on the thread go on and their
//! writes join the same commit (`docs/store.md`, group commit). No write blocks the
//! runtime's thread. Nothing is applied, observed or acted on before the store said it is
//! durable.
//!
//! The drivers of a run's fragment instances share its log and may be polled together
//! (a map's items): each writes at the shared end in the run's turn (`SharedLog::turn`, an
//! async lock held from reading the end until it has moved past the driver's events), so
//! two of them never expect the same end. The root's driver takes no turn: it writes
//! through `&mut self`, while every other driver of the run borrows it.
//!
//! What a record is, where it goes and who is told of it is [`ScopeWriter`]'s: the driver
//! writes through it, and so does a light map item (`map_item.rs`), which has no driver of
//! its own, so both write a scope's events the same way.

use weft_store::{NewEvent, NewRun, RunStatus};

use super::Driver;
use super::scope::{scoped_payload, tag_scope};
use crate::EngineError;
use crate::events::RunEvent;
use crate::observe::Observed;

/// A scope instance's side of the run's one log: every driver of a run (the root's and
/// each fragment instance's) writes at the end the run's drivers share, each record tagged
/// with its scope, the `stop_after_events` test hook counting every event of the run; what
/// the store made durable moves the shared end and is shown to the observers, in log order.
pub(super) struct ScopeWriter<'w, 'd> {
    d: &'w Driver<'d>,
    /// The scope instance written for: `None` for the root.
    scope: Option<&'w str>,
}

impl<'w, 'd> ScopeWriter<'w, 'd> {
    /// The writer of the scope instance at `scope` of `d`'s run.
    pub(super) fn new(d: &'w Driver<'d>, scope: Option<&'w str>) -> Self {
        ScopeWriter { d, scope }
    }

    /// How many of a batch of `len` events may be written before the test hook stops the
    /// run, and whether it cuts the batch.
    pub(super) fn room(&self, len: usize) -> (usize, bool) {
        let room = self
            .d
            .stop_after
            .map(|n| n.saturating_sub(self.d.scope.shared.appended()));
        (
            room.map_or(len, |r| r.min(len)),
            room.is_some_and(|r| r < len),
        )
    }

    /// The record of `event`, at `at`, tagged with the scope.
    pub(super) fn record(&self, event: &RunEvent, at: i64) -> Result<NewEvent, EngineError> {
        let record = event.to_new_event(at)?;
        Ok(match self.scope {
            Some(path) => tag_scope(record, path),
            None => record,
        })
    }

    /// [`ScopeWriter::record`] of an event whose payload text (without `scope`) is known
    /// already: a light map item's events repeat, so their text is written once.
    pub(super) fn record_of_text(&self, event: &RunEvent, text: &str, at: i64) -> NewEvent {
        let kind = event.kind();
        match self.scope {
            Some(path) => match scoped_payload(text, path) {
                Some(payload) => NewEvent::from_json(kind, payload, at),
                None => tag_scope(NewEvent::from_json(kind, text.to_string(), at), path),
            },
            None => NewEvent::from_json(kind, text.to_string(), at),
        }
    }

    /// After the store made `events` durable at `seqs` (recorded at `at`): the run's shared
    /// end and count move, then each observer sees each event, in log order.
    pub(super) fn written<'e>(
        &self,
        events: impl IntoIterator<Item = &'e RunEvent>,
        seqs: &[u64],
        at: i64,
    ) -> Result<(), EngineError> {
        let shared = &self.d.scope.shared;
        shared.add_appended(seqs.len());
        if let Some(&last) = seqs.last() {
            shared.set_last_seq(last);
        }
        if self.d.observers.is_empty() {
            return Ok(());
        }
        for (&seq, event) in seqs.iter().zip(events) {
            let seen = Observed {
                run_id: &self.d.run_id,
                seq,
                recorded_at_ms: at,
                event,
                scope: self.scope,
            };
            crate::observe::notify(&self.d.observers, &seen)?;
        }
        Ok(())
    }
}

/// One batch on its way to the store: which of its events are still to be written.
struct Batch {
    keep: Vec<bool>,
    /// The test hook (`stop_after_events`) cut the batch: stop once it is written.
    cut: bool,
    /// The time every record of the batch carries.
    at: i64,
}

/// How the store is asked to write a batch.
#[derive(Clone, Copy)]
enum Commit {
    Append,
    /// The run's last events, with its final status, in one write.
    Close(RunStatus),
}

impl Driver<'_> {
    /// The run's turn (`SharedLog::turn`) for a fragment instance's driver, which holds it
    /// to write at the run's shared end and to read what other writers appended past it;
    /// `None` for the root's, which needs none: it writes and reads through `&mut self`,
    /// while every other driver of the run (and every light map item) borrows it, so none
    /// exists then.
    pub(super) async fn turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match self.scope.path {
            // Boxed: the root's write path never awaits it.
            Some(_) => Some(Box::pin(self.scope.shared.turn()).await),
            None => None,
        }
    }
}

impl<'d> Driver<'d> {
    /// This driver's scope's writer.
    pub(super) fn writer(&self) -> ScopeWriter<'_, 'd> {
        ScopeWriter::new(self, self.scope.path.as_deref())
    }
}

impl Driver<'_> {
    /// Appends `event` to the log, after any deferred events, in one awaited commit, then
    /// tells the observers. `false`: the inbox made the event moot and it was not written.
    pub(super) async fn append(&mut self, event: &RunEvent) -> Result<bool, EngineError> {
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().chain(std::iter::once(event)).collect();
        Ok(self.write(&batch).await?.last().copied().unwrap_or(false))
    }

    /// Queues an event for the next append or flush: the `node_started` (and
    /// `gate_notified`) of the nodes one scheduler step starts, and the `node_finished` of
    /// nodes that end together, so each group costs one commit. Only the caller acts on a
    /// deferred event, and only after flushing it.
    pub(super) fn defer(&mut self, event: RunEvent) {
        self.deferred.push(event);
    }

    /// Appends the deferred events in one awaited commit.
    pub(super) async fn flush(&mut self) -> Result<Vec<bool>, EngineError> {
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().collect();
        self.commit(&batch, Commit::Append).await
    }

    /// Opens the run: its row, already `running`, and `started` (its `run_started`) in one
    /// awaited write; then applies `started` to the scheduler.
    pub(super) async fn open(
        &mut self,
        run: NewRun,
        started: &RunEvent,
    ) -> Result<Vec<weft_core::Action>, EngineError> {
        if self.stop_after == Some(0) {
            // The test hook stops before the first event: the run exists (with its lease,
            // as any run opens), its log is empty.
            self.store
                .open_run(run, RunStatus::Running, Vec::new())
                .await?;
            return Err(EngineError::Stopped(0));
        }
        let at = self.clock.now_ms();
        let record = self.writer().record(started, at)?;
        let seqs = self
            .store
            .open_run(run, RunStatus::Running, vec![record])
            .await?;
        self.written(&[started], &[true], &seqs, at)?;
        let mut actions: Vec<weft_core::Action> = self.human.actions.drain(..).collect();
        actions.extend(self.apply(started)?);
        Ok(actions)
    }

    /// Appends `event` (after anything deferred) and sets the run's final `status`, in one
    /// awaited write. A fragment instance's end is only its scope's event: the run's status
    /// is the root's.
    pub(super) async fn close(
        &mut self,
        event: &RunEvent,
        status: RunStatus,
    ) -> Result<(), EngineError> {
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().chain(std::iter::once(event)).collect();
        let written = self.commit(&batch, Commit::Close(status)).await?;
        if self.scope.path.is_none() && !written.last().copied().unwrap_or(false) {
            // The inbox made the last event moot (it never does for `run_finished`, but
            // the status must be set whatever happened to the batch).
            self.store
                .set_status_async(&self.run_id, status, self.clock.now_ms())
                .await?;
        }
        Ok(())
    }

    /// Appends `batch` in one awaited commit and observes it; per event, whether it was
    /// written (an inbox event absorbed on a conflict can make one moot). The
    /// `stop_after_events` hook cuts the batch at its limit, so the log ends exactly there.
    pub(super) async fn write(&mut self, batch: &[&RunEvent]) -> Result<Vec<bool>, EngineError> {
        self.commit(batch, Commit::Append).await
    }

    /// [`Driver::write`]; `commit` says whether the run closes with it. The decisions of
    /// allowed tool calls made since the last commit go first (`Driver::allowed_calls`),
    /// with a batch that writes something (an empty flush leaves them waiting); the answer
    /// is the caller's events' alone.
    async fn commit(
        &mut self,
        batch: &[&RunEvent],
        commit: Commit,
    ) -> Result<Vec<bool>, EngineError> {
        if self.allowed_calls.is_empty() || batch.is_empty() {
            return self.commit_batch(batch, commit).await;
        }
        let allowed = std::mem::take(&mut self.allowed_calls);
        let with_allowed: Vec<&RunEvent> = allowed.iter().chain(batch.iter().copied()).collect();
        let mut written = self.commit_batch(&with_allowed, commit).await?;
        Ok(written.split_off(allowed.len().min(written.len())))
    }

    /// [`Driver::commit`] of exactly `batch`.
    async fn commit_batch(
        &mut self,
        batch: &[&RunEvent],
        commit: Commit,
    ) -> Result<Vec<bool>, EngineError> {
        // A fragment instance's driver writes in the run's turn (`SharedLog::turn`), held
        // from reading the shared end until that end moved past its events: the drivers of
        // a run's instances share its log and are polled together, so another could read
        // the same end while this one's commit is awaited.
        let _turn = self.turn().await;
        let (batch, mut state) = self.begin(batch);
        // A cut batch is not the run's last, and an instance's end is not the run's: the
        // run's status stays as it is.
        let commit = if state.cut || self.scope.path.is_some() {
            Commit::Append
        } else {
            commit
        };
        while let Some(records) = self.records(batch, &mut state)? {
            let stored = match commit {
                Commit::Append => self
                    .store
                    .append_async(&self.run_id, self.last_seq, records),
                Commit::Close(status) => self.store.close_run(
                    &self.run_id,
                    self.last_seq,
                    records,
                    status,
                    self.clock.now_ms(),
                ),
            };
            let conflict = match stored.await {
                Err(e) if e.is_conflict() => true,
                other => {
                    let seqs = other?;
                    self.written(batch, &state.keep, &seqs, state.at)?;
                    false
                }
            };
            if !conflict {
                break;
            }
            // Another process appended an inbox event first: it is absorbed at its place in
            // the log, and the events still valid are written after it.
            self.absorb_inbox().await?;
            self.revalidate(batch, &mut state);
        }
        self.end(state)
    }

    /// Where the batch starts from: the shared seq of the run's drivers, and the test
    /// hook's cut.
    fn begin<'b>(&mut self, batch: &'b [&'b RunEvent]) -> (&'b [&'b RunEvent], Batch) {
        // Every driver of the run (root and fragment instances) writes at the shared seq.
        self.last_seq = self.scope.shared.last_seq();
        self.appended = self.scope.shared.appended();
        let (room, cut) = self.writer().room(batch.len());
        let batch = &batch[..room];
        let state = Batch {
            keep: vec![true; batch.len()],
            cut,
            at: 0,
        };
        (batch, state)
    }

    /// The records of the events still to be written, or `None` when none is left.
    fn records(
        &self,
        batch: &[&RunEvent],
        state: &mut Batch,
    ) -> Result<Option<Vec<NewEvent>>, EngineError> {
        state.at = self.clock.now_ms();
        let writer = self.writer();
        let records: Vec<NewEvent> = batch
            .iter()
            .zip(&state.keep)
            .filter(|(_, k)| **k)
            .map(|(e, _)| writer.record(e, state.at))
            .collect::<Result<_, _>>()?;
        Ok((!records.is_empty()).then_some(records))
    }

    /// After the inbox was absorbed: keeps only the events that still make sense.
    fn revalidate(&self, batch: &[&RunEvent], state: &mut Batch) {
        for (event, k) in batch.iter().zip(state.keep.iter_mut()) {
            *k = *k && self.still_valid(event);
        }
    }

    /// Counts and observes the events the store has just made durable at `seqs`.
    fn written(
        &mut self,
        batch: &[&RunEvent],
        keep: &[bool],
        seqs: &[u64],
        at: i64,
    ) -> Result<(), EngineError> {
        self.appended += seqs.len();
        if let Some(&last) = seqs.last() {
            self.last_seq = last;
        }
        let written = batch.iter().zip(keep).filter(|(_, k)| **k);
        self.writer().written(written.map(|(e, _)| *e), seqs, at)
    }

    fn end(&self, state: Batch) -> Result<Vec<bool>, EngineError> {
        if state.cut {
            return Err(EngineError::Stopped(self.appended));
        }
        Ok(state.keep)
    }
}
