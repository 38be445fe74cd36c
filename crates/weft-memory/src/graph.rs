//! The in-memory adjacency index over canonical edges: rebuilt from SQLite on open, changed
//! by the writer after each commit (all of a commit's changes under one write lock, so a
//! reader sees the store after some whole commit, never inside one).

use std::sync::Arc;

use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{MemoryError, Result, SqliteContext};
use crate::lexicon::Names;
use crate::normalize::{entity_key, word_count};

/// "No entity": the `merged_into` of an entity that was never merged away.
pub(crate) const NONE: u32 = u32::MAX;

/// One edge as the index holds it (all endpoints are index ids).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EdgeRec {
    pub s: u32,
    pub p: u32,
    pub o: u32,
    pub chunk: u32,
    /// The candidate id whose provenance the edge cites.
    pub provenance: i64,
    /// In the adjacency: neither retired nor closed.
    pub current: bool,
}

/// A change to the index that a commit made; applied in order after the commit.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Entity {
        id: u32,
        name: String,
    },
    Alias {
        key: String,
        entity: u32,
    },
    Predicate {
        id: u32,
        name: String,
    },
    Chunk {
        id: u32,
        key: String,
    },
    Edge {
        id: u32,
        rec: EdgeRec,
    },
    /// The edge leaves the current graph (closed by a contradiction, or retired).
    Uncurrent {
        id: u32,
    },
    /// The edge's endpoints change (a merge or its undo).
    Move {
        id: u32,
        s: u32,
        o: u32,
    },
    Merged {
        entity: u32,
        into: u32,
    },
}

/// The index: entities, aliases, predicates and current edges with their adjacency.
#[derive(Debug, Default)]
pub struct Graph {
    /// The number of commits applied since open.
    pub(crate) version: u64,
    /// Entity, predicate and chunk names, shared with the subgraphs a query serves (one
    /// count per subgraph, not per name: `lexicon.rs`).
    pub(crate) names: Arc<Names>,
    /// Per entity: the words of its name (the token estimate); its length is the entity count.
    pub(crate) name_words: Vec<u16>,
    pub(crate) merged_into: Vec<u32>,
    pub(crate) aliases: FxHashMap<String, u32>,
    /// Per predicate: the words of its name; its length is the predicate count.
    pub(crate) predicate_words: Vec<u16>,
    pub(crate) predicate_ids: FxHashMap<String, u32>,
    pub(crate) chunks: Vec<String>,
    pub(crate) chunk_ids: FxHashMap<String, u32>,
    pub(crate) chunk_edges: Vec<Vec<u32>>,
    pub(crate) edges: Vec<EdgeRec>,
    /// Per entity: (neighbour, edge id) of every current edge touching it, both directions.
    pub(crate) adjacency: Vec<Vec<(u32, u32)>>,
    pub(crate) current_edges: usize,
}

/// The key of a chunk in the index: its source and chunk, which together name a passage.
pub(crate) fn chunk_key(source: &str, chunk: &str) -> String {
    format!("{source}{CHUNK_SEPARATOR}{chunk}")
}

const CHUNK_SEPARATOR: char = '\u{1f}';

fn edge_count(conn: &Connection) -> Result<i64> {
    conn.query_row("SELECT COALESCE(MAX(id) + 1, 0) FROM triples", [], |r| {
        r.get(0)
    })
    .ctx("counting triples")
}

fn id32(value: i64, what: &'static str) -> Result<u32> {
    u32::try_from(value).map_err(|_| MemoryError::Capacity(what))
}

fn words16(text: &str) -> u16 {
    u16::try_from(word_count(text)).unwrap_or(u16::MAX)
}

