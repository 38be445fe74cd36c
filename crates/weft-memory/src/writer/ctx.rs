//! The writer's view during one transaction: the committed index (read-only) plus what this
//! transaction added, and the changes to apply to the index once it commits.

use rusqlite::{Transaction, params};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{MemoryError, Result, SqliteContext};
use crate::graph::{Change, EdgeRec, Graph, NONE, chunk_key};
use crate::model::{Config, Millis};
use crate::normalize::{entity_key, predicate_key};

/// One transaction of the writer.
pub struct Ctx<'a> {
    pub(crate) tx: &'a Transaction<'a>,
    pub(crate) graph: &'a Graph,
    pub(crate) config: &'a Config,
    pub(crate) changes: Vec<Change>,
    overlay: Overlay,
}

#[derive(Default)]
struct Overlay {
    entities: u32,
    aliases: FxHashMap<String, u32>,
    predicates: FxHashMap<String, u32>,
    predicate_count: u32,
    chunks: FxHashMap<String, u32>,
    chunk_count: u32,
    edges: Vec<EdgeRec>,
    uncurrent: FxHashSet<u32>,
    moved: FxHashMap<u32, (u32, u32)>,
    merged: FxHashMap<u32, u32>,
    /// Edges added in this transaction by (subject, predicate), for contradictions.
    by_subject_predicate: FxHashMap<(u32, u32), Vec<u32>>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(tx: &'a Transaction<'a>, graph: &'a Graph, config: &'a Config) -> Self {
        Ctx {
            tx,
            graph,
            config,
            changes: Vec::new(),
            overlay: Overlay::default(),
        }
    }

    pub(crate) fn entity_count(&self) -> u32 {
        self.graph.entity_count() as u32 + self.overlay.entities
    }

    pub(crate) fn edge_count(&self) -> u32 {
        self.graph.edges.len() as u32 + self.overlay.edges.len() as u32
    }

    fn merged_into(&self, entity: u32) -> u32 {
        if let Some(&into) = self.overlay.merged.get(&entity) {
            return into;
        }
        self.graph
            .merged_into
            .get(entity as usize)
            .copied()
            .unwrap_or(NONE)
    }

    /// The entity an alias key resolves to, following merges.
    pub(crate) fn resolve_key(&self, key: &str) -> Option<u32> {
        let mut id = match self.overlay.aliases.get(key) {
            Some(&id) => id,
            None => *self.graph.aliases.get(key)?,
        };
        for _ in 0..=self.entity_count() {
            match self.merged_into(id) {
                NONE => break,
                into => id = into,
            }
        }
        Some(id)
    }

