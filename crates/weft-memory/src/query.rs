//! Bounded subgraph queries and their serialisation, and the answer check that holds an
//! answer to the edges it was served.

use std::sync::Arc;

use rustc_hash::FxHashSet;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::graph::{Bounds, Cutoff, Graph};
use crate::lexicon::Names;
use crate::normalize::predicate_key;

/// What to serve: seeds (entity names, and/or a passage search whose passages' edges seed
/// the walk), and the bounds.
#[derive(Debug, Clone)]
pub struct SubgraphQuery {
    pub seeds: Vec<String>,
    /// Free text searched in the passages (FTS5, BM25); the edges cited from the best
    /// `passage_limit` passages are served first (hop 0) and their entities seed the walk.
    pub passage_search: Option<String>,
    pub passage_limit: usize,
    pub hops: u32,
    pub max_edges: usize,
    pub max_tokens: usize,
    /// Only these predicates, when set (by name; compared as predicate keys).
    pub predicates: Option<Vec<String>>,
    /// Non-seed entities with more current edges than this are not expanded.
    pub expand_degree_limit: usize,
    /// Words of the question, when set: within each hop, edges sharing more of these words
    /// (in subject, predicate or object; words of one or two letters ignored) are taken
    /// first, so a budget keeps the relevant part of a hop.
    pub focus: Option<String>,
}

impl Default for SubgraphQuery {
    fn default() -> Self {
        SubgraphQuery {
            seeds: Vec::new(),
            passage_search: None,
            passage_limit: 3,
            hops: 2,
            max_edges: 500,
            max_tokens: 2000,
            predicates: None,
            expand_degree_limit: usize::MAX,
            focus: None,
        }
    }
}

/// One served edge: the index's ids of its subject, predicate, object and passage, and the
/// provenance id an answer cites. Its names are the subgraph's to give
/// ([`Subgraph::named`]), so serving an edge copies and counts no name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedEdge {
    pub id: i64,
    /// An entity id (`Graph::name`).
    pub subject: u32,
    /// A predicate id.
    pub predicate: u32,
    /// An entity id.
    pub object: u32,
    /// The candidate whose provenance this edge carries (`weft memory` prints it as `p:ID`).
    pub provenance: i64,
    /// The id of the passage (source and chunk) the edge was extracted from.
    pub chunk: u32,
    /// 0 for edges of seed passages, else the hop at which the walk took it.
    pub hop: u8,
}

/// A served edge with its names, as it is written out (JSON: these members in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct NamedEdge<'a> {
    pub id: i64,
    pub subject: &'a str,
    pub predicate: &'a str,
    pub object: &'a str,
    pub provenance: i64,
    pub source: &'a str,
    pub chunk: &'a str,
    pub hop: u8,
}

/// A seed as resolved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Seed {
    pub name: String,
    pub entity: i64,
    pub canonical: String,
}

/// A bounded subgraph, as served. It holds the index's names (shared, `lexicon.rs`) and
/// names its edges when read or written out (`named_edges`, `Serialize`, `to_text`).
#[derive(Clone)]
pub struct Subgraph {
    pub edges: Vec<ServedEdge>,
    /// Estimated tokens of the edge lines (see `Graph::edge_tokens`).
    pub tokens: usize,
    /// The index version (commits since open) the subgraph was read at.
    pub snapshot: u64,
    pub seeds: Vec<Seed>,
    pub unresolved_seeds: Vec<String>,
    /// Passages the search matched, as `source#chunk`, best first.
    pub passages: Vec<String>,
    /// The budget that stopped the walk, if one did.
    pub cutoff: Option<Cutoff>,
    names: Arc<Names>,
}

