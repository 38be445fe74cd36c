//! The SQL of tails: events after a cursor, and the cross-process change check.
//!
//! An event's position is its `rowid` in `events`. The table is append-only (the store
//! never updates or deletes an event) and has no `INTEGER PRIMARY KEY`, so SQLite gives
//! each insert the largest rowid so far plus one; writers take turns holding the write lock
//! (`BEGIN IMMEDIATE`), so every event of a later commit has a larger rowid than every
//! event of an earlier one. Positions are therefore gap-free, stable and in commit order
//! across all runs, which is what a reader of every run resumes from.

use rusqlite::{Connection, params};

use super::queries::{clamp_i64, run_exists};
use crate::error::{Result, SqliteContext, StoreError};
use crate::model::EventRecord;
use crate::tail::{TailFrom, TailedEvent};

/// One row as read: position, run, seq, kind, payload text, recorded_at_ms.
type Row = (i64, String, i64, String, String, i64);

/// Up to `limit` events after `from`, in its order (seq for a run, position for all runs);
/// `UnknownRun` for a run tail of a run that does not exist.
pub(super) fn read_after(
    conn: &Connection,
    from: &TailFrom,
    limit: usize,
) -> Result<Vec<TailedEvent>> {
    let decode = |row: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok((
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
        ))
    };
    let rows = match from {
        TailFrom::Run { run_id, after_seq } => {
            let rows = conn
                .prepare_cached(
                    "SELECT rowid, run_id, seq, kind, payload, recorded_at_ms FROM events \
                     WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                )
                .and_then(|mut stmt| {
                    stmt.query_map(
                        params![run_id, clamp_i64(*after_seq), clamp_i64(limit)],
                        decode,
                    )?
                    .collect::<rusqlite::Result<Vec<Row>>>()
                })
                .ctx("reading a run's events after a seq")?;
            if rows.is_empty() && !run_exists(conn, run_id)? {
                return Err(StoreError::UnknownRun {
                    run_id: run_id.clone(),
                });
            }
            rows
        }
        TailFrom::All { after_position } => conn
            .prepare_cached(
                "SELECT rowid, run_id, seq, kind, payload, recorded_at_ms FROM events \
                 WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_map(
                    params![clamp_i64(*after_position), clamp_i64(limit)],
                    decode,
                )?
                .collect::<rusqlite::Result<Vec<Row>>>()
            })
            .ctx("reading every run's events after a position")?,
    };
    rows.into_iter().map(tailed).collect()
}

fn tailed((position, run_id, seq, kind, payload, recorded_at_ms): Row) -> Result<TailedEvent> {
    let corrupt = |reason: String| StoreError::CorruptRow {
        table: "events",
        key: format!("run {run_id} seq {seq}"),
        reason,
    };
    let position = u64::try_from(position).map_err(|_| corrupt("negative rowid".into()))?;
    let seq_u = u64::try_from(seq).map_err(|_| corrupt("negative seq".into()))?;
    let payload =
        serde_json::from_str(&payload).map_err(|e| corrupt(format!("payload is not JSON: {e}")))?;
    Ok(TailedEvent {
        position,
        event: EventRecord {
            run_id,
            seq: seq_u,
            kind,
            payload,
            recorded_at_ms,
        },
    })
}

/// `PRAGMA data_version`: changes whenever another connection (of this process or any
/// other) has committed since this connection last asked. One read of the WAL index in
/// shared memory: cheap enough to ask every few milliseconds.
pub(super) fn data_version(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("PRAGMA data_version")
        .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
        .ctx("reading data_version")
}

/// The largest position so far (0 for an empty table).
pub(super) fn max_position(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM events")
        .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
        .ctx("reading the last position")
}

/// The runs with events at positions in `(after, upto]`, each with its last seq there:
/// what other connections appended.
pub(super) fn advanced_between(
    conn: &Connection,
    after: i64,
    upto: i64,
) -> Result<Vec<(String, u64)>> {
    let rows: Vec<(String, i64)> = conn
        .prepare_cached(
            "SELECT run_id, MAX(seq) FROM events WHERE rowid > ?1 AND rowid <= ?2 GROUP BY run_id",
        )
        .and_then(|mut stmt| {
            stmt.query_map([after, upto], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("reading the runs appended to")?;
    Ok(rows
        .into_iter()
        .map(|(run, seq)| (run, u64::try_from(seq).unwrap_or(0)))
        .collect())
}
