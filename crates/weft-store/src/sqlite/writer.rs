//! The single writer thread and its group commit.
//!
//! SQLite allows one writer at a time, and with `synchronous=FULL` every commit costs an
//! fsync (milliseconds). So all writes go to one thread through a channel; each time it
//! wakes it takes *everything* queued (up to [`MAX_BATCH`]) and writes it in one
//! transaction. Writes that arrive while a commit is being fsynced wait in the channel and
//! form the next batch: one fsync per batch instead of one per write, with no timer.
//! Each write runs in its own savepoint so one failing write (a conflict, an unknown run)
//! is rolled back alone and does not fail its neighbours. Callers are answered only after
//! `COMMIT` has returned, so `Ok` means durable.

use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::queries::{self, PreparedEvent};
use crate::counters::Counters;
use crate::error::{Result, SqliteContext, StoreError};
use crate::lease::{Lease, LeaseHolder, Takeover};
use crate::model::{AuditAnchor, NewRun, RunRecord, RunStatus};
use crate::tail::Watchers;

/// Upper bound on writes per transaction, so one huge burst cannot hold the write lock
/// (and delay every caller's answer) for too long.
const MAX_BATCH: usize = 512;

/// One write, as sent to the writer thread.
#[derive(Debug)]
pub(crate) enum WriteOp {
    CreateRun(NewRun),
    SetStatus {
        run_id: String,
        status: RunStatus,
        updated_at_ms: i64,
    },
    Append {
        run_id: String,
        expected: Option<u64>,
        events: Vec<PreparedEvent>,
        /// The lease token the append must carry (`lease.rs`): checked in the statement
        /// that reads the log's end, not by a wrapping [`WriteOp::Fenced`].
        fence: Option<u64>,
    },
    SetAnchor(AuditAnchor),
    /// Leases (schema v3, `lease.rs`).
    AcquireLease {
        run_id: String,
        holder: LeaseHolder,
        now_ms: i64,
        ttl_ms: i64,
        takeover: Takeover,
    },
    /// The first lease of a run created earlier in the same group.
    InsertLease(Lease),
    RenewLease {
        run_id: String,
        token: u64,
        now_ms: i64,
        ttl_ms: i64,
    },
    ReleaseLease {
        run_id: String,
        token: u64,
    },
    /// `op`, only while `token` is the run's lease token (`Fenced` otherwise): every write
    /// of a driver holding a lease.
    Fenced {
        run_id: String,
        token: u64,
        op: Box<WriteOp>,
    },
    /// Writes applied in order, all or nothing (one savepoint): a run opened with its first
    /// events, a log's last events with the run's final status.
    Group(Vec<WriteOp>),
    /// `op`, then the audit lines of what it appended, in its savepoint (`audit_entries.rs`).
    Audited {
        encoder: Arc<dyn crate::audit_log::AuditEncoder>,
        op: Box<WriteOp>,
    },
    /// The audit lines of a run's events its chain does not cover yet.
    AuditCatchUp {
        run_id: String,
        encoder: Arc<dyn crate::audit_log::AuditEncoder>,
    },
}

/// What a successful write answers.
#[derive(Debug)]
pub(crate) enum WriteOutcome {
    Run(RunRecord),
    Done,
    Seqs(Vec<u64>),
    Lease(Lease),
    /// A [`WriteOp::Group`]'s outcomes, one per member.
    Group(Vec<WriteOutcome>),
}

/// A write plus where to send its answer.
pub(crate) struct Request {
    pub op: WriteOp,
    pub reply: Reply,
}

/// Where a write's answer goes: a thread blocked on it, or a task awaiting it (whose
/// thread meanwhile runs other tasks, so their writes can join the same batch).
pub(crate) enum Reply {
    Blocking(SyncSender<Result<WriteOutcome>>),
    Async(futures_channel::oneshot::Sender<Result<WriteOutcome>>),
}

impl Reply {
    fn send(self, result: Result<WriteOutcome>) {
        // A caller that stopped waiting is not an error of the store.
        let _ = match self {
            Reply::Blocking(tx) => tx.send(result).map_err(drop),
            Reply::Async(tx) => tx.send(result).map_err(drop),
        };
    }
}

