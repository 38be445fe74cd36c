//! The SQL of the `audit_anchors` table (schema v2): per run, the head of its audit log.

use rusqlite::{Connection, OptionalExtension, params};

use super::queries::{clamp_i64, run_exists};
use crate::error::{Result, SqliteContext, StoreError};
use crate::model::AuditAnchor;

/// Sets the run's anchor, never moving it back: an anchor with a lower `audit_seq` than the
/// stored one is ignored (a slow writer cannot hide entries a faster one anchored).
pub(crate) fn set_anchor(conn: &Connection, anchor: &AuditAnchor) -> Result<()> {
    if !run_exists(conn, &anchor.run_id)? {
        return Err(StoreError::UnknownRun {
            run_id: anchor.run_id.clone(),
        });
    }
    move_anchor(conn, anchor)
}

/// [`set_anchor`] of a run known to exist (an audited append's, inside its transaction):
/// one statement per commit, not two.
pub(crate) fn move_anchor(conn: &Connection, anchor: &AuditAnchor) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO audit_anchors (run_id, event_seq, audit_seq, hash, updated_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (run_id) DO UPDATE SET event_seq = excluded.event_seq, \
           audit_seq = excluded.audit_seq, hash = excluded.hash, \
           updated_at_ms = excluded.updated_at_ms \
         WHERE excluded.audit_seq >= audit_anchors.audit_seq",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            anchor.run_id,
            clamp_i64(anchor.event_seq),
            clamp_i64(anchor.audit_seq),
            anchor.hash,
            anchor.updated_at_ms
        ])
    })
    .ctx("setting an audit anchor")?;
    Ok(())
}

pub(crate) fn get_anchor(conn: &Connection, run_id: &str) -> Result<Option<AuditAnchor>> {
    let raw: Option<(i64, i64, String, i64)> = conn
        .prepare_cached(
            "SELECT event_seq, audit_seq, hash, updated_at_ms FROM audit_anchors WHERE run_id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([run_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .optional()
        })
        .ctx("reading an audit anchor")?;
    raw.map(|(event_seq, audit_seq, hash, updated_at_ms)| {
        let corrupt = || StoreError::CorruptRow {
            table: "audit_anchors",
            key: format!("run {run_id}"),
            reason: "negative seq".to_owned(),
        };
        Ok(AuditAnchor {
            run_id: run_id.to_owned(),
            event_seq: u64::try_from(event_seq).map_err(|_| corrupt())?,
            audit_seq: u64::try_from(audit_seq).map_err(|_| corrupt())?,
            hash,
            updated_at_ms,
        })
    })
    .transpose()
}