impl Graph {
    /// Rebuilds the index from the store's tables.
    pub(crate) fn load(conn: &Connection) -> Result<Graph> {
        let mut graph = Graph::default();
        let mut stmt = conn
            .prepare("SELECT id, name, merged_into FROM entities ORDER BY id")
            .ctx("reading entities")?;
        let mut rows = stmt.query([]).ctx("reading entities")?;
        while let Some(row) = rows.next().ctx("reading entities")? {
            let id = id32(row.get(0).ctx("reading entities")?, "entities")?;
            let name: String = row.get(1).ctx("reading entities")?;
            let merged: Option<i64> = row.get(2).ctx("reading entities")?;
            graph.add_entity(id, name)?;
            if let Some(into) = merged {
                graph.merged_into[id as usize] = id32(into, "entities")?;
            }
        }
        let mut stmt = conn
            .prepare("SELECT alias, entity FROM aliases")
            .ctx("reading aliases")?;
        let mut rows = stmt.query([]).ctx("reading aliases")?;
        while let Some(row) = rows.next().ctx("reading aliases")? {
            let key: String = row.get(0).ctx("reading aliases")?;
            let entity = id32(row.get(1).ctx("reading aliases")?, "entities")?;
            graph.aliases.insert(key, entity);
        }
        let mut stmt = conn
            .prepare("SELECT id, name FROM predicates ORDER BY id")
            .ctx("reading predicates")?;
        let mut rows = stmt.query([]).ctx("reading predicates")?;
        while let Some(row) = rows.next().ctx("reading predicates")? {
            let id = id32(row.get(0).ctx("reading predicates")?, "predicates")?;
            graph.add_predicate(id, row.get(1).ctx("reading predicates")?)?;
        }
        let mut stmt = conn
            .prepare("SELECT id, source, chunk FROM chunks ORDER BY id")
            .ctx("reading chunks")?;
        let mut rows = stmt.query([]).ctx("reading chunks")?;
        while let Some(row) = rows.next().ctx("reading chunks")? {
            let id = id32(row.get(0).ctx("reading chunks")?, "chunks")?;
            let source: String = row.get(1).ctx("reading chunks")?;
            let chunk: String = row.get(2).ctx("reading chunks")?;
            if graph.intern_chunk(&chunk_key(&source, &chunk))? != id {
                return Err(MemoryError::Schema("chunk ids are not dense".to_string()));
            }
        }
        let mut stmt = conn
            .prepare(
                "SELECT id, subject, predicate, object, provenance, \
                        retired_at IS NULL AND valid_to IS NULL, chunk FROM triples ORDER BY id",
            )
            .ctx("reading triples")?;
        let mut rows = stmt.query([]).ctx("reading triples")?;
        graph
            .edges
            .reserve(usize::try_from(edge_count(conn)?).unwrap_or(0));
        while let Some(row) = rows.next().ctx("reading triples")? {
            let id = id32(row.get(0).ctx("reading triples")?, "edges")?;
            let rec = EdgeRec {
                chunk: id32(row.get(6).ctx("reading triples")?, "chunks")?,
                s: id32(row.get(1).ctx("reading triples")?, "entities")?,
                p: id32(row.get(2).ctx("reading triples")?, "predicates")?,
                o: id32(row.get(3).ctx("reading triples")?, "entities")?,
                provenance: row.get(4).ctx("reading triples")?,
                current: row.get(5).ctx("reading triples")?,
            };
            graph.add_edge(id, rec)?;
        }
        Ok(graph)
    }

    fn add_entity(&mut self, id: u32, name: String) -> Result<()> {
        if id as usize != self.name_words.len() {
            return Err(MemoryError::Schema(format!(
                "entity ids are not dense (found {id}, expected {})",
                self.name_words.len()
            )));
        }
        self.name_words.push(words16(&name));
        if !self.names.entities.set(id, name.into()) {
            return Err(MemoryError::Schema(format!("entity {id} named twice")));
        }
        self.merged_into.push(NONE);
        self.adjacency.push(Vec::new());
        Ok(())
    }

    fn add_predicate(&mut self, id: u32, name: String) -> Result<()> {
        if id as usize != self.predicate_words.len() {
            return Err(MemoryError::Schema(
                "predicate ids are not dense".to_string(),
            ));
        }
        self.predicate_words.push(words16(&name));
        self.predicate_ids.insert(name.clone(), id);
        if !self.names.predicates.set(id, name.into()) {
            return Err(MemoryError::Schema(format!("predicate {id} named twice")));
        }
        Ok(())
    }

    fn intern_chunk(&mut self, key: &str) -> Result<u32> {
        if let Some(&id) = self.chunk_ids.get(key) {
            return Ok(id);
        }
        let id = u32::try_from(self.chunks.len()).map_err(|_| MemoryError::Capacity("chunks"))?;
        let (source, chunk) = key.split_once(CHUNK_SEPARATOR).unwrap_or((key, ""));
        if !self.names.chunks.set(id, (source.into(), chunk.into())) {
            return Err(MemoryError::Schema(format!("chunk {id} named twice")));
        }
        self.chunks.push(key.to_string());
        self.chunk_ids.insert(key.to_string(), id);
        self.chunk_edges.push(Vec::new());
        Ok(id)
    }

