//! [`Memory`]: the handle on a memory store. Writes go to the single writer thread; reads
//! use the in-memory index and a read-only SQLite connection.

use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};
use std::thread::JoinHandle;

use rusqlite::Connection;

use crate::error::{MemoryError, Result};
use crate::graph::{Graph, chunk_key};
use crate::model::{Config, IngestReport, MergeReport, Millis, NewCandidate, Outcome, Verdict};
use crate::query::{self, Subgraph, SubgraphQuery};
use crate::schema;
use crate::writer::{self, Ctx, Job, merge, staging};

/// A memory store. Cheap to clone; every clone shares the one writer thread, so extractors
/// running in parallel each hold a clone and never a mutable handle on the database.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Option<SyncSender<Job>>,
    writer: Option<JoinHandle<()>>,
    graph: Arc<RwLock<Graph>>,
    reader: Mutex<Connection>,
    path: PathBuf,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channel ends the writer's loop after the queued jobs.
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// A passage for the full-text index (what passage seeds search).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub source: String,
    pub chunk: String,
    pub text: String,
}

impl Memory {
    /// Opens (or creates, with its directory) the store at `path` and rebuilds the index
    /// from it.
    pub fn open(path: &Path, config: Config) -> Result<Memory> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| MemoryError::Directory {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = schema::open_writer(path)?;
        let graph = Arc::new(RwLock::new(Graph::load(&conn)?));
        let reader = schema::open_reader(path)?;
        let (jobs, writer) = writer::spawn(conn, Arc::clone(&graph), config)?;
        Ok(Memory {
            inner: Arc::new(Inner {
                jobs: Some(jobs),
                writer: Some(writer),
                graph,
                reader: Mutex::new(reader),
                path: path.to_path_buf(),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs a write on the writer thread and waits for its commit.
    pub(crate) fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Ctx<'_>) -> Result<T> + Send + 'static,
    {
        let (job, answer) = writer::job(work);
        self.inner
            .jobs
            .as_ref()
            .ok_or(MemoryError::WriterGone)?
            .send(job)
            .map_err(|_| MemoryError::WriterGone)?;
        answer.recv().map_err(|_| MemoryError::WriterGone)?
    }

    /// Stages a batch of candidates in one transaction.
    pub fn ingest(&self, batch: Vec<NewCandidate>, at: Millis) -> Result<IngestReport> {
        self.write(move |ctx| staging::ingest(ctx, &batch, at))
    }

    /// A verifier's vote on a candidate's claim; promotes or rejects it once the k-of-n rule
    /// decides.
    pub fn vote(
        &self,
        candidate: i64,
        verifier: &str,
        approve: bool,
        reason: &str,
        at: Millis,
    ) -> Result<Outcome> {
        let (verifier, reason) = (verifier.to_string(), reason.to_string());
        self.write(move |ctx| staging::vote(ctx, candidate, &verifier, approve, &reason, at))
    }

    /// Votes from several verifiers on many candidates, in one transaction.
    pub fn vote_batch(&self, votes: Vec<(i64, String, bool)>, at: Millis) -> Result<Vec<Outcome>> {
        self.write(move |ctx| {
            votes
                .iter()
                .map(|(candidate, verifier, approve)| {
                    staging::vote(ctx, *candidate, verifier, *approve, "", at)
                })
                .collect()
        })
    }

    /// A person's decision on candidates, recorded with who and why.
    pub fn decide(
        &self,
        candidates: Vec<i64>,
        verdict: Verdict,
        who: &str,
        why: &str,
        at: Millis,
    ) -> Result<Vec<(i64, Outcome)>> {
        let (who, why) = (who.to_string(), why.to_string());
        self.write(move |ctx| staging::decide(ctx, &candidates, verdict, &who, &why, at))
    }

    /// A person's decision on every staged claim.
    pub fn decide_all(
        &self,
        verdict: Verdict,
        who: &str,
        why: &str,
        at: Millis,
    ) -> Result<Vec<(i64, Outcome)>> {
        let (who, why) = (who.to_string(), why.to_string());
        self.write(move |ctx| staging::decide_all(ctx, verdict, &who, &why, at))
    }

    /// Merges the entity named `alias` into the one named `canonical`.
    pub fn merge(
        &self,
        alias: &str,
        canonical: &str,
        evidence: &str,
        who: &str,
        at: Millis,
    ) -> Result<MergeReport> {
        let (alias, canonical) = (alias.to_string(), canonical.to_string());
        let (evidence, who) = (evidence.to_string(), who.to_string());
        self.write(move |ctx| merge::merge(ctx, &alias, &canonical, &evidence, &who, at))
    }

    /// Several merges in one transaction (a resolver's batch); stops at the first refusal.
    pub fn merge_batch(
        &self,
        pairs: Vec<(String, String, String)>,
        who: &str,
        at: Millis,
    ) -> Result<Vec<MergeReport>> {
        let who = who.to_string();
        self.write(move |ctx| {
            pairs
                .iter()
                .map(|(alias, canonical, evidence)| {
                    merge::merge(ctx, alias, canonical, evidence, &who, at)
                })
                .collect()
        })
    }

    /// Undoes a merge exactly.
    pub fn unmerge(&self, merge_id: i64, who: &str, at: Millis) -> Result<MergeReport> {
        let who = who.to_string();
        self.write(move |ctx| merge::unmerge(ctx, merge_id, &who, at))
    }

    /// Adds passages to the full-text index.
    pub fn add_passages(&self, passages: Vec<Passage>) -> Result<usize> {
        self.write(move |ctx| {
            let mut insert = ctx
                .tx
                .prepare_cached("INSERT INTO passages (source, chunk, text) VALUES (?1, ?2, ?3)")
                .map_err(|source| MemoryError::Sqlite {
                    doing: "adding passages",
                    source,
                })?;
            for p in &passages {
                insert
                    .execute(rusqlite::params![p.source, p.chunk, p.text])
                    .map_err(|source| MemoryError::Sqlite {
                        doing: "adding a passage",
                        source,
                    })?;
            }
            Ok(passages.len())
        })
    }

    /// A read snapshot of the index: it stays at one commit while held. Do not hold it across
    /// a write from the same thread: the writer applies its commit under the index's write
    /// lock, so the write would wait for this guard forever.
    pub fn graph(&self) -> RwLockReadGuard<'_, Graph> {
        self.inner
            .graph
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn with_reader<T>(&self, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self
            .inner
            .reader
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        read(&conn)
    }

    /// Serves a bounded subgraph.
    pub fn subgraph(&self, query: &SubgraphQuery) -> Result<Subgraph> {
        let passages = match &query.passage_search {
            Some(text) => self.search_passages(text, query.passage_limit)?,
            None => Vec::new(),
        };
        Ok(self.serve_passages(query, &passages))
    }

    /// Serves `query` with these passages' edges as the first seeds.
    pub(crate) fn serve_passages(
        &self,
        query: &SubgraphQuery,
        passages: &[(String, String)],
    ) -> Subgraph {
        let graph = self.graph();
        let mut seed_edges = Vec::new();
        for (source, chunk) in passages {
            seed_edges.extend_from_slice(graph.chunk_edge_ids(&chunk_key(source, chunk)));
        }
        let names = passages
            .iter()
            .map(|(source, chunk)| format!("{source}#{chunk}"))
            .collect();
        query::serve(&graph, query, &seed_edges, names)
    }

    /// The best passages for free text (FTS5, BM25), as (source, chunk).
    pub fn search_passages(&self, text: &str, limit: usize) -> Result<Vec<(String, String)>> {
        let terms: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 2)
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let expression = terms.join(" OR ");
        self.with_reader(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT source, chunk FROM passages WHERE passages MATCH ?1 \
                     ORDER BY bm25(passages), rowid LIMIT ?2",
                )
                .map_err(|source| MemoryError::Sqlite {
                    doing: "searching passages",
                    source,
                })?;
            let rows = stmt
                .query_map(rusqlite::params![expression, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|source| MemoryError::Sqlite {
                    doing: "searching passages",
                    source,
                })?;
            Ok(rows)
        })
    }
}
