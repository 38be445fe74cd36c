//! The SQLite schema of a memory store and opening its connections.
//!
//! Entity, predicate and triple ids are assigned by the writer as dense 0-based integers, so
//! they double as indexes into the in-memory graph; candidate ids (= provenance ids) and
//! merge ids are SQLite rowids.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{MemoryError, Result, SqliteContext};

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- Staging: one row per extractor emission; group_key joins emissions of the same claim
-- (normalised subject, predicate, object, source, chunk).
CREATE TABLE candidates (
    id INTEGER PRIMARY KEY,
    group_key TEXT NOT NULL,
    -- FNV-1a of group_key: the index is on this integer (cheaper to maintain than on text).
    group_hash INTEGER NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    source TEXT NOT NULL,
    chunk TEXT NOT NULL,
    extractor TEXT NOT NULL,
    run_id TEXT NOT NULL,
    observed_at INTEGER NOT NULL,
    valid_from INTEGER,
    valid_to INTEGER,
    status TEXT NOT NULL CHECK (status IN ('staged', 'promoted', 'rejected')),
    triple_id INTEGER,
    decided_at INTEGER,
    reason TEXT
);
CREATE INDEX candidates_by_group ON candidates (group_hash);
CREATE TABLE votes (
    group_key TEXT NOT NULL,
    verifier TEXT NOT NULL,
    approve INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (group_key, verifier)
) WITHOUT ROWID;
-- Every promotion or rejection: by a person (who, why) or by the verifier majority.
CREATE TABLE decisions (
    id INTEGER PRIMARY KEY,
    group_key TEXT NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('promote', 'reject')),
    by_whom TEXT NOT NULL,
    why TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    merged_into INTEGER,
    created_at INTEGER NOT NULL
);
-- alias = the normalised key of a surface form; surface = the form first seen.
CREATE TABLE aliases (
    alias TEXT PRIMARY KEY,
    entity INTEGER NOT NULL,
    surface TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX aliases_by_entity ON aliases (entity);
CREATE TABLE predicates (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
-- The passages edges are cited from (source, chunk), so the index loads without a join.
CREATE TABLE chunks (id INTEGER PRIMARY KEY, source TEXT NOT NULL, chunk TEXT NOT NULL);
-- Canonical edges, bitemporal: valid_from/valid_to is when the fact held in the world,
-- learned_at/retired_at when weft took it in and gave it up. provenance = a candidate id.
CREATE TABLE triples (
    id INTEGER PRIMARY KEY,
    subject INTEGER NOT NULL,
    predicate INTEGER NOT NULL,
    object INTEGER NOT NULL,
    provenance INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    group_key TEXT NOT NULL,
    group_hash INTEGER NOT NULL,
    valid_from INTEGER,
    valid_to INTEGER,
    learned_at INTEGER NOT NULL,
    retired_at INTEGER,
    closed_by INTEGER
);
CREATE INDEX triples_by_group ON triples (group_hash);
CREATE TABLE merges (
    id INTEGER PRIMARY KEY,
    alias_entity INTEGER NOT NULL,
    canonical_entity INTEGER NOT NULL,
    evidence TEXT NOT NULL,
    by_whom TEXT NOT NULL,
    at INTEGER NOT NULL,
    moved_edges INTEGER NOT NULL,
    flagged INTEGER NOT NULL,
    undone_at INTEGER,
    undone_by TEXT
);
CREATE TABLE merge_aliases (
    merge_id INTEGER NOT NULL,
    alias TEXT NOT NULL,
    old_entity INTEGER NOT NULL,
    PRIMARY KEY (merge_id, alias)
) WITHOUT ROWID;
CREATE TABLE merge_edges (
    merge_id INTEGER NOT NULL,
    triple_id INTEGER NOT NULL,
    old_subject INTEGER NOT NULL,
    old_object INTEGER NOT NULL,
    PRIMARY KEY (merge_id, triple_id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE passages USING fts5 (source UNINDEXED, chunk UNINDEXED, text);
-- Discovery-loop state: resume = reload these rows, never replay a conversation.
CREATE TABLE loops (
    run_id TEXT PRIMARY KEY,
    dry_rounds_to_stop INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    dry_rounds INTEGER NOT NULL,
    budget_max INTEGER NOT NULL,
    budget_used INTEGER NOT NULL,
    done INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE loop_seen (run_id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (run_id, key)) WITHOUT ROWID;
CREATE TABLE loop_confirmed (
    run_id TEXT NOT NULL,
    triple_id INTEGER NOT NULL,
    PRIMARY KEY (run_id, triple_id)
) WITHOUT ROWID;
"#;

/// Tables added after version 1 without changing what older ones mean: created on open when
/// missing, so a version-1 store gains them and stays readable by older builds.
const ADDITIVE: &str = r#"
-- Passage embeddings for vector recall (`vectors.rs`): little-endian f32, one dimension per
-- store.
CREATE TABLE IF NOT EXISTS passage_vectors (
    source TEXT NOT NULL,
    chunk TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (source, chunk)
) WITHOUT ROWID;
"#;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens (creating if needed) the writer connection: WAL so readers never block the writer,
/// `synchronous=NORMAL` (in WAL, a crash may lose the last commits but never corrupts: a
/// memory store is rebuilt from extractor output, unlike the run log).
pub(crate) fn open_writer(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).ctx("opening the database file")?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .ctx("enabling WAL")?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(MemoryError::Schema(format!(
            "the database refused WAL mode (journal_mode is `{mode}`)"
        )));
    }
    conn.busy_timeout(BUSY_TIMEOUT)
        .ctx("setting the busy timeout")?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .ctx("setting synchronous")?;
    // Reads through a memory map (the index rebuild scans every triple on open).
    conn.pragma_update(None, "mmap_size", 1_i64 << 30)
        .ctx("setting the memory map size")?;
    // 64 MiB of page cache: bulk ingest inserts index keys in random order.
    conn.pragma_update(None, "cache_size", -65_536)
        .ctx("setting the cache size")?;
    migrate(&conn)?;
    Ok(conn)
}

/// Opens a read-only connection (`query_only`, so nothing can bypass the writer).
pub(crate) fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ctx("opening a reader connection")?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .ctx("setting the busy timeout")?;
    conn.pragma_update(None, "query_only", true)
        .ctx("making a reader read-only")?;
    Ok(conn)
}

fn migrate(conn: &Connection) -> Result<()> {
    let has_meta: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
            [],
            |row| row.get(0),
        )
        .ctx("reading the schema")?;
    if !has_meta {
        let any_table: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table')",
                [],
                |row| row.get(0),
            )
            .ctx("reading the schema")?;
        if any_table {
            return Err(MemoryError::Schema(
                "the file is a SQLite database but not a weft memory store".to_string(),
            ));
        }
        conn.execute_batch(&format!(
            "BEGIN; {SCHEMA} INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
        ))
        .ctx("creating the schema")?;
        conn.execute_batch(ADDITIVE)
            .ctx("creating the additive tables")?;
        return Ok(());
    }
    let version: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .ctx("reading the schema version")?;
    if version != SCHEMA_VERSION.to_string() {
        return Err(MemoryError::Schema(format!(
            "schema version {version}; this build reads version {SCHEMA_VERSION}"
        )));
    }
    conn.execute_batch(ADDITIVE)
        .ctx("creating the additive tables")?;
    Ok(())
}