impl Subgraph {
    /// The edge lines a model reads: `subject | predicate | object [p:PROVENANCE]`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for edge in self.named_for_writing() {
            out.push_str(&format!(
                "{} | {} | {} [p:{}]\n",
                edge.subject, edge.predicate, edge.object, edge.provenance
            ));
        }
        out
    }

    /// An edge of this subgraph with its names (an edge of another store's subgraph gets
    /// this store's names for its ids, or empty ones).
    pub fn named(&self, edge: &ServedEdge) -> NamedEdge<'_> {
        let (source, chunk) = self.names.chunk(edge.chunk);
        NamedEdge {
            id: edge.id,
            subject: self.names.entity(edge.subject),
            predicate: self.names.predicate(edge.predicate),
            object: self.names.entity(edge.object),
            provenance: edge.provenance,
            source,
            chunk,
            hop: edge.hop,
        }
    }

    /// The edges with their names, in served order.
    pub fn named_edges(&self) -> impl ExactSizeIterator<Item = NamedEdge<'_>> + '_ {
        self.edges.iter().map(|edge| self.named(edge))
    }

    /// [`Subgraph::named_edges`], every name looked up (and its first byte read) before
    /// any is written: the lookups of different edges are independent, so their cache
    /// misses overlap, where naming each edge between writes of the JSON waits for them one
    /// by one (at 1,000,000 triples, 500 edges written in 180–200 µs instead of 340–380;
    /// docs/BENCHMARKS.md, "served as ids").
    fn named_for_writing(&self) -> Vec<NamedEdge<'_>> {
        let named: Vec<NamedEdge<'_>> = self.named_edges().collect();
        let mut first_bytes = 0u8;
        for edge in &named {
            for name in [edge.subject, edge.object, edge.source, edge.chunk] {
                first_bytes ^= name.as_bytes().first().copied().unwrap_or(0);
            }
        }
        std::hint::black_box(first_bytes);
        named
    }
}

/// The JSON of `weft memory query --json` and of the memory tools: the members of the
/// struct, edges with their names (docs/memory.md §4).
impl Serialize for Subgraph {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Edges<'a>(&'a Subgraph);
        impl Serialize for Edges<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.named_for_writing())
            }
        }
        let mut out = serializer.serialize_struct("Subgraph", 7)?;
        out.serialize_field("edges", &Edges(self))?;
        out.serialize_field("tokens", &self.tokens)?;
        out.serialize_field("snapshot", &self.snapshot)?;
        out.serialize_field("seeds", &self.seeds)?;
        out.serialize_field("unresolved_seeds", &self.unresolved_seeds)?;
        out.serialize_field("passages", &self.passages)?;
        out.serialize_field("cutoff", &self.cutoff)?;
        out.end()
    }
}

/// Equal when they serve the same named edges and say the same of the walk.
impl PartialEq for Subgraph {
    fn eq(&self, other: &Self) -> bool {
        self.edges.len() == other.edges.len()
            && self.named_edges().eq(other.named_edges())
            && self.tokens == other.tokens
            && self.snapshot == other.snapshot
            && self.seeds == other.seeds
            && self.unresolved_seeds == other.unresolved_seeds
            && self.passages == other.passages
            && self.cutoff == other.cutoff
    }
}

impl Eq for Subgraph {}

impl std::fmt::Debug for Subgraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subgraph")
            .field("edges", &self.named_edges().collect::<Vec<_>>())
            .field("tokens", &self.tokens)
            .field("snapshot", &self.snapshot)
            .field("seeds", &self.seeds)
            .field("unresolved_seeds", &self.unresolved_seeds)
            .field("passages", &self.passages)
            .field("cutoff", &self.cutoff)
            .finish()
    }
}

