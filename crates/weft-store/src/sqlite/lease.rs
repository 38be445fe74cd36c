//! The SQL of the `leases` table (schema v3) and the fence check every fenced write makes
//! inside its transaction (`crate::lease` has the rules).

use rusqlite::{Connection, OptionalExtension, params};

use super::queries::{PreparedEvent, append_after, clamp_i64, run_exists};
use crate::error::{Result, SqliteContext, StoreError};
use crate::lease::{Lease, LeaseHolder, RELEASED, Takeover, may_take};

pub(crate) fn get_lease(conn: &Connection, run_id: &str) -> Result<Option<Lease>> {
    let raw: Option<(String, String, i64, i64, i64, i64)> = conn
        .prepare_cached(
            "SELECT owner, host, pid, token, acquired_at_ms, expires_at_ms \
             FROM leases WHERE run_id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([run_id], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                ))
            })
            .optional()
        })
        .ctx("reading a lease")?;
    raw.map(|(owner, host, pid, token, acquired_at_ms, expires_at_ms)| {
        let corrupt = |what: &str| StoreError::CorruptRow {
            table: "leases",
            key: format!("run {run_id}"),
            reason: format!("{what} out of range"),
        };
        Ok(Lease {
            run_id: run_id.to_owned(),
            holder: LeaseHolder {
                owner,
                host,
                pid: u32::try_from(pid).map_err(|_| corrupt("pid"))?,
            },
            token: u64::try_from(token).map_err(|_| corrupt("token"))?,
            acquired_at_ms,
            expires_at_ms,
        })
    })
    .transpose()
}

/// The fencing token of the run's lease, `None` when it has none: one index seek.
fn current_token(conn: &Connection, run_id: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT token FROM leases WHERE run_id = ?1")
        .and_then(|mut stmt| stmt.query_row([run_id], |row| row.get(0)).optional())
        .ctx("checking a lease's token")
}

/// `Fenced` unless `token` is the run's current one (run inside the write's savepoint, so
/// the check and the write it guards are one step).
pub(crate) fn check_fence(conn: &Connection, run_id: &str, token: u64) -> Result<()> {
    if current_token(conn, run_id)? == Some(clamp_i64(token)) {
        return Ok(());
    }
    Err(StoreError::Fenced {
        run_id: run_id.to_owned(),
        token,
        current: get_lease(conn, run_id)?.map(Box::new),
    })
}

/// A fenced append: the log's end and the lease's token read by one statement (one seek
/// each), then `Fenced` unless the token is `token`, then the append as usual.
pub(crate) fn append_fenced(
    conn: &Connection,
    run_id: &str,
    expected: Option<u64>,
    token: u64,
    events: &[PreparedEvent],
) -> Result<Vec<u64>> {
    let (exists, max, current): (bool, Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1), \
                    (SELECT MAX(seq) FROM events WHERE run_id = ?1), \
                    (SELECT token FROM leases WHERE run_id = ?1)",
        )
        .and_then(|mut stmt| {
            stmt.query_row([run_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        })
        .ctx("reading the last seq and the lease's token")?;
    if !exists {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    }
    if current != Some(clamp_i64(token)) {
        return Err(StoreError::Fenced {
            run_id: run_id.to_owned(),
            token,
            current: get_lease(conn, run_id)?.map(Box::new),
        });
    }
    let max = max.unwrap_or(0);
    let last = u64::try_from(max).map_err(|_| StoreError::CorruptRow {
        table: "events",
        key: format!("run {run_id}"),
        reason: format!("negative seq {max}"),
    })?;
    append_after(conn, run_id, expected, last, events)
}

pub(crate) fn acquire(
    conn: &Connection,
    run_id: &str,
    holder: &LeaseHolder,
    now_ms: i64,
    ttl_ms: i64,
    takeover: Takeover,
) -> Result<Lease> {
    if !run_exists(conn, run_id)? {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    }
    let current = get_lease(conn, run_id)?;
    if !may_take(current.as_ref(), now_ms, takeover) {
        return Err(StoreError::LeaseHeld {
            run_id: run_id.to_owned(),
            lease: Box::new(
                current.ok_or_else(|| {
                    StoreError::Internal("a lease refused without a holder".into())
                })?,
            ),
        });
    }
    let lease = Lease {
        run_id: run_id.to_owned(),
        holder: holder.clone(),
        token: current.map_or(1, |l| l.token + 1),
        acquired_at_ms: now_ms,
        expires_at_ms: now_ms.saturating_add(ttl_ms),
    };
    upsert(conn, &lease)?;
    Ok(lease)
}

/// Inserts the first lease of a run created in the same write; `LeaseHeld` if it has one.
pub(crate) fn insert_first(conn: &Connection, lease: &Lease) -> Result<()> {
    if let Some(current) = get_lease(conn, &lease.run_id)? {
        return Err(StoreError::LeaseHeld {
            run_id: lease.run_id.clone(),
            lease: Box::new(current),
        });
    }
    upsert(conn, lease)
}

fn upsert(conn: &Connection, lease: &Lease) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO leases (run_id, owner, host, pid, token, acquired_at_ms, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, host = excluded.host, \
           pid = excluded.pid, token = excluded.token, \
           acquired_at_ms = excluded.acquired_at_ms, expires_at_ms = excluded.expires_at_ms",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            lease.run_id,
            lease.holder.owner,
            lease.holder.host,
            i64::from(lease.holder.pid),
            clamp_i64(lease.token),
            lease.acquired_at_ms,
            lease.expires_at_ms
        ])
    })
    .ctx("writing a lease")?;
    Ok(())
}

pub(crate) fn renew(
    conn: &Connection,
    run_id: &str,
    token: u64,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<Lease> {
    check_fence(conn, run_id, token)?;
    conn.prepare_cached("UPDATE leases SET expires_at_ms = ?2 WHERE run_id = ?1")
        .and_then(|mut stmt| stmt.execute(params![run_id, now_ms.saturating_add(ttl_ms)]))
        .ctx("renewing a lease")?;
    get_lease(conn, run_id)?.ok_or_else(|| StoreError::Internal("a renewed lease is gone".into()))
}

pub(crate) fn release(conn: &Connection, run_id: &str, token: u64) -> Result<()> {
    conn.prepare_cached("UPDATE leases SET expires_at_ms = ?3 WHERE run_id = ?1 AND token = ?2")
        .and_then(|mut stmt| stmt.execute(params![run_id, clamp_i64(token), RELEASED]))
        .ctx("releasing a lease")?;
    Ok(())
}
