//! The SQL of the `audit_entries` table (schema v4) and the audited handle: audit lines
//! written in the transaction of the appends that cause them (`crate::audit_log`).

use std::sync::Arc;

use rusqlite::{Connection, params};

use super::queries::{self, clamp_i64};
use super::writer::{WriteOp, WriteOutcome};
use super::{SqliteStore, anchors, unexpected};
use crate::audit_log::{self, AuditEncoder, AuditEntries, AuditLine};
use crate::error::{Result, SqliteContext, StoreError};
use crate::model::RawEventRecord;

/// Events read per step of a catch-up, so a long unaudited stretch is not read at once.
const CATCH_UP_CHUNK: usize = 512;

impl SqliteStore {
    /// This store, writing the audit lines `encoder` makes for every event it appends in
    /// the same transaction (SQLite) or under the same lock (ephemeral) as the events,
    /// continuing each run's chain from its anchor and moving the anchor to its new head.
    /// Events appended through other handles (another process's inbox) are audited by the
    /// next audited append to their run, or by [`SqliteStore::audit_catch_up`].
    pub fn audited(&self, encoder: Arc<dyn AuditEncoder>) -> SqliteStore {
        SqliteStore {
            audit: Some(encoder),
            ..self.clone()
        }
    }

    /// Audits (through this handle's encoder) every event of `run_id` that its chain does
    /// not cover yet, in one write; nothing for a plain handle.
    pub fn audit_catch_up(&self, run_id: &str) -> Result<()> {
        let Some(encoder) = self.audit.clone() else {
            return Ok(());
        };
        match self.submit(WriteOp::AuditCatchUp {
            run_id: run_id.to_owned(),
            encoder,
        })? {
            WriteOutcome::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// `op`, audited when this handle has an encoder and `op` appends.
    pub(super) fn audit_op(&self, op: WriteOp) -> WriteOp {
        match &self.audit {
            Some(encoder) if appends(&op) => WriteOp::Audited {
                encoder: Arc::clone(encoder),
                op: Box::new(op),
            },
            _ => op,
        }
    }
}

/// Whether `op` appends events (directly or inside a group or a fence).
fn appends(op: &WriteOp) -> bool {
    match op {
        WriteOp::Append { .. } => true,
        WriteOp::Fenced { op, .. } | WriteOp::Audited { op, .. } => appends(op),
        WriteOp::Group(ops) => ops.iter().any(appends),
        _ => false,
    }
}

/// The runs `op` appends to.
pub(super) fn appended_runs<'a>(op: &'a WriteOp, runs: &mut Vec<&'a str>) {
    match op {
        WriteOp::Append { run_id, .. } if !runs.contains(&run_id.as_str()) => runs.push(run_id),
        WriteOp::Fenced { op, .. } | WriteOp::Audited { op, .. } => appended_runs(op, runs),
        WriteOp::Group(ops) => ops.iter().for_each(|op| appended_runs(op, runs)),
        _ => {}
    }
}

/// The events `op` appended to `run_id` (as its `outcome` numbered them), in seq order, as
/// stored: what an audited append encodes without reading back the rows it just inserted.
pub(super) fn appended_events(
    op: &WriteOp,
    outcome: &WriteOutcome,
    run_id: &str,
    out: &mut Vec<RawEventRecord>,
) {
    match (op, outcome) {
        (
            WriteOp::Append {
                run_id: appended_to,
                events,
                ..
            },
            WriteOutcome::Seqs(seqs),
        ) if appended_to == run_id => {
            out.extend(seqs.iter().zip(events).map(|(&seq, event)| RawEventRecord {
                seq,
                kind: event.kind.clone(),
                payload: event.payload.clone(),
                recorded_at_ms: event.recorded_at_ms,
            }));
        }
        (WriteOp::Fenced { op, .. } | WriteOp::Audited { op, .. }, outcome) => {
            appended_events(op, outcome, run_id, out)
        }
        (WriteOp::Group(ops), WriteOutcome::Group(outcomes)) => {
            for (op, outcome) in ops.iter().zip(outcomes) {
                appended_events(op, outcome, run_id, out);
            }
        }
        _ => {}
    }
}

/// Writes the audit lines of every event of `run_id` after its anchor's `event_seq`, and
/// moves the anchor to the new head (inside the caller's savepoint). `appended` are events
/// this write itself appended to the run (consecutive, in seq order): when the chain ends
/// right before them they are encoded as they are, and only what precedes them (events
/// other handles appended, unaudited) is read back from the table.
pub(super) fn catch_up(
    conn: &Connection,
    run_id: &str,
    encoder: &dyn AuditEncoder,
    appended: &[RawEventRecord],
) -> Result<()> {
    let mut head = anchors::get_anchor(conn, run_id)?.unwrap_or_else(|| audit_log::genesis(run_id));
    // The events this write appended are the run's newest (the log's end is read only
    // when it appended none: a catch-up of other handles' events).
    let last = match appended.last() {
        Some(newest) => newest.seq,
        None => queries::last_seq(conn, run_id)?,
    };
    while head.event_seq < last {
        let next = head.event_seq + 1;
        let in_memory = appended
            .first()
            .and_then(|first| usize::try_from(next.checked_sub(first.seq)?).ok())
            .and_then(|skip| appended.get(skip..))
            .filter(|rest| !rest.is_empty());
        let read;
        let events: &[RawEventRecord] = match in_memory {
            Some(rest) => rest,
            None => {
                read = queries::read_events_raw(conn, run_id, next, CATCH_UP_CHUNK)?;
                &read
            }
        };
        let Some(newest) = events.last() else {
            return Err(StoreError::Internal(format!(
                "run {run_id}: events after {} are missing",
                head.event_seq
            )));
        };
        let (upto, at) = (newest.seq, newest.recorded_at_ms);
        let lines = encoder.encode(run_id, &head, events)?;
        insert_lines(conn, run_id, &lines)?;
        head = audit_log::advanced(&head, &lines, upto, at);
        anchors::move_anchor(conn, &head)?;
    }
    Ok(())
}

fn insert_lines(conn: &Connection, run_id: &str, lines: &[AuditLine]) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO audit_entries (run_id, audit_seq, event_seq, hash, line) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .ctx("preparing an audit insert")?;
    for l in lines {
        stmt.execute(params![
            run_id,
            clamp_i64(l.audit_seq),
            clamp_i64(l.event_seq),
            l.hash,
            l.line
        ])
        .ctx("inserting an audit line")?;
    }
    Ok(())
}

