//! Opening SQLite connections with the settings the event log's durability depends on.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Result, SqliteContext, StoreError};

/// How long a connection waits for a lock held by another connection or process before
/// failing with `SQLITE_BUSY`; long enough to ride out a checkpoint or a big batch.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the writer connection of a database file: WAL so readers never block the writer
/// and a commit is one sequential WAL write, `synchronous=FULL` so that write is fsynced
/// before `COMMIT` returns (WAL's default `NORMAL` may lose the last commits on power loss).
pub(crate) fn open_writer(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).ctx("opening the database file")?;
    // Before the switch to WAL, which takes a lock: another process writing the file at
    // that moment (a driver while `weft decide` opens the store) is waited for, not an error.
    conn.busy_timeout(BUSY_TIMEOUT)
        .ctx("setting busy_timeout")?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .ctx("enabling WAL")?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Setup(format!(
            "the database refused WAL mode (journal_mode is `{mode}`)"
        )));
    }
    apply_common(&conn)?;
    Ok(conn)
}

/// Opens a reader connection; it may not write (`query_only`) so a bug cannot bypass the
/// single writer.
pub(crate) fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ctx("opening a reader connection")?;
    apply_common(&conn)?;
    conn.pragma_update(None, "query_only", true)
        .ctx("making a reader read-only")?;
    Ok(conn)
}

/// An in-memory database for tests: one connection that the writer thread and the readers
/// share, since a second connection to `:memory:` would be a different database.
pub(crate) fn open_memory() -> Result<Connection> {
    let conn = Connection::open_in_memory().ctx("opening an in-memory database")?;
    apply_common(&conn)?;
    Ok(conn)
}

/// Statements each connection keeps prepared: every statement the store runs (about 25),
/// so that none is evicted and parsed again per write (rusqlite's default keeps 16).
const STATEMENT_CACHE: usize = 64;

fn apply_common(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.busy_timeout(BUSY_TIMEOUT)
        .ctx("setting busy_timeout")?;
    conn.pragma_update(None, "synchronous", "FULL")
        .ctx("setting synchronous=FULL")?;
    conn.pragma_update(None, "foreign_keys", true)
        .ctx("enabling foreign keys")?;
    Ok(())
}
