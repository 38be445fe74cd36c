//! Vector recall over passages (optional): an embedding per passage, stored in
//! `passage_vectors`, and the passages nearest to a query embedding by cosine similarity,
//! which seed a subgraph like the passages of a full-text search (their edges first, hop 0).
//! Vectors seed passages, never edges. The embeddings come from the caller (an embedder over
//! `/v1/embeddings` lives where HTTP does, outside this crate); a store holds one dimension.

use rusqlite::OptionalExtension;

use crate::error::{MemoryError, Result, SqliteContext};
use crate::memory::Memory;
use crate::query::{Subgraph, SubgraphQuery};

/// A passage's embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageVector {
    pub source: String,
    pub chunk: String,
    pub vector: Vec<f32>,
}

/// A passage found by vector recall, with its cosine similarity to the query.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NearPassage {
    pub source: String,
    pub chunk: String,
    pub score: f32,
}

fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The vector's norm, or why it cannot be compared (empty, not finite, all zeros).
fn norm(vector: &[f32]) -> std::result::Result<f32, &'static str> {
    if vector.is_empty() {
        return Err("an embedding has no dimensions");
    }
    if vector.iter().any(|v| !v.is_finite()) {
        return Err("an embedding has a value that is not a finite number");
    }
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm == 0.0 {
        return Err("an embedding is all zeros (no direction to compare)");
    }
    Ok(norm)
}

impl Memory {
    /// Stores passage embeddings (replacing a passage's earlier one), in one transaction.
    /// Refused, with nothing stored: an empty, non-finite or zero vector, or one whose
    /// dimension differs from the store's.
    pub fn add_passage_vectors(&self, vectors: Vec<PassageVector>) -> Result<usize> {
        let mut dimension = None;
        for v in &vectors {
            norm(&v.vector).map_err(|why| {
                MemoryError::Refused(format!("passage {}#{}: {why}", v.source, v.chunk))
            })?;
            if *dimension.get_or_insert(v.vector.len()) != v.vector.len() {
                return Err(MemoryError::Refused(format!(
                    "passage {}#{}: {} dimensions in a batch of {}",
                    v.source,
                    v.chunk,
                    v.vector.len(),
                    dimension.unwrap_or(0)
                )));
            }
        }
        self.write(move |ctx| {
            let stored: Option<i64> = ctx
                .tx
                .query_row(
                    "SELECT length(vector) / 4 FROM passage_vectors LIMIT 1",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .ctx("reading the vectors' dimension")?;
            let stored = stored.and_then(|d| usize::try_from(d).ok());
            if let (Some(stored), Some(new)) = (stored, dimension)
                && stored != new
            {
                return Err(MemoryError::Refused(format!(
                    "embeddings of {new} dimensions; this store holds {stored}"
                )));
            }
            let mut insert = ctx
                .tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO passage_vectors (source, chunk, vector) \
                     VALUES (?1, ?2, ?3)",
                )
                .ctx("storing passage vectors")?;
            for v in &vectors {
                insert
                    .execute(rusqlite::params![v.source, v.chunk, to_bytes(&v.vector)])
                    .ctx("storing a passage vector")?;
            }
            Ok(vectors.len())
        })
    }

    /// The `limit` passages whose embeddings are nearest to `query` (cosine similarity,
    /// best first; ties in (source, chunk) order). A brute-force scan: fine for the
    /// passages of a run's memory (tens of thousands), not for millions.
    pub fn nearest_passages(&self, query: &[f32], limit: usize) -> Result<Vec<NearPassage>> {
        let query_norm = norm(query).map_err(|why| MemoryError::Refused(why.to_string()))?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut scored = self.with_reader(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT source, chunk, vector FROM passage_vectors")
                .ctx("reading passage vectors")?;
            let mut rows = stmt.query([]).ctx("reading passage vectors")?;
            let mut scored = Vec::new();
            while let Some(row) = rows.next().ctx("reading passage vectors")? {
                let bytes: Vec<u8> = row.get(2).ctx("reading a passage vector")?;
                let vector = from_bytes(&bytes);
                if vector.len() != query.len() {
                    return Err(MemoryError::Refused(format!(
                        "a query embedding of {} dimensions; this store holds {}",
                        query.len(),
                        vector.len()
                    )));
                }
                let dot: f32 = vector.iter().zip(query).map(|(a, b)| a * b).sum();
                let score = match norm(&vector) {
                    Ok(n) => dot / (n * query_norm),
                    Err(_) => continue,
                };
                scored.push(NearPassage {
                    source: row.get(0).ctx("reading a passage vector")?,
                    chunk: row.get(1).ctx("reading a passage vector")?,
                    score,
                });
            }
            Ok(scored)
        })?;
        scored.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| (&a.source, &a.chunk).cmp(&(&b.source, &b.chunk)))
        });
        scored.truncate(limit);
        Ok(scored)
    }

    /// [`Memory::subgraph`] whose seed passages also include the `limit` passages nearest to
    /// `embedding` (after the full-text search's, duplicates dropped).
    pub fn subgraph_near(
        &self,
        query: &SubgraphQuery,
        embedding: &[f32],
        limit: usize,
    ) -> Result<Subgraph> {
        let mut passages = match &query.passage_search {
            Some(text) => self.search_passages(text, query.passage_limit)?,
            None => Vec::new(),
        };
        for near in self.nearest_passages(embedding, limit)? {
            let passage = (near.source, near.chunk);
            if !passages.contains(&passage) {
                passages.push(passage);
            }
        }
        Ok(self.serve_passages(query, &passages))
    }
}
