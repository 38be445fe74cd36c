//! The SQL of schema v1 (runs, events) and the row decoding, shared by the writer thread and the readers.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Result, SqliteContext, StoreError};
use crate::model::{EventRecord, NewEvent, NewRun, RawEventRecord, RunRecord, RunStatus};

/// An event whose payload was already serialised on the caller's thread, so the writer
/// thread (the bottleneck) only does SQL.
#[derive(Debug)]
pub(crate) struct PreparedEvent {
    pub kind: String,
    pub payload: String,
    pub recorded_at_ms: i64,
}

impl From<NewEvent> for PreparedEvent {
    fn from(event: NewEvent) -> PreparedEvent {
        PreparedEvent {
            kind: event.kind,
            payload: event.payload.into_text(),
            recorded_at_ms: event.recorded_at_ms,
        }
    }
}

/// Seqs and limits are `u64`/`usize` in the API and `INTEGER` (i64) in SQLite; values past
/// `i64::MAX` cannot occur in a log, so clamping them keeps the meaning ("everything").
pub(crate) fn clamp_i64<T: TryInto<i64>>(value: T) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

const RUN_COLUMNS: &str = "id, graph_digest, status, created_at_ms, updated_at_ms";

fn decode_run(row: &Row<'_>) -> rusqlite::Result<(String, String, String, i64, i64)> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
    ))
}

fn run_record(raw: (String, String, String, i64, i64)) -> Result<RunRecord> {
    let (id, graph_digest, status, created_at_ms, updated_at_ms) = raw;
    let Some(status) = RunStatus::parse(&status) else {
        return Err(StoreError::CorruptRow {
            table: "runs",
            key: format!("run {id}"),
            reason: format!("unknown status `{status}`"),
        });
    };
    Ok(RunRecord {
        id,
        graph_digest,
        status,
        created_at_ms,
        updated_at_ms,
    })
}

pub(crate) fn get_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>> {
    let raw = conn
        .prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))
        .and_then(|mut stmt| stmt.query_row([run_id], decode_run).optional())
        .ctx("reading a run")?;
    raw.map(run_record).transpose()
}

pub(crate) fn list_runs(
    conn: &Connection,
    status: Option<RunStatus>,
    limit: usize,
) -> Result<Vec<RunRecord>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR status = ?1) \
         ORDER BY created_at_ms, id LIMIT ?2"
    );
    let raws = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| {
            stmt.query_map(
                params![status.map(RunStatus::as_str), clamp_i64(limit)],
                decode_run,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("listing runs")?;
    raws.into_iter().map(run_record).collect()
}

pub(crate) fn run_exists(conn: &Connection, run_id: &str) -> Result<bool> {
    conn.prepare_cached("SELECT 1 FROM runs WHERE id = ?1")
        .and_then(|mut stmt| stmt.exists([run_id]))
        .ctx("checking a run exists")
}

/// The last seq of a run's log, 0 when empty; `UnknownRun` when there is no such run.
pub(crate) fn last_seq(conn: &Connection, run_id: &str) -> Result<u64> {
    // One statement, so the answer is from one snapshot; MAX over the primary key
    // (run_id, seq) is a single index seek.
    let (exists, max): (bool, Option<i64>) = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1), \
                    (SELECT MAX(seq) FROM events WHERE run_id = ?1)",
        )
        .and_then(|mut stmt| stmt.query_row([run_id], |row| Ok((row.get(0)?, row.get(1)?))))
        .ctx("reading the last seq")?;
    if !exists {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    }
    let max = max.unwrap_or(0);
    u64::try_from(max).map_err(|_| StoreError::CorruptRow {
        table: "events",
        key: format!("run {run_id}"),
        reason: format!("negative seq {max}"),
    })
}

