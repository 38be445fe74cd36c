//! Writes that a task awaits instead of blocking its thread on.
//!
//! A blocking write holds its thread until the commit's fsync returns, so on an async
//! runtime every run on that thread waits behind it and no two runs ever share a commit.
//! These methods hand the write to the writer thread at once and return a future that
//! resolves when the write is committed (or failed). Meanwhile the thread runs other tasks,
//! whose writes join the same batch: a hundred concurrent runs share one fsync instead of
//! paying one each. `Ok` still means durable, exactly as for the blocking methods.
//!
//! Two of them also merge writes a run always makes together into one all-or-nothing
//! write: [`SqliteStore::open_run`] (the run row, already in its first status, with the log's
//! first events) and [`SqliteStore::close_run`] (the log's last events with the final status).
//! An in-memory database carries a write out at the call and returns a future that is
//! already resolved.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_channel::oneshot;

use super::queries::PreparedEvent;
use super::writer::{self, Reply, Request, WriteOp, WriteOutcome};
use super::{SqliteStore, unexpected};
use crate::error::{Result, StoreError};
use crate::model::{NewEvent, NewRun, RunStatus};

/// A submitted write: resolves once it is committed (or failed).
pub(crate) struct PendingWrite {
    state: State,
}

enum State {
    /// Carried out at the call (in memory); taken by the first poll.
    Done(Option<Result<WriteOutcome>>),
    Waiting(oneshot::Receiver<Result<WriteOutcome>>),
}

impl Future for PendingWrite {
    type Output = Result<WriteOutcome>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            State::Done(result) => {
                Poll::Ready(result.take().unwrap_or(Err(StoreError::WriterGone)))
            }
            // A dropped sender means the writer thread is gone.
            State::Waiting(answer) => Pin::new(answer)
                .poll(cx)
                .map(|answer| answer.unwrap_or(Err(StoreError::WriterGone))),
        }
    }
}

impl PendingWrite {
    pub(super) fn done(result: Result<WriteOutcome>) -> PendingWrite {
        PendingWrite {
            state: State::Done(Some(result)),
        }
    }
}

impl SqliteStore {
    /// [`crate::EventLog::append_expecting`] without blocking: the append is submitted now
    /// and the future resolves to its seqs once it is committed.
    pub fn append_async(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
    ) -> impl Future<Output = Result<Vec<u64>>> + Send + use<> {
        let op = append_op(run_id, expected_last_seq, events);
        let pending = self.submit_async(self.fence_op(run_id, op));
        async move { seqs_of(pending.await?) }
    }

    /// Creates the run already in `status` and appends its first `events`, all or nothing
    /// (`RunExists` if the id is taken, and then nothing is written); resolves to the
    /// events' seqs once committed. Through a handle fenced by a lease of this run
    /// ([`SqliteStore::fenced`]), the run is created with that lease in the same write.
    pub fn open_run(
        &self,
        run: NewRun,
        status: RunStatus,
        events: Vec<NewEvent>,
    ) -> impl Future<Output = Result<Vec<u64>>> + Send + use<> {
        let pending = {
            let run_id = run.id.clone();
            let append = append_op(&run.id, 0, events);
            let set_status = WriteOp::SetStatus {
                run_id: run.id.clone(),
                status,
                updated_at_ms: run.created_at_ms,
            };
            let mut group = vec![WriteOp::CreateRun(run), set_status];
            group.extend(
                self.fence
                    .opening_lease(&run_id)
                    .cloned()
                    .map(WriteOp::InsertLease),
            );
            group.push(append);
            self.submit_async(WriteOp::Group(group))
        };
        async move { last_seqs_of(pending.await?) }
    }

    /// Appends the run's last `events` (expecting the log to end at `expected_last_seq`)
    /// and sets its final `status`, all or nothing (`SequenceConflict`, and nothing is
    /// written, if another writer appended meanwhile); resolves to the seqs. Through a
    /// fenced handle the same write releases the lease (`Fenced`, and nothing is written,
    /// when it was taken over).
    pub fn close_run(
        &self,
        run_id: &str,
        expected_last_seq: u64,
        events: Vec<NewEvent>,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> impl Future<Output = Result<Vec<u64>>> + Send + use<> {
        let pending = {
            let mut group = vec![WriteOp::SetStatus {
                run_id: run_id.to_owned(),
                status,
                updated_at_ms,
            }];
            group.extend(
                self.fence
                    .token_for(run_id)
                    .map(|token| WriteOp::ReleaseLease {
                        run_id: run_id.to_owned(),
                        token,
                    }),
            );
            // The append last: the group's seqs are its last member's.
            group.push(append_op(run_id, expected_last_seq, events));
            self.submit_async(self.fence_op(run_id, WriteOp::Group(group)))
        };
        let fence = self.fence.on(run_id);
        async move {
            let seqs = last_seqs_of(pending.await?)?;
            if let Some(fence) = fence {
                fence.mark_released();
            }
            Ok(seqs)
        }
    }

    /// [`crate::RunTable::set_status`] without blocking: submitted now, resolved once
    /// committed (through a fenced handle, refused with `Fenced` once the lease was taken
    /// over, like every write of the handle to its run).
    pub fn set_status_async(
        &self,
        run_id: &str,
        status: RunStatus,
        updated_at_ms: i64,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        let op = WriteOp::SetStatus {
            run_id: run_id.to_owned(),
            status,
            updated_at_ms,
        };
        let pending = self.submit_async(self.fence_op(run_id, op));
        async move {
            match pending.await? {
                WriteOutcome::Done => Ok(()),
                other => Err(unexpected(other)),
            }
        }
    }

    /// Hands `op` to the writer thread (or, in memory, carries it out now).
    pub(super) fn submit_async(&self, op: WriteOp) -> PendingWrite {
        let op = self.audit_op(op);
        if let Some(conn) = &self.inner.inline {
            let conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let result = writer::write_batch(&conn, &[&op], &self.inner.counters)
                .pop()
                .unwrap_or(Err(StoreError::WriterGone));
            return PendingWrite::done(result);
        }
        let Some(requests) = self.inner.requests.as_ref() else {
            return PendingWrite::done(Err(StoreError::WriterGone));
        };
        let (reply, answer) = oneshot::channel();
        let request = Request {
            op,
            reply: Reply::Async(reply),
        };
        match requests.send(request) {
            Ok(()) => PendingWrite {
                state: State::Waiting(answer),
            },
            Err(_) => PendingWrite::done(Err(StoreError::WriterGone)),
        }
    }
}

fn append_op(run_id: &str, expected: u64, events: Vec<NewEvent>) -> WriteOp {
    WriteOp::Append {
        run_id: run_id.to_owned(),
        expected: Some(expected),
        events: events.into_iter().map(PreparedEvent::from).collect(),
        fence: None,
    }
}

fn seqs_of(outcome: WriteOutcome) -> Result<Vec<u64>> {
    match outcome {
        WriteOutcome::Seqs(seqs) => Ok(seqs),
        other => Err(unexpected(other)),
    }
}

/// The seqs of a group, whose append is its last member (or of a write done in memory).
fn last_seqs_of(outcome: WriteOutcome) -> Result<Vec<u64>> {
    match outcome {
        WriteOutcome::Group(mut outcomes) => match outcomes.pop() {
            Some(last) => seqs_of(last),
            None => Err(StoreError::Internal("an empty write group".into())),
        },
        other => seqs_of(other),
    }
}