pub(super) fn read_lines(
    conn: &Connection,
    run_id: &str,
    after: u64,
    limit: usize,
) -> Result<Vec<AuditLine>> {
    let rows = conn
        .prepare_cached(
            "SELECT audit_seq, event_seq, hash, line FROM audit_entries \
             WHERE run_id = ?1 AND audit_seq > ?2 ORDER BY audit_seq LIMIT ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![run_id, clamp_i64(after), clamp_i64(limit)], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("reading audit lines")?;
    rows.into_iter()
        .map(|(audit_seq, event_seq, hash, line)| {
            let corrupt = || StoreError::CorruptRow {
                table: "audit_entries",
                key: format!("run {run_id} seq {audit_seq}"),
                reason: "negative seq".to_owned(),
            };
            Ok(AuditLine {
                audit_seq: u64::try_from(audit_seq).map_err(|_| corrupt())?,
                event_seq: u64::try_from(event_seq).map_err(|_| corrupt())?,
                hash,
                line,
            })
        })
        .collect()
}

impl AuditEntries for SqliteStore {
    fn audit_lines(&self, run_id: &str, after: u64, limit: usize) -> Result<Vec<AuditLine>> {
        self.inner
            .readers
            .with(|conn| read_lines(conn, run_id, after, limit))
    }
}