    fn add_edge(&mut self, id: u32, rec: EdgeRec) -> Result<()> {
        if id as usize != self.edges.len() {
            return Err(MemoryError::Schema("triple ids are not dense".to_string()));
        }
        let entities = self.name_words.len() as u32;
        if rec.s >= entities || rec.o >= entities || rec.p as usize >= self.predicate_words.len() {
            return Err(MemoryError::Schema(format!(
                "triple {id} names an entity or predicate the store does not have"
            )));
        }
        self.edges.push(rec);
        if let Some(list) = self.chunk_edges.get_mut(rec.chunk as usize) {
            list.push(id);
        }
        if rec.current {
            self.link(id, rec.s, rec.o);
        }
        Ok(())
    }

    fn link(&mut self, id: u32, s: u32, o: u32) {
        self.adjacency[s as usize].push((o, id));
        if s != o {
            self.adjacency[o as usize].push((s, id));
        }
        self.current_edges += 1;
    }

    fn unlink(&mut self, id: u32, s: u32, o: u32) {
        self.adjacency[s as usize].retain(|&(_, e)| e != id);
        if s != o {
            self.adjacency[o as usize].retain(|&(_, e)| e != id);
        }
        self.current_edges -= 1;
    }

    /// Applies one commit's changes. They were validated by the writer inside the
    /// transaction that just committed, so an inconsistency here is a bug, reported as an
    /// error rather than a panic.
    pub(crate) fn apply(&mut self, changes: Vec<Change>) -> Result<()> {
        for change in changes {
            match change {
                Change::Entity { id, name } => self.add_entity(id, name)?,
                Change::Alias { key, entity } => {
                    self.aliases.insert(key, entity);
                }
                Change::Predicate { id, name } => self.add_predicate(id, name)?,
                Change::Chunk { id, key } => {
                    if self.intern_chunk(&key)? != id {
                        return Err(MemoryError::Schema("chunk ids diverged".to_string()));
                    }
                }
                Change::Edge { id, rec } => self.add_edge(id, rec)?,
                Change::Uncurrent { id } => {
                    let rec = self.edge_mut(id)?;
                    if rec.current {
                        rec.current = false;
                        let (s, o) = (rec.s, rec.o);
                        self.unlink(id, s, o);
                    }
                }
                Change::Move { id, s, o } => {
                    let rec = self.edge_mut(id)?;
                    let (old_s, old_o, current) = (rec.s, rec.o, rec.current);
                    rec.s = s;
                    rec.o = o;
                    if current {
                        self.unlink(id, old_s, old_o);
                        self.link(id, s, o);
                    }
                }
                Change::Merged { entity, into } => {
                    let slot = self
                        .merged_into
                        .get_mut(entity as usize)
                        .ok_or_else(|| MemoryError::Schema("merged an unknown entity".into()))?;
                    *slot = into;
                }
            }
        }
        self.version += 1;
        Ok(())
    }

    fn edge_mut(&mut self, id: u32) -> Result<&mut EdgeRec> {
        self.edges
            .get_mut(id as usize)
            .ok_or_else(|| MemoryError::Schema(format!("no edge {id} in the index")))
    }

    /// The entity a name resolves to through the alias map (following merges).
    pub fn resolve(&self, name: &str) -> Option<u32> {
        self.resolve_key(&entity_key(name))
    }

    pub(crate) fn resolve_key(&self, key: &str) -> Option<u32> {
        let mut id = *self.aliases.get(key)?;
        // Aliases are re-pointed by merges, so this loop runs at most once in practice;
        // it is bounded by the entity count all the same.
        for _ in 0..self.merged_into.len() {
            match self.merged_into.get(id as usize) {
                Some(&into) if into != NONE => id = into,
                _ => break,
            }
        }
        Some(id)
    }

    /// The canonical name of an entity.
    pub fn name(&self, entity: u32) -> &str {
        self.names.entity(entity)
    }

    /// The name of a predicate (its key).
    pub(crate) fn predicate(&self, predicate: u32) -> &str {
        self.names.predicate(predicate)
    }