/// The writer thread's loop; returns when every sender is gone (the store was dropped).
pub(crate) fn run(
    conn: Arc<Mutex<Connection>>,
    requests: Receiver<Request>,
    counters: Arc<Counters>,
) {
    while let Ok(first) = requests.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let results = {
            // Poisoning only means a reader panicked mid-query; the connection is still usable.
            let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            let ops: Vec<&WriteOp> = batch.iter().map(|r| &r.op).collect();
            write_batch(&conn, &ops, &counters)
        };
        for (request, result) in batch.into_iter().zip(results) {
            request.reply.send(result);
        }
    }
}

/// Writes a batch in one transaction; one result per write, in order. The writer thread
/// calls it with what it collected; an in-memory store calls it inline with one write.
pub(crate) fn write_batch(
    conn: &Connection,
    batch: &[&WriteOp],
    counters: &Counters,
) -> Vec<Result<WriteOutcome>> {
    if let Err(e) = exec_cached(conn, "BEGIN IMMEDIATE").ctx("starting a write transaction") {
        let reason = e.to_string();
        return batch
            .iter()
            .map(|_| Err(StoreError::CommitFailed(reason.clone())))
            .collect();
    }
    let mut results: Vec<Result<WriteOutcome>> =
        batch.iter().map(|op| write_one(conn, op)).collect();
    match exec_cached(conn, "COMMIT").ctx("committing a batch") {
        Ok(()) => {
            counters.count_transaction();
            count(counters, batch, &results);
            report_committed(&counters.watchers, batch, &results);
        }
        Err(e) => {
            // Nothing of the batch is stored: every write in it fails, including the ones
            // that succeeded inside the transaction.
            let _ = conn.execute_batch("ROLLBACK");
            let reason = format!(
                "{e}: {}",
                std::error::Error::source(&e)
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
            results = batch
                .iter()
                .map(|_| Err(StoreError::CommitFailed(reason.clone())))
                .collect();
        }
    }
    results
}

/// One write inside its own savepoint.
fn write_one(conn: &Connection, op: &WriteOp) -> Result<WriteOutcome> {
    exec_cached(conn, "SAVEPOINT write_one").ctx("opening a savepoint")?;
    let result = apply(conn, op);
    if result.is_ok() {
        exec_cached(conn, "RELEASE write_one").ctx("closing a savepoint")?;
    } else {
        conn.execute_batch("ROLLBACK TO write_one; RELEASE write_one")
            .ctx("closing a savepoint")?;
    }
    result
}

/// One write's statements (inside the caller's savepoint).
fn apply(conn: &Connection, op: &WriteOp) -> Result<WriteOutcome> {
    match op {
        WriteOp::CreateRun(run) => queries::insert_run(conn, run).map(WriteOutcome::Run),
        WriteOp::SetStatus {
            run_id,
            status,
            updated_at_ms,
        } => queries::update_status(conn, run_id, *status, *updated_at_ms)
            .map(|()| WriteOutcome::Done),
        WriteOp::Append {
            run_id,
            expected,
            events,
            fence: None,
        } => queries::append_events(conn, run_id, *expected, events).map(WriteOutcome::Seqs),
        WriteOp::Append {
            run_id,
            expected,
            events,
            fence: Some(token),
        } => super::lease::append_fenced(conn, run_id, *expected, *token, events)
            .map(WriteOutcome::Seqs),
        WriteOp::SetAnchor(anchor) => {
            super::anchors::set_anchor(conn, anchor).map(|()| WriteOutcome::Done)
        }
        WriteOp::AcquireLease {
            run_id,
            holder,
            now_ms,
            ttl_ms,
            takeover,
        } => super::lease::acquire(conn, run_id, holder, *now_ms, *ttl_ms, *takeover)
            .map(WriteOutcome::Lease),
        WriteOp::InsertLease(lease) => {
            super::lease::insert_first(conn, lease).map(|()| WriteOutcome::Done)
        }
        WriteOp::RenewLease {
            run_id,
            token,
            now_ms,
            ttl_ms,
        } => super::lease::renew(conn, run_id, *token, *now_ms, *ttl_ms).map(WriteOutcome::Lease),
        WriteOp::ReleaseLease { run_id, token } => {
            super::lease::release(conn, run_id, *token).map(|()| WriteOutcome::Done)
        }
        WriteOp::Fenced { run_id, token, op } => {
            super::lease::check_fence(conn, run_id, *token)?;
            apply(conn, op)
        }
        WriteOp::Group(ops) => ops
            .iter()
            .map(|op| apply(conn, op))
            .collect::<Result<_>>()
            .map(WriteOutcome::Group),
        WriteOp::Audited { encoder, op } => {
            let outcome = apply(conn, op)?;
            let mut runs = Vec::new();
            super::audit_entries::appended_runs(op, &mut runs);
            for run_id in runs {
                let mut appended = Vec::new();
                super::audit_entries::appended_events(op, &outcome, run_id, &mut appended);
                super::audit_entries::catch_up(conn, run_id, encoder.as_ref(), &appended)?;
            }
            Ok(outcome)
        }
        WriteOp::AuditCatchUp { run_id, encoder } => {
            super::audit_entries::catch_up(conn, run_id, encoder.as_ref(), &[])
                .map(|()| WriteOutcome::Done)
        }
    }
}

/// Runs one statement through the connection's statement cache: the transaction and
/// savepoint statements of every write are parsed once, not once per write.
fn exec_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// Counts committed writes: one per request (a group is one write), failed ones included,
/// and the appends inside them, group members included; events only of successful appends.
fn count(counters: &Counters, batch: &[&WriteOp], results: &[Result<WriteOutcome>]) {
    for (op, result) in batch.iter().zip(results) {
        counters.count_write();
        count_appends(counters, op, result.as_ref().ok());
    }
}

fn count_appends(counters: &Counters, op: &WriteOp, outcome: Option<&WriteOutcome>) {
    match op {
        WriteOp::Append { .. } => {
            let events = match outcome {
                Some(WriteOutcome::Seqs(seqs)) => Some(seqs.len()),
                _ => None,
            };
            counters.count_append(events);
        }
        WriteOp::Fenced { op, .. } | WriteOp::Audited { op, .. } => {
            count_appends(counters, op, outcome)
        }
        WriteOp::Group(ops) => {
            let outcomes = match outcome {
                Some(WriteOutcome::Group(outcomes)) => Some(outcomes),
                _ => None,
            };
            for (i, op) in ops.iter().enumerate() {
                count_appends(counters, op, outcomes.and_then(|o| o.get(i)));
            }
        }
        _ => {}
    }
}

/// After a batch committed: reports every successful append in it to the watchers.
fn report_committed(watchers: &Watchers, batch: &[&WriteOp], results: &[Result<WriteOutcome>]) {
    if watchers.live() == 0 {
        return;
    }
    let mut runs = Vec::new();
    for (op, result) in batch.iter().zip(results) {
        if let Ok(outcome) = result {
            appends(op, outcome, &mut runs);
        }
    }
    watchers.advanced_many(runs);
}

/// The runs a successful write appended to, each with its new last seq.
fn appends<'a>(op: &'a WriteOp, outcome: &WriteOutcome, out: &mut Vec<(&'a str, u64)>) {
    match (op, outcome) {
        (WriteOp::Append { run_id, .. }, WriteOutcome::Seqs(seqs)) => {
            if let Some(&last) = seqs.last() {
                out.push((run_id, last));
            }
        }
        (WriteOp::Group(ops), WriteOutcome::Group(outcomes)) => {
            for (op, outcome) in ops.iter().zip(outcomes) {
                appends(op, outcome, out);
            }
        }
        // An audited or fenced write answers with its inner write's outcome.
        (WriteOp::Audited { op, .. } | WriteOp::Fenced { op, .. }, outcome) => {
            appends(op, outcome, out);
        }
        _ => {}
    }
}
