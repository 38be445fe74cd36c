//! The SQL of a run's lease, the `lease_*` columns of its row (schema v5), and the fence
//! check every fenced write makes inside its transaction (`crate::lease` has the rules).

use rusqlite::{Connection, OptionalExtension, params};

use super::queries::{PreparedEvent, append_after, clamp_i64};
use crate::error::{Result, SqliteContext, StoreError};
use crate::lease::{Lease, LeaseHolder, RELEASED, Takeover, may_take};

pub(crate) fn get_lease(conn: &Connection, run_id: &str) -> Result<Option<Lease>> {
    let raw: Option<(String, String, i64, i64, i64, i64)> = conn
        .prepare_cached(
            "SELECT lease_owner, lease_host, lease_pid, lease_token, lease_acquired_at_ms, \
                    lease_expires_at_ms \
             FROM runs WHERE id = ?1 AND lease_token IS NOT NULL",
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
            table: "runs",
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

/// The fencing token of the run's lease, `None` when it has none (or there is no such
/// run): one index seek.
fn current_token(conn: &Connection, run_id: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT lease_token FROM runs WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([run_id], |row| row.get::<_, Option<i64>>(0))
                .optional()
        })
        .map(Option::flatten)
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

/// A fenced append: the run's row (its lease's token) and the log's end read by one
/// statement, then `Fenced` unless the token is `token`, then the append as usual.
pub(crate) fn append_fenced(
    conn: &Connection,
    run_id: &str,
    expected: Option<u64>,
    token: u64,
    events: &[PreparedEvent],
) -> Result<Vec<u64>> {
    let row: Option<(Option<i64>, Option<i64>)> = conn
        .prepare_cached(
            "SELECT lease_token, (SELECT MAX(seq) FROM events WHERE run_id = ?1) \
             FROM runs WHERE id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([run_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .ctx("reading the last seq and the lease's token")?;
    let Some((current, max)) = row else {
        return Err(StoreError::UnknownRun {
            run_id: run_id.to_owned(),
        });
    };
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
    // A run that does not exist has no lease, and writing one says `UnknownRun`.
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
    write_lease(conn, &lease)?;
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
    write_lease(conn, lease)
}

/// Writes `lease` into its run's row; `UnknownRun` when there is no such run.
fn write_lease(conn: &Connection, lease: &Lease) -> Result<()> {
    let written = conn
        .prepare_cached(
            "UPDATE runs SET lease_owner = ?2, lease_host = ?3, lease_pid = ?4, \
               lease_token = ?5, lease_acquired_at_ms = ?6, lease_expires_at_ms = ?7 \
             WHERE id = ?1",
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
    if written == 0 {
        return Err(StoreError::UnknownRun {
            run_id: lease.run_id.clone(),
        });
    }
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
    conn.prepare_cached("UPDATE runs SET lease_expires_at_ms = ?2 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![run_id, now_ms.saturating_add(ttl_ms)]))
        .ctx("renewing a lease")?;
    get_lease(conn, run_id)?.ok_or_else(|| StoreError::Internal("a renewed lease is gone".into()))
}

pub(crate) fn release(conn: &Connection, run_id: &str, token: u64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE runs SET lease_expires_at_ms = ?3 WHERE id = ?1 AND lease_token = ?2",
    )
    .and_then(|mut stmt| stmt.execute(params![run_id, clamp_i64(token), RELEASED]))
    .ctx("releasing a lease")?;
    Ok(())
}