/// Up to `limit` events of `run_id` from `from_seq` on, payloads parsed.
pub(crate) fn read_events(
    conn: &Connection,
    run_id: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<EventRecord>> {
    read_events_raw(conn, run_id, from_seq, limit)?
        .into_iter()
        .map(|raw| {
            let payload =
                serde_json::from_str(&raw.payload).map_err(|e| StoreError::CorruptRow {
                    table: "events",
                    key: format!("run {run_id} seq {}", raw.seq),
                    reason: format!("payload is not JSON: {e}"),
                })?;
            Ok(EventRecord {
                run_id: run_id.to_owned(),
                seq: raw.seq,
                kind: raw.kind,
                payload,
                recorded_at_ms: raw.recorded_at_ms,
            })
        })
        .collect()
}

/// Up to `limit` events of `run_id` from `from_seq` on, payloads as stored text.
pub(crate) fn read_events_raw(
    conn: &Connection,
    run_id: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<RawEventRecord>> {
    let raws = conn
        .prepare_cached(
            "SELECT seq, kind, payload, recorded_at_ms FROM events \
             WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_map(
                params![run_id, clamp_i64(from_seq), clamp_i64(limit)],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                },
            )?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("reading events")?;
    // An empty answer is ambiguous: past the end of the log, or no such run.
    if raws.is_empty() && !run_exists(conn, run_id)? {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    }
    raws.into_iter()
        .map(|(seq, kind, payload, recorded_at_ms)| {
            let seq = u64::try_from(seq).map_err(|_| StoreError::CorruptRow {
                table: "events",
                key: format!("run {run_id} seq {seq}"),
                reason: "negative seq".to_owned(),
            })?;
            Ok(RawEventRecord {
                seq,
                kind,
                payload,
                recorded_at_ms,
            })
        })
        .collect()
}

pub(crate) fn insert_run(conn: &Connection, run: &NewRun) -> Result<RunRecord> {
    if run_exists(conn, &run.id)? {
        return Err(StoreError::RunExists {
            run_id: run.id.clone(),
        });
    }
    let record = RunRecord {
        id: run.id.clone(),
        graph_digest: run.graph_digest.clone(),
        status: RunStatus::Pending,
        created_at_ms: run.created_at_ms,
        updated_at_ms: run.created_at_ms,
    };
    conn.prepare_cached(&format!(
        "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5)"
    ))
    .and_then(|mut stmt| {
        stmt.execute(params![
            record.id,
            record.graph_digest,
            record.status.as_str(),
            record.created_at_ms,
            record.updated_at_ms
        ])
    })
    .ctx("inserting a run")?;
    Ok(record)
}

pub(crate) fn update_status(
    conn: &Connection,
    run_id: &str,
    status: RunStatus,
    updated_at_ms: i64,
) -> Result<()> {
    let changed = conn
        .prepare_cached("UPDATE runs SET status = ?2, updated_at_ms = ?3 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![run_id, status.as_str(), updated_at_ms]))
        .ctx("updating a run's status")?;
    if changed == 0 {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    }
    Ok(())
}

/// Appends after the current end of the log (checking `expected` first when given).
/// Runs inside the writer's transaction, so reading the end and inserting are atomic.
pub(crate) fn append_events(
    conn: &Connection,
    run_id: &str,
    expected: Option<u64>,
    events: &[PreparedEvent],
) -> Result<Vec<u64>> {
    let last = last_seq(conn, run_id)?;
    append_after(conn, run_id, expected, last, events)
}

/// Appends after `last`, the end of the log as read in this transaction (checking
/// `expected` first when given).
pub(crate) fn append_after(
    conn: &Connection,
    run_id: &str,
    expected: Option<u64>,
    last: u64,
    events: &[PreparedEvent],
) -> Result<Vec<u64>> {
    if let Some(expected) = expected
        && expected != last
    {
        return Err(StoreError::SequenceConflict {
            run_id: run_id.to_owned(),
            expected,
            actual: last,
        });
    }
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO events (run_id, seq, kind, payload, recorded_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .ctx("preparing the event insert")?;
    let mut seqs = Vec::with_capacity(events.len());
    for (seq, event) in (last + 1..).zip(events) {
        stmt.execute(params![
            run_id,
            clamp_i64(seq),
            event.kind,
            event.payload,
            event.recorded_at_ms
        ])
        .ctx("inserting an event")?;
        seqs.push(seq);
    }
    Ok(seqs)
}
