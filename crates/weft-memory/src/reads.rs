//! Reads from SQLite: provenance records, edges with their time fields, stats, the merge
//! list, and the store hash that the determinism check compares.

use rusqlite::{OptionalExtension, types::ValueRef};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{MemoryError, Result, SqliteContext};
use crate::memory::Memory;
use crate::model::{Millis, Provenance, Stats, TripleRecord};

/// A provenance id resolved: the candidate row an edge cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenanceRecord {
    pub id: i64,
    #[serde(flatten)]
    pub provenance: Provenance,
    pub observed_at: Millis,
    pub status: String,
    /// The edge the candidate was promoted into.
    pub triple: Option<i64>,
}

/// A merge as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeRecord {
    pub merge_id: i64,
    pub alias_entity: i64,
    pub canonical_entity: i64,
    pub evidence: String,
    pub by: String,
    pub at: Millis,
    pub moved_edges: i64,
    pub flagged_for_review: bool,
    pub undone_at: Option<Millis>,
}

/// The tables the store hash covers, each in primary-key order. Passages are excluded
/// (FTS5 shadow tables are an implementation detail; their text is input, not state).
const HASHED: [(&str, &str); 11] = [
    ("candidates", "SELECT * FROM candidates ORDER BY id"),
    ("votes", "SELECT * FROM votes ORDER BY group_key, verifier"),
    ("decisions", "SELECT * FROM decisions ORDER BY id"),
    ("entities", "SELECT * FROM entities ORDER BY id"),
    ("aliases", "SELECT * FROM aliases ORDER BY alias"),
    ("predicates", "SELECT * FROM predicates ORDER BY id"),
    ("triples", "SELECT * FROM triples ORDER BY id"),
    ("merges", "SELECT * FROM merges ORDER BY id"),
    (
        "merge_aliases",
        "SELECT * FROM merge_aliases ORDER BY merge_id, alias",
    ),
    (
        "merge_edges",
        "SELECT * FROM merge_edges ORDER BY merge_id, triple_id",
    ),
    ("loops", "SELECT * FROM loops ORDER BY run_id"),
];