    /// The number of commits applied since the store was opened.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The number of current (neither closed nor retired) edges in the index.
    pub fn current_edges(&self) -> usize {
        self.current_edges
    }

    /// The number of entities (merged-away ones included).
    pub fn entity_count(&self) -> usize {
        self.name_words.len()
    }

    /// The number of predicates.
    pub(crate) fn predicate_count(&self) -> usize {
        self.predicate_words.len()
    }

    /// Estimated tokens of one edge line: words of subject, predicate and object, plus 3 for
    /// the separators and the citation (the same estimate as the MuSiQue baseline).
    pub(crate) fn edge_tokens(&self, rec: &EdgeRec) -> usize {
        let w = |v: &[u16], i: u32| v.get(i as usize).copied().unwrap_or(0) as usize;
        w(&self.name_words, rec.s)
            + w(&self.predicate_words, rec.p)
            + w(&self.name_words, rec.o)
            + 3
    }

    /// Current edges cited from a passage, by its chunk key.
    pub(crate) fn chunk_edge_ids(&self, key: &str) -> &[u32] {
        self.chunk_ids
            .get(key)
            .and_then(|&c| self.chunk_edges.get(c as usize))
            .map_or(&[], Vec::as_slice)
    }
}

/// The most entries a selection reserves room for before it starts (a budget of millions of
/// edges still grows as it goes).
const PRESIZE_LIMIT: usize = 4_096;

/// Bounds of a subgraph selection.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub hops: u32,
    pub max_edges: usize,
    pub max_tokens: usize,
    /// Only edges with these predicate ids, when set.
    pub predicates: Option<FxHashSet<u32>>,
    /// Entities (other than the seeds) with more current edges than this are reached but not
    /// expanded: hubs would spend the whole budget on one node's neighbourhood.
    pub expand_degree_limit: usize,
}

/// Why a selection stopped before exhausting its hops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cutoff {
    MaxEdges,
    Tokens,
}

/// The edges a bounded breadth-first walk selected, in selection order, with the hop at
/// which each was taken (0 for edges cited by seed passages).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub edges: Vec<(u32, u8)>,
    pub tokens: usize,
    pub cutoff: Option<Cutoff>,
}

