//! Versioned schema migrations.
//!
//! Each migration is applied once, in order, in the same transaction that records it in
//! `schema_version`, so a crash mid-migration leaves the previous version intact. A database
//! whose version is newer than this build knows is refused rather than guessed at.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{Result, SqliteContext, StoreError};

/// The store schema version this build writes (documented in `docs/store.md`).
pub const SCHEMA_VERSION: u32 = 5;

/// `(version, SQL)` in ascending order; never edit a shipped entry, append a new one.
const MIGRATIONS: &[(u32, &str)] = &[(1, V1), (2, V2), (3, V3), (4, V4), (5, V5)];

/// Schema v1: runs and their event logs.
const V1: &str = "
CREATE TABLE runs (
    id            TEXT    NOT NULL PRIMARY KEY,
    graph_digest  TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX runs_by_created ON runs (created_at_ms, id);
CREATE INDEX runs_by_status ON runs (status, created_at_ms, id);

CREATE TABLE events (
    run_id         TEXT    NOT NULL REFERENCES runs (id),
    seq            INTEGER NOT NULL CHECK (seq >= 1),
    kind           TEXT    NOT NULL,
    payload        TEXT    NOT NULL,
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;
";

/// Schema v2: the head of each run's audit log (`docs/audit.md`), kept apart from the log
/// so a truncated log is detected.
const V2: &str = "
CREATE TABLE audit_anchors (
    run_id        TEXT    NOT NULL PRIMARY KEY REFERENCES runs (id),
    event_seq     INTEGER NOT NULL CHECK (event_seq >= 0),
    audit_seq     INTEGER NOT NULL CHECK (audit_seq >= 0),
    hash          TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;
";

/// Schema v3: who drives each run, until when, and its fencing token (`docs/store.md`
/// §2a). A row is never deleted: a released lease keeps its token, so the next holder's is
/// higher and a stale driver's writes stay refused.
const V3: &str = "
CREATE TABLE leases (
    run_id         TEXT    NOT NULL PRIMARY KEY REFERENCES runs (id),
    owner          TEXT    NOT NULL,
    host           TEXT    NOT NULL,
    pid            INTEGER NOT NULL CHECK (pid >= 0),
    token          INTEGER NOT NULL CHECK (token >= 1),
    acquired_at_ms INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL
) STRICT;
";

/// Schema v4: each run's audit lines, written in the transaction of the events they record
/// (`audit_log.rs`, `docs/store.md` §2b); the run's anchor stays the head of its chain.
const V4: &str = "
CREATE TABLE audit_entries (
    run_id    TEXT    NOT NULL REFERENCES runs (id),
    audit_seq INTEGER NOT NULL CHECK (audit_seq >= 1),
    event_seq INTEGER NOT NULL CHECK (event_seq >= 1),
    hash      TEXT    NOT NULL,
    line      TEXT    NOT NULL,
    PRIMARY KEY (run_id, audit_seq)
) STRICT;
";

/// Schema v5: a run's lease is columns of its row, no longer a `leases` table (`docs/store.md`
/// §2a). Opening a run, closing it and every fenced append then read and write the run's
/// one row: the table cost three more pages per run in the WAL (its row and its key's
/// index when the run opens, its row again when it closes) and a second seek per append.
/// A run that was never driven has no lease: its `lease_token` is null.
const V5: &str = "
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_host TEXT;
ALTER TABLE runs ADD COLUMN lease_pid INTEGER CHECK (lease_pid >= 0);
ALTER TABLE runs ADD COLUMN lease_token INTEGER CHECK (lease_token >= 1);
ALTER TABLE runs ADD COLUMN lease_acquired_at_ms INTEGER;
ALTER TABLE runs ADD COLUMN lease_expires_at_ms INTEGER;
UPDATE runs SET (lease_owner, lease_host, lease_pid, lease_token, lease_acquired_at_ms,
                 lease_expires_at_ms) =
    (SELECT owner, host, pid, token, acquired_at_ms, expires_at_ms
     FROM leases WHERE leases.run_id = runs.id)
WHERE id IN (SELECT run_id FROM leases);
DROP TABLE leases;
";

/// Brings the database up to [`SCHEMA_VERSION`] and returns the version it now has.
///
/// `BEGIN IMMEDIATE` takes the write lock first, so two processes opening a fresh file at
/// once cannot both apply migration 1.
pub(crate) fn migrate(conn: &mut Connection) -> Result<u32> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("starting the migration transaction")?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL PRIMARY KEY) STRICT;",
    )
    .ctx("creating schema_version")?;
    let current = current_version(&tx)?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: current,
            supported: SCHEMA_VERSION,
        });
    }
    for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.execute_batch(sql).ctx("applying a schema migration")?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [version],
        )
        .ctx("recording a schema migration")?;
    }
    tx.commit().ctx("committing the migrations")?;
    Ok(SCHEMA_VERSION)
}

/// The highest applied version, 0 for a fresh database.
pub(crate) fn current_version(conn: &Connection) -> Result<u32> {
    let version: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |row| {
            row.get(0)
        })
        .optional()
        .ctx("reading schema_version")?
        .flatten();
    let version = version.unwrap_or(0);
    u32::try_from(version).map_err(|_| StoreError::CorruptRow {
        table: "schema_version",
        key: format!("version {version}"),
        reason: "not a valid schema version".to_owned(),
    })
}