impl Memory {
    /// The provenance an edge cites.
    pub fn provenance(&self, id: i64) -> Result<ProvenanceRecord> {
        self.with_reader(|conn| {
            conn.prepare_cached(
                "SELECT source, chunk, extractor, run_id, observed_at, status, triple_id \
                 FROM candidates WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.query_row([id], |r| {
                    Ok(ProvenanceRecord {
                        id,
                        provenance: Provenance {
                            source: r.get(0)?,
                            chunk: r.get(1)?,
                            extractor: r.get(2)?,
                            run_id: r.get(3)?,
                        },
                        observed_at: r.get(4)?,
                        status: r.get(5)?,
                        triple: r.get(6)?,
                    })
                })
                .optional()
            })
            .ctx("reading a provenance record")?
            .ok_or_else(|| MemoryError::NotFound(format!("no provenance p:{id}")))
        })
    }

    /// Every canonical edge (current, closed and retired), with its time fields, in id order.
    pub fn triples(&self) -> Result<Vec<TripleRecord>> {
        self.with_reader(|conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT t.id, s.name, p.name, o.name, t.provenance, t.valid_from, t.valid_to, \
                     t.learned_at, t.retired_at, t.closed_by FROM triples t \
                     JOIN entities s ON s.id = t.subject JOIN entities o ON o.id = t.object \
                     JOIN predicates p ON p.id = t.predicate ORDER BY t.id",
                )
                .ctx("reading triples")?;
            stmt.query_map([], |r| {
                Ok(TripleRecord {
                    id: r.get(0)?,
                    subject: r.get(1)?,
                    predicate: r.get(2)?,
                    object: r.get(3)?,
                    provenance: r.get(4)?,
                    valid_from: r.get(5)?,
                    valid_to: r.get(6)?,
                    learned_at: r.get(7)?,
                    retired_at: r.get(8)?,
                    closed_by: r.get(9)?,
                })
            })
            .and_then(|rows| rows.collect())
            .ctx("reading triples")
        })
    }

    /// The alias keys that resolve to an entity, sorted.
    pub fn aliases_of(&self, entity: i64) -> Result<Vec<String>> {
        self.with_reader(|conn| {
            conn.prepare_cached("SELECT alias FROM aliases WHERE entity = ?1 ORDER BY alias")
                .and_then(|mut s| s.query_map([entity], |r| r.get(0))?.collect())
                .ctx("reading aliases")
        })
    }

    /// Every merge, in id order.
    pub fn merges(&self) -> Result<Vec<MergeRecord>> {
        self.with_reader(|conn| {
            conn.prepare(
                "SELECT id, alias_entity, canonical_entity, evidence, by_whom, at, moved_edges, \
                 flagged, undone_at FROM merges ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(MergeRecord {
                        merge_id: r.get(0)?,
                        alias_entity: r.get(1)?,
                        canonical_entity: r.get(2)?,
                        evidence: r.get(3)?,
                        by: r.get(4)?,
                        at: r.get(5)?,
                        moved_edges: r.get(6)?,
                        flagged_for_review: r.get(7)?,
                        undone_at: r.get(8)?,
                    })
                })?
                .collect()
            })
            .ctx("reading merges")
        })
    }

    /// Counts of what the store holds.
    pub fn stats(&self) -> Result<Stats> {
        self.with_reader(|conn| {
            let count = |sql: &str| -> Result<i64> {
                conn.query_row(sql, [], |r| r.get(0)).ctx("counting")
            };
            Ok(Stats {
                candidates_staged: count("SELECT COUNT(*) FROM candidates WHERE status = 'staged'")?,
                candidates_promoted: count(
                    "SELECT COUNT(*) FROM candidates WHERE status = 'promoted'",
                )?,
                candidates_rejected: count(
                    "SELECT COUNT(*) FROM candidates WHERE status = 'rejected'",
                )?,
                triples_current: count(
                    "SELECT COUNT(*) FROM triples WHERE retired_at IS NULL AND valid_to IS NULL",
                )?,
                triples_closed: count(
                    "SELECT COUNT(*) FROM triples WHERE retired_at IS NOT NULL OR valid_to IS NOT NULL",
                )?,
                entities: count("SELECT COUNT(*) FROM entities WHERE merged_into IS NULL")?,
                aliases: count("SELECT COUNT(*) FROM aliases")?,
                merges_active: count("SELECT COUNT(*) FROM merges WHERE undone_at IS NULL")?,
                merges_undone: count("SELECT COUNT(*) FROM merges WHERE undone_at IS NOT NULL")?,
                merges_flagged: count(
                    "SELECT COUNT(*) FROM merges WHERE flagged AND undone_at IS NULL",
                )?,
                passages: count("SELECT COUNT(*) FROM passages")?,
            })
        })
    }

    /// SHA-256 over every state table in primary-key order (hex): two stores built from the
    /// same input by the same operations hash the same, byte for byte.
    pub fn store_hash(&self) -> Result<String> {
        self.with_reader(|conn| {
            let mut hasher = Sha256::new();
            for (table, sql) in HASHED {
                hasher.update(table.as_bytes());
                hasher.update([0x1d]);
                let mut stmt = conn.prepare(sql).ctx("hashing the store")?;
                let columns = stmt.column_count();
                let mut rows = stmt.query([]).ctx("hashing the store")?;
                while let Some(row) = rows.next().ctx("hashing the store")? {
                    for i in 0..columns {
                        match row.get_ref(i).ctx("hashing the store")? {
                            ValueRef::Null => hasher.update(b"N"),
                            ValueRef::Integer(v) => {
                                hasher.update(b"I");
                                hasher.update(v.to_le_bytes());
                            }
                            ValueRef::Real(v) => {
                                hasher.update(b"R");
                                hasher.update(v.to_le_bytes());
                            }
                            ValueRef::Text(v) | ValueRef::Blob(v) => {
                                hasher.update(b"T");
                                hasher.update((v.len() as u64).to_le_bytes());
                                hasher.update(v);
                            }
                        }
                    }
                    hasher.update([0x1e]);
                }
            }
            Ok(hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect())
        })
    }
}
