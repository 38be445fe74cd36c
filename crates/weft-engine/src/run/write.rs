//! How the driver appends to its run's log: append before apply, in batches, blocking or
//! awaited.
//!
//! Every event reaches the store before it changes the driver's state, and the driver is its
//! log's only writer (`append_expecting` at the last seq it wrote; other processes append
//! only inbox kinds, absorbed on a conflict: `inbox.rs`). Events that a step produces
//! together share one commit ([`Driver::defer`], then one [`Driver::append`] or flush).
//!
//! Two ways to wait for the commit:
//! - *blocking* ([`Driver::append`], [`Driver::write`]): inline on the driver's thread, not
//!   on the blocking pool — a hop to another thread per event would cost more than the
//!   scheduler's whole step in memory (`docs/engine.md` §1). Used on the rare paths (people,
//!   inbox, compensation, fragments).
//! - *awaited* ([`Driver::flush_async`], [`Driver::write_batch_async`], [`Driver::open`],
//!   [`Driver::close`]): the write goes to the store's writer thread and the driver's task
//!   yields until it is committed, so the other runs on the thread go on and their writes
//!   join the same commit (`docs/store.md`, group commit). Used on every run's path: the
//!   run's opening, its nodes' starts and ends, its last events. Not by the drivers of
//!   fragment instances: they share the run's log, so each writes at the shared end
//!   before another driver of the run reads it (blocking).
//!
//! Either way nothing is applied, observed or acted on before the store said it is durable.

use weft_store::{NewEvent, NewRun, RunStatus};

use super::Driver;
use crate::EngineError;
use crate::events::RunEvent;

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
    /// Appends `event` to the log, after any deferred events, in one blocking commit, then
    /// tells the observers. `false`: the inbox made the event moot and it was not written.
    pub(super) fn append(&mut self, event: &RunEvent) -> Result<bool, EngineError> {
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().chain(std::iter::once(event)).collect();
        Ok(self.write(&batch)?.last().copied().unwrap_or(false))
    }

    /// Queues an event for the next append or flush: the `node_started` (and
    /// `gate_notified`) of the nodes one scheduler step starts, and the `node_finished` of
    /// nodes that end together, so each group costs one commit. Only the caller acts on a
    /// deferred event, and only after flushing it.
    pub(super) fn defer(&mut self, event: RunEvent) {
        self.deferred.push(event);
    }

    /// Appends the deferred events in one awaited commit.
    pub(super) async fn flush_async(&mut self) -> Result<Vec<bool>, EngineError> {
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().collect();
        self.write_async(&batch, Commit::Append).await
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
        let record = self.scope.tag(started.to_new_event(at)?);
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
        if self.scope.path.is_some() {
            self.append(event)?;
            return Ok(());
        }
        let deferred = std::mem::take(&mut self.deferred);
        let batch: Vec<&RunEvent> = deferred.iter().chain(std::iter::once(event)).collect();
        let written = self.write_async(&batch, Commit::Close(status)).await?;
        if !written.last().copied().unwrap_or(false) {
            // The inbox made the last event moot (it never does for `run_finished`, but
            // the status must be set whatever happened to the batch).
            self.store
                .set_status(&self.run_id, status, self.clock.now_ms())?;
        }
        Ok(())
    }

    /// Appends `batch` in one blocking commit and observes it; per event, whether it was
    /// written (an inbox event absorbed on a conflict can make one moot). The
    /// `stop_after_events` hook cuts the batch at its limit, so the log ends exactly there.
    pub(super) fn write(&mut self, batch: &[&RunEvent]) -> Result<Vec<bool>, EngineError> {
        let (batch, mut state) = self.begin(batch);
        while let Some(records) = self.records(batch, &mut state)? {
            let result = self
                .store
                .append_expecting_owned(&self.run_id, self.last_seq, records);
            if self.landed(batch, &mut state, result)? {
                break;
            }
        }
        self.end(state)
    }

    /// [`Driver::write`], awaited.
    pub(super) async fn write_batch_async(
        &mut self,
        batch: &[&RunEvent],
    ) -> Result<Vec<bool>, EngineError> {
        self.write_async(batch, Commit::Append).await
    }

    /// [`Driver::write`], awaited; `commit` says whether the run closes with it.
    async fn write_async(
        &mut self,
        batch: &[&RunEvent],
        commit: Commit,
    ) -> Result<Vec<bool>, EngineError> {
        if self.scope.path.is_some() {
            // The drivers of a run's fragment instances share its log and may be polled
            // together: each must read the shared end and write before another reads it.
            return self.write(batch);
        }
        let (batch, mut state) = self.begin(batch);
        // A cut batch is not the run's last: its status stays as it is.
        let commit = if state.cut { Commit::Append } else { commit };
        while let Some(records) = self.records(batch, &mut state)? {
            let result = match commit {
                Commit::Append => {
                    self.store
                        .append_async(&self.run_id, self.last_seq, records)
                        .await
                }
                Commit::Close(status) => {
                    self.store
                        .close_run(
                            &self.run_id,
                            self.last_seq,
                            records,
                            status,
                            self.clock.now_ms(),
                        )
                        .await
                }
            };
            if self.landed(batch, &mut state, result)? {
                break;
            }
        }
        self.end(state)
    }

    /// Where the batch starts from: the shared seq of the run's drivers, and the test
    /// hook's cut.
    fn begin<'b>(&mut self, batch: &'b [&'b RunEvent]) -> (&'b [&'b RunEvent], Batch) {
        // Every driver of the run (root and fragment instances) writes at the shared seq.
        self.last_seq = self.scope.shared.last_seq();
        self.appended = self.scope.shared.appended();
        let room = self.stop_after.map(|n| n.saturating_sub(self.appended));
        let cut = room.is_some_and(|r| r < batch.len());
        let batch = &batch[..room.map_or(batch.len(), |r| r.min(batch.len()))];
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
        let records: Vec<NewEvent> = batch
            .iter()
            .zip(&state.keep)
            .filter(|(_, k)| **k)
            .map(|(e, _)| e.to_new_event(state.at).map(|n| self.scope.tag(n)))
            .collect::<Result<_, _>>()?;
        Ok((!records.is_empty()).then_some(records))
    }

    /// Takes the store's answer: `true` when the batch is written, `false` when a conflict
    /// (an inbox event appended by another process) was absorbed and the events still
    /// valid are to be written again.
    fn landed(
        &mut self,
        batch: &[&RunEvent],
        state: &mut Batch,
        result: weft_store::Result<Vec<u64>>,
    ) -> Result<bool, EngineError> {
        match result {
            Err(e) if e.is_conflict() => {
                self.absorb_inbox()?;
                for (event, k) in batch.iter().zip(state.keep.iter_mut()) {
                    *k = *k && self.still_valid(event);
                }
                Ok(false)
            }
            other => {
                let seqs = other?;
                self.written(batch, &state.keep, &seqs, state.at)?;
                Ok(true)
            }
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
        self.scope.shared.add_appended(seqs.len());
        self.scope
            .shared
            .set_last_seq(seqs.last().copied().unwrap_or(self.last_seq));
        let written = batch.iter().zip(keep).filter(|(_, k)| **k);
        for (&seq, (event, _)) in seqs.iter().zip(written) {
            self.last_seq = seq;
            self.observe(seq, at, event)?;
        }
        Ok(())
    }

    fn end(&self, state: Batch) -> Result<Vec<bool>, EngineError> {
        if state.cut {
            return Err(EngineError::Stopped(self.appended));
        }
        Ok(state.keep)
    }
}