/// Runs the walk on a snapshot of the index and names what it selected.
pub(crate) fn serve(
    graph: &Graph,
    query: &SubgraphQuery,
    seed_edges: &[u32],
    passages: Vec<String>,
) -> Subgraph {
    let mut seeds = Vec::new();
    let mut unresolved = Vec::new();
    let mut seed_ids = Vec::new();
    for name in &query.seeds {
        match graph.resolve(name) {
            Some(id) => {
                seed_ids.push(id);
                seeds.push(Seed {
                    name: name.clone(),
                    entity: i64::from(id),
                    canonical: graph.name(id).to_string(),
                });
            }
            None => unresolved.push(name.clone()),
        }
    }
    let predicates = query.predicates.as_ref().map(|names| {
        names
            .iter()
            .filter_map(|n| graph.predicate_ids.get(&predicate_key(n)).copied())
            .collect::<FxHashSet<u32>>()
    });
    let bounds = Bounds {
        hops: query.hops,
        max_edges: query.max_edges,
        max_tokens: query.max_tokens,
        predicates,
        expand_degree_limit: query.expand_degree_limit,
    };
    let selection = match &query.focus {
        None => graph.select(&seed_ids, seed_edges, &bounds),
        Some(text) => {
            let focus = focus_words(text);
            let rank = |rec: &crate::graph::EdgeRec| -> u32 {
                let names = [graph.name(rec.s), graph.predicate(rec.p), graph.name(rec.o)];
                let mut seen: FxHashSet<String> = FxHashSet::default();
                for name in names {
                    for word in words_of(name) {
                        if focus.contains(&word) {
                            seen.insert(word);
                        }
                    }
                }
                seen.len() as u32
            };
            graph.select_ranked(&seed_ids, seed_edges, &bounds, &rank)
        }
    };
    let mut edges = Vec::with_capacity(selection.edges.len());
    edges.extend(selection.edges.iter().filter_map(|&(id, hop)| {
        let rec = graph.edges.get(id as usize)?;
        Some(ServedEdge {
            id: i64::from(id),
            subject: rec.s,
            predicate: rec.p,
            object: rec.o,
            provenance: rec.provenance,
            chunk: rec.chunk,
            hop,
        })
    }));
    Subgraph {
        edges,
        tokens: selection.tokens,
        snapshot: graph.version(),
        seeds,
        unresolved_seeds: unresolved,
        passages,
        cutoff: selection.cutoff,
        names: Arc::clone(&graph.names),
    }
}

fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
}

/// Question words that say nothing about the subject matter.
const FOCUS_STOP: [&str; 22] = [
    "the", "was", "who", "what", "which", "when", "where", "how", "did", "does", "and", "for",
    "with", "from", "that", "this", "are", "were", "has", "had", "its", "his",
];

fn focus_words(text: &str) -> FxHashSet<String> {
    words_of(text)
        .filter(|w| !FOCUS_STOP.contains(&w.as_str()))
        .collect()
}

/// A claim of an answer and the provenance ids (`p:ID`) or edge ids it cites.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Claim {
    pub text: String,
    /// Provenance ids of served edges.
    pub cites: Vec<i64>,
}

/// What to do with a claim that cites no served edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ungrounded {
    Drop,
    Flag,
}

/// The checked answer: grounded claims kept; the others dropped or flagged, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct AnswerCheck {
    pub kept: Vec<Claim>,
    pub flagged: Vec<(Claim, String)>,
    pub dropped: Vec<(Claim, String)>,
}

/// Holds an answer to what it was served: a claim stands only if it cites at least one
/// provenance id and every id it cites belongs to an edge of `served`.
pub fn check_answer(served: &Subgraph, claims: Vec<Claim>, mode: Ungrounded) -> AnswerCheck {
    let known: FxHashSet<i64> = served.edges.iter().map(|e| e.provenance).collect();
    let mut check = AnswerCheck::default();
    for claim in claims {
        let problem = if claim.cites.is_empty() {
            Some("cites no edge".to_string())
        } else {
            claim
                .cites
                .iter()
                .find(|id| !known.contains(id))
                .map(|id| format!("cites p:{id}, which is not among the served edges"))
        };
        match (problem, mode) {
            (None, _) => check.kept.push(claim),
            (Some(why), Ungrounded::Drop) => check.dropped.push((claim, why)),
            (Some(why), Ungrounded::Flag) => check.flagged.push((claim, why)),
        }
    }
    check
}