impl Graph {
    /// Undirected breadth-first selection from seed entities and seed edges: hop by hop, in
    /// a deterministic order (seed order, then adjacency order), until the hops run out or a
    /// budget would be exceeded.
    pub fn select(&self, seeds: &[u32], seed_edges: &[u32], bounds: &Bounds) -> Selection {
        // Sized for the edge budget up front: growing the sets rehashes them several times
        // within one 500-edge query.
        let expected = bounds.max_edges.min(PRESIZE_LIMIT);
        let mut selection = Selection {
            edges: Vec::with_capacity(expected),
            ..Selection::default()
        };
        let mut taken: FxHashSet<u32> =
            FxHashSet::with_capacity_and_hasher(expected, Default::default());
        let mut visited: FxHashSet<u32> =
            FxHashSet::with_capacity_and_hasher(expected + seeds.len(), Default::default());
        let mut frontier: Vec<u32> = Vec::new();
        let mut seed_set: FxHashSet<u32> = FxHashSet::default();
        for &seed in seeds {
            if (seed as usize) < self.name_words.len() && visited.insert(seed) {
                frontier.push(seed);
                seed_set.insert(seed);
            }
        }
        for &edge in seed_edges {
            let Some(rec) = self.edges.get(edge as usize) else {
                continue;
            };
            if !rec.current || !self.admits(bounds, rec) || taken.contains(&edge) {
                continue;
            }
            if !self.take(&mut selection, &mut taken, edge, rec, 0, bounds) {
                return selection;
            }
            for end in [rec.s, rec.o] {
                if visited.insert(end) {
                    frontier.push(end);
                    seed_set.insert(end);
                }
            }
        }
        for hop in 1..=bounds.hops {
            let mut next = Vec::new();
            for &node in &frontier {
                let neighbours = &self.adjacency[node as usize];
                if neighbours.len() > bounds.expand_degree_limit && !seed_set.contains(&node) {
                    continue;
                }
                for &(neighbour, edge) in neighbours {
                    if taken.contains(&edge) {
                        continue;
                    }
                    let rec = &self.edges[edge as usize];
                    if !self.admits(bounds, rec) {
                        continue;
                    }
                    let hop8 = u8::try_from(hop).unwrap_or(u8::MAX);
                    if !self.take(&mut selection, &mut taken, edge, rec, hop8, bounds) {
                        return selection;
                    }
                    if visited.insert(neighbour) {
                        next.push(neighbour);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        selection
    }

    /// Like [`Graph::select`], but within each hop the candidate edges are taken in
    /// descending `rank` (ties keep the walk's order), so a budget keeps the best of a hop
    /// rather than its first.
    pub(crate) fn select_ranked(
        &self,
        seeds: &[u32],
        seed_edges: &[u32],
        bounds: &Bounds,
        rank: &dyn Fn(&EdgeRec) -> u32,
    ) -> Selection {
        let mut selection = Selection::default();
        let mut taken: FxHashSet<u32> = FxHashSet::default();
        let mut visited: FxHashSet<u32> = FxHashSet::default();
        let mut seed_set: FxHashSet<u32> = FxHashSet::default();
        let mut frontier: Vec<u32> = Vec::new();
        for &seed in seeds {
            if (seed as usize) < self.name_words.len() && visited.insert(seed) {
                frontier.push(seed);
                seed_set.insert(seed);
            }
        }
        let mut hop_edges: Vec<(u32, Option<u32>)> = Vec::new();
        let mut offered: FxHashSet<u32> = FxHashSet::default();
        for &edge in seed_edges {
            if offered.insert(edge) {
                hop_edges.push((edge, None));
            }
        }
        for hop in 0..=bounds.hops {
            if hop > 0 {
                hop_edges.clear();
                offered.clear();
                for &node in &frontier {
                    let neighbours = &self.adjacency[node as usize];
                    if neighbours.len() > bounds.expand_degree_limit && !seed_set.contains(&node) {
                        continue;
                    }
                    for &(neighbour, edge) in neighbours {
                        if !taken.contains(&edge) && offered.insert(edge) {
                            hop_edges.push((edge, Some(neighbour)));
                        }
                    }
                }
            }
            let mut ranked: Vec<(u32, u32, Option<u32>)> = hop_edges
                .iter()
                .filter_map(|&(edge, neighbour)| {
                    let rec = self.edges.get(edge as usize)?;
                    (rec.current && self.admits(bounds, rec)).then(|| (rank(rec), edge, neighbour))
                })
                .collect();
            ranked.sort_by_key(|r| std::cmp::Reverse(r.0));
            let mut next = Vec::new();
            let hop8 = u8::try_from(hop).unwrap_or(u8::MAX);
            for (_, edge, neighbour) in ranked {
                let rec = &self.edges[edge as usize];
                if !self.take(&mut selection, &mut taken, edge, rec, hop8, bounds) {
                    return selection;
                }
                let ends = match neighbour {
                    Some(n) => [n, n],
                    None => [rec.s, rec.o],
                };
                for end in ends {
                    if visited.insert(end) {
                        if hop == 0 {
                            seed_set.insert(end);
                        }
                        next.push(end);
                    }
                }
            }
            if hop == 0 {
                frontier.extend(next);
            } else if next.is_empty() {
                break;
            } else {
                frontier = next;
            }
        }
        selection
    }

    fn admits(&self, bounds: &Bounds, rec: &EdgeRec) -> bool {
        bounds
            .predicates
            .as_ref()
            .is_none_or(|allowed| allowed.contains(&rec.p))
    }

    /// Takes an edge if the budgets allow; false (and the cutoff set) when they do not.
    fn take(
        &self,
        selection: &mut Selection,
        taken: &mut FxHashSet<u32>,
        edge: u32,
        rec: &EdgeRec,
        hop: u8,
        bounds: &Bounds,
    ) -> bool {
        if selection.edges.len() >= bounds.max_edges {
            selection.cutoff = Some(Cutoff::MaxEdges);
            return false;
        }
        let tokens = self.edge_tokens(rec);
        if selection.tokens + tokens > bounds.max_tokens {
            selection.cutoff = Some(Cutoff::Tokens);
            return false;
        }
        selection.tokens += tokens;
        selection.edges.push((edge, hop));
        taken.insert(edge);
        true
    }
}