    /// The entity a surface form names, created (with the form as its name and first alias)
    /// when no alias matches.
    pub(crate) fn entity_for(&mut self, surface: &str, at: Millis) -> Result<u32> {
        let key = entity_key(surface);
        if let Some(id) = self.resolve_key(&key) {
            return Ok(id);
        }
        let id = self.entity_count();
        if id == NONE {
            return Err(MemoryError::Capacity("entities"));
        }
        let name = surface.trim().to_string();
        self.tx
            .prepare_cached("INSERT INTO entities (id, name, merged_into, created_at) VALUES (?1, ?2, NULL, ?3)")
            .and_then(|mut s| s.execute(params![id, name, at]))
            .ctx("creating an entity")?;
        self.tx
            .prepare_cached("INSERT INTO aliases (alias, entity, surface) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![key, id, name]))
            .ctx("recording an alias")?;
        self.overlay.entities += 1;
        self.overlay.aliases.insert(key.clone(), id);
        self.changes.push(Change::Entity { id, name });
        self.changes.push(Change::Alias { key, entity: id });
        Ok(id)
    }

    pub(crate) fn predicate_for(&mut self, surface: &str) -> Result<u32> {
        let key = predicate_key(surface);
        if let Some(&id) = self.overlay.predicates.get(&key) {
            return Ok(id);
        }
        if let Some(&id) = self.graph.predicate_ids.get(&key) {
            return Ok(id);
        }
        let id = self.graph.predicate_count() as u32 + self.overlay.predicate_count;
        self.tx
            .prepare_cached("INSERT INTO predicates (id, name) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![id, key]))
            .ctx("recording a predicate")?;
        self.overlay.predicate_count += 1;
        self.overlay.predicates.insert(key.clone(), id);
        self.changes.push(Change::Predicate { id, name: key });
        Ok(id)
    }

    pub(crate) fn chunk_for(&mut self, source: &str, chunk: &str) -> Result<u32> {
        let key = chunk_key(source, chunk);
        if let Some(&id) = self.overlay.chunks.get(&key) {
            return Ok(id);
        }
        if let Some(&id) = self.graph.chunk_ids.get(&key) {
            return Ok(id);
        }
        let id = self.graph.chunks.len() as u32 + self.overlay.chunk_count;
        self.tx
            .prepare_cached("INSERT INTO chunks (id, source, chunk) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![id, source, chunk]))
            .ctx("recording a chunk")?;
        self.overlay.chunk_count += 1;
        self.overlay.chunks.insert(key.clone(), id);
        self.changes.push(Change::Chunk { id, key });
        Ok(id)
    }

    /// Records a new edge (already inserted in SQLite by the caller under id `id`).
    pub(crate) fn push_edge(&mut self, id: u32, rec: EdgeRec) {
        self.overlay.edges.push(rec);
        self.overlay
            .by_subject_predicate
            .entry((rec.s, rec.p))
            .or_default()
            .push(id);
        self.changes.push(Change::Edge { id, rec });
    }

    /// The edge as this transaction sees it: endpoints after moves, current after closes.
    pub(crate) fn edge(&self, id: u32) -> Option<EdgeRec> {
        let base = self.graph.edges.len() as u32;
        let mut rec = if id < base {
            self.graph.edges.get(id as usize).copied()?
        } else {
            self.overlay.edges.get((id - base) as usize).copied()?
        };
        if let Some(&(s, o)) = self.overlay.moved.get(&id) {
            rec.s = s;
            rec.o = o;
        }
        if self.overlay.uncurrent.contains(&id) {
            rec.current = false;
        }
        Some(rec)
    }

    pub(crate) fn make_uncurrent(&mut self, id: u32) {
        self.overlay.uncurrent.insert(id);
        self.changes.push(Change::Uncurrent { id });
    }

    pub(crate) fn move_edge(&mut self, id: u32, s: u32, o: u32) {
        self.overlay.moved.insert(id, (s, o));
        self.changes.push(Change::Move { id, s, o });
    }

    pub(crate) fn set_merged(&mut self, entity: u32, into: u32) {
        self.overlay.merged.insert(entity, into);
        self.changes.push(Change::Merged { entity, into });
    }

    pub(crate) fn set_alias(&mut self, key: String, entity: u32) {
        self.overlay.aliases.insert(key.clone(), entity);
        self.changes.push(Change::Alias { key, entity });
    }

    /// Current edges with this subject and predicate (committed or added in this
    /// transaction), for the contradiction rule of functional predicates.
    pub(crate) fn current_with(&self, s: u32, p: u32) -> Vec<u32> {
        let mut found = Vec::new();
        if let Some(list) = self.graph.adjacency.get(s as usize) {
            for &(_, edge) in list {
                if let Some(rec) = self.edge(edge)
                    && rec.current
                    && rec.s == s
                    && rec.p == p
                    && !found.contains(&edge)
                {
                    found.push(edge);
                }
            }
        }
        if let Some(list) = self.overlay.by_subject_predicate.get(&(s, p)) {
            for &edge in list {
                if let Some(rec) = self.edge(edge)
                    && rec.current
                    && rec.s == s
                    && !found.contains(&edge)
                {
                    found.push(edge);
                }
            }
        }
        found
    }

    /// Every edge (current or not) touching an entity, as this transaction sees them.
    pub(crate) fn edges_touching(&self, entity: u32) -> Vec<u32> {
        (0..self.edge_count())
            .filter(|&id| {
                self.edge(id)
                    .is_some_and(|rec| rec.s == entity || rec.o == entity)
            })
            .collect()
    }
}
